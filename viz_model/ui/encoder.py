"""Streamlit glue for the Encoder page: the encoder picker, masks to fill in, attention with the masks outlined,
'the bank by the river' on an encoder and a causal decoder, why masked LM, and the held-out metrics."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from viz_model import checkpoint, data
from viz_model.checkpoint import Checkpoint
from viz_model.figures.common import escape
from viz_model.figures.encoder import fill_in_bars, look_ahead_bars, masked_attention_grid, masked_attention_heatmap
from viz_model.lecture import LECTURE_SENTENCES
from viz_model.lessons import encoder as lesson
from viz_model.mlm import mask_words, run_masked
from viz_model.tokenizer import BOS, EOS, MASK, UNK, Encoded
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, cached_trace, input_key, model_id
from viz_model.ui.errors import section
from viz_model.ui.models import ModelEntry, available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY
from viz_model.ui.widgets import CUSTOM, check_line, layer_head, train_ablation_button, uses_bos

SHIPPED = "encoder-mlm"   # the shipped masked-LM encoder
DECODER = "classroom"     # the shipped causal decoder it is compared with
BANK = next(s for s in LECTURE_SENTENCES if "bank" in s.lower())  # "The bank by the river"
QUERY, KEY = "bank", "river"
MAX_TOP_K = 10             # fill-ins computed per mask; the slider shows the first k
KEPT_MASKS = "encoder_kept_masks"  # {sentence digest: hidden word indices}, so coming back keeps them
MD_SPECIAL = set("\\`*_{}[]()#+-.!|<>~$:")
# (metadata key, what it measures, the quality bar)
METRICS = [
    ("agreement_number_top1", "Agreement across a distractor noun: the top-1 verb has the subject's number", "≥ 90 %"),
    ("agreement_pair_accuracy", "Agreement: p(right form) > p(its twin), e.g. are vs is", ""),
    ("pronoun_top1", "Pronoun fixed by its antecedent (gender, number, animacy): top-1 is right", "≥ 90 %"),
    ("random_mask_top1", "Random masked words (each word with p = 0.15): top-1 is the word", ""),
    ("random_mask_top5", "Random masked words: the word is among the top 5", ""),
]


def device() -> str:
    return st.session_state.get(DEVICE_KEY, "auto")


# -- which encoder ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _bidirectional(path: str, mtime: float) -> bool:
    """A TinyTransformer checkpoint trained without the causal mask (its JSON config says causal: false)."""
    try:
        doc = checkpoint.read_metadata(path)
    except (OSError, ValueError):
        return False
    return doc.get("kind", "transformer") == "transformer" and (doc.get("config") or {}).get("causal") is False


def encoder_entries() -> list[ModelEntry]:
    """Shipped and this user's models that are encoders (bidirectional), the shipped one first."""
    found = [e for e in available_models(("transformer",))
             if e.path and Path(e.path).exists() and _bidirectional(e.path, Path(e.path).stat().st_mtime)]
    return sorted(found, key=lambda e: e.key != SHIPPED)


def pick_encoder() -> Checkpoint:
    """The shipped encoder (or a picker when this user has trained one too); a clear stop when there is none."""
    entries = encoder_entries()
    keys = [e.key for e in entries]
    if SHIPPED not in keys:
        st.warning(f"The shipped encoder **{SHIPPED}** is not installed (assets/models/{SHIPPED}.safetensors is "
                   f"missing), so the numbers on this page are not the trained encoder's. Build it with "
                   f"`.venv/bin/python scripts/build_assets.py {SHIPPED}`."
                   + (" Meanwhile the page runs an encoder of yours." if keys else ""))
        if not keys:
            st.stop()
    titles = {e.key: e.title for e in entries}
    key = keys[0] if len(keys) == 1 else share.select(st, "Encoder", keys, "encoder_model", format_func=titles.get)
    return load_model(key, device())


# -- the sentence and its masks -----------------------------------------------------------------------
def word_limit(ckpt: Checkpoint) -> int:
    """Tokens sentence_input may keep: the encoder reads <bos> words <eos> within its context length."""
    return ckpt.model.config.max_len - 1 if uses_bos(ckpt) else ckpt.model.config.max_len - 2


def words_of(enc: Encoded, ckpt: Checkpoint) -> tuple[list[str], list[str]]:
    """(what was typed, the vocabulary entry) per word, without the <bos> sentence_input put in front."""
    start = 1 if enc.pieces[:1] == [BOS] and uses_bos(ckpt) else 0
    return enc.tokens[start:], enc.pieces[start:]


