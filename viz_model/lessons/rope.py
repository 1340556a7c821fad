"""What the RoPE page proves: the worked example, pair rotations, relative scores, context extension (torch)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, MutableMapping, Sequence

import numpy as np
import pandas as pd
import torch

from viz_model import rope
from viz_model.config import ModelConfig
from viz_model.data import corpus_split
from viz_model.lecture import ROPE_HEADS, ROPE_Q
from viz_model.lessons.common import Check
from viz_model.model import TinyTransformer
from viz_model.tokenizer import special_ids

MAX_EDIT_VALUE = 1e6


L_MAX, LP_MAX = 131072, 1048576  # the context-extension panel's largest training length L and target length L′


def seed_panel(state: MutableMapping, model: dict | None, name: str, keys: dict[str, str], marker_key: str) -> None:
    """Open the context-extension panel on a model folder's own settings (`model`: field -> value, `name` the folder;
    `keys`: field -> its widget key in `state`, the session's); going back to one of the app's models restores the
    panel's defaults. A link's values win on the first visit. `marker_key` keeps which model it was last seeded with."""
    marker = name if model is not None else None
    before = state.get(marker_key, "unset")
    if before == marker:
        return
    state[marker_key] = marker
    for field, key in keys.items():
        if model is None:
            if before not in ("unset", None):
                state.pop(key, None)
        elif field in model and (before != "unset" or key not in state):
            state[key] = model[field]


def panel_defaults(cfg: ModelConfig) -> dict:
    """The context-extension panel's opening settings for the sidebar's model: L its context when it uses RoPE (else
    4,096), L′ eight times L, d_k 128, base 10,000 (class mode's RoPE question reads the same)."""
    default_len = cfg.max_len if cfg.pos_encoding == "rope" else 4096
    return {"d_k": 128, "base": 10000.0, "L": min(default_len, L_MAX), "Lp": min(8 * default_len, LP_MAX)}


def live_settings(cfg: ModelConfig) -> tuple[int, float, str]:
    """The d_k and base of the pair and score views (the sidebar model's when it uses RoPE), and the sentence that
    says which ones the page uses."""
    own = cfg.pos_encoding == "rope"
    d_k = cfg.d_k if own and cfg.d_k % 2 == 0 else 32
    base = cfg.rope_base if own else 10000.0
    note = f"Pair and score views use d_k = {d_k} and base {base:,.0f}" + (
        " (the sidebar model's heads)." if own else ".")
    return d_k, base, note


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


def q_frame() -> pd.DataFrame:
    """The lecture's Q_full for “I like cats”, one row per token, as the page's editable table."""
    return pd.DataFrame(ROPE_Q, columns=[f"q{j}" for j in range(8)],
                        index=[f"{t} {w}" for t, w in enumerate(["I", "like", "cats"])])


def worked_tables(ex: WorkedExample, index) -> dict[str, pd.DataFrame]:
    """The worked example's tables, rows named by `index`: each head's slice, the angles, head 0 rotated."""
    pairs = ["pair 0 · a", "pair 0 · b", "pair 1 · a", "pair 1 · b"]
    out = {f"head {h}": pd.DataFrame(x, index=index, columns=pairs) for h, x in enumerate(ex.heads)}
    out["angles"] = pd.DataFrame(ex.angles, index=index, columns=["t·ω₀ (rad)", "t·ω₁ (rad)"])
    out["rotated"] = pd.DataFrame(ex.rotated[0].round(6), index=index, columns=["a′₀", "b′₀", "a′₁", "b′₁"])
    return out


def worked_arrows(ex: WorkedExample, index) -> dict[str, tuple[float, float]]:
    """Pair 0 of head 0 for each token (rows named by `index`), before and after its turn by t·ω₀: the arrows of
    figures.rope.pair_arrows."""
    out = {}
    for t, name in enumerate(index):
        out[f"q {name} before rotation"] = tuple(float(v) for v in ex.heads[0][t, :2])
        out[f"q {name} at t = {t}"] = tuple(float(v) for v in ex.rotated[0][t, :2])
    return out


def head_columns(h: int) -> str:
    return (f"Head {h}: columns {4 * h}–{4 * h + 3} of Q_full; pairs (q{4 * h}, q{4 * h + 1}) and "
            f"(q{4 * h + 2}, q{4 * h + 3})")


def omega_sentence(ex: WorkedExample) -> str:
    return (f"Frequencies ω_i = 10000^(−2i/4) = **[{ex.omega[0]:g}, {ex.omega[1]:g}]**. Row t turns pair i by "
            "t·ω_i radians: (a, b) → (a·cos − b·sin, a·sin + b·cos).")


def worked_claim(ex: WorkedExample) -> Check:
    return Check(ex.core_error, 1e-12, "the pair formula written out above equals viz_model.rope.apply_rope")


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


PANEL_BASES = [100.0, 1000.0, 10000.0, 100000.0, 500000.0, 1000000.0]  # 500,000: Llama 3's rope_theta
PANEL_D_KS = [8, 16, 32, 64, 128, 256]


def panel_choices(own: dict | None) -> tuple[list[int], list[float]]:
    """The d_k and base values the context-extension panel offers: the usual ones, plus a model's own (own:
    model_extension of it, or None)."""
    return (sorted({*PANEL_D_KS, *([own["d_k"]] if own else [])}),
            sorted({*PANEL_BASES, *([own["base"]] if own else [])}))


SCALING_PARAMS = ("beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor")  # YaRN's and Llama 3's


def model_extension(cfg: ModelConfig) -> dict:
    """The context-extension panel's settings that describe a RoPE model: its d_k and rope_theta, the length its
    scaling was set up from (L) and the length it reaches (L′ = factor × L), its method and parameters."""
    sc = dict(cfg.rope_scaling or {})
    method, factor = sc.pop("type", "none"), float(sc.pop("factor", 1.0))
    original = int(sc.pop("original_max_position_embeddings", 0)) or round(cfg.max_len / factor)
    out = {"d_k": cfg.d_k, "base": float(cfg.rope_base), "L": min(max(16, original), L_MAX), "method": method}
    out["Lp"] = min(max(out["L"], round(factor * out["L"])) if method != "none" else 8 * out["L"], LP_MAX)
    out.update({k: float(v) for k, v in sc.items() if k in SCALING_PARAMS})
    return out


def own_settings_sentence(cfg: ModelConfig) -> str:
    """What the context-extension panel opened on, for a model folder with RoPE."""
    own = model_extension(cfg)
    return (f"Opened on the sidebar model's own RoPE: d_k = {own['d_k']}, rope_theta = {own['base']:,.0f}, "
            + (f"{rope.ROPE_SCALING_LABELS[own['method']]} scaling from L = {own['L']:,} to L′ = "
               f"{own['Lp']:,} (its config.json)." if cfg.rope_scaling else "no scaling (plain RoPE)."))


def short_target(L: int, Lp: int) -> str | None:
    """The sentence that stops the panel when the target length is below the training length."""
    if Lp >= L:
        return None
    return (f"The target length L′ = {Lp:,} is shorter than the training length L = {L:,}: there is "
            "nothing to extend. Choose L′ ≥ L.")


def coverage_view(d_k: int, base: float, method: str, ratio: np.ndarray, att: float, L: int, Lp: int
                  ) -> tuple[np.ndarray, np.ndarray, str]:
    """angle_coverage of one method (theta'/theta = ratio, attention factor att), and the sentence that counts the
    pairs reaching angles at L′ that training never produced."""
    theta = rope.default_inv_freq(d_k, base).numpy()
    seen, needed = angle_coverage(theta, theta * ratio, L, Lp)
    n_out = int((needed > seen + 1e-9).sum())
    label = rope.ROPE_SCALING_LABELS[method]
    return seen, needed, (
        f"With {label}, {n_out} of {d_k // 2} pairs reach angles at L′ = {Lp:,} that training "
        f"never produced (red). Attention factor {att:.4f}: cos and sin are multiplied by it, so every "
        f"logit is multiplied by its square, {att ** 2:.4f}.")


def own_claim(cfg: ModelConfig, settings: dict, ratio: np.ndarray, att: float) -> Check | None:
    """The panel's method at these settings (theta'/theta = ratio, attention factor att) gives the model's own RoPE
    frequencies and attention factor (rope.inv_freq of its config); None while the panel is on other settings."""
    own = model_extension(cfg)
    if any(settings.get(k) != v for k, v in own.items()):
        return None
    theirs, their_att = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=own["Lp"])
    ours = rope.default_inv_freq(cfg.d_k, cfg.rope_base).numpy() * ratio
    err = float(np.abs(ours - theirs.numpy()).max() / theirs.numpy().max()) + abs(att - their_att)
    s = own["Lp"] / own["L"]
    return Check(err, 1e-9, f"{rope.ROPE_SCALING_LABELS[own['method']]} at s = L′/L = {s:g} gives this model's own "
                            f"RoPE frequencies and attention factor (rope_theta {cfg.rope_base:,.0f} and the scaling "
                            "in its config.json)")


