"""What the ALiBi tab proves (Press et al., 2022): the per-head slopes, the bias matrix -m_h |i - j|, and that a
model's attention scores carry exactly that bias, measured on the same weights with ALiBi on and off (torch)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from viz_model.lessons.common import Check, Fact
from viz_model.model import TinyTransformer
from viz_model.positional import alibi_bias, alibi_slopes

MAX_HEADS, MAX_POSITIONS = 16, 64  # the tab's sliders: a grid of 16 heads of 64 x 64 cells still reads


def paper_slopes(n: int) -> list[float]:
    """The slopes as the paper's reference code computes them (get_slopes, recursive, in plain floats): the live
    check's independent side."""
    if math.log2(n).is_integer():
        start = 2 ** (-2 ** -(math.log2(n) - 3))  # = 2^(-8/n)
        return [start * start ** i for i in range(n)]
    p = 2 ** math.floor(math.log2(n))
    return paper_slopes(p) + paper_slopes(2 * p)[0::2][: n - p]


def slopes_table(n_heads: int) -> pd.DataFrame:
    """One row per head: its slope m_h, m_h as a power of two, and the distance at which its bias reaches -1 (the
    weight of a key that far back is then e^-1 = 0.37 of an equally scored key at distance 0)."""
    m = alibi_slopes(n_heads).numpy()
    return pd.DataFrame({"head": np.arange(n_heads), "slope m": [f"{x:.6g}" for x in m],
                         "as a power of 2": [f"2^{math.log2(x):.4g}" for x in m],
                         "bias −1 at distance": [f"{1 / x:,.4g}" for x in m]})


def bias_view(n_heads: int, n_pos: int, causal: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bias (H, T, T) float64, allowed (T, T) bool, slopes (H,)): what the model adds to each head's scores; a
    decoder's later keys are blocked by its causal mask (the bias there is never used)."""
    if not (1 <= n_heads <= MAX_HEADS and 2 <= n_pos <= MAX_POSITIONS):
        raise ValueError(f"the tab shows 1 to {MAX_HEADS} heads over 2 to {MAX_POSITIONS} positions.")
    slopes = alibi_slopes(n_heads)
    pos = torch.arange(n_pos)
    allowed = (pos[:, None] >= pos[None, :]) if causal else torch.ones(n_pos, n_pos, dtype=torch.bool)
    return alibi_bias(slopes, pos, pos).numpy(), allowed.numpy(), slopes.numpy()


def bias_claims(bias: np.ndarray, allowed: np.ndarray) -> list[Check | Fact]:
    """Every row of every head is -m_h x distance, with m_h from the paper's own code; and the slopes' pattern."""
    H, T, _ = bias.shape
    ref = np.array(paper_slopes(H))
    dist = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])
    err = float(np.abs(np.where(allowed, bias + ref[:, None, None] * dist, 0.0)).max())
    claims: list[Check | Fact] = [Check(err, 1e-12, f"each row of each head's bias is −m_h × distance, with m_h from "
                                                    f"the paper's code (get_slopes) for {H} heads")]
    if H & (H - 1) == 0:
        ratio = float(np.abs(ref[1:] / ref[:-1] - 2 ** (-8 / H)).max()) if H > 1 else 0.0
        first = abs(ref[0] - 2 ** (-8 / H))
        claims.append(Check(max(ratio, first), 1e-12, f"{H} heads (a power of two): the slopes start at "
                                                      f"2^(−8/{H}) = {2 ** (-8 / H):.4g} and each is the previous one "
                                                      f"times that same ratio"))
    else:
        p = 1 << (H.bit_length() - 1)
        ok = bool(np.allclose(ref[:p], paper_slopes(p), rtol=1e-12, atol=0)) and bool(
            np.allclose(ref[p:], paper_slopes(2 * p)[0::2][: H - p], rtol=1e-12, atol=0))
        claims.append(Fact(ok, f"{H} heads is not a power of two: the first {p} slopes are those of {p} heads, the "
                               f"other {H - p} every other slope of {2 * p} heads (the paper's interpolation)"))
    return claims


# -- inside a model trained with ALiBi ---------------------------------------------------------------------
def without_alibi(model: TinyTransformer) -> TinyTransformer:
    """The same weights with pos_encoding='none': ALiBi has no parameters, so only the bias is gone."""
    copy = TinyTransformer(dataclasses.replace(model.config, pos_encoding="none")).to(model.device).eval()
    copy.load_state_dict(model.state_dict())
    return copy.requires_grad_(False)


