"""The lecture's four reasons to prefer a per-token norm for sequences, each measured on one random batch:
padding, a batch of one, generation one token at a time, and train vs eval mode."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model.config import NORMS
from viz_model.lessons.common import Fact
from viz_model.lessons.normalization.axes import _check_batch, norm_layer, num


@dataclass
class PaddingEffect:
    n_pad: int                          # positions of sample 2 replaced by padding
    bn_mean: tuple[torch.Tensor, torch.Tensor]   # BatchNorm's per-feature batch mean (d,): without, with padding
    bn_var: tuple[torch.Tensor, torch.Tensor]    # ... and variance
    sample1_change: dict[str, float]    # norm kind -> max |Δ| of sample 1's outputs (LayerNorm, RMSNorm: 0.0)


def padding_effect(x: torch.Tensor, n_pad: int, pad_vector: torch.Tensor | None = None) -> PaddingEffect:
    """Replace the last n_pad positions of sample 2 (index 1) by the pad vector (default zeros) and see what
    changes for sample 1 (index 0), whose tokens are untouched."""
    x = _check_batch(x)
    N, T, d = x.shape
    if N < 2 or not 1 <= n_pad <= T:
        raise ValueError(f"padding another sample needs N >= 2 and 1 <= n_pad <= T (got N={N}, n_pad={n_pad}).")
    padded = x.clone()
    padded[1, T - n_pad:] = torch.zeros(d) if pad_vector is None else pad_vector  # (n_pad, d)
    change = {}
    for kind in NORMS:
        layer = norm_layer(kind, d).train()
        with torch.no_grad():
            change[kind] = float((layer(x)[0] - layer(padded)[0]).abs().max())
    flat, flat_pad = x.reshape(-1, d), padded.reshape(-1, d)
    return PaddingEffect(n_pad, (flat.mean(0), flat_pad.mean(0)),
                         (flat.var(0, unbiased=False), flat_pad.var(0, unbiased=False)), change)


@dataclass
class BatchOfOne:
    error: str                     # torch's own message for BatchNorm (training mode) on one token
    two_tokens: torch.Tensor       # (2, d) BatchNorm of a batch of two tokens: every feature is -1 or +1
    layernorm_one: torch.Tensor    # (1, 1, d) LayerNorm of the single token: a normal output


def batch_of_one(x: torch.Tensor) -> BatchOfOne:
    """BatchNorm in training mode on N x T = 1 (torch refuses) and on N x T = 2 (a degenerate ±1 output)."""
    x = _check_batch(x)
    d = x.shape[-1]
    one, two = x[:1, :1], x.reshape(-1, d)[:2][None]        # (1, 1, d), (1, 2, d)
    bn = norm_layer("batchnorm", d).train()
    try:
        bn(one)
        error = ""
    except ValueError as e:  # "Expected more than 1 value per channel when training, got input size ..."
        error = str(e)
    with torch.no_grad():
        return BatchOfOne(error, bn(two)[0], norm_layer("layernorm", d)(one))


@dataclass
class OneTokenAtATime:
    layernorm_change: float    # max |LayerNorm(token alone) − LayerNorm(token inside the full sequence)|: 0.0
    batchnorm_train_error: str  # BatchNorm (training mode) on the one new token: torch's error
    batchnorm_eval_change: float  # eval mode uses running statistics: differs from the full batch's statistics


def one_token_at_a_time(x: torch.Tensor, warmup_batches: int = 5, seed: int = 0) -> OneTokenAtATime:
    """Generation feeds one new token: LayerNorm needs nothing else; BatchNorm has no batch to take statistics
    over, and in eval mode its running statistics (from `warmup_batches` random training batches) replace them."""
    x = _check_batch(x)[:1]                                   # (1, T, d): one sequence, as in generation
    d = x.shape[-1]
    ln = norm_layer("layernorm", d)
    with torch.no_grad():
        full = ln(x)                                          # (1, T, d)
        alone = torch.cat([ln(x[:, t:t + 1]) for t in range(x.shape[1])], dim=1)
    bn = norm_layer("batchnorm", d).train()
    try:
        bn(x[:, -1:])
        error = ""
    except ValueError as e:
        error = str(e)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(warmup_batches):                       # training batches fill the running statistics
            bn(torch.randn(8, x.shape[1], d, generator=gen) * x.std() + x.mean())
        batch_stats = bn(x)[:, -1]                            # statistics of this sequence
        running = bn.eval()(x[:, -1:])[:, 0]                  # the new token alone, running statistics
    return OneTokenAtATime(float((full - alone).abs().max()), error, float((batch_stats - running).abs().max()))


@dataclass
class TrainEval:
    change: dict[str, float]      # norm kind -> max |train-mode output − eval-mode output| for the same input
    running_mean: torch.Tensor    # (d,) BatchNorm's running mean after the training batches
    running_var: torch.Tensor     # (d,)


def train_vs_eval(x: torch.Tensor, warmup_batches: int = 5, seed: int = 0) -> TrainEval:
    """The same input through each norm in train() and eval() mode, after a few training batches."""
    x = _check_batch(x)
    d = x.shape[-1]
    gen = torch.Generator().manual_seed(seed)
    others = [torch.randn(x.shape, generator=gen) * 2 + 0.5 for _ in range(warmup_batches)]
    change, bn = {}, None
    for kind in NORMS:
        layer = norm_layer(kind, d).train()
        with torch.no_grad():
            for batch in others:
                layer(batch)
            trained = layer(x)
            change[kind] = float((trained - layer.eval()(x)).abs().max())
        bn = layer if kind == "batchnorm" else bn
    return TrainEval(change, bn.running_mean.clone(), bn.running_var.clone())


WARMUP_BATCHES = 5                # training batches that fill BatchNorm's running statistics


def reasons_rows(pad: PaddingEffect, one: BatchOfOne, gen: OneTokenAtATime, te: TrainEval) -> list[dict]:
    """The four reasons as table rows: what is measured, each norm's number, and whether the per-token norms win."""
    ch, tc = pad.sample1_change, te.change
    rows = [
        ("padding in another sample", f"max |Δ| of sample 1's output when {pad.n_pad} of sample 2's positions "
         "become padding", num(ch["layernorm"]), num(ch["rmsnorm"]), num(ch["batchnorm"]),
         ch["layernorm"] == 0.0 == ch["rmsnorm"] < ch["batchnorm"]),
        ("batch of one", "normalise a single token in training mode", "works", "—",
         "torch raises an error" if one.error else "no error",
         bool(one.error) and bool(torch.isfinite(one.layernorm_one).all())),
        ("one token at a time", "max |norm(token alone) − norm(token in its sequence)|", num(gen.layernorm_change),
         "—", f"training mode: {'error' if gen.batchnorm_train_error else 'no error'}; eval mode (running "
         f"statistics) differs by {num(gen.batchnorm_eval_change)}",
         gen.layernorm_change == 0.0 and bool(gen.batchnorm_train_error) and gen.batchnorm_eval_change > 0),
        ("train vs eval", "max |train-mode output − eval-mode output| for the same input", num(tc["layernorm"]),
         num(tc["rmsnorm"]), num(tc["batchnorm"]), tc["layernorm"] == 0.0 == tc["rmsnorm"] < tc["batchnorm"]),
    ]
    return [{"reason": r, "measured": m, "LayerNorm": a, "RMSNorm": b, "BatchNorm": c,
             "per-token norms win?": "✓" if ok else "✗"} for r, m, a, b, c, ok in rows]


