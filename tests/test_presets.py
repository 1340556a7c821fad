"""#39 item 6: a preset prediction question on every page, from one registry (viz_model.lessons.presets). Each
preset's answer is checked against a computation of our own on the model (its own forward pass, a formula written
here), its choices are within the class store's bounds, and a view it cannot ask about (an empty sentence, one
token, a custom mask) says why in a sentence (ValueError), never a traceback."""

from __future__ import annotations

import math
import re
from functools import cache

import numpy as np
import pytest
import torch

from viz_model import ASSETS_DIR
from viz_model.checkpoint import load_checkpoint
from viz_model.lessons import presets as P
from viz_model.model_text import encode_for
from viz_model.pages import PAGES
from viz_model.runtime.class_mode import MAX_CHOICE_CHARS, MAX_CHOICES, MAX_PROMPT_CHARS, fit_choice

MODELS = ASSETS_DIR / "models"


@cache
def model(name: str):
    path = MODELS / "recurrence" / f"{name[4:]}.safetensors" if name.startswith("rec-") else \
        MODELS / f"{name}.safetensors"
    return load_checkpoint(path)


def inputs(settings: dict | None = None, name: str = "classroom") -> P.Inputs:
    return P.Inputs(model(name), settings or {}, load=model)


def chosen(p: P.Preset) -> list[str]:
    return [p.choices[i] for i in p.answer["correct"]]


def app_pages() -> list[str]:
    """The URL paths of the app's pages (viz_model.pages, the table app.py draws)."""
    return [p.url for p in PAGES]


def test_every_page_of_the_app_has_a_preset_and_every_name_is_unique_and_stable():
    pages = app_pages()
    assert len(pages) == 16  # 13 lessons, then #40's three pages of "Inside the model"
    for page in pages:
        assert P.presets_for(page), f"no preset question on /{page}"
    assert P.presets_for("") == P.presets_for("home") == P.presets_for("start")  # Start's three paths
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in P.PRESETS)  # what `ask: preset NAME` accepts
    assert len({r.label for r in P.PRESETS.values()}) == len(P.PRESETS)
    assert P.MAX_CHOICES == MAX_CHOICES and P.MAX_PROMPT_CHARS == MAX_PROMPT_CHARS


@pytest.mark.parametrize("name", list(P.PRESETS))
def test_each_preset_asks_within_the_class_stores_bounds_on_its_pages_default_view(name):
    p = P.compute(name, inputs())
    assert 2 <= len(p.choices) <= MAX_CHOICES and len(set(p.choices)) == len(p.choices)
    assert p.answer["correct"] and all(0 <= i < len(p.choices) for i in p.answer["correct"])
    assert len(p.prompt) <= MAX_PROMPT_CHARS and p.answer["why"]
    assert all(len(fit_choice(c)) <= MAX_CHOICE_CHARS for c in p.choices)


def test_a_long_sentence_still_asks_at_most_16_choices():
    long = " ".join(["the cat sat on the mat"] * 6)
    for name, key in (("start_row", "start_text"), ("masks_visible", "masks_text"), ("qkv_best_key", "qkv_text"),
                      ("explorer_previous", "explorer_text"), ("generate_next", "generate_text")):
        p = P.compute(name, inputs({key: long}))
        assert 2 <= len(p.choices) <= MAX_CHOICES, name


def test_an_unknown_preset_and_views_it_cannot_ask_about_say_why_in_a_sentence():
    with pytest.raises(ValueError, match="no preset question “nope”; the presets are: start_row"):
        P.compute("nope", inputs())
    for name, settings, words in [
        ("start_row", {"start_text": ""}, "at least two tokens"),
        ("start_row", {"start_text": "cat", "start_bos": False}, "at least two tokens"),
        ("explorer_previous", {"explorer_text": "   "}, "Type a sentence of at least 2 tokens on the Explorer"),
        ("masks_visible", {"masks_text": ""}, "on the Masks page"),
        ("masks_visible", {"masks_kind": "custom"}, "custom mask is drawn by hand"),
        ("qkv_best_key", {"qkv_text": ""}, "on the Q, K and V page"),
        ("generate_next", {"generate_text": ""}, "on the Generate page"),
        ("translator_looks", {"ed_text": " "}, "Type a sentence to translate"),
        ("encoder_fill", {"encoder_text": "", "encoder_model": "encoder-mlm"}, "on the Encoder page"),
        ("encoder_fill", {"encoder_kept_masks": {"x": []}, "encoder_model": "encoder-mlm"}, "Hide a word"),
        ("rope_extension", {"rope_ext_L": 4096, "rope_ext_Lp": 1024}, "shorter than the training length"),
        ("train_tying", {"train_arch": "lstm"}, "transformer setting"),
    ]:
        with pytest.raises(ValueError, match=re.escape(words)):
            P.compute(name, inputs(settings))


