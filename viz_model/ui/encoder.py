"""Streamlit glue for the Encoder page: the encoder picker (the English encoder first), masks to fill in, attention
with the masks outlined, 'the bank by the river' on an encoder and a causal decoder, why masked LM, and the held-out
metrics."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from viz_model.checkpoint import TRANSFORMER, Checkpoint
from viz_model.figures.common import escape
from viz_model.figures.encoder import fill_in_bars, look_ahead_bars, masked_attention_grid, masked_attention_heatmap
from viz_model.lessons import encoder as lesson
from viz_model.lessons.encoder import ENGLISH, KEY, MAX_TOP_K, QUERY, SHIPPED, Blanks
from viz_model.model_text import md_text, uses_bos
from viz_model.tokenizer import BOS, MASK, UNK, Encoded
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, cached_trace, input_key, model_id
from viz_model.ui.errors import section
from viz_model.ui.models import ModelEntry, available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY
from viz_model.ui.widgets import CUSTOM, layer_head, show_checks, train_ablation_button

KEPT_MASKS = "encoder_kept_masks"  # {sentence digest: hidden word indices}, so coming back keeps them


def device() -> str:
    return st.session_state.get(DEVICE_KEY, "auto")


# -- which encoder ------------------------------------------------------------------------------------
def encoder_entries() -> list[ModelEntry]:
    """Shipped and this user's models that are encoders (bidirectional): the English encoder, the toy one, the rest."""
    found = [e for e in available_models((TRANSFORMER,))
             if e.path and Path(e.path).exists() and lesson.bidirectional(e.path, Path(e.path).stat().st_mtime)]
    return sorted(found, key=lambda e: (e.key != ENGLISH, e.key != SHIPPED))


def pick_encoder() -> tuple[str, Checkpoint]:
    """(key, model): the English encoder by default, named by what each encoder can read; a clear stop when there is
    none."""
    entries = encoder_entries()
    keys = [e.key for e in entries]
    for missing in (k for k in (ENGLISH, SHIPPED) if k not in keys):
        st.warning(lesson.missing_encoder_text(missing, bool(keys)))
    if not keys:
        st.stop()
    names = {e.key: lesson.encoder_name(e.key, e.title, load_model(e.key, device()).tokenizer) for e in entries}
    key = keys[0] if len(keys) == 1 else share.select(st, "Encoder", keys, "encoder_model", format_func=names.get,
                                                      help=lesson.PICKER_HELP)
    return key, load_model(key, device())


# -- the sentence and its masks -----------------------------------------------------------------------
def word_limit(ckpt: Checkpoint) -> int:
    """Tokens sentence_input may keep: the encoder reads <bos> words <eos> within its context length."""
    return ckpt.model.config.max_len - 1 if uses_bos(ckpt) else ckpt.model.config.max_len - 2


def words_of(enc: Encoded, ckpt: Checkpoint) -> tuple[list[int], list[str], list[str]]:
    """(id, what was typed, the vocabulary entry) per token, without the <bos> sentence_input put in front."""
    start = 1 if enc.pieces[:1] == [BOS] and uses_bos(ckpt) else 0
    return enc.ids[start:], enc.tokens[start:], enc.pieces[start:]


def mask_picker(words: list[str], pieces: list[str]) -> list[int]:
    """Pills over the numbered words (numbers as in the charts, <bos> = 0); a fresh selection per sentence."""
    typed = [i for i, p in enumerate(pieces) if p == MASK]
    options = [i for i in range(len(words)) if i not in typed]
    def label(i: int) -> str:
        shown = f"{UNK} ({words[i]})" if pieces[i] == UNK else words[i]
        return f"{i + 1} {md_text(shown)}"  # the pill is the token's box: its text escaped
    digest = input_key(words)[:10]
    kept = st.session_state.setdefault(KEPT_MASKS, {})  # the pills' state is dropped while another tab is open
    default = [i for i in kept.get(digest, [] if typed else lesson.default_masks(words)) if i in options]
    picked = st.pills("Words to hide (click several to mask them all at once)", options, format_func=label,
                      selection_mode="multi", default=default, key=f"encoder_masked_{digest}", **share.URL)
    kept.clear()
    kept[digest] = list(picked or [])
    if typed:
        st.caption(f"{len(typed)} `<mask>` typed in the sentence: the encoder fills those too.")
    return sorted(picked or [])


