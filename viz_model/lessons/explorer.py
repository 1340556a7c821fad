"""What the Explorer proves: every step of one layer's attention recomputed from its own inputs, row entropy; and what
it shows beside them: which heads share K/V, the grid's pages, the recorded head roles, the pipeline's steps."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from viz_model import masks
from viz_model.attention import LayerTrace
from viz_model.lessons.common import ROW_SUM_TOL, Fact, row_sum_error
from viz_model.model import TinyTransformer, Trace
from viz_model.rope import rotate_interleaved


# -- the pipeline of one layer ------------------------------------------------------------------
def attention_input(model: TinyTransformer, trace: Trace, layer: int) -> torch.Tensor:
    """X entering layer `layer`'s attention: (B, T, d_model) (after LayerNorm for a pre-norm model)."""
    stream = trace.embeddings + trace.positional if layer == 0 else trace.residual[layer - 1]
    block = model.blocks[layer]
    return block.ln1(stream) if block.pre else stream


def project_qkv(model: TinyTransformer, x: torch.Tensor, layer: int, positions: torch.Tensor | None):
    """X -> Q, K, V per head, (B, H, T, d_k) each; RoPE on Q and K when the model uses it."""
    attn = model.blocks[layer].attn
    q, k, v = attn.project(x)  # k, v: (B, H_kv, T, d_k), shared by a group of query heads under GQA
    if model.config.pos_encoding == "rope" and positions is not None:
        cs = model.rope_cos_sin(positions)
        q, k = rotate_interleaved(q, *cs), rotate_interleaved(k, *cs)
    return q, attn.expand_kv(k), attn.expand_kv(v)


def score_scale(model: TinyTransformer, scale_scores: bool = True, temperature: float = 1.0) -> float:
    """The factor on QK^T: 1/sqrt(d_k) (or 1 when switched off), divided by the attention temperature."""
    return (1.0 / math.sqrt(model.config.d_k) if scale_scores else 1.0) / temperature


@torch.no_grad()
def pipeline_check(model: TinyTransformer, trace: Trace, layer: int, scale: float) -> dict[str, float]:
    """Recompute every step of layer `layer` from its own inputs; max |recomputed - traced| per step."""
    return layer_check(model, attention_input(model, trace, layer), trace.layers[layer], layer, trace.positions, scale)


@torch.no_grad()
def layer_check(model: TinyTransformer, x: torch.Tensor, lt: LayerTrace, layer: int, positions: torch.Tensor | None,
                scale: float) -> dict[str, float]:
    """pipeline_check from the pieces: x (B, T, d_model) entering the layer's attention and its traced internals
    (e.g. kept as arrays and checked only for the layer on screen)."""
    q, k, v = project_qkv(model, x, layer, positions)
    scores = (lt.q @ lt.k.transpose(-2, -1)) * scale                       # (B, H, T, T)
    if (bias := None if positions is None else model.position_bias(positions)) is not None:
        scores = scores + bias  # ALiBi: the traced scores include its -m_h |i - j|
    probs = torch.softmax(lt.scores + lt.mask, dim=-1)
    head_out = lt.probs @ lt.v                                             # (B, H, T, d_k)
    B, H, T, d_k = head_out.shape
    concat = lt.head_out.transpose(1, 2).reshape(B, T, H * d_k)            # (B, T, d_model)
    out = model.blocks[layer].attn.out(concat)
    allowed = torch.isfinite(lt.mask).expand_as(lt.probs)  # (Trace.allowed, from a layer trace alone)
    return {
        "qkv": max((a - b).abs().max().item() for a, b in ((q, lt.q), (k, lt.k), (v, lt.v))),
        "scores": (scores - lt.scores).abs().max().item(),
        "probs": (probs - lt.probs).abs().max().item(),
        "row_sums": row_sum_error(lt.probs),
        "masked_weight": lt.probs.masked_fill(allowed, 0).abs().max().item(),
        "head_out": (head_out - lt.head_out).abs().max().item(),
        "attn_out": (out - lt.attn_out).abs().max().item(),
    }


def row_entropy(probs: torch.Tensor) -> torch.Tensor:
    """Entropy of each softmax row in nats: (..., T, T) -> (..., T). 0 = one-hot (saturated)."""
    p = probs.clamp_min(0)
    return -(p * torch.log(p.clamp_min(1e-30))).sum(-1)