def ntk_note() -> str:
    """The lecture notes' NTK-aware base for s = 8, d_k = 128, against the formula's own value."""
    lecture = rope.ntk_base(128, 10000.0, 8)
    return (f"A note on the lecture notes: for s = 8 and d_k = 128 they give the NTK-aware base as ≈ 500,000. "
            f"The formula b·s^(d/(d−2)) gives 10,000 · 8^(128/126) = **{lecture:,.1f}** (≈ 82,685). "
            f"500,000 is Llama 3's pre-training base; this formula would reach it only at "
            f"s ≈ {(500000 / 10000) ** (126 / 128):.1f}.")


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


LENGTH_MULTIPLES = (1, 2, 4)  # windows of 1x, 2x, 4x each model's training length
TOKEN_BUDGET = 1024  # held-out tokens scored per (method, length) cell: well under a second on 2 cores


def heldout_ids(tokenizer) -> list[list[int]]:
    """The held-out corpus sentences as <bos> ... <eos> id lists of this tokenizer."""
    sp = special_ids(tokenizer)
    return [[sp["<bos>"], *e.ids, sp["<eos>"]] for e in tokenizer.encode_batch(corpus_split().heldout)]


def length_cell(model: TinyTransformer, tokenizer, multiple: int) -> pd.DataFrame:
    """Held-out losses of one model at one multiple of its training length, every method (length_losses)."""
    total = experiment_tokens(model.config.max_len, LENGTH_MULTIPLES, TOKEN_BUDGET)
    return length_losses(model, heldout_ids(tokenizer), [multiple], total=total)


