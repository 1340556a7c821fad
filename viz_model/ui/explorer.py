"""Streamlit glue for the Attention pages: sentence input, token chips, cached traces, head roles, pipeline."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st
import torch

from viz_model import demos
from viz_model.attention import LayerTrace
from viz_model.checkpoint import Checkpoint
from viz_model.data import LECTURE_SENTENCES
from viz_model.figures.attention import attention_heatmap
from viz_model.figures.pipeline import matrix_heatmap, query_bars, value_mix
from viz_model.masks import to_additive
from viz_model.tokenizer import BOS, Encoded, encode, load_tokenizer
from viz_model.ui import chart, share

EXAMPLES = (*dict.fromkeys(LECTURE_SENTENCES), "send report <PAD> <PAD>")
CUSTOM = "(type your own)"
MAX_CHARS = 5000


def model_id(ckpt: Checkpoint) -> str:
    """Cache identity of a loaded (cached, read-only) model."""
    return f"{ckpt.path}:{id(ckpt.model)}"


def sentence_input(prefix: str, ckpt: Checkpoint, max_tokens: int | None = None,
                   default: str = EXAMPLES[1]) -> Encoded:
    """Example picker + text box; stops the page with a clear message when there is nothing to show."""
    cfg = ckpt.model.config
    limit = min(cfg.max_len, max_tokens or cfg.max_len)
    share.bind_text("text", f"{prefix}_text", f"{prefix}_example", f"{prefix}_last_example", EXAMPLES, CUSTOM)
    c1, c2 = st.columns([1, 2])
    example = c1.selectbox("Example from the lecture", [CUSTOM, *EXAMPLES], index=1 + EXAMPLES.index(default),
                           key=f"{prefix}_example")
    if st.session_state.get(f"{prefix}_last_example") != example and example != CUSTOM:
        st.session_state[f"{prefix}_text"] = example  # picking an example fills the box
    st.session_state[f"{prefix}_last_example"] = example
    text = c2.text_input("Sentence", key=f"{prefix}_text", max_chars=MAX_CHARS,
                         help="Any text; it is cut to the model's context length.")
    bos = uses_bos(ckpt)
    enc = encode(ckpt.tokenizer, text, max_len=limit, bos=bos)
    if enc.truncated:
        st.info(f"Your text has {enc.n_tokens_total} tokens; this view reads at most {limit}, "
                f"so only the first {limit} are used.")
    if len(enc.ids) <= int(bos):
        st.warning("Type at least one word (the box is empty or holds only spaces) to see attention.")
        share.stop()
    if bos:
        st.caption("A `<bos>` token is put in front, as in training: many heads park their spare attention on it.")
    if enc.unknown:
        st.caption("Words this model has never seen become `<unk>`: "
                   + ", ".join(f"`{w}`" for w in dict.fromkeys(enc.unknown[:12])))
    return enc


def bind_view(cfg) -> None:
    """The Explorer's main settings live in the URL (a shared link reopens this exact view)."""
    share.bind("layer", "explorer_layer", int, choices=range(cfg.n_layers))
    share.bind("head", "explorer_head", int, choices=range(cfg.n_heads))
    share.bind("scale", "explorer_scale", bool)
    share.bind("temperature", "explorer_temp", float, lo=0.1, hi=5.0)
    share.bind("mask", "explorer_mask", choices=["causal", "bidirectional"])
    share.bind("average", "explorer_avg", bool)
    share.bind("step", "explorer_step", int, choices=range(8))


def uses_bos(ckpt: Checkpoint) -> bool:
    """Shipped models were trained on '<bos> text' (metadata "bos"); feed them the same."""
    return bool((ckpt.metadata or {}).get("bos")) and ckpt.tokenizer.token_to_id(BOS) is not None


def token_chips(enc: Encoded) -> None:
    """Tokens as a row of labelled cells with their ids (st.dataframe: no HTML, shown exactly as typed).

    Built as an all-string Arrow table: a transposed pandas frame of mixed types is slow to convert at T = 64.
    """
    cols = {"": ["token", "vocabulary entry", "id"]}
    cols.update({str(i): [t, p, str(x)] for i, (t, p, x) in enumerate(zip(enc.tokens, enc.pieces, enc.ids))})
    st.dataframe(pa.table(cols), hide_index=True, width="stretch")


def tokenizer_comparison(text: str, model_tok) -> pd.DataFrame | None:
    """The same text under the shipped BPE tokenizer vs the model's own (word) tokenizer."""
    try:
        bpe = load_tokenizer("bpe")
    except ValueError:
        return None
    a, b = encode(model_tok, text, max_len=64), encode(bpe, text, max_len=64)
    n = max(len(a.ids), len(b.ids))
    pad = lambda xs: [*xs, *[""] * (n - len(xs))]  # noqa: E731
    return pd.DataFrame({"word (the model's)": pad(a.pieces), "word id": pad([str(i) for i in a.ids]),
                         "bpe piece": pad(b.pieces), "bpe id": pad([str(i) for i in b.ids])})


