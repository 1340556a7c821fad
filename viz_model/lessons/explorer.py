"""What the Explorer proves: every step of one layer's attention recomputed from its own inputs, row entropy."""

from __future__ import annotations

import math

import torch

from viz_model.attention import LayerTrace
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
        "row_sums": (lt.probs.sum(-1) - 1).abs().max().item(),
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