def held_out_examples(ckpt: Checkpoint) -> None:
    """Buttons that put a sentence with a word masked into the box (lesson.example_sentences: held-out ones)."""
    caption, items = lesson.example_sentences(ckpt.tokenizer)
    cols = st.columns(len(items) + 1)
    cols[0].caption(caption)
    for col, (name, text) in zip(cols[1:], items.items()):
        col.button(f"{name}: {md_text(text)}", key=f"encoder_try_{name}", on_click=_set_text, args=(text,))


def _set_text(text: str) -> None:
    st.session_state["encoder_text"] = text
    st.session_state["encoder_example"] = st.session_state["encoder_last_example"] = CUSTOM


# -- fill-ins -----------------------------------------------------------------------------------------
def masked_run(ckpt: Checkpoint, b: Blanks) -> dict:
    """One traced encoder pass per exact (model, ids), shared by every user: the top MAX_TOP_K fill-ins of each
    mask (the top-k slider then only cuts the list, without a pass)."""
    return cached("encoder_run", (input_key(model_id(ckpt), b.ids, b.labels, MAX_TOP_K),),
                  lambda: lesson.masked_ids_run(ckpt.model, ckpt.tokenizer, b, MAX_TOP_K))


@section("the fill-ins")  # the top-k slider reruns only this part of the page
def fill_ins(ckpt: Checkpoint, run: dict, b: Blanks) -> None:
    """The top-k slider, each mask's top k fill-ins as bars, and the table of where the hidden words rank."""
    answers = list(b.answers)
    top_k = st.slider("Fill-ins shown per mask (top k)", 1, MAX_TOP_K, 5, key="encoder_topk", **share.URL)
    fills = [f[:top_k] for f in run["fills"]]
    fig = cached("encoder_fills", (input_key(model_id(ckpt), run["text"], top_k, answers),),
                 lambda: fill_in_bars(fills, run["positions"], answers,
                                      title=f"Top {top_k} fill-ins of each {escape(MASK)}"))
    chart.show(fig, key="encoder_fills", name="encoder_fill_ins")
    st.dataframe(pd.DataFrame(lesson.fill_rows(ckpt.tokenizer, run, answers, list(b.answer_ids))), hide_index=True,
                 width="stretch")


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
    L, H, _, _ = a.shape
    key = input_key(model_id(ckpt), run["text"])
    c1, c2, _ = st.columns([1, 1, 2])
    layer, head = layer_head("encoder", L, H, where=(c1, c2))
    chart.show(cached("encoder_head", (key, layer, head), lambda: masked_attention_heatmap(
        a[layer, head], tokens, positions,
        title=f"Layer {layer}, head {head}: {escape(MASK)} rows solid, columns dotted")),
        key="encoder_head_map", name=f"encoder_attention_L{layer}_H{head}")
    show_checks(lesson.both_sides_facts(a, layer, head, positions))
    st.caption(lesson.row_sum_text(a))


# -- the bank by the river ----------------------------------------------------------------------------
def look_ahead(enc: Checkpoint, dec: Checkpoint, dec_key: str, text: str = lesson.BANK) -> None:
    """The same sentence on both models: what 'bank' attends to (bars) and the measured weight on 'river'."""
    sides = {"encoder (bidirectional)": enc, f"decoder “{dec_key}” (causal)": dec}
    runs = {name: lesson.bank_ids(ck.tokenizer, text) for name, ck in sides.items()}
    if warning := lesson.reading_mismatch(runs):
        st.warning(warning)
    L = min(ck.model.config.n_layers for ck in sides.values())
    H = min(ck.model.config.n_heads for ck in sides.values())
    looks = {name: cached("encoder_lookahead", (input_key(model_id(ck), text, QUERY, KEY),),
                          lambda ck=ck: lesson.attention_weight(ck.model, ck.tokenizer, text, QUERY, KEY))
             for name, ck in sides.items()}
    best = lesson.best_head(looks[next(iter(sides))], L, H)
    # Open on the encoder's head that reads "river" most, as the pickers' default (not a session_state value set
    # before them): then every other choice, "mean of the heads" too, is written to the link and a link wins.
    c1, c2, _ = st.columns([1, 1, 2])
    layer, head = layer_head("encoder_bank", L, H, where=(c1, c2), default=best,
                             heads=["mean", *range(H)],
                             format_func=lambda h: "mean of the heads" if h == "mean" else str(h))
    st.caption("Opened on the encoder head that puts the most weight on “river”; the checks below cover every head.")
    traces = {name: cached_trace(ck.model, model_id(ck), tuple(runs[name][0])) for name, ck in sides.items()}
    rows = {name: lesson.query_row(tr["probs"][layer], tr["allowed"], looks[name].query_index, head)
            for name, tr in traces.items()}  # the query's attention over every key and which keys it may read
    top = lesson.y_top(rows.values())  # one y scale for both charts
    for col, (name, ck), tag in zip(st.columns(2), sides.items(), ("encoder", "decoder")):
        with col:
            _side(name, ck, runs[name], looks[name], rows[name], top, (layer, head), tag)
    _look_checks(looks, list(sides))


