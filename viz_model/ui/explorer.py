"""Streamlit glue for the Attention pages: sentence input, token chips, cached traces, head roles, pipeline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st
from tokenizers import decoders

from viz_model.checkpoint import Checkpoint
from viz_model.figures.attention import attention_grid, attention_heatmap
from viz_model.figures.common import head_name
from viz_model.figures.explorer import additive_mask_heatmap, entropy_bars, matrix_heatmap, query_bars, value_mix
from viz_model.figures.real_models import attention_grid_page
from viz_model.lessons import explorer as lesson
from viz_model.lessons import real_models
from viz_model.lessons.common import behaviour_words, first_token_words, head_behaviour, roles_measured_on
from viz_model.model_text import is_folder_model, start_token, uses_bos
from viz_model.ui import chart, share, widgets
from viz_model.ui.cache import cached, cached_checks, cached_trace, model_id
from viz_model.ui.errors import section
from viz_model.ui.widgets import show_check, show_checks

ROLES_ASKED = "explorer_roles_asked"  # session_state: model ids whose head roles this user asked to measure


# -- the grid ---------------------------------------------------------------------------------------
def grid_start(cfg) -> tuple[int, int]:
    """The grid page on screen, (first layer, first head): the page pickers, drawn here when there is more than one
    page (call it where they belong, under the grid's heading)."""
    return _grid_page(cfg, *lesson.grid_page_size(cfg))


def grid(cfg, probs: np.ndarray, tokens: list[str], roles: list[list[str]] | None, allowed: np.ndarray,
         key: str, start: tuple[int, int] | None = None) -> None:
    """Every head at a glance; a grid larger than GRID_CELLS heads is paged (layers, and heads past PAGE_HEADS),
    with the page in the URL; under GQA each head names its K/V head. key: the figure cache key of the trace;
    start: grid_start's page (None: its pickers are drawn here)."""
    n_l, n_h = lesson.grid_page_size(cfg)
    if (n_l, n_h) == (cfg.n_layers, cfg.n_heads) and lesson.kv_group(cfg) == 1:
        fig = cached("grid", (key, str(roles)), lambda: attention_grid(
            probs, tokens, roles=roles, title=f"{cfg.n_layers} layers × {cfg.n_heads} heads", allowed=allowed))
        chart.show(fig, key="explorer_grid", name="attention_grid")
        return
    l0, h0 = _grid_page(cfg, n_l, n_h) if start is None else start
    layers, heads, title = lesson.grid_page(cfg, l0, h0)
    fig = cached("grid_page", (key, str(roles), l0, h0, n_l, n_h), lambda: attention_grid_page(
        probs, tokens, layers, heads, roles=roles, kv_group=lesson.kv_group(cfg), title=title, allowed=allowed))
    chart.show(fig, key="explorer_grid", name=f"attention_grid_L{l0}_H{h0}")


def _grid_page(cfg, n_l: int, n_h: int) -> tuple[int, int]:
    """The page pickers (only where there is more than one page): first layer and first head shown."""
    layer_starts, head_starts = list(range(0, cfg.n_layers, n_l)), list(range(0, cfg.n_heads, n_h))
    if len(layer_starts) == len(head_starts) == 1:
        return 0, 0
    st.caption(f"{cfg.n_layers * cfg.n_heads} heads are too many to read at once: the grid shows {n_l} layer"
               f"{'s' * (n_l > 1)} × {n_h} heads at a time. Pick which ones.")
    c1, c2 = st.columns([3, 2])
    picked = []
    for col, starts, size, total, what in ((c1, layer_starts, n_l, cfg.n_layers, "layers"),
                                           (c2, head_starts, n_h, cfg.n_heads, "heads")):
        if len(starts) == 1:
            picked.append(0)
            continue
        name = f"grid_{what}"
        if st.session_state.get(f"explorer_{name}") not in starts:  # new here, or another model's page
            layer = st.session_state.get("explorer_layer", 0) if what == "layers" else 0
            st.session_state[f"explorer_{name}"] = starts[layer // n_l] if layer in range(total) else 0
        picked.append(col.segmented_control(f"{what.capitalize()} shown", starts, key=f"explorer_{name}", **share.URL,
                                            required=True, format_func=lambda s, n=size, t=total, w=what:
                                            lesson.span(s, n, t, w)) or 0)
    return picked[0], picked[1]


# -- head roles -------------------------------------------------------------------------------------
def head_roles_table(ckpt: Checkpoint) -> pa.Table | None:
    """Every head's measured role, its score and the score of every role (heads.py's list of dicts), as an Arrow
    table built once per loaded model (st.dataframe converts a pandas frame again on every rerun)."""
    return _roles_table(model_id(ckpt), ckpt.metadata)


def roles_table(ckpt: Checkpoint, measured: list | None) -> pa.Table | None:
    """head_roles_table, or the same table of roles measured on the fly (roles_for)."""
    if measured is None:
        return head_roles_table(ckpt)
    return _roles_table(f"{model_id(ckpt)}:measured", {"head_roles": measured})


def roles_for(ckpt: Checkpoint) -> tuple[list[list[str]] | None, list | None]:
    """(layers x heads role labels, the measured list or None): a shipped model's roles come from its metadata
    (measured when it was built: lessons.common.roles_measured_on says on what); any other model's are measured on the
    fly once asked."""
    cfg = ckpt.model.config
    roles = lesson.head_roles(ckpt.metadata, cfg.n_layers, cfg.n_heads)
    if roles is not None:
        return roles, None
    measured = measured_roles(ckpt)
    if measured is None:
        return None, None
    return lesson.head_roles({"head_roles": measured}, cfg.n_layers, cfg.n_heads), measured


def measured_roles(ckpt: Checkpoint) -> list | None:
    """real_models.real_head_roles behind a button (one traced pass on 8 random sequences), kept for the server:
    once anyone measured a model, the next student's click is instant."""
    mid = model_id(ckpt)
    asked = st.session_state.setdefault(ROLES_ASKED, [])
    if mid not in asked:
        holder = st.empty()  # the button goes once it is clicked
        c1, c2 = holder.container().columns([1, 3])
        c2.caption(lesson.NO_ROLES)
        if not c1.button("Measure head roles", key="explorer_roles_run"):
            return None
        holder.empty()
        asked.append(mid)
    start = start_token(ckpt) if uses_bos(ckpt) else None
    try:
        return cached("head_roles", (mid, None if start is None else start[0]), lambda: real_models.real_head_roles(
            ckpt.model, ckpt.tokenizer, bos_id=None if start is None else start[0]), model_pass=True,
            spinner="Measuring every head on repeated random tokens…")
    except ValueError as e:
        st.warning(f"Head roles cannot be measured on this model: {e}")
        return None


@share.in_slot  # the comparison below comes and goes with the tokenizer picked
def tokens_view(ckpt: Checkpoint, enc) -> None:
    """The token chips; for the app's own models also the same text under the shipped BPE tokenizer. A model
    folder has its own tokenizer, and only its ids mean anything to it."""
    if is_folder_model(ckpt):
        widgets.token_chips(enc)
        return
    own = "bpe" if isinstance(ckpt.tokenizer.decoder, decoders.ByteLevel) else "word"  # the English model: BPE
    tok_choice = st.radio("Tokenizer", ["word", "bpe"], index=["word", "bpe"].index(own), horizontal=True,
                          key="explorer_tokenizer", **share.URL,
                          format_func=lambda k: f"{k} (this model's)" if k == own else k,
                          help="The model always reads its own tokenizer's ids; the other one is shown beside them.")
    widgets.token_chips(enc)
    if tok_choice == own:
        return
    table = widgets.tokenizer_comparison(st.session_state.get("explorer_text", ""), ckpt.tokenizer, tok_choice)
    if table is None:
        st.info(f"The shipped {tok_choice} tokenizer is not installed, so there is nothing to compare.")
        return
    st.dataframe(table.T, width="stretch")
    st.caption(lesson.OTHER_TOKENIZER[own])


def _roles_table(model_key: str, metadata: dict) -> pa.Table | None:
    return cached("roles_table", (model_key,), lambda: _arrow(lesson.roles_rows(metadata, head_name)))


def _arrow(rows: list[dict] | None) -> pa.Table | None:
    return None if rows is None else pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False)


# -- pipeline ---------------------------------------------------------------------------------------
def pipeline_step(i: int, data: dict, checks: dict[str, float], layer: int, head: int, tokens: list[str], prefix: str,
                  key: str) -> None:
    """Draw pipeline step i (0-based) for one head, with its live check (checks: cached_checks of this layer);
    figures cached per exact input. key: input_key(...) of everything data and tokens were computed from."""
    key, cfg_name = (key, i, layer, head), f"pipeline_step{i + 1}_L{layer}_H{head}"
    if i == 0:  # the head's Q, K and V side by side
        for col, name in zip(st.columns(3), ("q", "k", "v")):
            fig = cached(name, key, lambda n=name: matrix_heatmap(
                data[n][layer, head], tokens, title=n.upper(), value_name=n.upper(), row_title="token",
                col_title="d_k", show_values=False))
            chart.show(fig, key=f"{prefix}_step_{name}", name=cfg_name, container=col)
    else:
        fig = cached("step", key, lambda: _step_figure(i, data, layer, head, tokens))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
    if i == 6:
        d_k = data["head_out"].shape[-1]
        st.caption(f"Columns {head * d_k}–{(head + 1) * d_k - 1} are this head's output.")
    show_checks(lesson.step_claims(i, checks, data["scale"]))


def _step_figure(i: int, data: dict, layer: int, head: int, tokens: list[str]):
    """The figure of pipeline step i (1-7, 0-based) for one head."""
    allowed, s, name = data["allowed"], data["scores"][layer, head], head_name(layer, head)
    if i == 2:  # M holds only 0 and −∞: two colours, not a colour scale
        return additive_mask_heatmap(allowed, tokens, title=f"M, {name}")
    if i in (1, 3):
        value = "S" if i == 1 else "S + M"
        return matrix_heatmap(s if i == 1 else np.where(allowed, s, -np.inf), tokens, tokens, col_tokens=True,
                              allowed=None if i == 1 else allowed, value_name=value, col_title="key",
                              title=f"{value}, {name}")
    if i == 4:
        return attention_heatmap(data["probs"][layer, head], tokens, allowed=allowed, title=f"A, {name}")
    if i == 5:
        return matrix_heatmap(data["head_out"][layer, head], tokens, value_name="A·V", row_title="query",
                              col_title="d_k", title="head_out = A·V", show_values=False)
    if i == 6:  # every head's output side by side, this head's columns named
        concat, labels = lesson.concat_heads(data["head_out"][layer])
        return matrix_heatmap(concat, tokens, labels, value_name="concat", row_title="query",
                              col_title="head:feature (h1:8 = head 1, feature 8)", title="All heads side by side",
                              show_values=False)
    return matrix_heatmap(data["attn_out"][layer], tokens, value_name="attn_out", row_title="query",
                          col_title="d_model", title="attn_out = concat·W_O + b", show_values=False)


def query_focus(data: dict, layer: int, head: int, tokens: list[str], prefix: str, key: str) -> None:
    """Pick a query token: its attention row as bars and the value vectors it mixes (this head); key as in
    pipeline_step."""
    labels = [f"{i} {t}" for i, t in enumerate(tokens)]
    qi = share.select(st, "Query token", range(len(tokens)), f"{prefix}_query", len(tokens) - 1,
                      format_func=lambda i: labels[i])
    probs = data["probs"][layer, head]
    key = (key, layer, head, qi)
    c1, c2 = st.columns(2)
    bars = cached("bars", key, lambda: query_bars(probs[qi], tokens, tokens[qi], allowed=data["allowed"][qi]))
    chart.show(bars, key=f"{prefix}_bars", name=f"query_{qi}", container=c1)
    chart.show(cached("mix", key, lambda: value_mix(probs[qi], data["v"][layer, head], tokens, tokens[qi])),
               key=f"{prefix}_mix", name=f"value_mix_{qi}", container=c2)


def role_here(ckpt: Checkpoint, enc, probs: np.ndarray, role: str, name: str) -> str:
    """A head's measured role (`role`: "induction (0.97)"), what it was measured on, and what it does on this
    sentence (probs (T, T) of the head), computed here."""
    meta = ckpt.metadata or {}
    on = roles_measured_on(meta, is_folder_model(ckpt) or not meta.get("head_roles"))  # no record: measured now
    first = first_token_words(start_token(ckpt), enc.ids)
    here = behaviour_words(role.split()[0], head_behaviour(probs, enc.ids), first)  # role names have no spaces
    return f"{name.capitalize()}: role **{role}**, measured {on}. On this sentence: {here}."


# -- the head view: a fragment ---------------------------------------------------------------------------
@section("the head view")  # Layer, Head, the tab and the step rerun only this part: not the sidebar, the grid...
def head_view(ckpt: Checkpoint, enc, data: dict, tkey: str, knobs: tuple, average: bool,
              roles: list[list[str]] | None) -> None:
    """The Layer/Head pickers, the chosen head large, and the open tab (Pipeline, Query focus, row sharpness).

    data: cached_trace of enc.ids under knobs = (mask bits, scale on, temperature); tkey: its input_key (the figures'
    key: a layer's arrays are the same whichever layers its pass traced). A layer data did not trace gets a pass of
    its own that traces only it."""
    model, cfg, tokens, T = ckpt.model, ckpt.model.config, enc.tokens, len(enc.ids)
    mid = model_id(ckpt)
    # the head's role is in the line below (a label with the role would be the URL's value, and change when the roles
    # are measured)
    layer, head = widgets.layer_head("explorer", cfg.n_layers, cfg.n_heads, where=st.columns(2))
    if layer not in data.get("layers", range(cfg.n_layers)):
        data = cached_trace(model, mid, tuple(enc.ids), *knobs, layers=(layer,))
    probs = data["probs"]  # (L, H, T, T), NaN in layers this pass did not trace
    with st.container():  # notes that come and go with the head, in a slot that stays (share.in_slot)
        if roles and roles[layer][head] and not average:
            widgets.answer_line("explorer_role", role_here(ckpt, enc, probs[layer, head], roles[layer][head],
                                                           head_name(layer, head)), st.info)  # #39: hidden in class
        if mates := lesson.kv_mates(cfg, head):
            st.caption(mates)

    big = probs[layer].mean(0) if average else probs[layer, head]
    title = f"Layer {layer}, average of {cfg.n_heads} heads" if average else f"Layer {layer}, head {head}"
    fig = cached("head", (tkey, layer, head, average),
                 lambda: attention_heatmap(big, tokens, allowed=data["allowed"], title=title))
    chart.show(fig, key="explorer_head_map", name=f"attention_L{layer}_H{'avg' if average else head}")
    show_check(lesson.head_rows_claim(big))

    # Only the open tab runs: opening the page draws the grid, the head and one more chart.
    label, tab = share.tabs(["Pipeline", "Query focus", "How sharp is each row?"], key="explorer_tab")
    with tab:
        if label == "Pipeline":
            st.markdown(f"**Every step of {head_name(layer, head)}**, recomputed from the trace and checked.")
            steps = lesson.pipeline_steps(T, cfg.d_model, cfg.n_heads, cfg.d_k)
            chk = cached_checks(model, mid, tuple(enc.ids), *knobs, layer, data.get("layers"))
            st.dataframe(pa.table(lesson.pipeline_columns(steps, chk)), hide_index=True, width="stretch")
            step = st.segmented_control("Show step", range(len(steps)), default=1, key="explorer_step",
                                        **share.URL, format_func=lambda i: steps[i].title.split(". ")[1])
            if step is not None:
                st.markdown(f"**{steps[step].title}** · `{steps[step].formula}` · shape {steps[step].shape}")
                pipeline_step(step, data, chk, layer, head, tokens, "explorer", tkey)
        elif label == "Query focus":
            query_focus(data, layer, head, tokens, "explorer", tkey)
        else:
            ent, uniform, said = lesson.sharpness(data, layer, head, average)
            chart.show(cached("entropy", (tkey, layer, head, average),
                              lambda: entropy_bars(ent, tokens, max_entropy=uniform)),
                       key="explorer_entropy", name="row_entropy")
            st.caption(said)
