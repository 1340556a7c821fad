"""Streamlit glue for the Masks page: gallery, padding, prefix proof, dependency map, permutation, quiz."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from viz_model import masks
from viz_model.checkpoint import Checkpoint
from viz_model.figures.masks import dependency_figure, mask_panels, row_sum_bars
from viz_model.lecture import PAD_BATCH, PERMUTATION
from viz_model.lessons import masks as lesson
from viz_model.lessons.common import Claim
from viz_model.lessons.masks import QUIZ
from viz_model.model_text import pad_token, uses_bos
from viz_model.tokenizer import PAD
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, cached_trace, input_key, mask_bits, model_id
from viz_model.ui.models import available_models, load_model
from viz_model.ui.widgets import encode_text, show_check, show_checks

GALLERY = {kind: row.label for kind, row in masks.MASKS.items()}  # the mask table's kinds, in its order
MAX_GALLERY_T = 16   # the custom editor and four panels stay readable up to here
MAX_DEP_T = 12       # one backward pass per output coordinate: bounded for a 2-core server


def gallery_mask(kind: str, T: int, prefix: str, ids: list[int], pad_id: int, pad_name: str = PAD,
                 tokens: list[str] | None = None) -> np.ndarray:
    """The (T, T) bool mask of the chosen kind, built by the mask table; its own controls (a slider per parameter,
    the editor) are drawn here. pad_id / pad_name: the model's own padding token (a model folder's may be an
    embedding row no text can produce)."""
    row = masks.MASKS[kind]
    inputs = {p.name: param_slider(p, T, prefix) for p in row.params}
    if row.needs == "real":
        inputs["real"] = np.array(ids) != pad_id
        if note := lesson.padding_note(bool(inputs["real"].all()), pad_id, pad_name):
            st.caption(note)
    elif row.needs == "cells":
        inputs["cells"] = custom_editor(T, prefix, tokens or [])
    return masks.build_mask(kind, T, **inputs).numpy()


def param_slider(param: masks.MaskParam, T: int, prefix: str) -> int:
    """One parameter of a mask kind as a URL-bound slider from its lowest value to T (the sentence's length)."""
    key = f"{prefix}_{param.key}"
    share.valid(key, range(param.low, T + 1), min(param.default, T))  # T follows the sentence
    return st.slider(param.label, param.low, T, min(param.default, T), key=key, help=param.help, **share.URL)


EDITOR_INDEX_W = 110  # px: the query column of the custom editor ("3 sat"; a longer token is cut, its cell says it)


def custom_editor(T: int, prefix: str, tokens: list[str]) -> np.ndarray:
    """A T x T grid of checkboxes (rows = query, columns = key, each labelled by its position and token), starting
    from the causal mask."""
    labels = [f"{i} {t}" for i, t in enumerate(tokens[:T])] + [str(i) for i in range(len(tokens), T)]
    start = pd.DataFrame(masks.causal_mask(T).numpy(), columns=labels, index=labels)
    config = {c: st.column_config.CheckboxColumn(c, width="small") for c in labels}
    config["_index"] = st.column_config.TextColumn("query ↓ key →", width=EDITOR_INDEX_W)
    edited = st.data_editor(start, key=f"{prefix}_custom_{T}", width="stretch", column_config=config)
    st.caption(lesson.CUSTOM_EDITOR)
    return edited.to_numpy(dtype=bool, copy=True)  # writable: torch warns on a read-only array


def gallery(ckpt: Checkpoint, ids: list[int], tokens: list[str], kind: str, allowed: np.ndarray,
                   layer: int, head: int) -> None:
    """Run the live model under the mask; the four panels; ✓ on blocked weight and row sums."""
    bits = mask_bits(allowed)
    data = cached_trace(ckpt.model, model_id(ckpt), tuple(ids), bits)
    eff_allowed = data["allowed"]  # what the model really used (empty rows get their own key)
    s, p = data["scores"][layer, head], data["probs"][layer, head]
    key = (input_key(model_id(ckpt), ids, tokens, bits), kind, layer, head)  # figures built once per exact view
    chart.show(cached("mask_panels", key, lambda: mask_panels(
        eff_allowed, s, p, tokens, title=f"{GALLERY[kind]} mask, layer {layer} head {head}")),
               key="masks_panels", name=f"mask_{kind}_L{layer}_H{head}")
    if (eff_allowed != allowed).any():
        st.info("Some rows had no allowed key, so the model let those queries attend to themselves.")
    show_checks(lesson.gallery_claims(p, eff_allowed))
    additive_vs_multiply(s, eff_allowed, tokens, key)


def show_said(claims: list[Claim], note: str | None, say=st.info) -> None:
    """A lesson's claims, then the note it gives where a claim does not apply."""
    show_checks(claims)
    if note:
        say(note)


def additive_vs_multiply(scores: np.ndarray, allowed: np.ndarray, tokens: list[str], key: tuple) -> None:
    st.subheader("Why add −∞ instead of multiplying by 0?")
    eff = lesson.mask_effects(scores, allowed)
    chart.show(cached("row_sums", key, lambda: row_sum_bars(eff.row_sums, eff.row_sums_multiplied, tokens)),
               key="masks_rowsums", name="row_sums_additive_vs_multiply")
    show_said(*lesson.effects_claims(eff, allowed))


def padding(ckpt: Checkpoint) -> None:
    encs = [encode_text(ckpt, s, bos=uses_bos(ckpt), specials=(PAD,), notice=False)  # the lecture's row has pads
            for s in PAD_BATCH]
    pad_id, pad_name = pad_token(ckpt)
    seqs = [(e.ids, e.tokens) for e in encs]
    tables = cached("masks_padding", (input_key(model_id(ckpt), seqs, pad_id),),  # two passes: once per server
                    lambda: lesson.padding_tables(ckpt.model, seqs, pad_id, pad_name), model_pass=True)
    # one above the other, each the page's width: side by side, the loss mask was cut at the right, <pad> cells hidden
    st.markdown(f"**Key mask** — which keys may be read (✗ = `{pad_name}`, blocked in every row)")
    st.dataframe(pd.DataFrame.from_dict(tables.key_rows, orient="index"), width="stretch", key="masks_key_mask")
    st.markdown("**Loss mask** — which next-token targets count in the loss")
    st.dataframe(pd.DataFrame.from_dict(tables.loss_rows, orient="index"), width="stretch", key="masks_loss_mask")
    show_checks(tables.claims)
    st.caption(lesson.PADDING_NOTE)


def cached_prefix(ckpt: Checkpoint, ids: tuple[int, ...], masked: bool) -> np.ndarray:
    return cached("masks_prefix", (input_key(model_id(ckpt), ids), masked),
                  lambda: lesson.prefix_runs(ckpt.model, list(ids), masked), model_pass=True,
                  spinner="Running every prefix…")


def prefix_runs(ckpt: Checkpoint, ids: list[int], tokens: list[str]) -> None:
    causal, free = cached_prefix(ckpt, tuple(ids), True), cached_prefix(ckpt, tuple(ids), False)
    st.dataframe(pd.DataFrame(lesson.prefix_columns(tokens, causal, free)).set_index("position").T, width="stretch")
    show_said(*lesson.prefix_claims(causal, free))


def cached_dependency(ckpt: Checkpoint, ids: tuple[int, ...], masked: bool) -> np.ndarray:
    return cached("masks_dependency", (input_key(model_id(ckpt), ids), masked),
                  lambda: lesson.dependency_runs(ckpt.model, list(ids), masked), model_pass=True,
                  spinner="Differentiating every output by every input…")


def dependency(ckpt: Checkpoint, ids: list[int], tokens: list[str]) -> None:
    if too_big := lesson.dependency_cost(ckpt.model, min(len(ids), MAX_DEP_T)):
        st.info(too_big)
        return
    ids, tokens = ids[:MAX_DEP_T], tokens[:MAX_DEP_T]
    c1, c2 = st.columns(2)
    for col, masked, name in ((c1, True, "causal mask"), (c2, False, "no mask")):
        j = cached_dependency(ckpt, tuple(ids), masked)
        chart.show(dependency_figure(j, tokens, title=f"‖∂h_t/∂e_s‖, {name}"),
                   key=f"masks_dep_{masked}", name=f"dependency_{name.replace(' ', '_')}", container=col)
        if masked:
            show_check(lesson.causal_dependence(j))  # below both columns, as every check line
        else:
            col.caption(lesson.free_dependence(j))


def cached_permutation(ckpt: Checkpoint, masked: bool) -> float:
    """Distance between the final vectors of 'report' in the two orders (with <bos> if the model was trained so)."""
    a, b = (encode_text(ckpt, s, bos=uses_bos(ckpt)).ids for s in PERMUTATION)
    return cached("masks_permutation", (model_id(ckpt), masked), lambda: lesson.report_distance(
        ckpt.model, a, b, ckpt.tokenizer.token_to_id("report"), masked), model_pass=True)


def permutation() -> None:
    available, distances = {e.key for e in available_models()}, {}
    for key in (k for k in lesson.POSITION_MODELS if k in available):
        ck = load_model(key, st.session_state.get("device_key", "auto"))
        distances[key] = {masked: cached_permutation(ck, masked) for masked in (False, True)}
    st.dataframe(pd.DataFrame(lesson.permutation_rows(distances)), hide_index=True, width="stretch")
    show_said(*lesson.permutation_claims(distances), say=st.warning)
    st.caption(lesson.MASK_VS_POSITION)


def quiz() -> None:
    for n, (question, options, *_) in enumerate(QUIZ):
        with st.container(border=True):
            choice = st.radio(question, options, index=None, key=f"masks_quiz_{n}")
            if choice is not None:
                show_check(lesson.quiz_answer(n, options.index(choice)))