def _side(name: str, ck: Checkpoint, run: tuple, look: lesson.LookAhead, row: tuple, top: float, where: tuple,
          tag: str) -> None:
    """One model's bars for the query's row and its measured weight on the key (layer, head or the heads' mean)."""
    ids, labels, _ = run
    (layer, head), (weights, allowed) = where, row
    which, shown = lesson.shown_weight(look, layer, head)
    st.markdown(f"**{name}**")
    chart.show(cached("encoder_bank", (model_id(ck), tuple(ids), layer, head, top), lambda: look_ahead_bars(
        weights, labels, look.query_index, look.key_index, allowed=allowed, ymax=top,
        title=f"What “{QUERY}” reads, layer {layer}, {which}")), key=f"encoder_bank_{tag}", name=f"bank_river_{tag}")
    st.metric(f"weight of “{QUERY}” on “{KEY}” ({which})", shown)


def _look_checks(looks: dict[str, lesson.LookAhead], names: list[str]) -> None:
    show_checks(lesson.look_ahead_facts(*(looks[n] for n in names)))
    with st.expander("Every layer and head, measured"):
        for col, name in zip(st.columns(2), names):
            rows = lesson.weight_rows(looks[name])
            col.markdown(f"**{name}**: weight of “{QUERY}” on “{KEY}”")
            col.dataframe(pd.DataFrame(rows, index=[f"layer {i}" for i in range(len(rows))]), width="stretch")


# -- why masked LM ------------------------------------------------------------------------------------
def why_mlm() -> None:
    st.markdown(lesson.WHY_MLM)
    train_ablation_button("mask", "See it on the Train page: Compare setups → causal mask", "encoder_to_train")
    st.caption(lesson.ABLATION_TEXT)


# -- held-out metrics ---------------------------------------------------------------------------------
def metrics(ckpt: Checkpoint) -> None:
    """The held-out measurements recorded when the encoder was trained, recomputed here on the button: the English
    encoder's fill-ins against the unigram baseline, or a toy encoder's agreement, pronouns and random blanks."""
    meta = ckpt.metadata or {}
    st.markdown(lesson.metrics_text(meta))
    mid = model_id(ckpt)
    flag = f"encoder_live_{input_key(mid)}"
    if st.button("Recompute on this server", key="encoder_recompute", icon=":material/refresh:"):
        st.session_state[flag] = True
    live = None
    if st.session_state.get(flag):
        with st.spinner("Scoring the held-out sentences…"):
            live = cached("encoder_metrics", (mid,), lambda: lesson.live_metrics(ckpt.model, ckpt.tokenizer, meta),
                          model_pass=True)
    st.dataframe(pd.DataFrame(lesson.metric_table(meta, live)), hide_index=True, width="stretch")
    if shapes := meta.get("structural"):
        st.markdown(lesson.STRUCTURAL_TEXT)
        st.dataframe(pd.DataFrame(lesson.structural_rows(shapes)), hide_index=True, width="stretch")
    if lesson.records_nothing(meta):
        st.info(lesson.NO_METRICS_TEXT)
    if live and not lesson.is_fill_in(meta):
        st.caption(lesson.live_counts_text(live))
    show_checks(lesson.metric_facts(meta, live))
    if lesson.is_fill_in(meta):
        st.caption(lesson.TOY_METRICS_TEXT)


def decoder(key: str) -> tuple[str, Checkpoint | None]:
    """(its key, the shipped causal decoder this encoder is compared with), None when it is not installed."""
    dec = lesson.decoder_for(key)
    keys = {e.key for e in available_models((TRANSFORMER,))}
    return dec, (load_model(dec, device()) if dec in keys else None)
