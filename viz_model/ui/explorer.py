"""Streamlit glue for the Attention pages: sentence input, token chips, cached traces, head roles, pipeline."""

from __future__ import annotations

from dataclasses import dataclass

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
from viz_model.lessons import real_models
from viz_model.ui import chart, share, widgets
from viz_model.ui.cache import cached, cached_checks, cached_trace, model_id
from viz_model.ui.errors import section
from viz_model.ui.models import is_folder_model
from viz_model.ui.widgets import ROW_SUM_TOL, check_line

GRID_CELLS = 16        # up to this many heads the grid shows every layer and head at once
PAGE_HEADS = 16        # wider models page their heads too
PAGE_CELLS = 48        # cells on one page of a larger grid (4 layers of GPT-2's 12 heads)
ROLES_ASKED = "explorer_roles_asked"  # session_state: model ids whose head roles this user asked to measure


# -- the model -------------------------------------------------------------------------------------
def kv_group(cfg) -> int:
    """Query heads per K/V head: query heads h and h' share K and V when h // kv_group == h' // kv_group."""
    return cfg.n_heads // cfg.kv_heads


def kv_note(cfg) -> str | None:
    """Which heads share K/V under grouped-query attention, in one sentence (None without GQA)."""
    g = kv_group(cfg)
    if g == 1:
        return None
    groups = [f"{j * g}–{j * g + g - 1}" for j in range(min(cfg.kv_heads, 4))]
    more = ", …" if cfg.kv_heads > 4 else ""
    return (f"Grouped-query attention: {cfg.n_heads} query heads read {cfg.kv_heads} K/V heads, so query heads "
            f"h and h′ share keys and values when h // {g} = h′ // {g} (heads {', '.join(groups)}{more}). "
            "The grid still shows one T×T pattern per query head: their queries differ.")


def kv_share_check(data: dict, cfg) -> None:
    """✓ measured on the trace: within each K/V group the keys and values are identical, the queries are not."""
    g = kv_group(cfg)
    traced = list(data.get("layers", range(cfg.n_layers)))  # the pass traced only the layers on screen
    k, v, q = data["k"][traced], data["v"][traced], data["q"][traced]  # (L, H, T, d_k), K/V expanded per query head
    lead = np.repeat(np.arange(0, cfg.n_heads, g), g)  # the first head of each head's group
    same = float(max(np.abs(k - k[:, lead]).max(), np.abs(v - v[:, lead]).max()))
    others = [h for h in range(cfg.n_heads) if h != lead[h]]
    q_gap = float(np.abs(q[:, others] - q[:, lead[others]]).max()) if others else 0.0
    where = "every layer" if len(traced) == cfg.n_layers else f"layers {traced[0]}–{traced[-1]}"
    check_line(same == 0.0 and q_gap > 0, f"Heads in one group read the same keys and values (largest difference "
                                          f"{same:g} over {where}), with their own queries (they differ by up to "
                                          f"{q_gap:.2f}).")