def test_generate_next_is_the_models_own_most_probable_token_and_the_order_gives_nothing_away():
    ck = model("classroom")
    for prompt in ("please send the", "The cat sat on the", "She gave him the book because he"):
        p = P.compute("generate_next", inputs({"generate_text": prompt}))
        ids = [ck.tokenizer.token_to_id("<bos>"), *ck.tokenizer.encode(prompt).ids]
        with torch.no_grad():
            logits = ck.model(torch.tensor([ids])).logits[0, -1]
        assert chosen(p) == [ck.tokenizer.id_to_token(int(logits.argmax()))]
        assert p.choices == sorted(p.choices, key=str.lower)  # alphabetical, not by probability


def test_explorer_previous_is_the_head_with_most_weight_on_the_token_before():
    ck = model("classroom")
    for layer, text in ((0, "The cat sat on the mat"), (1, "She gave him the book because he asked for it")):
        p = P.compute("explorer_previous", inputs({"explorer_text": text, "explorer_layer": layer}))
        ids = [ck.tokenizer.token_to_id("<bos>"), *ck.tokenizer.encode(text).ids]
        with torch.no_grad():
            probs = ck.model(torch.tensor([ids]), trace=True).trace.layers[layer].probs[0]  # (H, T, T)
        prev = [float(np.mean([probs[h, t, t - 1] for t in range(1, len(ids))])) for h in range(probs.shape[0])]
        assert chosen(p) == [f"head {int(np.argmax(prev))}"] and f"layer {layer}" in p.prompt


def test_masks_visible_counts_the_keys_the_mask_table_allows_for_the_middle_row():
    text = "The cat sat on the mat"  # with <bos>: T = 7, the middle row t = 3 ("sat")
    cases = {"causal": {}, "bidirectional": {}, "sliding_window": {"masks_window": 2}, "prefix_lm": {"masks_prefix": 5},
             "strided": {"masks_stride": 2}}
    want = {"causal": 4, "bidirectional": 7, "sliding_window": 2, "prefix_lm": 5}
    for kind, extra in cases.items():
        p = P.compute("masks_visible", inputs({"masks_text": text, "masks_kind": kind, **extra}))
        assert "row 3 (“sat”)" in p.prompt
        if kind in want:
            assert chosen(p) == [str(want[kind])], kind
    strided = P.compute("masks_visible", inputs({"masks_text": text, "masks_kind": "strided", "masks_stride": 2}))
    from viz_model.masks import build_mask

    assert chosen(strided) == [str(int(build_mask("strided", 7, stride=2)[3].sum()))]
    pad = P.compute("masks_visible", inputs({"masks_text": "send report <pad> <pad> <pad>", "masks_kind": "padding"}))
    assert chosen(pad) == ["3"]  # <bos> send report: the three real tokens, the pads hidden


def test_qkv_best_key_is_the_argmax_of_the_models_own_scores_among_the_keys_the_query_may_read():
    ck = model("classroom")
    text = "The cat sat on the mat"
    ids = [ck.tokenizer.token_to_id("<bos>"), *ck.tokenizer.encode(text).ids]
    with torch.no_grad():
        tr = ck.model(torch.tensor([ids]), trace=True).trace
    for layer, head, query in ((0, 0, 3), (1, 2, 6), (1, 3, 4)):
        p = P.compute("qkv_best_key", inputs({"qkv_text": text, "qkv_layer": layer, "qkv_head": head,
                                              "qkv_query": query}))
        scores = tr.layers[layer].scores[0, head, query, : query + 1]  # a causal model: keys 0..query
        assert len(p.choices) == query + 1
        assert chosen(p) == [p.choices[int(scores.argmax())]], (layer, head, query)