# -- cached traces ----------------------------------------------------------------------------------
def cached_trace(_model, model_key: str, ids: tuple[int, ...], attn_mask: bytes | None = None,
                 scale_scores: bool = True, temperature: float = 1.0) -> dict:
    """One traced forward pass as numpy arrays (B dropped); cached_checks recomputes it step by step per layer.

    attn_mask is mask_bits(mask). Cached under input_key of the arguments: st.cache_data hashes a tuple of T ids
    one element at a time, every rerun, for every cached call."""
    ids = tuple(ids)
    key = input_key(model_key, ids, attn_mask, bool(scale_scores), float(temperature))
    return _trace(_model, key, ids, attn_mask, bool(scale_scores), float(temperature))


@st.cache_data(max_entries=64, show_spinner=False)
def _trace(_model, key: str, _ids: tuple[int, ...], _attn_mask: bytes | None, _scale_scores: bool,
           _temperature: float) -> dict:
    model, ids, T = _model, _ids, len(_ids)
    mask = None if _attn_mask is None else torch.from_numpy(
        np.unpackbits(np.frombuffer(_attn_mask, dtype=np.uint8))[: T * T].reshape(T, T).astype(bool))
    with torch.no_grad():
        out = model(torch.tensor([ids], device=model.device), trace=True, attn_mask=mask,
                    scale_scores=_scale_scores, temperature=_temperature)
        tr = out.trace
        stack = lambda xs: torch.stack(xs).float().cpu().numpy()  # noqa: E731
        data = {n: stack([getattr(lt, n)[0] for lt in tr.layers])
                for n in ("q", "k", "v", "scores", "probs", "head_out", "attn_out")}  # (L, H, T, .), (L, T, d_model)
        data["x_in"] = stack([demos.attention_input(model, tr, i)[0] for i in range(len(tr.layers))])
        data["allowed"] = torch.isfinite(tr.layers[0].mask).expand(tr.layers[0].probs.shape)[0, 0].cpu().numpy()
        data["entropy"] = demos.row_entropy(torch.from_numpy(data["probs"])).numpy()  # (L, H, T)
        data["scale"] = demos.score_scale(model, _scale_scores, _temperature)
    return data


def cached_checks(_model, model_key: str, ids: tuple[int, ...], attn_mask: bytes | None, scale_scores: bool,
                  temperature: float, layer: int) -> dict[str, float]:
    """demos.pipeline_check for one layer of cached_trace's pass, from its arrays: only the layer on screen is
    recomputed (the same arguments as cached_trace, plus the layer)."""
    ids = tuple(ids)
    key = input_key(model_key, ids, attn_mask, bool(scale_scores), float(temperature))
    return _checks(_model, key, layer, ids, attn_mask, bool(scale_scores), float(temperature), model_key)


@st.cache_data(max_entries=128, show_spinner=False)
def _checks(_model, key: str, layer: int, _ids, _attn_mask, _scale_scores, _temperature, _model_key) -> dict:
    data = cached_trace(_model, _model_key, _ids, _attn_mask, _scale_scores, _temperature)
    dev = _model.device
    arr = lambda name: torch.from_numpy(data[name][layer][None]).to(dev)  # noqa: E731  (1, ...) like a trace
    additive = to_additive(torch.from_numpy(data["allowed"]).to(dev), torch.float32)
    lt = LayerTrace(q=arr("q"), k=arr("k"), v=arr("v"), scores=arr("scores"), mask=additive, probs=arr("probs"),
                    head_out=arr("head_out"), attn_out=arr("attn_out"))
    return demos.layer_check(_model, arr("x_in"), lt, layer, torch.arange(len(_ids), device=dev), data["scale"])


def mask_bits(mask: torch.Tensor | np.ndarray | None) -> bytes | None:
    """A (T, T) bool mask as packed bytes: a cheap, exact cache key."""
    return None if mask is None else np.packbits(np.asarray(mask, dtype=bool)).tobytes()


def input_key(*parts) -> str:
    """A short digest of everything a view depends on (model, ids, tokens, mask bits, knobs): the figure cache
    then hashes one 32-character string per figure instead of walking T ids and T tokens every time."""
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


@st.cache_resource(max_entries=96, show_spinner=False)
def _figure(name: str, key: tuple, _build: Callable[[], go.Figure]) -> go.Figure:
    return _build()


def cached_figure(name: str, key: tuple, build: Callable[[], go.Figure]) -> go.Figure:
    """Build a figure once per exact input (key) for the whole server: 60 students on the same example sentence
    share it. Safe because st.plotly_chart only reads the figure (it serialises a copy via to_dict).
    Keep key small (input_key(...) plus a few ints): it is hashed on every rerun."""
    return _figure(name, key, build)


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