# -- the grid ---------------------------------------------------------------------------------------
def grid_page_size(cfg) -> tuple[int, int]:
    """(layers, heads) on one page of the grid: everything up to GRID_CELLS heads, else at most PAGE_CELLS cells
    (e.g. GPT-2 small's 12 x 12 in pages of 4 layers)."""
    if cfg.n_layers * cfg.n_heads <= GRID_CELLS:
        return cfg.n_layers, cfg.n_heads
    heads = min(cfg.n_heads, PAGE_HEADS)
    return max(1, min(4, cfg.n_layers, PAGE_CELLS // heads)), heads


def _span(start: int, size: int, total: int, what: str) -> str:
    end = min(start + size, total) - 1
    return f"{what} {start}" if end == start else f"{what} {start}–{end}"


def grid_start(cfg) -> tuple[int, int]:
    """The grid page on screen, (first layer, first head): the page pickers, drawn here when there is more than one
    page (call it where they belong, under the grid's heading)."""
    return _grid_page(cfg, *grid_page_size(cfg))


def grid_layers(cfg, start: tuple[int, int]) -> tuple[int, ...]:
    """The layers the grid page starting at `start` shows: the only ones its traced pass needs."""
    n_l = grid_page_size(cfg)[0]
    return tuple(range(start[0], min(start[0] + n_l, cfg.n_layers)))


def grid(cfg, probs: np.ndarray, tokens: list[str], roles: list[list[str]] | None, allowed: np.ndarray,
         key: str, start: tuple[int, int] | None = None) -> None:
    """Every head at a glance; a grid larger than GRID_CELLS heads is paged (layers, and heads past PAGE_HEADS),
    with the page in the URL; under GQA each head names its K/V head. key: the figure cache key of the trace;
    start: grid_start's page (None: its pickers are drawn here)."""
    n_l, n_h = grid_page_size(cfg)
    title = f"{cfg.n_layers} layers × {cfg.n_heads} heads"
    if (n_l, n_h) == (cfg.n_layers, cfg.n_heads) and kv_group(cfg) == 1:
        fig = cached("grid", (key, str(roles)), lambda: attention_grid(probs, tokens, roles=roles, title=title,
                                                                       allowed=allowed))
        chart.show(fig, key="explorer_grid", name="attention_grid")
        return
    l0, h0 = _grid_page(cfg, n_l, n_h) if start is None else start
    layers, heads = list(range(l0, min(l0 + n_l, cfg.n_layers))), list(range(h0, min(h0 + n_h, cfg.n_heads)))
    if len(layers) < cfg.n_layers or len(heads) < cfg.n_heads:
        title += f": {_span(l0, n_l, cfg.n_layers, 'layers')}" + (
            f", {_span(h0, n_h, cfg.n_heads, 'heads')}" if len(heads) < cfg.n_heads else "")
    fig = cached("grid_page", (key, str(roles), l0, h0, n_l, n_h), lambda: attention_grid_page(
        probs, tokens, layers, heads, roles=roles, kv_group=kv_group(cfg), title=title, allowed=allowed))
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
                                            _span(s, n, t, w)) or 0)
    return picked[0], picked[1]


# -- head roles -------------------------------------------------------------------------------------
def _role_text(entry) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        role, score = entry.get("role") or entry.get("name") or "", entry.get("score")
        return f"{role} {score:.2f}" if isinstance(score, (int, float)) else str(role)
    return ""


def head_roles(metadata: dict, n_layers: int, n_heads: int) -> list[list[str]] | None:
    """Measured role + score per head from checkpoint metadata "head_roles" (viz_model/heads.py), if present.

    Accepts a layers x heads nested list, a {"l.h": ...} mapping, or a list of {"layer", "head", "role", "score"}.
    """
    raw = (metadata or {}).get("head_roles")
    if not raw:
        return None
    grid = [["" for _ in range(n_heads)] for _ in range(n_layers)]
    try:
        if isinstance(raw, dict):
            for key, entry in raw.items():
                parts = [int(p) for p in str(key).replace("L", "").replace("H", ".").replace(",", ".").split(".") if p]
                grid[parts[0]][parts[1]] = _role_text(entry)
        elif raw and all(isinstance(r, dict) and "layer" in r for r in raw):
            for r in raw:
                grid[int(r["layer"])][int(r["head"])] = _role_text(r)
        else:
            for lyr, row in enumerate(raw[:n_layers]):
                for h, entry in enumerate(row[:n_heads]):
                    grid[lyr][h] = _role_text(entry)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):
        return None
    return grid if any(any(row) for row in grid) else None


def head_roles_table(ckpt: Checkpoint) -> pa.Table | None:
    """Every head's measured role, its score and the score of every role (heads.py's list of dicts), as an Arrow
    table built once per loaded model (st.dataframe converts a pandas frame again on every rerun)."""
    return _roles_table(model_id(ckpt), ckpt.metadata)


def roles_table(ckpt: Checkpoint, measured: list | None) -> pa.Table | None:
    """head_roles_table, or the same table of roles measured on the fly (roles_for)."""
    if measured is None:
        return head_roles_table(ckpt)
    return _roles_table(f"{model_id(ckpt)}:measured", {"head_roles": measured})


ROLE_LEGEND = ("previous-token: attends to t−1 · first-token: parks attention on <bos> (a sink) · self: attends "
               "to itself · coreference: a pronoun attends to its noun · induction: copies what followed the "
               "same token before · broad: no single pattern clears its bar.")
