"""What the RoPE page proves: the worked example, pair rotations, relative scores, context extension (torch)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from viz_model import rope
from viz_model.lecture import ROPE_HEADS
from viz_model.model import TinyTransformer

MAX_EDIT_VALUE = 1e6


# -- RoPE: the lecture's worked example -----------------------------------------------------------------
def parse_matrix(rows, shape: tuple[int, int]) -> np.ndarray:
    """Validate an edited table: every cell a finite number of moderate size."""
    try:
        m = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError("every cell of Q must be a number.") from e
    if m.shape != shape:
        raise ValueError(f"Q must have {shape[0]} rows and {shape[1]} columns.")
    if not np.isfinite(m).all():
        raise ValueError("every cell of Q must be a number (no empty cells).")
    if np.abs(m).max() > MAX_EDIT_VALUE:
        raise ValueError(f"keep the values of Q between −{MAX_EDIT_VALUE:,.0f} and {MAX_EDIT_VALUE:,.0f}.")
    return m


@dataclasses.dataclass
class WorkedExample:
    heads: list[np.ndarray]     # H x (T, d_k) slices of Q_full
    omega: np.ndarray           # (d_k/2,)
    angles: np.ndarray          # (T, d_k/2) t * omega_i
    rotated: list[np.ndarray]   # H x (T, d_k), by the pair formula written out
    core_error: float           # max |formula - viz_model.rope.apply_rope|


def worked_example(q_full: np.ndarray, n_heads: int = ROPE_HEADS, base: float = 10000.0) -> WorkedExample:
    """Split Q (T, d_model) into heads, rotate pair i of each row t by t*omega_i: (a, b) -> (a c - b s, a s + b c)."""
    T, d_model = q_full.shape
    d_k = d_model // n_heads
    omega = rope.default_inv_freq(d_k, base).numpy()
    angles = np.arange(T)[:, None] * omega[None, :]  # (T, d_k/2)
    c, s = np.cos(angles), np.sin(angles)
    heads, rotated, err = [], [], 0.0
    for h in range(n_heads):
        x = q_full[:, h * d_k:(h + 1) * d_k]  # (T, d_k)
        a, b = x[:, 0::2], x[:, 1::2]
        out = np.empty_like(x)
        out[:, 0::2], out[:, 1::2] = a * c - b * s, a * s + b * c
        core = rope.apply_rope(torch.tensor(x), torch.arange(T), torch.tensor(omega)).numpy()
        err = max(err, float(np.abs(out - core).max()))
        heads.append(x)
        rotated.append(out)
    return WorkedExample(heads, omega, angles, rotated, err)


# -- RoPE: scores and rotations -------------------------------------------------------------------------
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


# -- RoPE: context extension ----------------------------------------------------------------------------
def scaling_for(method: str, factor: float, original_len: int, extra: dict | None = None) -> dict | None:
    """The HF-style rope_scaling dict for one registry entry; validated (ValueError with a sentence)."""
    if method == "none":
        return None
    spec = {"type": method, "factor": float(factor), "original_max_position_embeddings": int(original_len)}
    if method in ("linear", "ntk"):
        spec.pop("original_max_position_embeddings")
    spec.update({k: v for k, v in (extra or {}).items() if k in rope._PARAMS[method]})
    return rope.validate_scaling(spec)


def scaling_problems(original_len: int, target_len: int, extra: dict | None = None) -> dict[str, str]:
    """method -> why its parameters are invalid, for the methods that cannot run with these settings."""
    problems = {}
    for method in rope.ROPE_INIT_FUNCTIONS:
        try:
            scaling_for(method, target_len / original_len, original_len, extra)
        except ValueError as err:
            problems[method] = str(err)
    return problems


def scaling_table(d_k: int, base: float, original_len: int, target_len: int, extra: dict | None = None
                  ) -> dict[str, tuple[np.ndarray, float]]:
    """method -> (theta'/theta per pair, attention factor) at the target length, for every registry entry whose
    parameters are valid (scaling_problems names the others): one bad method's parameters hide no other method."""
    factor = target_len / original_len
    theta = rope.default_inv_freq(d_k, base)
    out = {}
    for method in rope.ROPE_INIT_FUNCTIONS:
        try:
            scaling = scaling_for(method, factor, original_len, extra)
        except ValueError:
            continue
        freqs, att = rope.inv_freq(d_k, base, scaling, seq_len=target_len)
        out[method] = ((freqs / theta).numpy(), att)
    return out


def angle_coverage(theta: np.ndarray, theta_new: np.ndarray, train_len: int, target_len: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: angle swept over the training span and over the target span, both capped at one full turn.

    Spans (L and L′ positions) rather than last indices, so that linear interpolation by s = L′/L maps the
    target span exactly onto the training one.
    """
    seen = np.minimum(train_len * theta, 2 * math.pi)
    needed = np.minimum(target_len * theta_new, 2 * math.pi)
    return seen, needed


def readouts(d_k: int, base: float, factor: float, original_len: int, target_len: int) -> dict[str, str]:
    """The numbers the lecture quotes, for the current settings."""
    out = {"factor s = L′/L": f"{factor:g}",
           "NTK-aware base′ = b·s^(d/(d−2))": f"{rope.ntk_base(d_k, base, factor):,.1f}",
           "dynamic NTK base′ at L′ (HF)": f"{rope.dynamic_base(d_k, base, factor, original_len, target_len):,.0f}",
           "YaRN temperature √(1/t) = 0.1 ln s + 1": f"{rope.yarn_mscale(factor):.4f}",
           "YaRN logit multiplier (√(1/t))²": f"{rope.yarn_mscale(factor) ** 2:.4f}"}
    if factor > 1:
        low, high = rope.yarn_range(d_k, base, {"original_max_position_embeddings": original_len})
        out["YaRN ramp (low, high) pair"] = f"({low:g}, {high:g})"
    return out


def scaled_copy(model: TinyTransformer, **changes) -> TinyTransformer:
    """Same weights, different position settings (RoPE and the sinusoidal table have no parameters)."""
    copy = TinyTransformer(dataclasses.replace(model.config, **changes)).to(model.device).eval()
    copy.load_state_dict(model.state_dict())
    return copy.requires_grad_(False)


MAX_EXPERIMENT_TOKENS = 4096  # longest window the length experiment runs on a shared 2-core server


def heldout_windows(ids: Sequence[Sequence[int]], length: int, total: int
                    ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The first `total` held-out tokens (sentences packed end to end) cut into windows of `length`.

    Every length scores the same tokens, so losses at 1x, 2x, 4x differ only by how much context each
    prediction sees. Returns (inputs, targets), each (total/length, length); None if there is too little text.
    """
    flat = [t for seq in ids for t in seq]
    if total % length or len(flat) < total + 1:
        return None
    x = torch.tensor(flat[: total + 1], dtype=torch.long)
    return x[:-1].view(-1, length), x[1:].view(-1, length)


def experiment_tokens(train_len: int, multiples: Sequence[int], budget: int = 1024) -> int:
    """Tokens scored per cell: a multiple of the longest window, about `budget` (at least one window)."""
    longest = max(multiples) * train_len
    return longest * max(1, budget // longest)


@torch.no_grad()
def length_losses(model: TinyTransformer, heldout_ids: Sequence[Sequence[int]], multiples: Sequence[int],
                  total: int | None = None, progress: Callable[[float, str], None] | None = None) -> pd.DataFrame:
    """Held-out next-token loss at m x the training length, under every scaling (RoPE) or as is (others)."""
    cfg = model.config
    L = cfg.max_len
    total = total or experiment_tokens(L, multiples)
    methods = list(rope.ROPE_INIT_FUNCTIONS) if cfg.pos_encoding == "rope" else ["none"]
    rows, jobs = [], [(m, meth) for m in multiples for meth in methods]
    for j, (m, method) in enumerate(jobs):
        if progress:
            progress(j / len(jobs), f"{m}× context, {rope.ROPE_SCALING_LABELS[method]}")
        row = {"method": method, "multiple": m, "length": m * L, "loss": float("nan"), "note": ""}
        windows = heldout_windows(heldout_ids, m * L, total)
        if m == 1 and rows and rows[0]["multiple"] == 1:
            row["loss"] = rows[0]["loss"]  # factor 1: every scaling is plain RoPE (tested), so reuse the pass
        elif m * L > MAX_EXPERIMENT_TOKENS:
            row["note"] = f"windows longer than {MAX_EXPERIMENT_TOKENS:,} tokens are not run on this server"
        elif windows is None:
            row["note"] = "not enough held-out text"
        elif cfg.pos_encoding == "learned" and m * L > L:
            row["note"] = f"a learned table has only {L} rows, so it cannot read {m * L} positions"
        else:
            scaled = model if method == "none" else scaled_copy(
                model, rope_scaling=scaling_for(method, max(m, 1), L))
            x, y = (w.to(model.device) for w in windows)
            row["loss"] = float(scaled(x, targets=y).loss)
        rows.append(row)
    if progress:
        progress(1.0, "done")
    return pd.DataFrame(rows)


def pair_view(q: torch.Tensor, k: torch.Tensor, t: float, s: float, pair: int, inv_freq: torch.Tensor) -> dict:
    """One pair of q at position t and k at position s, before and after rotation, and the scores."""
    rq, rk = rotate_at(q, t, inv_freq), rotate_at(k, s, inv_freq)
    sl = slice(2 * pair, 2 * pair + 2)
    qa, ka = rq[sl].numpy(), rk[sl].numpy()
    between = math.atan2(ka[1], ka[0]) - math.atan2(qa[1], qa[0])
    return {"q": q[sl].numpy(), "k": k[sl].numpy(), "q_rot": qa, "k_rot": ka,
            "angle": (between + math.pi) % (2 * math.pi) - math.pi,  # in (-pi, pi]
            "pair_score": float(qa @ ka), "score": float(rq @ rk)}


@torch.no_grad()
def rope_on_off(model: TinyTransformer, ids: Sequence[int]) -> tuple:
    """Traces of the same weights with RoPE on and with pos_encoding='none' (RoPE switched off)."""
    x = torch.tensor([list(ids)], device=model.device)
    off = scaled_copy(model, pos_encoding="none", rope_scaling=None)
    return model(x, trace=True).trace, off(x, trace=True).trace


def convention_check(d_k: int, t: int, s: int, base: float = 10000.0, seed: int = 0) -> dict:
    """Interleaved vs rotate-half on the same q, k: the permutation makes them agree exactly."""
    q, k = random_qk(d_k, seed)
    theta = rope.default_inv_freq(d_k, base)
    perm = rope.interleaved_to_half_perm(d_k)
    pos_q, pos_k = torch.tensor([float(t)]), torch.tensor([float(s)])

    def rot(x, p, conv):
        return rope.apply_rope(x[None], p, theta, convention=conv)[0]

    inter = float(rot(q, pos_q, "interleaved") @ rot(k, pos_k, "interleaved"))
    half_perm = float(rot(q[perm], pos_q, "half") @ rot(k[perm], pos_k, "half"))
    half_wrong = float(rot(q, pos_q, "half") @ rot(k, pos_k, "half"))
    vec_err = float((rot(q[perm], pos_q, "half") - rot(q, pos_q, "interleaved")[perm]).abs().max())
    return {"perm": perm.tolist(), "interleaved": inter, "half_permuted": half_perm, "half_unpermuted": half_wrong,
            "vector_error": vec_err}
