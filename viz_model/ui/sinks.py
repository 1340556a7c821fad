"""The Attention sinks page's views: the first token's share per head, the loss without it, and the streaming KV
cache experiment (lessons.sinks computes and words them; figures.sinks draws them)."""

from __future__ import annotations

import streamlit as st

from viz_model.figures import sinks as figs
from viz_model.lessons import sinks as lesson
from viz_model.ui import share
from viz_model.ui.cache import cached, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.widgets import answer_hidden, answer_line, row, show_checks


def _heldout(ckpt, source: str) -> list[list[int]]:
    return cached("sinks_heldout", (model_id(ckpt), source), lambda: lesson.heldout_ids(ckpt, source),
                  model_pass=True)


@section("the first token's share per head")
def share_view(ckpt, source: str) -> None:
    seqs = _heldout(ckpt, source)
    key = (model_id(ckpt), source)
    share_ = cached("sinks_share", key, lambda: lesson.first_token_share(ckpt.model, seqs), model_pass=True,
                    spinner="Measuring every head on held-out text…")
    first = lesson.first_label(ckpt, seqs)
    show(cached("sinks_share_fig", key, lambda: figs.share_heatmap(
        share_, first, lesson.SHARE_TITLE)), key="sinks_share_chart",
         name="sinks_share")
    st.caption(lesson.SHARE_CAPTION.format(n=len(seqs), source=lesson.SOURCES[source]))
    st.markdown(lesson.share_sentence(share_, first))


@section("the loss without the first token")
def loss_view(ckpt, source: str) -> None:
    st.markdown(lesson.LOSS_INTRO)
    seqs = _heldout(ckpt, source)
    key = (model_id(ckpt), source)
    cmp = cached("sinks_loss", key, lambda: lesson.loss_comparison(ckpt.model, seqs), model_pass=True,
                 spinner="Three passes over the held-out texts…")
    rows = lesson.loss_table(cmp)
    show(cached("sinks_loss_fig", key, lambda: figs.loss_bars(rows, lesson.LOSS_TITLE)),
         key="sinks_loss_chart", name="sinks_loss")
    st.dataframe(rows, hide_index=True, key="sinks_loss_table")
    st.markdown(lesson.loss_sentence(cmp))
    show_checks(cached("sinks_loss_claims", key, lambda: lesson.loss_claims(ckpt.model, seqs, cmp),
                       model_pass=True))


def _windows(max_len: int) -> tuple[list[int], list[int]]:
    """The window choices for this model and the default; a kept or linked window the model cannot take is
    dropped (the widget would show the default but leave the stale value in the link)."""
    options, default = lesson.window_choices(max_len), [lesson.default_window(max_len)]
    if isinstance(kept := st.session_state.get("sinks_windows"), list):
        st.session_state["sinks_windows"] = [w for w in kept if w in options]
    return options, default


def stream_settings(ckpt) -> tuple[str, float, list[int], int]:
    """The streaming experiment's controls, in the link: stream kind, length, windows, sinks kept."""
    options, default = _windows(ckpt.model.config.max_len)
    with row():
        kind = st.radio("Stream", list(lesson.STREAMS), format_func=lesson.STREAMS.get, key="sinks_stream",
                        help=lesson.STREAM_KIND_HELP, **share.URL)
        factor = st.select_slider("Length (× the context)", list(lesson.STREAM_FACTORS), value=lesson.DEFAULT_FACTOR,
                                  key="sinks_len", **share.URL)
    with row():
        windows = st.multiselect("Cache sizes W (tokens)", options, default=default, key="sinks_windows",
                                 help="Each size is one run over the stream (a few seconds each, then kept).",
                                 **share.URL)
        sinks = st.slider("First tokens kept (sinks)", 1, lesson.MAX_SINKS, lesson.DEFAULT_SINKS, key="sinks_n",
                          **share.URL)
    return kind, float(factor), sorted(windows), int(sinks)


@section("the streaming experiment")
def stream_view(ckpt, source: str) -> None:
    model = ckpt.model
    kind, factor, windows, sinks = stream_settings(ckpt)
    n_tokens = lesson.stream_tokens(factor, model.config.max_len)
    st.markdown(lesson.STREAM_INTRO.format(factor=n_tokens / model.config.max_len, n=n_tokens))
    if not lesson.streams_positions(model):
        st.info(lesson.NO_STREAM_POSITIONS.format(pos=lesson.POS_NAMES.get(model.config.pos_encoding, "its")))
        return
    if not windows:
        st.info("Pick at least one cache size W above.")
        return
    ids = cached("sinks_stream_ids", (model_id(ckpt), source, kind, n_tokens),
                 lambda: lesson.stream_ids(ckpt, source, kind, n_tokens), model_pass=True)
    results = []
    for i, w in enumerate(windows):  # one cached run per window: adding a size runs only that one
        # the default store, not model_pass: the class question reads the same entry (lessons.presets)
        results.append(cached("sinks_stream", lesson.stream_key(ckpt, source, kind, n_tokens, w, sinks),
                              lambda w=w: lesson.stream_experiment(model, ids, w, sinks),
                              spinner=f"Streaming {n_tokens} tokens through a cache of {w} ({i + 1} of "
                                      f"{len(windows)}); kept for everyone afterwards…"))
    k = lesson.running_k(n_tokens)
    show(cached("sinks_stream_fig", (model_id(ckpt), source, kind, n_tokens, tuple(windows), sinks, k),
                lambda: figs.stream_lines(results, k, lesson.STREAM_TITLE)),
         key="sinks_stream_chart", name="sinks_stream")
    st.caption(lesson.STREAM_CAPTION.format(k=k))
    if not answer_hidden("sinks_stream_table"):  # a class question on the caches: its numbers wait for Reveal
        st.dataframe(lesson.stream_rows(results), hide_index=True, key="sinks_stream_table")
    answer_line("sinks_stream_sentence", lesson.stream_sentence(results))
    if kind == "one":
        st.caption(lesson.ONE_TEXT_NOTE)
    show_checks(cached("sinks_stream_claims", (model_id(ckpt), source, kind, n_tokens, sinks),
                       lambda: lesson.stream_claims(model, ids, sinks), model_pass=True))