MEASURED_LEGEND = ("Measured now on {n} sequences of random ordinary tokens of this model's vocabulary, each run "
                   "repeated once: previous-token: attends to t−1 · first-token: parks attention on position 0 (a "
                   "sink{bos}) · self: attends to itself · induction: on the repeat, attends to the token after the "
                   "same token's first occurrence · broad: no single pattern clears its bar.")


def roles_for(ckpt: Checkpoint) -> tuple[list[list[str]] | None, list | None]:
    """(layers x heads role labels, the measured list or None): a shipped model's roles come from its metadata
    (measured on held-out text when it was trained); any other model's are measured on the fly once asked."""
    cfg = ckpt.model.config
    roles = head_roles(ckpt.metadata, cfg.n_layers, cfg.n_heads)
    if roles is not None:
        return roles, None
    measured = measured_roles(ckpt)
    if measured is None:
        return None, None
    return head_roles({"head_roles": measured}, cfg.n_layers, cfg.n_heads), measured


def measured_roles(ckpt: Checkpoint) -> list | None:
    """real_models.real_head_roles behind a button (one traced pass on 8 random sequences), kept for the server:
    once anyone measured a model, the next student's click is instant."""
    mid = model_id(ckpt)
    asked = st.session_state.setdefault(ROLES_ASKED, [])
    if mid not in asked:
        holder = st.empty()  # the button goes once it is clicked
        c1, c2 = holder.container().columns([1, 3])
        c2.caption("This model's metadata has no head roles. Measure them on repeated random tokens of its own "
                   "vocabulary: previous-token, first-token (sink), self and induction heads.")
        if not c1.button("Measure head roles", key="explorer_roles_run"):
            return None
        holder.empty()
        asked.append(mid)
    start = widgets.start_token(ckpt) if widgets.uses_bos(ckpt) else None
    try:
        return _measured_roles(mid, ckpt.model, ckpt.tokenizer, None if start is None else start[0])
    except ValueError as e:
        st.warning(f"Head roles cannot be measured on this model: {e}")
        return None


@st.cache_resource(max_entries=16, show_spinner="Measuring every head on repeated random tokens…")
def _measured_roles(model_key: str, _model, _tokenizer, bos_id: int | None) -> list:
    return real_models.real_head_roles(_model, _tokenizer, bos_id=bos_id)


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
    if own == "word":
        st.caption("BPE splits rare words into pieces, so the same text gets other tokens and other ids. A model only "
                   "understands the ids of the tokenizer it was trained with: this model uses the word tokenizer, so "
                   "the attention below is always computed on the word tokens.")
    else:
        st.caption("The word tokenizer of the classroom models knows only its corpus's words: every other word is "
                   "`<unk>`. This model was trained on byte-level BPE ids, so no text is unknown to it, and the "
                   "attention below is computed on its own BPE tokens.")


@st.cache_resource(max_entries=16, show_spinner=False)
def _roles_table(model_key: str, _metadata: dict) -> pa.Table | None:
    raw = (_metadata or {}).get("head_roles")
    if not isinstance(raw, list) or not all(isinstance(r, dict) and "layer" in r for r in raw):
        return None
    rows = [{"head": head_name(r["layer"], r["head"]), "role": r.get("role", ""), "score": r.get("score"),
             **{k: v for k, v in (r.get("scores") or {}).items()}} for r in raw]
    return pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False)


# -- pipeline ---------------------------------------------------------------------------------------
@dataclass
class Step:
    title: str
    formula: str
    shape: str


def pipeline_steps(T: int, d_model: int, H: int, d_k: int) -> list[Step]:
    return [
        Step("1. X → Q, K, V", "Q = X·W_Q, K = X·W_K, V = X·W_V (RoPE rotates Q and K if used)",
             f"X ({T}×{d_model}) → Q, K, V ({T}×{d_k}) per head"),
        Step("2. Scores", "S = Q·Kᵀ / √d_k", f"({T}×{d_k})·({d_k}×{T}) → {T}×{T}"),
        Step("3. Mask", "M = 0 where allowed, −∞ where blocked", f"{T}×{T}"),
        Step("4. S + M", "blocked scores become −∞", f"{T}×{T}"),
        Step("5. Softmax", "A = softmax_row(S + M)", f"{T}×{T}, rows sum to 1"),
        Step("6. A·V", "head_out = A·V", f"({T}×{T})·({T}×{d_k}) → {T}×{d_k}"),
        Step("7. Concat", "[head_0 | … | head_H−1]", f"{H} × ({T}×{d_k}) → {T}×{d_model}"),
        Step("8. W_O", "attn_out = concat·W_O + b", f"({T}×{d_model})·({d_model}×{d_model}) → {T}×{d_model}"),
    ]