@torch.no_grad()
def trace_arrays(model: TinyTransformer, ids, attn_mask: torch.Tensor | None = None, scale_scores: bool = True,
                 temperature: float = 1.0, layers=None) -> dict:
    """One traced pass as numpy arrays, the traced layers only: q, k, v, scores, probs, head_out (L', H, T, .),
    attn_out and x_in (L', T, d_model), entropy (L', H, T), allowed (T, T), the score scale, the traced layer
    numbers and the model's layer count. `layers` None traces every layer."""
    out = model(torch.tensor([list(ids)], device=model.device), trace=True, attn_mask=attn_mask,
                scale_scores=scale_scores, temperature=temperature, trace_layers=layers, logits=False)
    tr = out.trace
    traced = [i for i, lt in enumerate(tr.layers) if lt is not None]

    def stack(layer_arrays):  # (len(traced), ...) float32
        return torch.stack([layer_arrays(i) for i in traced]).float().cpu().numpy()

    data = {n: stack(lambda i, n=n: getattr(tr.layers[i], n)[0])
            for n in ("q", "k", "v", "scores", "probs", "head_out", "attn_out")}  # (L', H, T, .), (L', T, d_model)
    data["x_in"] = stack(lambda i: attention_input(model, tr, i)[0])
    data["allowed"] = tr.allowed(traced[0])[0, 0].cpu().numpy()
    data["entropy"] = row_entropy(torch.from_numpy(data["probs"])).numpy()  # (L', H, T)
    data["scale"] = score_scale(model, scale_scores, temperature)
    data["layers"], data["n_layers"] = tuple(traced), model.config.n_layers
    return data


# -- grouped-query attention: which query heads share K and V ----------------------------------------------
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


def kv_share_claim(data: dict, cfg) -> Fact:
    """Measured on trace_arrays' data: within each K/V group the keys and values are identical, the queries are
    not."""
    g = kv_group(cfg)
    traced = list(data.get("layers", range(cfg.n_layers)))  # the pass traced only the layers on screen
    k, v, q = data["k"][traced], data["v"][traced], data["q"][traced]  # (L, H, T, d_k), K/V expanded per query head
    lead = np.repeat(np.arange(0, cfg.n_heads, g), g)  # the first head of each head's group
    same = float(max(np.abs(k - k[:, lead]).max(), np.abs(v - v[:, lead]).max()))
    others = [h for h in range(cfg.n_heads) if h != lead[h]]
    q_gap = float(np.abs(q[:, others] - q[:, lead[others]]).max()) if others else 0.0
    where = "every layer" if len(traced) == cfg.n_layers else f"layers {traced[0]}–{traced[-1]}"
    return Fact(same == 0.0 and q_gap > 0, f"Heads in one group read the same keys and values (largest difference "
                                           f"{same:g} over {where}), with their own queries (they differ by up to "
                                           f"{q_gap:.2f}).")