COMPARED = ("enc-sinusoidal", "enc-learned")  # trained like "enc-rope": only the position encoding differs


def experiment_models(installed: Sequence[str], rope_key: str | None) -> tuple[list[str], list[str]]:
    """The models the length experiment compares (the RoPE model first, when there is one) and the shipped ones
    it leaves out because they are not installed."""
    keys = [k for k in (rope_key, *COMPARED) if k and (k == rope_key or k in installed)]
    return keys, [k for k in COMPARED if k not in installed]


def length_experiment(keys: Sequence[str], cell: Callable[[str, int], pd.DataFrame],
                      progress: Callable[[float, str], None]) -> pd.DataFrame:
    """Every model at every multiple (cell(key, multiple): length_cell of that model), in one table; a model that
    cannot be run gets a note instead of hiding the others."""
    frames, jobs = [], [(k, m) for k in keys for m in LENGTH_MULTIPLES]
    for j, (key, m) in enumerate(jobs):
        progress(j / len(jobs), f"{key}: {m}× the training length")
        try:
            frames.append(cell(key, m).assign(model=key))
        except ValueError as err:  # one unreadable model should not hide the others
            frames.append(failed_cell(key, m, err))
    progress(1.0, "done")
    return pd.concat(frames, ignore_index=True)


def failed_cell(model_key: str, multiple: int, err: Exception) -> pd.DataFrame:
    """The row of a model that could not be run: one unreadable model should not hide the others."""
    return pd.DataFrame([{"model": model_key, "method": "none", "multiple": multiple, "length": None,
                          "loss": float("nan"), "note": f"could not be run ({err})"}])