def _md(text: str) -> str:
    """A token as literal text in a widget label (labels are Markdown: '*' or '<b>' must show as typed)."""
    return "".join("\\" + c if c in MD_SPECIAL else c for c in text)


def default_masks(words: list[str]) -> list[int]:
    """Hide an agreement verb if the sentence has one (is/are, was/were, ...), else the first noun after 'the'
    or 'a' (the cat, the bank), else the second word: a blank with words on both sides."""
    low = [w.lower() for w in words]
    verbs = [i for i, w in enumerate(low) if w in lesson.TWIN]
    nouns = [i + 1 for i, w in enumerate(low[:-1]) if w in ("the", "a") and low[i + 1].isalpha()]
    return (verbs or nouns or [min(1, len(words) - 1)])[:1]


def mask_picker(words: list[str], pieces: list[str]) -> list[int]:
    """Pills over the numbered words (numbers as in the charts, <bos> = 0); a fresh selection per sentence."""
    typed = [i for i, p in enumerate(pieces) if p == MASK]
    options = [i for i in range(len(words)) if i not in typed]
    def label(i: int) -> str:
        shown = f"{UNK} ({words[i]})" if pieces[i] == UNK else words[i]
        return f"{i + 1} {_md(shown)}"
    digest = input_key(words)[:10]
    kept = st.session_state.setdefault(KEPT_MASKS, {})  # the pills' state is dropped while another tab is open
    default = [i for i in kept.get(digest, [] if typed else default_masks(words)) if i in options]
    picked = st.pills("Words to hide (click several to mask them all at once)", options, format_func=label,
                      selection_mode="multi", default=default, key=f"encoder_masked_{digest}", **share.URL)
    kept.clear()
    kept[digest] = list(picked or [])
    if typed:
        st.caption(f"{len(typed)} `<mask>` typed in the sentence: the encoder fills those too.")
    return sorted(picked or [])


def masked_text(words: list[str], pieces: list[str], picked: list[int]) -> tuple[str, list[str | None]]:
    """The sentence the encoder reads (picked words -> <mask>) and the hidden word of each <mask>, in order
    (None for a <mask> typed in the text)."""
    text = mask_words(words, picked)
    answers = [pieces[i] if i in picked else None for i in range(len(words)) if i in picked or pieces[i] == MASK]
    return text, answers


def held_out_examples() -> None:
    """Buttons that put a held-out sentence (never trained on) into the box with its key word masked."""
    items = {"agreement": lesson.agreement_items(1)[0], "pronoun": lesson.pronoun_items(1)[0]}
    cols = st.columns(len(items) + 1)
    cols[0].caption("Held-out sentences the encoder never saw:")
    for col, (name, it) in zip(cols[1:], items.items()):
        text = mask_words(list(it.words), [it.index])
        col.button(f"{name}: {_md(text)}", key=f"encoder_try_{name}", on_click=_set_text, args=(text,))


def _set_text(text: str) -> None:
    st.session_state["encoder_text"] = text
    st.session_state["encoder_example"] = st.session_state["encoder_last_example"] = CUSTOM


# -- fill-ins -----------------------------------------------------------------------------------------
def masked_run(ckpt: Checkpoint, text: str) -> dict:
    """One traced encoder pass per exact (model, text), shared by every user: the top MAX_TOP_K fill-ins of each
    mask (the top-k slider then only cuts the list, without a pass)."""
    return cached("encoder_run", (input_key(model_id(ckpt), text, MAX_TOP_K),), lambda: _run(ckpt, text, MAX_TOP_K))


def _run(ckpt: Checkpoint, text: str, top_k: int) -> dict:
    run = run_masked(ckpt.model, ckpt.tokenizer, text, top_k=top_k, trace=True)
    unk = ckpt.tokenizer.token_to_id(UNK)
    tokens = [UNK if int(i) == unk else t for t, i in zip(run.tokens, run.ids.tolist())]
    attention = run.trace.stack("probs")[:, 0].numpy()  # (L, H, T, T)
    return dict(tokens=tokens, positions=run.mask_positions, fills=run.fills, probs=run.probs.numpy(),
                attention=attention, text=text)


