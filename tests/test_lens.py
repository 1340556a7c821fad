"""#40 item 1, the logit lens (viz_model.lessons.lens): each layer's residual stream through the model's own final norm
and unembedding, checked against a second path written here (forward hooks on the blocks of a plain forward, the
model's own logits) and against transformers' output_hidden_states on random GPT-2, Llama and Qwen2 folders; what the
page keeps (top-k, the final prediction's rank) against a plain loop; the sentences and the question's choices."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
import torch
from conftest import ROOT, plotly_array

from viz_model.checkpoint import load_checkpoint
from viz_model.figures import lens as figs
from viz_model.lessons import lens
from viz_model.model_text import encode_for

SENTENCE = "The trophy didn't fit in the suitcase because it was too big"


@pytest.fixture(scope="module")
def models():
    return {name: load_checkpoint(ROOT / "assets" / "models" / f"{name}.safetensors") for name in ("english",
                                                                                                  "classroom")}


def hooked_streams(model, ids) -> list[torch.Tensor]:
    """The residual stream a second way: a plain forward (no trace at all), each block's output caught by a forward
    hook, the embeddings from tok_emb (x sqrt(d) where the model scales) plus the positional input."""
    outs = []
    hooks = [b.register_forward_hook(lambda m, i, o: outs.append(o[0][0].detach())) for b in model.blocks]
    x = torch.tensor([ids])
    try:
        with torch.no_grad():
            model.eval()(x)
    finally:
        for h in hooks:
            h.remove()
    cfg = model.config
    with torch.no_grad():
        emb = model.tok_emb(x)[0] * (math.sqrt(cfg.d_model) if cfg.embed_scale else 1.0)
        emb = emb + model.positional_input(torch.arange(len(ids)))
    return [emb, *outs]


def by_hand(model, ids, logits: bool = False) -> torch.Tensor:
    """(rows, T, vocab): every stream of hooked_streams through ln_f and head (logits, or a float64 softmax)."""
    with torch.no_grad():
        z = torch.stack([model.head(model.ln_f(h)).double() for h in hooked_streams(model, ids)])
    return z if logits else torch.softmax(z, -1)


@pytest.mark.parametrize("name", ["english", "classroom"])
def test_logit_lens_is_each_blocks_stream_through_ln_f_and_head_and_its_last_row_is_the_output(models, name):
    ck = models[name]
    ids = encode_for(ck, SENTENCE, bos=True).ids
    lensed = lens.logit_lens(ck.model, ids)
    cfg = ck.model.config
    assert lensed.shape == (cfg.n_layers, len(ids), cfg.vocab_size)
    ref = by_hand(ck.model, ids)
    assert (lensed.double() - ref[1:]).abs().max() <= 1e-5
    with torch.no_grad():
        own = torch.softmax(ck.model(torch.tensor([ids])).logits[0].double(), -1)
    assert (lensed[-1].double() - own).abs().max() <= 1e-5
    # and the early rows are not the output: the check below would mean nothing if every row were the same
    assert (lensed[0].double() - own).abs().max() > 0.05


@pytest.mark.parametrize("name", ["english", "classroom"])
def test_lens_view_keeps_the_top_k_and_the_final_predictions_rank_as_a_plain_loop_counts_them(models, name):
    ck = models[name]
    ids = encode_for(ck, SENTENCE, bos=True).ids
    view = lens.lens_view(ck.model, ids, k=5)
    ref, z = by_hand(ck.model, ids), by_hand(ck.model, ids, logits=True)  # (rows, T, V)
    R, T, _ = ref.shape
    assert view.top_ids.shape == (R, T, 5) and view.final_rank.shape == (R, T)
    final = ref[-1].argmax(-1)
    assert view.final_ids.tolist() == final.tolist()
    for r in range(R):
        for t in range(T):
            row = ref[r, t].numpy()
            order = sorted(range(len(row)), key=lambda j: -row[j])
            assert abs(view.top_p[r, t, 0] - row[order[0]]) <= 1e-5
            assert np.allclose(view.top_p[r, t], row[view.top_ids[r, t]], atol=1e-5)  # the ids carry their p
            assert row[view.top_ids[r, t, -1]] >= row[order[5]] - 1e-6                 # and they are the top 5
            zf = float(z[r, t, final[t]])
            above = [float(x) for x in z[r, t] if x > zf - 1e-4]  # every logit above it, and near-ties within 1e-4
            want = 1 + sum(1 for x in above if x > zf + 1e-4)
            assert want <= int(view.final_rank[r, t]) <= len(above), (r, t)  # a near-tie may fall either way
            assert abs(view.final_p[r, t] - row[final[t]]) <= 1e-5
    assert (view.final_rank[-1] == 1).all()
    (check,) = lens.lens_claims(view)
    assert check.ok and check.error <= lens.LENS_TOL and "own output distribution" in check.claim


def test_sentences_and_the_questions_answer_follow_the_ranks(models):
    ck = models["english"]
    enc = encode_for(ck, SENTENCE, bos=True)
    view = lens.lens_view(ck.model, enc.ids)
    label = lambda i: f"tok{i}"  # noqa: E731
    for pos in range(len(enc.ids)):
        first = lens.first_top(view, pos)
        assert view.final_rank[first, pos] == 1 and (view.final_rank[:first, pos] > 1).all()
        said = lens.position_sentence(view, pos, enc.tokens, label)
        assert f"tok{view.final_ids[pos]}" in said
        if first == view.n_rows - 1:
            assert "only at the last layer" in said and f"best rank is {int(view.final_rank[:-1, pos].min()):,}" in said
        else:
            assert ("the embeddings" if first == 0 else f"layer {first - 1}") in said
    echo = int((view.top_ids[0, :, 0] == np.asarray(enc.ids)).sum())
    assert f"at {echo} of {len(enc.ids)} position(s)" in lens.embedding_sentence(view, enc.ids, True, label)
    odd = lens.position_sentence(view, 1, ["<b>", "*x*"], lambda i: "<b>x</b>")  # tokens in Markdown: as typed
    assert "`<b>x</b>`" in odd and "`*x*`" in odd
    shares = lens.agreement(view)
    assert shares[-1] == 1.0 and len(shares) == view.n_rows


def test_row_groups_are_one_choice_per_row_up_to_16_then_runs_of_neighbours():
    assert [g for g, _ in lens.row_groups(5)] == ["embeddings", "layer 0", "layer 1", "layer 2", "layer 3"]
    groups = lens.row_groups(33)  # a 32-layer model
    assert len(groups) == 16 and sum((rows for _, rows in groups), []) == list(range(33))
    assert groups[0][0] == "embeddings – layer 1" and groups[-1][0] == "layer 30 – layer 31"


def test_max_tokens_cuts_to_the_view_and_refuses_a_model_too_large_for_the_budget():
    cfg = types.SimpleNamespace(n_layers=12, vocab_size=50257, max_len=1024)
    assert lens.max_tokens(types.SimpleNamespace(config=cfg)) == lens.MAX_T  # GPT-2 small fits 64 tokens
    big = types.SimpleNamespace(n_layers=80, vocab_size=1_000_000, max_len=4096)
    with pytest.raises(ValueError, match="too large for the logit lens"):
        lens.max_tokens(types.SimpleNamespace(config=big))
    with pytest.raises(ValueError, match="at least one word"):
        lens.streams(None, [])


def test_the_map_writes_each_cells_top_token_escaped_and_hovers_the_top_5():
    p = np.array([[[0.6, 0.2, 0.1, 0.05, 0.05], [0.9, 0.05, 0.03, 0.01, 0.01]]] * 2)  # (2 rows, 2 positions, 5)
    text = [[["<b>x</b>", "a", "b", "c", "d"], [" ", "e", "f", "g", "h"]]] * 2
    fig = figs.top_token_map(p, text, ["<i>", "cat"], ["embeddings", "layer 0"]).to_dict()
    (hm,) = fig["data"]
    assert hm["text"][0][0] == "&lt;b&gt;x&lt;/b&gt;" and hm["text"][0][1] == "␣"
    assert np.allclose(plotly_array(hm["z"], float), p[:, :, 0])
    assert "input &lt;i&gt;" in hm["hovertext"][0][0] and "d 5.0%" in hm["hovertext"][0][0]
    assert fig["layout"]["yaxis"]["ticktext"] == ["embeddings", "layer 0"]
    assert fig["layout"]["xaxis"]["ticktext"] == ["0 &lt;i&gt;", "1 cat"]
    rank = figs.rank_curve([300, 20, 1], [0.001, 0.05, 0.7], ["embeddings", "layer 0", "layer 1"], "<eos>", "2 big",
                           8192).to_dict()
    assert rank["layout"]["yaxis"]["type"] == "log"
    assert plotly_array(rank["data"][0]["y"], float).tolist() == [300, 20, 1]
    assert "&lt;eos&gt; is rank 300 of 8,192" in rank["data"][0]["hovertext"][0]


# -- Hugging Face folders: the lens against transformers' own hidden states -------------------------------------
@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    from test_hf import BUILDERS

    from viz_model import hf

    out = {}
    for i, name in enumerate(("gpt2", "llama", "qwen2")):
        torch.manual_seed(i)
        folder = tmp_path_factory.mktemp(name)
        ref = BUILDERS[name](folder)
        out[name] = (ref, hf.read_hf_folder(folder))
    return out


def hf_lens(ref, ids) -> list[torch.Tensor]:
    """transformers' side: hidden_states[i] (i < L) is the stream entering block i, read through the reference's own
    final norm and lm_head; the last row is its logits (its last hidden state has the final norm applied already)."""
    with torch.no_grad():
        out = ref(ids, output_hidden_states=True)
        base = ref.transformer if hasattr(ref, "transformer") else ref.model
        norm = base.ln_f if hasattr(base, "ln_f") else base.norm
        rows = [torch.softmax(ref.lm_head(norm(h)).double(), -1)[0] for h in out.hidden_states[:-1]]
        return [*rows, torch.softmax(out.logits.double(), -1)[0]]


@pytest.mark.parametrize("name", ["gpt2", "llama", "qwen2"])
def test_the_lens_on_a_folder_model_matches_transformers_hidden_states_read_the_same_way(zoo, name):
    ref, ck = zoo[name]
    ids = torch.randint(0, ck.model.config.vocab_size, (1, 20), generator=torch.Generator().manual_seed(3))
    want = hf_lens(ref, ids)
    hs, _ = lens.streams(ck.model, ids[0].tolist())
    got = [lens.read_out(ck.model, h).double() for h in hs]
    assert len(got) == len(want) == ck.model.config.n_layers + 1
    for r, (a, b) in enumerate(zip(got, want)):
        assert (a - b).abs().max() <= 1e-5, (name, r)
    view = lens.lens_view(ck.model, ids[0].tolist())
    assert lens.lens_claims(view)[0].ok
    assert view.final_ids.tolist() == want[-1].argmax(-1).tolist()


@pytest.mark.parametrize("settings", [{}, {"lens_pos": "3 · hy"}, {"lens_text": "The cat sat on the", "lens_pos": 2}])
def test_the_class_question_answers_the_first_row_whose_top_token_is_the_final_prediction(models, settings):
    from viz_model.lessons import presets as P

    ck = models["english"]
    p = P.compute("lens_first_top", P.Inputs(ck, settings))
    ids = encode_for(ck, settings.get("lens_text", SENTENCE), bos=True).ids
    pos = int(str(settings.get("lens_pos", len(ids) - 1)).split(" ")[0])
    ref = by_hand(ck.model, ids, logits=True)[:, pos]  # (rows, V)
    first = next(r for r in range(len(ref)) if int(ref[r].argmax()) == int(ref[-1].argmax()))
    assert p.choices == lens.row_names(ck.model.config.n_layers)
    assert p.answer["correct"] == [first] and f"(position {pos})" in p.prompt
    with pytest.raises(ValueError, match="on the Logit lens page"):
        P.compute("lens_first_top", P.Inputs(ck, {"lens_text": ""}))