def length_intro(keys: Sequence[str]) -> str:
    return ("Held-out loss of " + ", ".join(f"“{k}”" for k in keys) + " on the same held-out tokens, cut into "
            f"windows of {', '.join(f'{m}×' for m in LENGTH_MULTIPLES)} each model's training length. The RoPE "
            "model is run under every scaling (same weights: RoPE has no parameters); at 1× every scaling has "
            "factor 1, so they coincide there.")


def length_notes(table: pd.DataFrame) -> list[str]:
    """The notes of the cells that were not run, one per (model, note)."""
    return sorted({f"{r.model}: {r.note}" for r in table.itertuples() if r.note})


def length_table(table: pd.DataFrame) -> pd.DataFrame:
    """Loss per (model, method) and length, three decimals, "—" where a cell was not run; a model run under one
    method only is "as trained (not RoPE)"."""
    is_rope = table.groupby("model")["method"].transform("nunique") > 1
    labels = table["method"].map(rope.ROPE_SCALING_LABELS).where(is_rope, "as trained (not RoPE)")
    wide = table.assign(method=labels).pivot_table(index=["model", "method"], columns="length", values="loss",
                                                   sort=False)
    return wide.map(lambda v: "—" if pd.isna(v) else f"{v:.3f}")


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


def own_rope_sentence(cfg: ModelConfig) -> str:
    """A model folder's own RoPE settings, and grouped-query attention when it has it."""
    sc, H = cfg.rope_scaling, cfg.n_heads
    return f"With its own rope_theta = {cfg.rope_base:,.0f}" + (
        f" and {rope.ROPE_SCALING_LABELS[sc['type']]} scaling ×{sc['factor']:g}" if sc else "") + (
        f"; K and V have {cfg.kv_heads} heads, repeated for the {H} query heads (grouped-query attention)"
        if cfg.kv_heads != H else "") + "."


def where_rows(cfg: ModelConfig, on) -> pd.DataFrame:
    """The shapes of one attention layer, step by step, and where RoPE acts (on: the trace with RoPE on)."""
    T, H, d_k = on.layers[0].q.shape[2], cfg.n_heads, cfg.d_k
    return pd.DataFrame([
        ("x (after LayerNorm)", f"(1, {T}, {cfg.d_model})", "no RoPE: the residual stream is never rotated"),
        ("Q, K, V = split(x·W_qkv) into heads", f"(1, {H}, {T}, {d_k})", "projection first"),
        ("cos, sin tables", f"({T}, {d_k // 2})", "one angle per position and pair"),
        ("Q′ = R·Q, K′ = R·K", f"{tuple(on.layers[0].q.shape)}", "per head, on d_k"),
        ("V", f"{tuple(on.layers[0].v.shape)}", "untouched"),
    ], columns=["step", "shape", "note"])


def where_claims(cfg: ModelConfig, on, off) -> list[Check]:
    """Layer 0's Q with RoPE is RoPE applied to Q without it; V is the same either way (traces of rope_on_off)."""
    T = on.layers[0].q.shape[2]
    theta, att = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=T)
    q_rot = rope.apply_rope(off.layers[0].q.double(), torch.arange(T), theta, att)
    q_err = float((q_rot - on.layers[0].q).abs().max())
    v_err = float((on.layers[0].v - off.layers[0].v).abs().max())
    return [Check(q_err, 1e-4, "layer 0: Q with RoPE = RoPE applied per head to Q without it"),
            Check(v_err, 0.0, "V is identical with RoPE on and off: it is never rotated")]