@torch.no_grad()
def alibi_on_off(model: TinyTransformer, ids: Sequence[int]) -> tuple:
    """Layer 0's traces of the same weights with ALiBi on and off, for one sentence."""
    x = torch.tensor([list(ids)], device=model.device)
    on = model(x, trace_layers=(0,), logits=False).trace.layers[0]
    off = without_alibi(model)(x, trace_layers=(0,), logits=False).trace.layers[0]
    return on, off


def model_claims(model: TinyTransformer, on, off) -> list[Check]:
    """Layer 0: scores with ALiBi minus scores without = -m_h |i - j| (the model's own slopes against the paper's);
    Q, K and V do not change (ALiBi touches nothing but the scores)."""
    T = on.scores.shape[-1]
    allowed = torch.isfinite(on.mask).expand_as(on.scores)
    diff = (on.scores - off.scores).double().cpu()
    ref = torch.tensor(paper_slopes(model.config.n_heads), dtype=torch.float64)
    dist = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).abs()
    err = float((diff + ref[:, None, None] * dist).masked_fill(~allowed.cpu(), 0).abs().max())
    qkv = max(float((a - b).abs().max()) for a, b in ((on.q, off.q), (on.k, off.k), (on.v, off.v)))
    return [Check(err, 1e-4, "layer 0: the model's scores with ALiBi minus the same weights' scores without it equal "
                             "−m_h·|i − j|, head by head"),
            Check(qkv, 0.0, "Q, K and V are identical with ALiBi on and off: it adds to the scores, never to a vector")]


def reach_rows(model: TinyTransformer, on) -> pd.DataFrame:
    """Per head of layer 0: its slope and how far back its attention reaches on average (Σ_j p_ij |i − j|, mean over
    the queries), measured on the sentence."""
    p = on.probs[0].double().cpu()  # (H, T, T)
    T = p.shape[-1]
    dist = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).abs().double()
    reach = (p * dist).sum(-1).mean(-1)  # (H,)
    m = alibi_slopes(model.config.n_heads)
    return pd.DataFrame({"head": np.arange(len(m)), "slope m": [f"{x:.4g}" for x in m.tolist()],
                         "mean distance attended": [round(float(r), 2) for r in reach]})


def reach_sentence(rows: pd.DataFrame) -> str:
    """Which head reads furthest back, by the measured distances (words chosen from the numbers)."""
    far, near = rows["mean distance attended"].idxmax(), rows["mean distance attended"].idxmin()
    steep = 0  # slopes fall with the head index: head 0 has the steepest penalty
    agree = "the steepest-sloped head reads nearest" if near == steep else (
        f"the steepest-sloped head (0) is not the one that reads nearest (head {near} is)")
    return (f"On this sentence head {far} reaches furthest back ({rows.loc[far, 'mean distance attended']:.2f} "
            f"tokens on average) and head {near} stays closest ({rows.loc[near, 'mean distance attended']:.2f}): "
            f"{agree}. The slope caps how far a head can look; what it looks at is learned.")


# -- what the page says ---------------------------------------------------------------------------------------
INTRO = ("**ALiBi** (Press et al., 2022, “Train Short, Test Long”) adds nothing to the tokens and rotates nothing. "
         "Each head adds a fixed penalty to its attention scores before the softmax: −m_h·|i − j|, a slope m_h times "
         "the distance from query i to key j. Heads with a steep slope look nearby, heads with a gentle one look far. "
         "Nothing is learned and nothing depends on the length, so the same rule applies to inputs longer than "
         "any seen in training.")
CAUSAL_NOTE = ("A decoder only reads keys j ≤ i, where |i − j| = i − j: the paper's bias exactly. An encoder reads "
               "both sides: with i − j a key to the right would get a bonus that grows with distance, so this app "
               "uses the symmetric |i − j| there (as MosaicBERT does).")
NO_ALIBI_MODEL = ("No ALiBi model is available (the sidebar model does not use ALiBi and the shipped “enc-alibi” is "
                  "not installed), so this tab shows the bias itself only.")
MODEL_INTRO = "Inside layer 0 of {where}, for “{sentence}” (T = {T}):"