@section("the fill-ins")  # the top-k slider reruns only this part of the page
def fill_ins(ckpt: Checkpoint, run: dict, answers: list[str | None]) -> None:
    """The top-k slider, each mask's top k fill-ins as bars, and the table of where the hidden words rank."""
    top_k = st.slider("Fill-ins shown per mask (top k)", 1, MAX_TOP_K, 5, key="encoder_topk", **share.URL)
    fills = [f[:top_k] for f in run["fills"]]
    fig = cached("encoder_fills", (input_key(model_id(ckpt), run["text"], top_k, answers),),
                 lambda: fill_in_bars(fills, run["positions"], answers,
                                      title=f"Top {top_k} fill-ins of each {escape(MASK)}"))
    chart.show(fig, key="encoder_fills", name="encoder_fill_ins")
    st.dataframe(fill_table(ckpt, run, answers), hide_index=True, width="stretch")


def fill_table(ckpt: Checkpoint, run: dict, answers: list[str | None]) -> pd.DataFrame:
    """Per mask: the top fill-in, and where the hidden word ranks among all V words."""
    rows = []
    for n, (pos, fills, p, ans) in enumerate(zip(run["positions"], run["fills"], run["probs"], answers)):
        i = None if ans is None else ckpt.tokenizer.token_to_id(ans)
        rows.append({"mask": f"{n + 1} (token {pos})", "top-1": fills[0][0], "p(top-1)": f"{fills[0][1]:.3f}",
                     "hidden word": "— (typed <mask>)" if ans is None else ans,
                     "p(hidden word)": "—" if i is None or ans == UNK else f"{p[i]:.3f}",
                     "its rank": ("not in the vocabulary" if ans == UNK else "—") if i is None or ans == UNK
                     else f"{int((p > p[i]).sum()) + 1} of {len(p)}"})
    return pd.DataFrame(rows)


# -- attention ----------------------------------------------------------------------------------------
def attention(ckpt: Checkpoint, run: dict) -> None:
    """Every head as a grid, then one head large (a fragment: the grid is not redrawn for another head)."""
    a, tokens, positions = run["attention"], run["tokens"], run["positions"]
    L, H, _, _ = a.shape
    chart.show(cached("encoder_grid", (input_key(model_id(ckpt), run["text"]),), lambda: masked_attention_grid(
        a, tokens, positions, title=f"{L} layers × {H} heads, no mask: every cell can be read")),
        key="encoder_grid", name="encoder_attention_grid")
    head_view(ckpt, run)


@section("the attention heatmaps")  # picking a layer or head reruns only this part
def head_view(ckpt: Checkpoint, run: dict) -> None:
    a, tokens, positions = run["attention"], run["tokens"], run["positions"]
    L, H, T, _ = a.shape
    key = input_key(model_id(ckpt), run["text"])
    c1, c2, _ = st.columns([1, 1, 2])
    layer, head = layer_head("encoder", L, H, where=(c1, c2))
    chart.show(cached("encoder_head", (key, layer, head), lambda: masked_attention_heatmap(
        a[layer, head], tokens, positions,
        title=f"Layer {layer}, head {head}: {escape(MASK)} rows solid, columns dotted")),
        key="encoder_head_map", name=f"encoder_attention_L{layer}_H{head}")
    for n, p in enumerate(positions):
        later, after = float(a[layer, head, p, p + 1:].sum()), T - 1 - p
        check_line(later > 0, f"`<mask>` {n + 1} (token {p}) puts {later:.3f} of its attention on the {after} "
                              f"token{'' if after == 1 else 's'} after it in this head: it reads both sides. A causal "
                              "decoder gets exactly 0 there.")
    st.caption(f"Row sums: max |1 − sum| = {float(np.abs(a.sum(-1) - 1).max()):.0e} over every head and query.")


# -- the bank by the river ----------------------------------------------------------------------------
def bank_ids(ckpt: Checkpoint, text: str) -> tuple[list[int], list[str], list[str]]:
    """<bos> + the sentence's word ids + <eos> in this checkpoint's own tokenizer (as the Fill-in tab and
    lesson.attention_weight read it), the labels, and the words it does not know."""
    words = data.source_words(text)
    unknown = [w for w in words if ckpt.tokenizer.token_to_id(w) is None]
    return (lesson.sentence_ids(ckpt.tokenizer, words), [BOS, *(UNK if w in unknown else w for w in words), EOS],
            unknown)


def _look(ckpt: Checkpoint, text: str) -> lesson.LookAhead:
    return cached("encoder_lookahead", (input_key(model_id(ckpt), text, QUERY, KEY),),
                  lambda: lesson.attention_weight(ckpt.model, ckpt.tokenizer, text, QUERY, KEY))