@st.cache_resource(max_entries=16, show_spinner=False)
def _roles_table(model_key: str, _metadata: dict) -> pa.Table | None:
    raw = (_metadata or {}).get("head_roles")
    if not isinstance(raw, list) or not all(isinstance(r, dict) and "layer" in r for r in raw):
        return None
    rows = [{"head": f"{r['layer']}.{r['head']}", "role": r.get("role", ""), "score": r.get("score"),
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


def check_line(ok: bool, text: str) -> None:
    (st.success if ok else st.error)(("✓ " if ok else "✗ ") + text)


def render_step(i: int, data: dict, checks: dict[str, float], layer: int, head: int, tokens: list[str], prefix: str,
                key: str) -> None:
    """Draw pipeline step i (0-based) for one head, with its live check (checks: cached_checks of this layer);
    figures cached per exact input. key: input_key(...) of everything data and tokens were computed from."""
    key = (key, i, layer, head)
    c = checks
    allowed = data["allowed"]
    cfg_name = f"pipeline_step{i + 1}_L{layer}_H{head}"
    s = data["scores"][layer, head]
    if i == 0:
        cols = st.columns(3)
        for col, name in zip(cols, ("q", "k", "v")):
            fig = cached_figure(name, key, lambda n=name: matrix_heatmap(
                data[n][layer, head], tokens, title=n.upper(), value_name=n.upper(), row_title="token",
                col_title="d_k", show_values=False))
            chart.show(fig, key=f"{prefix}_step_{name}", name=cfg_name, container=col)
        check_line(c["qkv"] < 1e-4, f"Q, K, V recomputed from X and the weights match the trace "
                                    f"(max error {c['qkv']:.1e}).")
        return
    if i in (1, 2, 3):
        val = {1: s, 2: np.where(allowed, 0.0, -np.inf), 3: np.where(allowed, s, -np.inf)}[i]
        name = {1: "S", 2: "M", 3: "S + M"}[i]
        fig = cached_figure("step", key, lambda: matrix_heatmap(
            val, tokens, tokens, col_tokens=True, allowed=allowed if i != 1 else None, value_name=name,
            col_title="key", title=f"{name}, layer {layer} head {head}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        if i == 1:
            check_line(c["scores"] < 1e-4, f"S recomputed as Q·Kᵀ·{data['scale']:.4g} matches the trace "
                                           f"(max error {c['scores']:.1e}).")
        return
    if i == 4:
        fig = cached_figure("step", key, lambda: attention_heatmap(
            data["probs"][layer, head], tokens, allowed=allowed, title=f"A, layer {layer} head {head}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        check_line(c["row_sums"] < 1e-5, f"Rows sum to 1, max error {c['row_sums']:.0e}; blocked cells carry "
                                         f"weight {c['masked_weight']:.0e}.")
        return
    if i == 5:
        fig = cached_figure("step", key, lambda: matrix_heatmap(
            data["head_out"][layer, head], tokens, value_name="A·V", row_title="query", col_title="d_k",
            title="head_out = A·V", show_values=False))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        check_line(c["head_out"] < 1e-4, f"A·V recomputed from the trace equals head_out "
                                         f"(max error {c['head_out']:.1e}).")
        return
    if i == 6:
        concat = np.concatenate(list(data["head_out"][layer]), axis=-1)  # (T, H*d_k)
        d_k = data["head_out"].shape[-1]
        labels = [f"h{j // d_k}:{j % d_k}" for j in range(concat.shape[1])]
        fig = cached_figure("step", key, lambda: matrix_heatmap(
            concat, tokens, labels, value_name="concat", row_title="query", col_title="head:feature",
            title="All heads side by side", show_values=False))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        st.caption(f"Columns {head * d_k}–{(head + 1) * d_k - 1} are this head's output.")
        return
    fig = cached_figure("step", key, lambda: matrix_heatmap(
        data["attn_out"][layer], tokens, value_name="attn_out", row_title="query", col_title="d_model",
        title="attn_out = concat·W_O + b", show_values=False))
    chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
    check_line(c["attn_out"] < 1e-4, f"concat·W_O + b recomputed equals the layer's attention output "
                                     f"(max error {c['attn_out']:.1e}).")


def render_query_focus(data: dict, layer: int, head: int, tokens: list[str], prefix: str, key: str) -> None:
    """Pick a query token: its attention row as bars and the value vectors it mixes (this head); key as in
    render_step."""
    labels = [f"{i} {t}" for i, t in enumerate(tokens)]
    qi = st.selectbox("Query token", range(len(tokens)), format_func=lambda i: labels[i],
                      index=len(tokens) - 1, key=f"{prefix}_query")
    probs = data["probs"][layer, head]
    key = (key, layer, head, qi)
    c1, c2 = st.columns(2)
    bars = cached_figure("bars", key, lambda: query_bars(probs[qi], tokens, tokens[qi], allowed=data["allowed"][qi]))
    chart.show(bars, key=f"{prefix}_bars", name=f"query_{qi}", container=c1)
    chart.show(cached_figure("mix", key, lambda: value_mix(probs[qi], data["v"][layer, head], tokens, tokens[qi])),
               key=f"{prefix}_mix", name=f"value_mix_{qi}", container=c2)