def test_sinusoidal_position_is_the_row_of_the_table_written_here_that_matches_the_vector_shown():
    for d, n_pos, base in ((64, 128, 10000.0), (16, 512, 100.0), (4, 8, 10.0)):
        p = P.compute("sinusoidal_position", inputs({"sinusoidal_d": d, "sinusoidal_npos": n_pos,
                                                     "sinusoidal_base": base}))
        shown = [float(v) for v in re.findall(r"\((-?[\d.]+), (-?[\d.]+)\)", p.prompt) for v in v]
        omega = [base ** (-2 * i / d) for i in range(d // 2)]

        def pe(pos: int, omega=omega) -> list[float]:  # P[p, 2i] = sin(p·ω_i), P[p, 2i+1] = cos(p·ω_i)
            return [f(pos * w) for w in omega for f in (math.sin, math.cos)]

        fits = [c for c in p.choices if np.allclose([*pe(int(c))[:2], *pe(int(c))[-2:]], shown, atol=0.0051)]
        assert chosen(p) == fits, (d, n_pos, base)
        assert P.compute("sinusoidal_position", inputs({"sinusoidal_d": d, "sinusoidal_npos": n_pos,
                                                        "sinusoidal_base": base})) == p  # the same view: same question


def test_rope_extension_keeps_the_rope_pages_question():
    from viz_model.lessons.class_mode import rope_question

    p = P.compute("rope_extension", inputs({"rope_ext_L": 4096, "rope_ext_Lp": 32768, "rope_ext_dk": 128,
                                            "rope_ext_base": 10000.0}))
    assert p == rope_question(128, 10000.0, 4096, 32768)
    assert "linear interpolation (PI)" in chosen(p) and "none (plain RoPE)" not in chosen(p)


def test_encoder_fill_is_the_encoders_own_top_fill_in():
    from viz_model.mlm import fill_mask

    for key, text, picked, typed in (("encoder-mlm", "the cat sat on the mat", [1], "the <mask> sat on the mat"),
                                     ("english-encoder", "The cat sat on the mat", [1], "The <mask> sat on the mat")):
        ck = model(key)
        p = P.compute("encoder_fill", inputs({"encoder_model": key, "encoder_text": text,
                                              "encoder_kept_masks": {"digest": picked}}))
        top = fill_mask(ck.model, ck.tokenizer, typed, top_k=1)[0][0][0]
        assert chosen(p) == [top.strip()], key
        assert "cat" in p.choices  # the hidden word is offered, among the encoder's top fill-ins


def test_translator_looks_is_the_argmax_of_the_last_layers_cross_attention_for_the_first_word():
    from viz_model.seq2seq import encode_source

    ck = model("translate")
    text = "the old king thanked the children"
    p = P.compute("translator_looks", inputs({"ed_text": text, "ed_model": "translate"}))
    src, labels, _ = encode_source(ck.model, ck.tokenizer, text)
    bos = ck.tokenizer.token_to_id("<bos>")
    with torch.no_grad():
        out = ck.model(torch.tensor([src]), torch.tensor([[bos]]), trace=True)
        first = int(out.logits[0, -1].argmax())  # greedy: the first word
        row = out.trace.cross[-1].probs[0, :, 0].mean(0)  # (T_src,): the last layer, mean of the heads
    assert ck.tokenizer.id_to_token(first) in p.prompt
    assert chosen(p) == [f"{int(row.argmax())} {labels[int(row.argmax())]}"]


def test_recurrence_recall_at_distance_32_matches_an_evaluation_run_here():
    from viz_model.train import accuracy_by_distance

    p = P.compute("recurrence_recall", inputs({"recurrence_distance": 40}))
    assert "distance 32" in p.prompt  # the slider's 40 asks about the largest evaluated distance below it
    ck = {k: model(f"rec-{k}") for k in ("rnn", "lstm", "transformer")}
    acc = {k: accuracy_by_distance(c.model, c.tokenizer, [32], 128)[32] for k, c in ck.items()}
    names = {"rnn": "RNN", "lstm": "LSTM", "transformer": "transformer"}
    assert set(chosen(p)) == {names[k] for k, a in acc.items() if a >= P.RECALL_BAR}
    live = [type("Row", (), {"kind": k, "accuracy": {32: 0.5}})() for k in ck]  # the page's "evaluate now" result
    kept = {("recurrence_accuracy_store", ("store",)): {128: live}}
    again = P.compute("recurrence_recall", P.Inputs(model("classroom"), {"recurrence_distance": 32}, model,
                                                    lambda n, k, build: kept.get((n, k)) or build()))
    assert chosen(again) == ["none of them"] and "evaluated on this server" in again.answer["why"]


def _norm(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Each norm written here from its definition (eps 1e-5, no affine), on a (N, T, d) batch."""
    if kind == "layernorm":
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    if kind == "rmsnorm":
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5)
    flat = x.reshape(-1, x.shape[-1])
    return (x - flat.mean(0)) / torch.sqrt(flat.var(0, unbiased=False) + 1e-5)


def test_norm_padding_names_the_norms_whose_first_sample_changes():
    from viz_model.lessons.normalization import random_batch

    for N, T, d, seed, n_pad in ((3, 4, 8, 0, 2), (2, 6, 16, 7, 6)):
        p = P.compute("norm_padding", inputs({"norm_N": N, "norm_T": T, "norm_d": d, "norm_seed": seed,
                                              "norm_pad": n_pad}))
        x = random_batch(N, T, d, seed)
        padded = x.clone()
        padded[1, T - n_pad:] = 0
        changed = [P.NORM_NAMES[k] for k in P.NORM_NAMES
                   if (_norm(x, k)[0] - _norm(padded, k)[0]).abs().max() > 1e-4]
        assert chosen(p) == changed == ["BatchNorm"]


def test_train_tying_is_the_difference_of_the_two_models_parameter_counts():
    from viz_model.config import ModelConfig
    from viz_model.model import TinyTransformer
    from viz_model.tokenizer import load_tokenizer

    V = load_tokenizer("word").get_vocab_size()
    for preset, tie in (("tiny", True), ("classroom", False)):
        p = P.compute("train_tying", inputs({"train_preset": preset, "train_tie": tie}))
        counts = {}
        for t in (True, False):
            m = TinyTransformer(ModelConfig.preset(preset, vocab_size=V, tie_weights=t, max_len=64))
            counts[t] = len(torch.nn.utils.parameters_to_vector({id(q): q for q in m.parameters()}.values()))
        diff = counts[not tie] - counts[tie]
        assert chosen(p) == [f"{diff:+,}"] and f"{counts[tie]:,} parameters" in p.prompt


def test_cost_scores_is_the_size_of_a_traced_score_tensor():
    from viz_model.config import ModelConfig
    from viz_model.lessons.cost import size_text
    from viz_model.model import TinyTransformer

    H, T = 4, 64
    m = TinyTransformer(ModelConfig(vocab_size=50, d_model=32, n_heads=H, n_layers=1, d_ff=64, max_len=T))
    with torch.no_grad():
        scores = m(torch.zeros(1, T, dtype=torch.long), trace=True).trace.layers[0].scores  # (1, H, T, T) float32
    p = P.compute("cost_scores", inputs({"cost_cpu_T": (16, T), "cost_cpu_heads": H}))
    assert chosen(p) == [size_text(scores.numel() * scores.element_size())] == ["64 KiB"]


def test_start_row_is_the_argmax_of_the_last_tokens_attention_row():
    ck = model("classroom")
    p = P.compute("start_row", inputs({"start_text": "the cat sat on the mat", "start_layer": 1, "start_head": 2}))
    ids = encode_for(ck, "the cat sat on the mat", bos=True).ids
    with torch.no_grad():
        row = ck.model(torch.tensor([ids]), trace=True).trace.layers[1].probs[0, 2, -1]
    assert p.answer["correct"] == [int(row.argmax())] and "head 1·2" in p.prompt


def test_a_lecture_links_settings_as_text_read_like_the_widgets_values():
    """A lecture step's settings arrive as the link's strings (a widget not drawn yet): "false" is off."""
    on = P.compute("start_row", inputs({"start_text": "the cat sat", "start_bos": "true"}))
    off = P.compute("start_row", inputs({"start_text": "the cat sat", "start_bos": "false"}))
    assert on.choices[0] == "0 <bos>" and "<bos>" not in " ".join(off.choices)
    assert P.compute("explorer_previous", inputs({"explorer_layer": "1", "explorer_scale": "false"})).prompt.startswith(
        "Which head of layer 1")


def test_the_solo_reveal_puts_the_students_pick_beside_the_models_answer():
    same, text = P.solo_answer_text(["a", "b", "c"], {"correct": [1], "why": "Because."}, 1)
    assert same and text == "You picked “b”, as the model does. Because."
    same, text = P.solo_answer_text(["a", "b", "c"], {"correct": [1, 2], "why": "Because."}, 0)
    assert not same and text == "You picked “a”; the model's own answer is “b” or “c”. Because."


def test_every_preset_a_built_in_lecture_asks_is_in_the_registry():
    """The lecture format (core) checks a preset's name only for its shape; the registry is one layer up."""
    from viz_model.lectures import builtin_lectures

    asked = {(name, n, s.question.preset) for name, lec in builtin_lectures().items()
             for n, s in enumerate(lec.steps, 1) if s.question is not None and s.question.preset}
    assert not [a for a in asked if a[2] not in P.PRESETS], f"unknown presets: {asked}"
    for name, n, preset in asked:
        step = builtin_lectures()[name].steps[n - 1]
        assert P.PRESETS[preset].page == step.page, (name, n, preset)  # asked on its own page
        ask = P.compute(preset, P.Inputs(model(step.params.get("model_key", "classroom")), step.params, model))
        assert 2 <= len(ask.choices) <= MAX_CHOICES, (name, n, preset)  # the step's own view can be asked about
