"""Streamlit glue for the Masks page: gallery, padding, prefix proof, dependency map, permutation, quiz."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from viz_model import masks
from viz_model.checkpoint import Checkpoint
from viz_model.figures.masks import dependency_figure, mask_panels, row_sum_bars
from viz_model.lecture import PAD_BATCH, PERMUTATION
from viz_model.lessons import masks as lesson
from viz_model.tokenizer import PAD
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, cached_trace, input_key, mask_bits, model_id
from viz_model.ui.models import available_models, load_model
from viz_model.ui.widgets import check_line, encode_text, pad_token, uses_bos

GALLERY = {kind: row.label for kind, row in masks.MASKS.items()}  # the mask table's kinds, in its order
MAX_GALLERY_T = 16   # the custom editor and four panels stay readable up to here
MAX_DEP_T = 12       # one backward pass per output coordinate: bounded for a 2-core server
MAX_DEP_PARAMS = 5_000_000  # T * d_model backward passes through the whole model: real checkpoints are too big
POSITION_MODELS = ("enc-none", "enc-sinusoidal", "enc-learned", "enc-rope")


def gallery_mask(kind: str, T: int, prefix: str, ids: list[int], pad_id: int, pad_name: str = PAD) -> np.ndarray:
    """The (T, T) bool mask of the chosen kind, built by the mask table; its own controls (a slider per parameter,
    the editor) are drawn here. pad_id / pad_name: the model's own padding token (a model folder's may be an
    embedding row no text can produce)."""
    row = masks.MASKS[kind]
    inputs = {p.name: param_slider(p, T, prefix) for p in row.params}
    if row.needs == "real":
        inputs["real"] = np.array(ids) != pad_id
        padding_notice(bool(inputs["real"].all()), pad_id, pad_name)
    elif row.needs == "cells":
        inputs["cells"] = custom_editor(T, prefix)
    return masks.build_mask(kind, T, **inputs).numpy()


def param_slider(param: masks.MaskParam, T: int, prefix: str) -> int:
    """One parameter of a mask kind as a URL-bound slider from its lowest value to T (the sentence's length)."""
    key = f"{prefix}_{param.key}"
    share.valid(key, range(param.low, T + 1), min(param.default, T))  # T follows the sentence
    return st.slider(param.label, param.low, T, min(param.default, T), key=key, help=param.help, **share.URL)


def padding_notice(no_pad: bool, pad_id: int, pad_name: str) -> None:
    if no_pad and pad_name == PAD:
        st.caption("No `<pad>` in this sentence: type one (e.g. the example *send report <PAD> <PAD>*) "
                   "to see its column blocked.")
    elif no_pad:
        st.caption(f"No pad in this sentence: this model pads with `{pad_name}` (id {pad_id}). The Padding tab "
                   "below pads a batch with it.")


def custom_editor(T: int, prefix: str) -> np.ndarray:
    """A T x T grid of checkboxes (rows = query, columns = key), starting from the causal mask."""
    cols = [f"k{j}" for j in range(T)]
    start = pd.DataFrame(masks.causal_mask(T).numpy(), columns=cols, index=[f"q{i}" for i in range(T)])
    edited = st.data_editor(start, key=f"{prefix}_custom_{T}", width="stretch",
                            column_config={c: st.column_config.CheckboxColumn(c, width="small") for c in cols})
    st.caption("Tick a cell to let query *i* (row) read key *j* (column). A row with no tick would have no key "
               "to read; the model then lets that query see itself so its softmax is defined.")
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
    blocked = float(np.abs(np.where(eff_allowed, 0.0, p)).max())
    rows = float(np.abs(p.sum(-1) - 1).max())
    check_line(blocked == 0.0 and rows < 1e-5, f"Blocked cells get weight exactly {blocked:g}; every row still "
                                               f"sums to 1 (max error {rows:.0e}).")
    additive_vs_multiply(s, eff_allowed, tokens, key)


def additive_vs_multiply(scores: np.ndarray, allowed: np.ndarray, tokens: list[str], key: tuple) -> None:
    st.subheader("Why add −∞ instead of multiplying by 0?")
    eff = lesson.mask_effects(torch.from_numpy(scores), torch.from_numpy(allowed))
    chart.show(cached("row_sums", key, lambda: row_sum_bars(eff.row_sums, eff.row_sums_multiplied, tokens)),
               key="masks_rowsums", name="row_sums_additive_vs_multiply")
    add_err = float((eff.row_sums - 1).abs().max())
    mul_min = float(eff.row_sums_multiplied.min())
    check_line(add_err < 1e-5, f"Additive −∞ before softmax: rows sum to 1 (max error {add_err:.0e}), blocked "
                               "weight is exactly 0.")
    if allowed.all():
        st.info("This mask blocks nothing, so multiplying changes nothing. Pick the causal mask to see the "
                "difference.")
    else:
        check_line(False, f"Multiplying softmax(S) by the 0/1 mask also zeroes blocked cells, but the rows no "
                          f"longer sum to 1 (smallest row sum {mul_min:.3f}): the weight that leaked to the future "
                          "is simply lost.")


def padding(ckpt: Checkpoint) -> None:
    tok, model = ckpt.tokenizer, ckpt.model
    encs = [encode_text(ckpt, s, bos=uses_bos(ckpt), specials=(PAD,), notice=False)  # the lecture's row has pads
            for s in PAD_BATCH]
    T = max(len(e.ids) for e in encs)
    pad_id, pad_name = pad_token(ckpt)
    ids = torch.tensor([[*e.ids, *[pad_id] * (T - len(e.ids))] for e in encs])  # (2, T)
    replacement = next(i for i in range(5, tok.get_vocab_size()) if i != pad_id) if tok.get_vocab_size() > 5 else 1
    chk = lesson.padding_check(model, ids, pad_id, replacement)
    labels = [[t for t in e.tokens] + [pad_name] * (T - len(e.ids)) for e in encs]
    key = pd.DataFrame([[("✓ " if m else "✗ ") + t for m, t in zip(row, lab)] for row, lab in
                        zip(chk.key_mask.tolist(), labels)], columns=[f"{j}" for j in range(T)],
                       index=["sentence 1", "sentence 2"])
    loss = pd.DataFrame([[f"{lab[t]} → {lab[t + 1]}: " + ("counts" if m else "ignored") for t, m in enumerate(row)]
                         for row, lab in zip(chk.loss_mask.tolist(), labels)],
                        columns=[f"{t}→{t + 1}" for t in range(T - 1)], index=["sentence 1", "sentence 2"])
    c1, c2 = st.columns(2)
    c1.markdown(f"**Key mask** — which keys may be read (✗ = `{pad_name}`, blocked in every row)")
    c1.dataframe(key, width="stretch")
    c2.markdown("**Loss mask** — which next-token targets count in the loss")
    c2.dataframe(loss, width="stretch")
    check_line(chk.max_diff < 1e-5, f"Replacing every `{pad_name}` by another token id ({replacement}) changes the "
                                    f"logits at the {chk.n_real} real positions by at most {chk.max_diff:.1e}: "
                                    "pads are invisible to real tokens.")
    st.caption("Here the pads come last, so in a causal model the causal mask alone already hides them from real "
               "tokens; the key mask is what protects encoders (bidirectional) and left-padded batches.")


@st.cache_data(max_entries=32, show_spinner="Running every prefix…")
def cached_prefix(_model, model_key: str, ids: tuple[int, ...], masked: bool) -> np.ndarray:
    T = len(ids)
    mask = None if masked else torch.ones(T, T, dtype=torch.bool)
    return lesson.prefix_check(_model, list(ids), mask).numpy()


def prefix_runs(ckpt: Checkpoint, ids: list[int], tokens: list[str]) -> None:
    causal = cached_prefix(ckpt.model, model_id(ckpt), tuple(ids), True)
    free = cached_prefix(ckpt.model, model_id(ckpt), tuple(ids), False)
    st.dataframe(pd.DataFrame({"position": range(len(ids)), "token": tokens,
                               "causal: max |full − prefix|": [f"{x:.1e}" for x in causal],
                               "no mask: max |full − prefix|": [f"{x:.1e}" for x in free]}).set_index("position").T,
                 width="stretch")
    check_line(float(causal.max()) < 1e-4, f"Causal: one pass gives the same logits as running each prefix alone "
                                           f"(max |difference| {causal.max():.1e} over {len(ids)} positions).")
    bad = free[:-1].max() if len(free) > 1 else 0.0
    if bad < 1e-4:
        st.info("Without the mask this sentence happens to give the same outputs (are all its tokens alike?).")
    else:
        check_line(False, f"Without the mask, one pass no longer equals the prefix runs: max |difference| {bad:.2f}. "
                          "Early positions read the future; only the last position, which sees everything anyway, "
                          "agrees.")


@st.cache_data(max_entries=32, show_spinner="Differentiating every output by every input…")
def cached_dependency(_model, model_key: str, ids: tuple[int, ...], masked: bool) -> np.ndarray:
    T = len(ids)
    mask = torch.ones(T, T, dtype=torch.bool)
    return lesson.dependency_map(_model, list(ids), mask.tril() if masked else mask).numpy()


def dependency(ckpt: Checkpoint, ids: list[int], tokens: list[str]) -> None:
    n_params = ckpt.model.num_params()
    if n_params > MAX_DEP_PARAMS:
        st.info(f"The dependency map needs {min(len(ids), MAX_DEP_T) * ckpt.model.config.d_model:,} backward passes "
                f"through all {n_params:,} parameters: too much for a shared server with a model this size, so it "
                "runs on the app's own models only (pick one in the sidebar).")
        return
    ids, tokens = ids[:MAX_DEP_T], tokens[:MAX_DEP_T]
    c1, c2 = st.columns(2)
    for col, masked, name in ((c1, True, "causal mask"), (c2, False, "no mask")):
        j = cached_dependency(ckpt.model, model_id(ckpt), tuple(ids), masked)
        chart.show(dependency_figure(j, tokens, title=f"‖∂h_t/∂e_s‖, {name}"),
                   key=f"masks_dep_{masked}", name=f"dependency_{name.replace(' ', '_')}", container=col)
        upper = float(np.triu(j, 1).max()) if len(ids) > 1 else 0.0
        if masked:
            check_line(upper == 0.0, f"Causal: every output depends only on inputs at or before it (largest "
                                     f"future dependence {upper:g}).")
        else:
            col.caption(f"No mask: outputs depend on later inputs too (largest future dependence {upper:.3g}).")


@st.cache_data(max_entries=32, show_spinner=False)
def cached_permutation(_ckpt: Checkpoint, model_key: str, masked: bool) -> float:
    """Distance between the final vectors of 'report' in the two orders (with <bos> if the model was trained so)."""
    tok = _ckpt.tokenizer
    a, b = (encode_text(_ckpt, s, bos=uses_bos(_ckpt)).ids for s in PERMUTATION)
    rep = tok.token_to_id("report")
    i = a.index(rep) if rep in a else len(a) // 2
    return lesson.permutation_distances(_ckpt.model, a, b, attn_mask=masked)[i].item()


def permutation() -> None:
    available = {e.key for e in available_models()}
    rows = []
    for key in POSITION_MODELS:
        if key not in available:
            rows.append({"model": key, "mask": "—", "distance of 'report'": "model not installed",
                         "same vector in both orders?": "—"})
            continue
        ck = load_model(key, st.session_state.get("device_key", "auto"))
        for masked in (False, True):
            d = cached_permutation(ck, model_id(ck), masked)
            rows.append({"model": key, "mask": "causal" if masked else "none", "distance of 'report'": f"{d:.2e}",
                         "same vector in both orders?": "✓ yes (≈ 0)" if d < 1e-4 else "✗ no"})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    none_free = next((r for r in rows if r["model"] == "enc-none" and r["mask"] == "none"), None)
    if none_free is None:
        st.warning("The position-free model `enc-none` is not installed, so the permutation proof cannot run here.")
    else:
        d = float(none_free["distance of 'report'"])
        check_line(d < 1e-4, f"No positions, no mask: 'report' gets the same output vector in both orders "
                             f"(distance {d:.1e}). Self-attention alone is a bag of tokens.")
    st.caption("A causal mask changes *what each token may read*, so distances appear, but it does not tell a token "
               "where it is. A position signal (sinusoidal, learned, RoPE) encodes location itself.")


QUIZ = [
    ("Which change makes position explicit?",
     ["Adding a causal mask", "Adding positional encodings (sinusoidal, learned or RoPE)", "Scaling by 1/√d_k"], 1,
     "A mask only restricts which tokens may be read; a position signal tells each token where it is."),
    ("Can one forward pass score all shifted targets?",
     ["Yes — with a causal mask, position t's prediction equals running the prefix alone",
      "No — we must run the model once per position"], 0,
     "Teacher forcing: the causal mask makes all T predictions in one pass; the prefix table in the tab "
     "**Causal ≠ sequential** proves it."),
    ("Which change would let an early prediction read its future target?",
     ["Removing the causal mask", "Adding padding", "Lowering the attention temperature"], 0,
     "Without the mask, position t can attend to t+1 — its own answer. The “no mask” row of the table in the tab "
     "**Causal ≠ sequential** shows it, and so does the “no mask” map in the tab **Dependency map**."),
]


def quiz() -> None:
    for n, (question, options, right, why) in enumerate(QUIZ):
        with st.container(border=True):
            choice = st.radio(question, options, index=None, key=f"masks_quiz_{n}")
            if choice is None:
                continue
            if options.index(choice) == right:
                st.success(f"✓ Right. {why}")
            else:
                st.error(f"✗ Not quite. {why} Try another answer.")
