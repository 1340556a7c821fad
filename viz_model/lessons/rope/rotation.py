"""Pair rotations and relative scores: each pair turns by t·θ_i, so <R_t q, R_s k> depends only on s − t.
The pair view, the angle table and wavelengths, and score against distance (random vectors and a model's heads)."""

from __future__ import annotations

import math

import numpy as np
import torch

from viz_model import rope
from viz_model.config import ModelConfig
from viz_model.lessons.common import Check


def live_settings(cfg: ModelConfig) -> tuple[int, float, str]:
    """The d_k and base of the pair and score views (the sidebar model's when it uses RoPE), and the sentence that
    says which ones the page uses."""
    own = cfg.pos_encoding == "rope"
    d_k = cfg.d_k if own and cfg.d_k % 2 == 0 else 32
    base = cfg.rope_base if own else 10000.0
    note = f"Pair and score views use d_k = {d_k} and base {base:,.0f}" + (
        " (the sidebar model's heads)." if own else ".")
    return d_k, base, note


def rotate_at(x: torch.Tensor, position: float, inv_freq: torch.Tensor, attention_factor: float = 1.0):
    """R_position x for one vector x (d_k,), float64."""
    return rope.apply_rope(x.double()[None], torch.tensor([float(position)], dtype=torch.float64),
                           inv_freq, attention_factor)[0]


def rope_score(q: torch.Tensor, k: torch.Tensor, t: float, s: float, inv_freq: torch.Tensor,
               attention_factor: float = 1.0) -> float:
    """<R_t q, R_s k>."""
    return float(rotate_at(q, t, inv_freq, attention_factor) @ rotate_at(k, s, inv_freq, attention_factor))


