"""Which axis each norm normalises: LayerNorm and RMSNorm each token over its features, BatchNorm each
feature over every token of the batch; the norms' statistics and the page's claims about them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from viz_model.config import NORMS, ModelConfig
from viz_model.lessons.common import Check, Claim, Fact
from viz_model.model import make_norm

AXES = {"layernorm": "each token over its d_model features", "batchnorm": "each feature over all N x T positions",
        "rmsnorm": "each token over its d_model features, without subtracting the mean"}


def norm_layer(kind: str, d_model: int, eps: float = 1e-5) -> nn.Module:
    """The same module the transformer builds for config.norm = kind (fresh: weight 1, bias 0, no running stats)."""
    if kind not in NORMS:
        raise ValueError(f"the normalisation must be one of {NORMS}, got {kind!r}.")
    return make_norm(ModelConfig(d_model=d_model, n_heads=1, norm=kind, norm_eps=eps))


def _check_batch(x: torch.Tensor) -> torch.Tensor:
    x = torch.as_tensor(x, dtype=torch.float32)
    if x.ndim != 3:
        raise ValueError(f"give a batch shaped (N, T, d_model), got shape {tuple(x.shape)}.")
    return x


@dataclass
class NormStats:
    kind: str
    axes: str
    output: torch.Tensor         # (N, T, d) normalised batch (training mode for BatchNorm: batch statistics)
    token_mean: torch.Tensor     # (N, T) mean of each output token over its features
    token_var: torch.Tensor      # (N, T) variance (biased, as the norms use) of each output token
    token_rms: torch.Tensor      # (N, T) root mean square of each output token
    feature_mean: torch.Tensor   # (d,) mean of each output feature over all N x T positions
    feature_var: torch.Tensor    # (d,) variance of each output feature over N x T
    expected_var: torch.Tensor   # (N, T) for LayerNorm σ²/(σ²+ε): eps makes the variance a hair below 1


def normalize(x: torch.Tensor, kind: str, eps: float = 1e-5) -> NormStats:
    """Normalise a (N, T, d) batch with `kind` and measure the output along both axes."""
    x = _check_batch(x)
    layer = norm_layer(kind, x.shape[-1], eps).train()
    with torch.no_grad():
        y = layer(x)                                         # (N, T, d)
    flat = y.reshape(-1, y.shape[-1])                        # (N*T, d)
    sigma2 = x.var(-1, unbiased=False)                       # (N, T) input variance per token
    return NormStats(kind, AXES[kind], y, y.mean(-1), y.var(-1, unbiased=False), y.pow(2).mean(-1).sqrt(),
                     flat.mean(0), flat.var(0, unbiased=False), sigma2 / (sigma2 + eps))


Batch = torch.Tensor              # (N, T, d_model): the random batch of the first two views


MEAN_TOL, VAR_TOL = 1e-5, 1e-5    # float32 rounding of a mean / variance over a handful of numbers


RMS_TOL = 1e-4                    # RMSNorm's root mean square is 1 up to ε


def num(v: float) -> str:
    """A measured difference: an exact zero says so; anything else in three significant digits."""
    return "0.0 (exactly)" if v == 0.0 else f"{v:#.3g}"


def random_batch(N: int, T: int, d: int, seed: int) -> Batch:
    """A seeded random (N, T, d) batch, features on different scales (standard deviations 0.5 to 3) and mean 1."""
    gen = torch.Generator().manual_seed(int(seed))
    scale = torch.linspace(0.5, 3.0, int(d))                                  # (d,) features on different scales
    return torch.randn(int(N), int(T), int(d), generator=gen) * scale + 1.0   # (N, T, d)


def all_norms(x: Batch) -> dict[str, NormStats]:
    """Every norm kind of the batch x, in NORMS order."""
    return {k: normalize(x, k) for k in NORMS}


def group_stats(s: NormStats) -> dict[str, np.ndarray]:
    """The statistics one group of cells shares: per feature for BatchNorm, per token for the others."""
    if s.kind == "batchnorm":
        return {"mean": s.feature_mean.numpy(), "variance": s.feature_var.numpy()}
    stats = {"mean": s.token_mean.numpy(), "variance": s.token_var.numpy()}
    return {**stats, "RMS": s.token_rms.numpy()} if s.kind == "rmsnorm" else stats


def _span(t: torch.Tensor) -> str:
    return f"{float(t.min()):.6f} … {float(t.max()):.6f}"


def stats_rows(stats: dict[str, NormStats], names: dict[str, str]) -> list[dict]:
    """One row per norm: what it normalises and the output's statistics along both axes."""
    return [{"norm": names[k], "normalises": s.axes, "token mean, max |·|": f"{float(s.token_mean.abs().max()):.1e}",
             "token variance": _span(s.token_var), "token RMS": _span(s.token_rms),
             "feature mean, max |·|": f"{float(s.feature_mean.abs().max()):.1e}",
             "feature variance": _span(s.feature_var)} for k, s in stats.items()]


def axes_claims(stats: dict[str, NormStats]) -> list[Claim]:
    """The axes view's claims: LayerNorm's two, then BatchNorm's two and RMSNorm's two."""
    ln, bn, rms = stats["layernorm"], stats["batchnorm"], stats["rmsnorm"]
    bn_token = float(bn.token_mean.abs().max())
    return [
        Check(float(ln.token_mean.abs().max()), MEAN_TOL, "LayerNorm: every token's mean over its features is 0"),
        Check(float((ln.token_var - ln.expected_var).abs().max()), VAR_TOL,
              "LayerNorm: every token's variance is σ²/(σ² + ε), σ² its variance before the norm"),
        Check(float(bn.feature_mean.abs().max()), MEAN_TOL, "BatchNorm: every feature's mean over all N×T tokens is 0"),
        Fact(bn_token > 10 * MEAN_TOL, f"… but BatchNorm leaves each token's own mean alone (up to {bn_token:.2f}): "
                                       "it normalises across the batch, not within a token."),
        Check(float((rms.token_rms - 1.0).abs().max()), RMS_TOL,
              "RMSNorm: every token's root mean square is 1 (ε aside)"),
        Fact(float(rms.token_mean.abs().min()) > 10 * MEAN_TOL,
             f"… and RMSNorm keeps the token's mean (between {float(rms.token_mean.min()):.2f} and "
             f"{float(rms.token_mean.max()):.2f}): no mean subtraction, one statistic fewer (Llama uses it)."),
    ]


def epsilon_note(ln: NormStats, tight: NormStats) -> str:
    """Why LayerNorm's variance is not exactly 1 (ln: ε = 1e-5; tight: the same batch with ε = 1e-12)."""
    return (f"So the variance is not exactly 1: with torch's default ε = 1e-5 it is as low as "
            f"1 − {1 - float(ln.token_var.min()):.1e} here; with ε = 1e-12 it is 1 to within "
            f"{float((tight.token_var - 1).abs().max()):.1e}. ε only keeps the division safe for a constant token.")


# -- what the page says ------------------------------------------------------------------------------------------
GROUPS_CAPTION = (
    "Rows are tokens (s2·t1 = sample 2, position 1), columns are features; colour is the normalised value (red "
    "positive, blue negative; hover for numbers). Each outlined box is one group of cells that share a mean and a "
    "variance, the first one in orange: LayerNorm and RMSNorm a row, BatchNorm a whole column across every sample "
    "(dotted lines separate the samples).")
