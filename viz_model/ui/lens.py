"""The Logit lens page's views: the layers x positions map of the top token, the final prediction's rank at a picked
position, the live check and the sentences computed from the numbers (lessons.lens computes; one cached pass)."""

from __future__ import annotations

import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.figures import lens as figs
from viz_model.lessons import lens as lesson
from viz_model.model_text import token_texts
from viz_model.tokenizer import Encoded
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.widgets import answer_line, row, show_checks


def measure(ckpt: Checkpoint, ids: list[int]) -> tuple[str, lesson.LensView]:
    """The one model pass of the page (shared by every student on the same model and sentence)."""
    key = input_key(model_id(ckpt), tuple(ids))
    view = cached("lens_view", (key,), lambda: lesson.lens_view(ckpt.model, ids), model_pass=True,
                  spinner="Reading every layer through the final norm and the unembedding…")
    return key, view


def top_map(ckpt: Checkpoint, enc: Encoded, key: str, view: lesson.LensView) -> None:
    rows = lesson.row_names(view.n_rows - 1)
    fig = cached("lens_map", (key,), lambda: figs.top_token_map(
        view.top_p, lesson.top_texts(view, lambda ids: token_texts(ckpt, ids)), enc.tokens, rows,
        "The top next-token at each layer and position"))
    show(fig, key="lens_map", name="lens_map")
    st.caption(lesson.HEATMAP_NOTE)
    show_checks(lesson.lens_claims(view))
    st.markdown(lesson.embedding_sentence(view, enc.ids, ckpt.model.config.tie_weights, _label(ckpt)))
    st.caption(lesson.agreement_sentence(view))


def _label(ckpt: Checkpoint):
    return lambda i: token_texts(ckpt, [int(i)])[0]


@section("the rank of the final prediction")  # picking a position reruns only this view
def rank_view(ckpt: Checkpoint, enc: Encoded, key: str, view: lesson.LensView) -> None:
    T = len(enc.ids)
    pos = share.select(row(), "Position", range(T), "lens_pos", default=T - 1,
                       format_func=lambda i: f"{i} · {enc.tokens[i].strip() or enc.tokens[i]}",
                       help="The next token is predicted after this one (default: the last).")
    label = _label(ckpt)
    fig = cached("lens_rank", (key, pos), lambda: figs.rank_curve(
        view.final_rank[:, pos], view.final_p[:, pos], lesson.row_names(view.n_rows - 1),
        label(view.final_ids[pos]), f"“{enc.tokens[pos].strip() or enc.tokens[pos]}” ({pos})",
        ckpt.model.config.vocab_size))
    show(fig, key="lens_rank", name="lens_rank")
    answer_line("lens_rank_sentence", lesson.position_sentence(view, pos, enc.tokens, label))
    st.caption(lesson.RANK_NOTE)