def kv_mates(cfg, head: int) -> str | None:
    """The K/V head `head` reads and the query heads that share it (None without GQA)."""
    if (g := kv_group(cfg)) == 1:
        return None
    mates = [str(h) for h in range(head // g * g, head // g * g + g) if h != head]
    return f"Head {head} reads K/V head {head // g}, shared with query head{'s' * (len(mates) > 1)} {', '.join(mates)}."


# -- the grid of every head, paged for a wide model ---------------------------------------------------------
GRID_CELLS = 16        # up to this many heads the grid shows every layer and head at once
PAGE_HEADS = 16        # wider models page their heads too
PAGE_CELLS = 48        # cells on one page of a larger grid (4 layers of GPT-2's 12 heads)


def grid_page_size(cfg) -> tuple[int, int]:
    """(layers, heads) on one page of the grid: everything up to GRID_CELLS heads, else at most PAGE_CELLS cells
    (e.g. GPT-2 small's 12 x 12 in pages of 4 layers)."""
    if cfg.n_layers * cfg.n_heads <= GRID_CELLS:
        return cfg.n_layers, cfg.n_heads
    heads = min(cfg.n_heads, PAGE_HEADS)
    return max(1, min(4, cfg.n_layers, PAGE_CELLS // heads)), heads


def span(start: int, size: int, total: int, what: str) -> str:
    """'layers 4–7' (or 'layers 8' for a page of one) of a page starting at `start`."""
    end = min(start + size, total) - 1
    return f"{what} {start}" if end == start else f"{what} {start}–{end}"


def grid_layers(cfg, start: tuple[int, int]) -> tuple[int, ...]:
    """The layers the grid page starting at `start` shows: the only ones its traced pass needs."""
    n_l = grid_page_size(cfg)[0]
    return tuple(range(start[0], min(start[0] + n_l, cfg.n_layers)))


def grid_page(cfg, l0: int, h0: int) -> tuple[list[int], list[int], str]:
    """(layers, heads, title) of the grid page whose first layer and head are l0, h0."""
    n_l, n_h = grid_page_size(cfg)
    layers, heads = list(range(l0, min(l0 + n_l, cfg.n_layers))), list(range(h0, min(h0 + n_h, cfg.n_heads)))
    title = f"{cfg.n_layers} layers × {cfg.n_heads} heads"
    if len(layers) < cfg.n_layers or len(heads) < cfg.n_heads:
        title += f": {span(l0, n_l, cfg.n_layers, 'layers')}" + (
            f", {span(h0, n_h, cfg.n_heads, 'heads')}" if len(heads) < cfg.n_heads else "")
    return layers, heads, title


# -- head roles, as the model's metadata records them ---------------------------------------------------------
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


def roles_rows(metadata: dict, name: Callable[[int, int], str]) -> list[dict[str, Any]] | None:
    """Every head's measured role, its score and the score of every role (heads.py's list of dicts), one row per
    head named by name(layer, head); None when the metadata holds no such list."""
    raw = (metadata or {}).get("head_roles")
    if not isinstance(raw, list) or not all(isinstance(r, dict) and "layer" in r for r in raw):
        return None
    return [{"head": name(r["layer"], r["head"]), "role": r.get("role", ""), "score": r.get("score"),
             **{k: v for k, v in (r.get("scores") or {}).items()}} for r in raw]


# -- the pipeline of one head, step by step ---------------------------------------------------------------
@dataclass
class Step:
    title: str
    formula: str
    shape: str
    check: str | None  # the key of layer_check's error for this step (None: nothing to recompute)


def pipeline_steps(T: int, d_model: int, H: int, d_k: int) -> list[Step]:
    return [
        Step("1. X → Q, K, V", "Q = X·W_Q, K = X·W_K, V = X·W_V (RoPE rotates Q and K if used)",
             f"X ({T}×{d_model}) → Q, K, V ({T}×{d_k}) per head", "qkv"),
        Step("2. Scores", "S = Q·Kᵀ / √d_k", f"({T}×{d_k})·({d_k}×{T}) → {T}×{T}", "scores"),
        Step("3. Mask", "M = 0 where allowed, −∞ where blocked", f"{T}×{T}", None),
        Step("4. S + M", "blocked scores become −∞", f"{T}×{T}", None),
        Step("5. Softmax", "A = softmax_row(S + M)", f"{T}×{T}, rows sum to 1", "row_sums"),
        Step("6. A·V", "head_out = A·V", f"({T}×{T})·({T}×{d_k}) → {T}×{d_k}", "head_out"),
        Step("7. Concat", "[head_0 | … | head_H−1]", f"{H} × ({T}×{d_k}) → {T}×{d_model}", None),
        Step("8. W_O", "attn_out = concat·W_O + b", f"({T}×{d_model})·({d_model}×{d_model}) → {T}×{d_model}",
             "attn_out"),
    ]


def pipeline_columns(steps: list[Step], checks: dict[str, float]) -> dict[str, list[str]]:
    """The steps with their formula, shape and measured recomputation error (layer_check's), as string columns."""
    return {"step": [s.title for s in steps], "formula": [s.formula for s in steps],
            "shape": [s.shape for s in steps],
            "recomputed, max error": ["—" if s.check is None else f"{checks[s.check]:.1e}" for s in steps]}


# The pipeline steps whose tensor is recomputed and compared with the trace: step -> (layer_check's error, sentence).
STEP_CHECKS = {0: ("qkv", "Q, K, V recomputed from X and the weights match the trace"),
               1: ("scores", "S recomputed as Q·Kᵀ·{scale:.4g} matches the trace"),
               5: ("head_out", "A·V recomputed from the trace equals head_out"),
               7: ("attn_out", "concat·W_O + b recomputed equals the layer's attention output")}
STEP_TOL = 1e-4  # float32 recomputation of a whole layer's tensors


def step_claims(i: int, c: dict[str, float], scale: float) -> list[Fact]:
    """The live check of pipeline step i (0-based) from layer_check's errors `c` (none for steps 2, 3 and 6)."""
    if i == 4:
        return [Fact(c["row_sums"] <= ROW_SUM_TOL, f"Rows sum to 1, max error {c['row_sums']:.0e} (tolerance "
                                                   f"{ROW_SUM_TOL:.0e}); blocked cells carry weight "
                                                   f"{c['masked_weight']:.0e}.")]
    if i not in STEP_CHECKS:
        return []
    name, sentence = STEP_CHECKS[i]
    return [Fact(c[name] < STEP_TOL, f"{sentence.format(scale=scale)} (max error {c[name]:.1e}).")]


def concat_heads(head_out) -> tuple[np.ndarray, list[str]]:
    """Every head's output of one layer (H, T, d_k) side by side: (T, H*d_k) and its column labels 'h:feature'."""
    concat = np.concatenate(list(head_out), axis=-1)  # (T, H*d_k)
    d_k = head_out.shape[-1]
    return concat, [f"h{j // d_k}:{j % d_k}" for j in range(concat.shape[1])]


def head_rows_claim(probs) -> Fact:
    """The big heatmap's rows (T, T: one head, or a layer's average) sum to 1."""
    err = row_sum_error(probs)
    return Fact(err <= ROW_SUM_TOL, f"Rows sum to 1, max error {err:.0e} (tolerance {ROW_SUM_TOL:.0e}). Grey cells "
                                    "are blocked by the mask (weight exactly 0), not learned zeros.")


def sharpness(data: dict, layer: int, head: int, average: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """(row entropies (T,) of the head or the layer's average, a uniform row's entropy over its allowed keys (T,),
    the sentence comparing their means)."""
    ent = data["entropy"][layer].mean(0) if average else data["entropy"][layer, head]
    uniform = np.log(np.maximum(data["allowed"].sum(-1), 1))
    return ent, uniform, (f"Mean row entropy {ent.mean():.3f} nats (uniform rows would give {uniform.mean():.3f}). "
                          "Turn off the 1/√d_k scaling or lower the temperature: rows saturate towards one key.")


# -- the mask knob ------------------------------------------------------------------------------
def knob_mask(kind: str, T: int) -> tuple[np.ndarray, str | None]:
    """The Explorer's mask: a kind of masks.MODEL_MASKS at its default parameters (cut to T), (T, T) bool, and the
    sentence that names those parameters (None for a kind without any)."""
    row = masks.mask_kind(kind)
    allowed = masks.build_mask(kind, T).numpy()
    if not row.params:
        return allowed, None
    values = ", ".join(f"{p.label.lower()} {min(p.default, T)}" for p in row.params)
    return allowed, MASK_PARAMS.format(label=row.label, values=values)


def off_distribution(trained: str, run: str) -> str | None:
    """The warning when the Explorer runs a model under a mask kind it was not trained with (None when it was)."""
    if trained == run:
        return None
    return OFF_DISTRIBUTION.format(trained=masks.short_name(trained), run=masks.short_name(run))


# -- what the page says ----------------------------------------------------------------------------------
MASK_PARAMS = "{label} at its default parameters: {values} (the Masks page varies them)."
OFF_DISTRIBUTION = ("This model was trained with the {trained} mask. Running it with the {run} mask is "
                    "off-distribution: the pattern shows what the weights do with inputs they never saw, not what "
                    "they learned.")
ROLE_LEGEND = ("previous-token: attends to t−1 · first-token: parks attention on <bos> (a sink) · self: attends "
               "to itself · coreference: a pronoun attends to its noun · induction: copies what followed the "
               "same token before · broad: no single pattern clears its bar.")
MEASURED_LEGEND = ("Measured now on {n} sequences of random ordinary tokens of this model's vocabulary, each run "
                   "repeated once: previous-token: attends to t−1 · first-token: parks attention on position 0 (a "
                   "sink{bos}) · self: attends to itself · induction: on the repeat, attends to the token after the "
                   "same token's first occurrence · broad: no single pattern clears its bar.")
NO_ROLES = ("This model's metadata has no head roles. Measure them on repeated random tokens of its own vocabulary: "
            "previous-token, first-token (sink), self and induction heads.")
OTHER_TOKENIZER = {  # under the comparison of the model's own tokenizer with the other shipped one
    "word": "BPE splits rare words into pieces, so the same text gets other tokens and other ids. A model only "
            "understands the ids of the tokenizer it was trained with: this model uses the word tokenizer, so the "
            "attention below is always computed on the word tokens.",
    "bpe": "The word tokenizer of the classroom models knows only its corpus's words: every other word is `<unk>`. "
           "This model was trained on byte-level BPE ids, so no text is unknown to it, and the attention below is "
           "computed on its own BPE tokens.",
}