def look_ahead(enc: Checkpoint, dec: Checkpoint, text: str = BANK) -> None:
    """The same sentence on both models: what 'bank' attends to (bars) and the measured weight on 'river'."""
    sides = {"encoder (bidirectional)": enc, f"decoder “{DECODER}” (causal)": dec}
    runs = {name: bank_ids(ck, text) for name, ck in sides.items()}
    if len({tuple(labels) for _, labels, _ in runs.values()}) != 1 or any(u for *_, u in runs.values()):
        st.warning("The two models' tokenizers do not read this sentence the same way: "
                   + "; ".join(f"{n}: {' '.join(lab)}" for n, (_, lab, _) in runs.items()))
    L = min(ck.model.config.n_layers for ck in sides.values())
    H = min(ck.model.config.n_heads for ck in sides.values())
    looks = {name: _look(ck, text) for name, ck in sides.items()}
    best = np.unravel_index(int(looks[next(iter(sides))].weight[:L, :H].argmax()), (L, H))
    # Open on the encoder's head that reads "river" most, as the pickers' default (not a session_state value set
    # before them): then every other choice, "mean of the heads" too, is written to the link and a link wins.
    c1, c2, _ = st.columns([1, 1, 2])
    layer, head = layer_head("encoder_bank", L, H, where=(c1, c2), default=(int(best[0]), int(best[1])),
                             heads=["mean", *range(H)],
                             format_func=lambda h: "mean of the heads" if h == "mean" else str(h))
    st.caption("Opened on the encoder head that puts the most weight on “river”; the checks below cover every head.")
    rows = {name: _row(ck, runs[name][0], looks[name].query_index, layer, head) for name, ck in sides.items()}
    top = min(1.0, 1.25 * max(float(r.max()) for r, _ in rows.values())) + 0.02  # one y scale for both charts
    for col, (name, ck), tag in zip(st.columns(2), sides.items(), ("encoder", "decoder")):
        with col:
            _side(name, ck, runs[name], looks[name], rows[name], top, (layer, head), tag)
    _look_checks(looks, list(sides))


def _row(ck: Checkpoint, ids: list[int], q: int, layer: int, head) -> tuple[np.ndarray, np.ndarray]:
    """The query's attention over every key (one head or the heads' mean) and which keys it may read."""
    tr = cached_trace(ck.model, model_id(ck), tuple(ids))
    probs = tr["probs"][layer]                                           # (H, T, T)
    return (probs.mean(0)[q] if head == "mean" else probs[head, q]), tr["allowed"][q]  # (T,), (T,)


def _side(name: str, ck: Checkpoint, run: tuple, look: lesson.LookAhead, row: tuple, top: float, where: tuple,
          tag: str) -> None:
    """One model's bars for the query's row and its measured weight on the key (layer, head or the heads' mean)."""
    ids, labels, _ = run
    (layer, head), (weights, allowed) = where, row
    w = look.weight[layer].numpy()                                       # (H,) the lesson's measurement
    shown = float(w.mean() if head == "mean" else w[head])
    which = "mean of the heads" if head == "mean" else f"head {head}"
    st.markdown(f"**{name}**")
    chart.show(cached("encoder_bank", (model_id(ck), tuple(ids), layer, head, top), lambda: look_ahead_bars(
        weights, labels, look.query_index, look.key_index, allowed=allowed, ymax=top,
        title=f"What “{QUERY}” reads, layer {layer}, {which}")), key=f"encoder_bank_{tag}", name=f"bank_river_{tag}")
    st.metric(f"weight of “{QUERY}” on “{KEY}” ({which})", f"{shown:.4f}" if shown else "0 (exactly)")


def _look_checks(looks: dict[str, lesson.LookAhead], names: list[str]) -> None:
    enc, dec = (looks[n].weight.numpy() for n in names)                   # (L, H) each
    L, H = enc.shape
    l, h = np.unravel_index(int(enc.argmax()), enc.shape)
    check_line(float(enc.min()) > 0, f"Encoder: “{QUERY}” can read “{KEY}” in every head: up to {enc.max():.3f} of its "
                                     f"attention (layer {l}, head {h}), {enc.mean():.3f} on average over the "
                                     f"{L * H} heads, and no head gives it exactly 0 (smallest {enc.min():.2g}).")
    check_line(float(dec.max()) == 0.0, f"Causal decoder: “{QUERY}” puts exactly {float(dec.max()):g} on “{KEY}” in "
                                        f"all {dec.size} heads: “{KEY}” comes later, so the mask hides it.")
    with st.expander("Every layer and head, measured"):
        c1, c2 = st.columns(2)
        for col, name, w in ((c1, names[0], enc), (c2, names[1], dec)):
            col.markdown(f"**{name}**: weight of “{QUERY}” on “{KEY}”")
            col.dataframe(pd.DataFrame(w, index=[f"layer {i}" for i in range(w.shape[0])],
                                       columns=[f"head {j}" for j in range(w.shape[1])]).map(lambda x: f"{x:.4f}"),
                          width="stretch")