def reasons_claims(pad: PaddingEffect, one: BatchOfOne, gen: OneTokenAtATime, te: TrainEval,
                   warmup_batches: int = WARMUP_BATCHES) -> list[Fact]:
    """One claim per reason, in the page's order: padding, a batch of one, generation, train vs eval."""
    ch, tc = pad.sample1_change, te.change
    dev = float((one.two_tokens.abs() - 1).abs().max())
    return [
        Fact(ch["layernorm"] == 0.0 < ch["batchnorm"],
             f"Sample 1 is untouched, yet BatchNorm changes its output by up to {num(ch['batchnorm'])} because the "
             f"padding moved the batch statistics; LayerNorm's change is {num(ch['layernorm'])} and RMSNorm's "
             f"{num(ch['rmsnorm'])}."),
        Fact(bool(one.error) and dev < 1e-2,
             f"With two tokens it runs but is degenerate: every output is −1 or +1 (max ||y| − 1| = {dev:.1e}), "
             "whatever the tokens were. LayerNorm normalises the single token normally."),
        Fact(gen.layernorm_change == 0.0,
             f"LayerNorm of each token alone equals LayerNorm inside the whole sequence: difference "
             f"{num(gen.layernorm_change)}. It needs nothing but the token itself."),
        Fact(tc["layernorm"] == 0.0 < tc["batchnorm"],
             f"After {warmup_batches} training batches, the same input in train() and eval() mode: BatchNorm's "
             f"outputs differ by up to {num(tc['batchnorm'])} (batch statistics vs running ones: running "
             f"mean up to {float(te.running_mean.abs().max()):.2f}); LayerNorm {num(tc['layernorm'])}, "
             f"RMSNorm {num(tc['rmsnorm'])}: they have no running statistics."),
    ]


def running_stats_note(gen: OneTokenAtATime) -> str:
    return (f"In eval mode BatchNorm falls back on running statistics from earlier training batches: the new "
            f"token's output then differs by {num(gen.batchnorm_eval_change)} from the one it gets with this "
            "sequence's own statistics.")