def head_on_off(on, off, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """One head's attention with RoPE on and off (T, T), where it may attend, and the largest change."""
    p_on, p_off = on.layers[layer].probs[0, head], off.layers[layer].probs[0, head]
    allowed = torch.isfinite(on.layers[layer].mask).expand(on.layers[layer].probs.shape)[0, head]
    return p_on, p_off, allowed, float((p_on - p_off).abs().max())


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


def convention_pairs(d_k: int) -> pd.DataFrame:
    """Which coordinates form pair i under each layout (one row per layout)."""
    return pd.DataFrame({"interleaved": [f"({2 * i}, {2 * i + 1})" for i in range(d_k // 2)],
                         "rotate-half": [f"({i}, {i + d_k // 2})" for i in range(d_k // 2)]},
                        index=[f"pair {i}" for i in range(d_k // 2)]).T


def convention_scores(res: dict) -> dict[str, str]:
    """The three scores of convention_check, by what they are."""
    return {"interleaved score": f"{res['interleaved']:.6f}",
            "rotate-half on P·q, P·k": f"{res['half_permuted']:.6f}",
            "rotate-half, no permutation": f"{res['half_unpermuted']:.6f}"}


def convention_claim(res: dict) -> Check:
    """The permutation makes the layouts agree (res: convention_check)."""
    return Check(max(res["vector_error"], abs(res["interleaved"] - res["half_permuted"])), 1e-12,
                 "half(P·x) = P·interleaved(x), and the scores are identical")


def permutation_sentence(res: dict) -> str:
    return (f"Permutation P = {res['perm']} reorders a vector so that half(P·x) = P·interleaved(x). HF's "
            "weight converter applies P to the rows of W_q and W_k, so scores do not change.")


def wrong_convention_sentence(res: dict) -> str:
    return (f"Using the wrong convention on the same weights changes the score by "
            f"{abs(res['interleaved'] - res['half_unpermuted']):.3f} — silently.")


# -- what the page says ---------------------------------------------------------------------------------
NO_ROPE_MODEL = ("No RoPE model is available (the sidebar model does not use RoPE and neither “classroom” nor "
                 "“enc-rope” is installed), so this part shows the math on random vectors only.")
WORKED_INTRO = ("**“I like cats”**: T = 3 tokens, d_model = 8, H = 2 heads, so d_k = 4 and each head has two "
                "pairs. Edit Q (one row per token) and every number below follows.")
NOT_OWN_SETTINGS = ("Put the panel back on the sidebar model's own settings (pick another model and back, or reload) "
                    "to check them against its frequencies.")
HEAD0_ROTATED = "Head 0 after RoPE. Head 1 uses the same angles on its own columns."
WORKED_ARROWS = "Head 0, pair 0 of each token: turned by t·ω₀ = t radians (dotted: before)"
SHIFT_BOTH = ("Move *shift both by*: both arrows turn by the same angle, so the angle between them — and "
              "the score — stay put.")
PACKED_WINDOWS = ("The windows pack several held-out sentences end to end, which is harder than the one-sentence "
                  "examples the models were trained on: compare the lines with each other, not with the training "
                  "loss.")
LOWER_IS_BETTER = "Lower is better. A line that climbs past 1× is a model reading positions it never saw in training."
NOT_FINE_TUNED = (
    "Why the scaled lines lose to plain RoPE here: these models were **not fine-tuned after scaling**. "
    "A scaling changes the angles the same weights see (linear interpolation shrinks every distance by "
    "the factor, so neighbouring tokens look closer than any pair did in training), and nothing here lets "
    "the model adapt to that. In practice a scaled model is fine-tuned briefly at the longer length "
    "(as for Code Llama, YaRN and Llama 3), and that short fine-tuning is what makes scaling pay off.")
CONVENTIONS_INTRO = ("Two layouts rotate the same pairs under different names. **Interleaved** (RoFormer, Meta "
                     "Llama, this app): pair i = (x₂ᵢ, x₂ᵢ₊₁). **Rotate-half** (HF Llama, GPT-NeoX): pair i = "
                     "(xᵢ, xᵢ₊d/2).")