def pipeline_table(steps: list[Step], errors: list[float | None]) -> pa.Table:
    """The steps with their formula, shape and measured recomputation error (an all-string Arrow table)."""
    return pa.table({"step": [s.title for s in steps], "formula": [s.formula for s in steps],
                     "shape": [s.shape for s in steps],
                     "recomputed, max error": ["—" if e is None else f"{e:.1e}" for e in errors]})


def pipeline_step(i: int, data: dict, checks: dict[str, float], layer: int, head: int, tokens: list[str], prefix: str,
                key: str) -> None:
    """Draw pipeline step i (0-based) for one head, with its live check (checks: cached_checks of this layer);
    figures cached per exact input. key: input_key(...) of everything data and tokens were computed from."""
    key, c, allowed, s = (key, i, layer, head), checks, data["allowed"], data["scores"][layer, head]
    cfg_name = f"pipeline_step{i + 1}_L{layer}_H{head}"
    if i == 0:
        _qkv_step(data, c, layer, head, tokens, prefix, key, cfg_name)
        return
    if i == 2:  # M holds only 0 and −∞: two colours, not a colour scale
        fig = cached("step", key, lambda: additive_mask_heatmap(allowed, tokens, title=f"M, {head_name(layer, head)}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        return
    if i in (1, 3):
        val = s if i == 1 else np.where(allowed, s, -np.inf)
        name = {1: "S", 3: "S + M"}[i]
        fig = cached("step", key, lambda: matrix_heatmap(
            val, tokens, tokens, col_tokens=True, allowed=allowed if i != 1 else None, value_name=name,
            col_title="key", title=f"{name}, {head_name(layer, head)}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        if i == 1:
            check_line(c["scores"] < 1e-4, f"S recomputed as Q·Kᵀ·{data['scale']:.4g} matches the trace "
                                           f"(max error {c['scores']:.1e}).")
        return
    if i == 4:
        fig = cached("step", key, lambda: attention_heatmap(
            data["probs"][layer, head], tokens, allowed=allowed, title=f"A, {head_name(layer, head)}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        check_line(c["row_sums"] <= ROW_SUM_TOL, f"Rows sum to 1, max error {c['row_sums']:.0e} "
                                         f"(tolerance {ROW_SUM_TOL:.0e}); blocked cells carry "
                                         f"weight {c['masked_weight']:.0e}.")
        return
    if i == 5:
        fig = cached("step", key, lambda: matrix_heatmap(
            data["head_out"][layer, head], tokens, value_name="A·V", row_title="query", col_title="d_k",
            title="head_out = A·V", show_values=False))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        check_line(c["head_out"] < 1e-4, f"A·V recomputed from the trace equals head_out "
                                         f"(max error {c['head_out']:.1e}).")
        return
    if i == 6:
        _concat_step(data, layer, head, tokens, prefix, key, cfg_name)
        return
    fig = cached("step", key, lambda: matrix_heatmap(
        data["attn_out"][layer], tokens, value_name="attn_out", row_title="query", col_title="d_model",
        title="attn_out = concat·W_O + b", show_values=False))
    chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
    check_line(c["attn_out"] < 1e-4, f"concat·W_O + b recomputed equals the layer's attention output "
                                     f"(max error {c['attn_out']:.1e}).")

def _qkv_step(data: dict, c: dict[str, float], layer: int, head: int, tokens: list[str], prefix: str, key: tuple,
              cfg_name: str) -> None:
    """Step 1: the head's Q, K and V side by side, and their recomputation check."""
    for col, name in zip(st.columns(3), ("q", "k", "v")):
        fig = cached(name, key, lambda n=name: matrix_heatmap(
            data[n][layer, head], tokens, title=n.upper(), value_name=n.upper(), row_title="token",
            col_title="d_k", show_values=False))
        chart.show(fig, key=f"{prefix}_step_{name}", name=cfg_name, container=col)
    check_line(c["qkv"] < 1e-4, f"Q, K, V recomputed from X and the weights match the trace "
                                f"(max error {c['qkv']:.1e}).")


def _concat_step(data: dict, layer: int, head: int, tokens: list[str], prefix: str, key: tuple, cfg_name: str) -> None:
    """Step 7: every head's output side by side, this head's columns named."""
    concat = np.concatenate(list(data["head_out"][layer]), axis=-1)  # (T, H*d_k)
    d_k = data["head_out"].shape[-1]
    labels = [f"h{j // d_k}:{j % d_k}" for j in range(concat.shape[1])]
    fig = cached("step", key, lambda: matrix_heatmap(
        concat, tokens, labels, value_name="concat", row_title="query",
        col_title="head:feature (h1:8 = head 1, feature 8)", title="All heads side by side", show_values=False))
    chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
    st.caption(f"Columns {head * d_k}–{(head + 1) * d_k - 1} are this head's output.")


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
    if roles and roles[layer][head]:
        st.info(f"{head_name(layer, head).capitalize()}: measured role **{roles[layer][head]}**.")
    if (g := kv_group(cfg)) > 1:
        mates = [str(h) for h in range(head // g * g, head // g * g + g) if h != head]
        st.caption(f"Head {head} reads K/V head {head // g}, shared with query head{'s' * (len(mates) > 1)} "
                   f"{', '.join(mates)}.")

    big = probs[layer].mean(0) if average else probs[layer, head]
    title = f"Layer {layer}, average of {cfg.n_heads} heads" if average else f"Layer {layer}, head {head}"
    fig = cached("head", (tkey, layer, head, average),
                 lambda: attention_heatmap(big, tokens, allowed=data["allowed"], title=title))
    chart.show(fig, key="explorer_head_map", name=f"attention_L{layer}_H{'avg' if average else head}")
    err = float(np.abs(big.sum(-1) - 1).max())
    check_line(err <= ROW_SUM_TOL, f"Rows sum to 1, max error {err:.0e} (tolerance {ROW_SUM_TOL:.0e}). Grey cells are "
               "blocked by the mask "
               "(weight exactly 0), not learned zeros.")

    # Only the open tab runs: opening the page draws the grid, the head and one more chart.
    label, tab = share.tabs(["Pipeline", "Query focus", "How sharp is each row?"], key="explorer_tab")
    with tab:
        if label == "Pipeline":
            st.markdown(f"**Every step of {head_name(layer, head)}**, recomputed from the trace and checked.")
            steps = pipeline_steps(T, cfg.d_model, cfg.n_heads, cfg.d_k)
            chk = cached_checks(model, mid, tuple(enc.ids), *knobs, layer, data.get("layers"))
            errors = [chk["qkv"], chk["scores"], None, None, chk["row_sums"], chk["head_out"], None,
                      chk["attn_out"]]
            st.dataframe(pipeline_table(steps, errors), hide_index=True, width="stretch")
            step = st.segmented_control("Show step", range(len(steps)), default=1, key="explorer_step",
                                        **share.URL, format_func=lambda i: steps[i].title.split(". ")[1])
            if step is not None:
                st.markdown(f"**{steps[step].title}** · `{steps[step].formula}` · shape {steps[step].shape}")
                pipeline_step(step, data, chk, layer, head, tokens, "explorer", tkey)
        elif label == "Query focus":
            query_focus(data, layer, head, tokens, "explorer", tkey)
        else:
            ent = data["entropy"][layer].mean(0) if average else data["entropy"][layer, head]
            uniform = np.log(np.maximum(data["allowed"].sum(-1), 1))
            chart.show(cached("entropy", (tkey, layer, head, average),
                              lambda: entropy_bars(ent, tokens, max_entropy=uniform)),
                       key="explorer_entropy", name="row_entropy")
            st.caption(f"Mean row entropy {ent.mean():.3f} nats (uniform rows would give {uniform.mean():.3f}). "
                       "Turn off the 1/√d_k scaling or lower the temperature: rows saturate towards one key.")