# -- why masked LM ------------------------------------------------------------------------------------
def why_mlm() -> None:
    st.markdown(
        "An encoder has no causal mask: position *t* can read token *t + 1*. Trained to predict the next word, it "
        "would simply **copy** the next word from its input: the loss collapses towards zero and nothing is "
        "learned about language. Masked language modelling closes that shortcut. About 15 % of the words are "
        "chosen; of those, 80 % become `<mask>`, 10 % a random word and 10 % stay as they were, and the loss counts "
        "only the chosen positions. The word to predict is not in the input, so the model has to infer it from "
        "**both** sides.")
    train_ablation_button("causal mask", "See it on the Train page: Compare setups → causal mask", "encoder_to_train")
    st.caption("That ablation trains the same model twice, with and without the causal mask, on next-token "
               "prediction: the no-mask loss falls far below the causal one by reading the future, and its greedy "
               "text falls apart once the future is not there to read.")


# -- held-out metrics ---------------------------------------------------------------------------------
@st.cache_data(max_entries=8, show_spinner=False)
def live_metrics(_ckpt: Checkpoint, model_key: str) -> dict:
    return lesson.heldout_metrics(_ckpt.model, _ckpt.tokenizer)


def metrics(ckpt: Checkpoint) -> None:
    meta = ckpt.metadata or {}
    st.markdown("Measured on sentences the encoder never trained on: held-out agreement sentences "
                "(*the keys near the dog `<mask>` ready*), pronoun sentences (*the queen thanked the man because "
                "`<mask>` …*), and the held-out corpus with random words masked.")
    mid = model_id(ckpt)
    flag = f"encoder_live_{input_key(mid)}"
    if st.button("Recompute on this server", key="encoder_recompute", icon=":material/refresh:"):
        st.session_state[flag] = True
    live = None
    if st.session_state.get(flag):
        with st.spinner("Scoring the held-out sentences…"):
            live = live_metrics(ckpt, mid)
    rows = [{"measure": what, "recorded when trained": _pct(meta.get(key)),
             "recomputed now": _pct(live.get(key)) if live else "press the button", "target": bar}
            for key, what, bar in METRICS]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    structural(meta.get("structural"))
    if all(meta.get(k) is None for k, *_ in METRICS):
        st.info("This model's metadata records no held-out metrics (only the shipped encoder has them): press "
                "the button to measure them.")
    if live:
        st.caption(f"On {live['n_agreement']} agreement sentences, {live['n_pronoun']} pronoun sentences and "
                   f"{live['n_random_masked']} randomly masked words of the held-out corpus.")
        same = all(meta.get(k) is None or abs(meta[k] - live[k]) < 1e-9 for k, *_ in METRICS)
        check_line(same, "The recomputed numbers equal the ones recorded when the model was saved."
                   if same else "The recomputed numbers differ from the recorded ones: the weights or the data "
                                "changed since the model was saved.")


def structural(shapes: dict | None) -> None:
    """The metadata's fill-ins on grammar sentences of skeletons the encoder trained on and of skeletons kept out."""
    if not shapes:
        return
    st.markdown("On new sentences of the toy grammar, by their *skeleton* (word classes, DET ADJ NOUN VERB …): "
                "shapes the encoder trained on, and shapes kept out of training altogether.")
    keys = (("agreement_number_top1", "agreement: top-1 verb has the subject's number"),
            ("agreement_pair_accuracy", "agreement: is beats are (and each pair)"), ("pronoun_top1", "pronoun: top-1"))
    rows = [{"measure": what, **{f"{split} skeletons": _pct(shapes[split][key]) for split in ("seen", "unseen")
                                 if split in shapes}} for key, what in keys]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def _pct(x) -> str:
    return "—" if x is None else f"{100 * float(x):.1f} %"


def decoder() -> Checkpoint | None:
    """The shipped causal decoder, or None when it is not installed."""
    keys = {e.key for e in available_models(("transformer",))}
    return load_model(DECODER, device()) if DECODER in keys else None