def random_qk(d_k: int, seed: int = 0, unit_pairs: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded random q, k (d_k,); with unit_pairs every pair has length 1, so each arrow is easy to see."""
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(d_k, generator=g, dtype=torch.float64) for _ in range(2))
    if unit_pairs:
        q, k = (x.view(-1, 2) / x.view(-1, 2).norm(dim=-1, keepdim=True) for x in (q, k))
        q, k = q.flatten(), k.flatten()
    return q, k


def scores_by_distance(q: torch.Tensor, k: torch.Tensor, inv_freq: torch.Tensor, max_dist: int) -> np.ndarray:
    """<R_0 q, R_d k> for d = 0..max_dist; q/k (..., d_k) are averaged over their leading dims."""
    d = torch.arange(max_dist + 1, dtype=torch.float64)
    kk = k.double().reshape(-1, k.shape[-1])  # (N, d_k)
    qq = q.double().reshape(-1, q.shape[-1])  # (M, d_k)
    rk = rope.apply_rope(kk[:, None, :].expand(-1, len(d), -1), d, inv_freq)  # (N, D, d_k)
    return torch.einsum("md,ntd->t", qq, rk).numpy() / (len(qq) * len(kk))


def mean_self_scores(vs: torch.Tensor, inv_freq: torch.Tensor, max_dist: int) -> np.ndarray:
    """mean over vectors v (N, d_k) of <R_0 v, R_d v> for d = 0..max_dist: the same content moved apart."""
    d = torch.arange(max_dist + 1, dtype=torch.float64)
    vs = vs.double()
    rotated = rope.apply_rope(vs[:, None, :].expand(-1, len(d), -1), d, inv_freq)  # (N, D, d_k)
    return torch.einsum("nd,ntd->t", vs, rotated).numpy() / len(vs)


def angle_table(n_pos: int, inv_freq: torch.Tensor) -> np.ndarray:
    """(n_pos, d_k/2) t*theta_i wrapped to [0, 2 pi)."""
    return np.mod(rope.rope_angles(torch.arange(n_pos), inv_freq).numpy(), 2 * math.pi)


def pair_view(q: torch.Tensor, k: torch.Tensor, t: float, s: float, pair: int, inv_freq: torch.Tensor) -> dict:
    """One pair of q at position t and k at position s, before and after rotation, and the scores."""
    rq, rk = rotate_at(q, t, inv_freq), rotate_at(k, s, inv_freq)
    sl = slice(2 * pair, 2 * pair + 2)
    qa, ka = rq[sl].numpy(), rk[sl].numpy()
    between = math.atan2(ka[1], ka[0]) - math.atan2(qa[1], qa[0])
    return {"q": q[sl].numpy(), "k": k[sl].numpy(), "q_rot": qa, "k_rot": ka,
            "angle": (between + math.pi) % (2 * math.pi) - math.pi,  # in (-pi, pi]
            "pair_score": float(qa @ ka), "score": float(rq @ rk)}


def pair_shift(d_k: int, base: float, pair: int, t: int, s: int, shift: int) -> tuple[dict, Check]:
    """pair_view of the seeded unit-pair q, k at (t + shift, s + shift), with its arrows, theta_pair and the angle in
    degrees; and the check that the shift changed neither the angle between them nor the score."""
    theta = rope.default_inv_freq(d_k, base)
    q, k = random_qk(d_k, seed=7, unit_pairs=True)
    ref, now = pair_view(q, k, t, s, pair, theta), pair_view(q, k, t + shift, s + shift, pair, theta)
    now["arrows"] = {"q before rotation": now["q"], "k before rotation": now["k"],
                     f"q at t = {t + shift}": now["q_rot"], f"k at s = {s + shift}": now["k_rot"]}
    now["theta"], now["degrees"] = float(theta[pair]), math.degrees(now["angle"])
    err = max(abs(now["score"] - ref["score"]), abs(now["angle"] - ref["angle"]) % (2 * math.pi))
    return now, Check(err, 1e-9, f"shifting both positions by {shift} leaves the angle and the score unchanged")


def angle_view(d_k: int, base: float, ctx: int) -> tuple[np.ndarray, np.ndarray]:
    """(ctx, d_k/2) angle table t·θ_i mod 2π and the (d_k/2,) wavelength of each pair."""
    theta = rope.default_inv_freq(d_k, base)
    return angle_table(ctx, theta), rope.wavelengths(theta).numpy()


def pair_scores(now: dict) -> dict[str, str]:
    """The angle between q and k in one pair and the scores of pair_shift's view."""
    return {"angle from q to k in this pair": f"{now['degrees']:.4f}°",
            "score ⟨R_t q, R_s k⟩ (all pairs)": f"{now['score']:.6f}",
            "this pair's share of the score": f"{now['pair_score']:.6f}"}


def wrap_sentence(wl: np.ndarray, ctx: int) -> str:
    """How many pairs (wavelengths wl) turn at least once inside ctx positions, and the slowest pair's turn."""
    n_wrap = int((wl <= ctx).sum())
    return (f"{n_wrap} of {len(wl)} pairs turn at least once inside {ctx:,} positions (red): their angle repeats, "
            f"so alone they cannot tell t from t + λ. The slowest pair needs {wl[-1]:,.0f} positions for one turn.")


def near_far(d_k: int, base: float) -> tuple[dict[str, str], Check]:
    """<R_t q, R_s k> of one seeded q, k at (3, 4) and at (500, 501), and the check that they are equal."""
    theta = rope.default_inv_freq(d_k, base)
    q, k = random_qk(d_k, seed=3)
    near, far = rope_score(q, k, 3, 4, theta), rope_score(q, k, 500, 501, theta)
    scores = {"score(q @ 3, k @ 4)": f"{near:.6f}", "score(q @ 500, k @ 501)": f"{far:.6f}"}
    return scores, Check(abs(near - far), 1e-9, "⟨R_t q, R_s k⟩ = ⟨q, R_(s−t) k⟩: only the offset s − t = 1 matters")


def random_distance_curves(d_k: int, base: float, max_dist: int) -> dict[str, np.ndarray]:
    """Score against distance 0..max_dist for the seeded q, k of near_far and for q = k (32 random vectors)."""
    theta = rope.default_inv_freq(d_k, base)
    q, k = random_qk(d_k, seed=3)
    same = torch.randn(32, d_k, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return {"one random q, k": scores_by_distance(q, k, theta, max_dist),
            "q = k, averaged over 32 random vectors": mean_self_scores(same, theta, max_dist)}


def head_distance_curves(cfg: ModelConfig, off, max_distance: int = 1024) -> dict[str, np.ndarray]:
    """Per head of layer 0, the mean q·k of a sentence moved to distance 0..min(max_len - 1, max_distance), under
    the model's own frequencies (its scaling included). off: the trace with RoPE switched off (rope_on_off)."""
    reach = min(cfg.max_len - 1, max_distance)  # a real model's context is 1k-128k: the curves stop at 1,024
    th, _ = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=cfg.max_len)
    q0, k0 = off.layers[0].q[0], off.layers[0].k[0]  # (H, T, d_k) before rotation: layer 0 has no position yet
    return {f"head {h}": scores_by_distance(q0[h], k0[h], th, reach) for h in range(cfg.n_heads)}
