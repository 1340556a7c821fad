"""Why transformers normalise per token: LayerNorm vs BatchNorm vs RMSNorm, the batch axis, residuals, pre/post-norm."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from viz_model.config import NORMS, ModelConfig
from viz_model.data import TaskData
from viz_model.lessons.common import Check, Claim, Fact
from viz_model.model import IGNORE_INDEX, TinyTransformer, eval_mode, lm_loss, make_norm
from viz_model.tokenizer import PAD, Encoded, encode
from viz_model.train import DivergedEvent, StepEvent, TrainConfig, Trainer

Progress = Callable[[float], None] | None
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


# -- the axes ----------------------------------------------------------------------------------------
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


# -- reason 1: padding -----------------------------------------------------------------------------
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


# -- reason 2: batch size 1 ------------------------------------------------------------------------
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


# -- reason 3: generation one token at a time -------------------------------------------------------
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


# -- reason 4: train vs eval -----------------------------------------------------------------------
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


# -- the batch dimension ---------------------------------------------------------------------------
@dataclass
class BatchIndependence:
    shapes: dict[str, tuple[int, ...]]   # q, k, v, probs of layer 0: (N, H, T, d_k) and (N, H, T, T)
    mask_shape: tuple[int, ...]          # the additive causal mask: broadcast over N and H
    sample1_change: float                # max |Δ logits of sample 1| when sample 2's tokens change (0.0)
    token_losses: torch.Tensor           # (N, T) per-position, per-sample cross-entropy (0 where not scored)
    scored: torch.Tensor                 # (N, T) bool: targets that count
    mean_loss: float                     # token_losses[scored].mean()
    model_loss: float                    # the model's own loss on the batch
    loss_difference: float               # |mean_loss − model_loss|


def batch_independence(model: TinyTransformer, ids: torch.Tensor, targets: torch.Tensor | None = None,
                       seed: int = 0, training: bool = False) -> BatchIndependence:
    """Run a batch traced; change every token of sample 2 (index 1) and compare sample 1's logits; split the
    loss into its per-position, per-sample terms. targets default to the next tokens (last one not scored).
    training=True runs in train mode, where a BatchNorm model takes statistics over the batch (and so mixes
    the samples); in eval mode (default) and with LayerNorm/RMSNorm the samples never meet."""
    ids = torch.as_tensor(ids).to(model.device)
    if ids.ndim != 2 or ids.shape[0] < 2:
        raise ValueError(f"give at least two sequences, shape (N, T) with N >= 2; got {tuple(ids.shape)}.")
    pad = model.config.pad_id
    if targets is None:
        targets = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], pad)], dim=1)  # (N, T)
    targets = targets.to(model.device)
    other = ids.clone()
    gen = torch.Generator().manual_seed(seed)
    other[1] = torch.randint(1, model.config.vocab_size, (ids.shape[1],), generator=gen).to(model.device)
    with eval_mode(model, training=training):
        with torch.no_grad():
            out = model(ids, targets=targets, trace=True)
            changed = model(other, trace=True).logits
    layer = out.trace.layers[0]
    flat = targets.masked_fill(targets == pad, IGNORE_INDEX)
    # The model's own loss terms: cross-entropy over a transposed (N, vocab, T) tensor rounds otherwise, and on the
    # English model's 8,192 words its mean parted from the loss by 1.2e-5 (> LOSS_TOL).
    losses = lm_loss(out.logits, targets, pad, reduction="none")  # (N, T)
    scored = flat != IGNORE_INDEX
    mean = float(losses[scored].mean())
    shapes = {name: tuple(getattr(layer, name).shape) for name in ("q", "k", "v", "probs")}
    return BatchIndependence(shapes, tuple(layer.mask.shape), float((out.logits[0] - changed[0]).abs().max()),
                             losses, scored, mean, float(out.loss), abs(mean - float(out.loss)))


# -- residual connections and norm placement: short runs ------------------------------------------------
@dataclass
class Run:
    label: str
    config: ModelConfig
    gradients: LayerGradients                # at initialisation, on the first batch
    stream: "ResidualStream"                 # at initialisation, on the first batch
    losses: list[float] = field(default_factory=list)   # training loss per step
    diverged: bool = False


@dataclass
class LayerGradients:
    params: list[float]   # ‖∂L/∂θ_l‖ over the parameters of block l (0 = nearest the input)
    stream: list[float]   # ‖∂L/∂x_l‖ of the block's input x_l, per token (mean): the product of (I + ∂F/∂x)


def layer_gradient_norms(model: TinyTransformer, data: TaskData) -> LayerGradients:
    """Both per-layer gradients on the first training batch; the weights are left untouched."""
    batch = data.batch(0)
    inputs: list[torch.Tensor] = []

    def keep_input(_block, args):
        args[0].retain_grad()  # (B, T, d) the stream entering this block
        inputs.append(args[0])
    hooks = [block.register_forward_pre_hook(keep_input) for block in model.blocks]
    model.zero_grad(set_to_none=True)
    model.train()
    try:
        with torch.enable_grad():
            model(batch.ids.to(model.device), targets=batch.targets.to(model.device)).loss.backward()
    finally:
        for h in hooks:
            h.remove()
    params = [math.sqrt(sum(float(p.grad.pow(2).sum()) for p in block.parameters() if p.grad is not None))
              for block in model.blocks]
    stream = [float(x.grad.norm(dim=-1).mean()) for x in inputs]
    model.zero_grad(set_to_none=True)
    return LayerGradients(params, stream)


@dataclass
class ResidualStream:
    norms: list[float]       # mean ‖x_l‖ per token after each block (0 = after the first)
    input_cosine: list[float]  # mean cosine between x_l and the block stack's input x_0 (the embeddings)


@torch.no_grad()
def residual_stream(model: TinyTransformer, data: TaskData) -> ResidualStream:
    """How much of the input survives each block: pre-norm adds F(LN(x)) to an untouched x (the bypass keeps
    x_0, so its norm grows and the cosine stays high); post-norm re-normalises the sum after every block."""
    with eval_mode(model):
        trace = model(data.batch(0).ids.to(model.device), trace=True).trace
    x0 = trace.embeddings + trace.positional                 # (B, T, d)
    norms = [float(x.norm(dim=-1).mean()) for x in trace.residual]
    cos = [float(F.cosine_similarity(x, x0, dim=-1).mean()) for x in trace.residual]
    return ResidualStream(norms, cos)


INITS = ("model", "xavier")


def init_weights(model: TinyTransformer, init: str) -> TinyTransformer:
    """"model": the model's own N(0, 0.02) (GPT-2's); "xavier": Xavier-uniform linear layers, as in the 2017
    paper and in Xiong et al. 2020 (whose post-norm gradients grow toward the output)."""
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}.")
    if init == "xavier":
        for module in model.blocks.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
    return model


def _run(label: str, cfg: ModelConfig, tokenizer, train: TrainConfig, data: TaskData, tick: Callable[[], None],
         init: str = "model") -> Run:
    torch.manual_seed(train.seed)
    model = init_weights(TinyTransformer(cfg), init)
    run = Run(label, cfg, layer_gradient_norms(model, data), residual_stream(model, data))
    # One step more in the config than is run: the Trainer evaluates the held-out set after its last step, which
    # these curves do not need (with min_lr_ratio 1 the schedule after warm-up is flat, so nothing else changes).
    trainer = Trainer(model, tokenizer, replace(train, steps=train.steps + 1), data=data)
    for _ in range(train.steps):
        for event in trainer.step():
            if isinstance(event, StepEvent):
                run.losses.append(event.loss)
                tick()
            elif isinstance(event, DivergedEvent):
                run.diverged = True
    return run


def _runs(variants: Sequence[tuple[str, ModelConfig, TrainConfig]], tokenizer, progress: Progress,
          init: str = "model") -> list[Run]:
    total, done = sum(t.steps for _, _, t in variants), [0]

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0] / total)
    return [_run(label, cfg, tokenizer, train, _task_data(tokenizer, train), tick, init)
            for label, cfg, train in variants]


_DATA: dict[tuple, TaskData] = {}


def _task_data(tokenizer, train: TrainConfig) -> TaskData:
    """Encoding the corpus takes longer than a few training steps: one TaskData per tokenizer and task, reused
    (batch(step) is a pure function of the step, so sharing it between runs and calls changes nothing)."""
    key = (tokenizer.to_str(), train.task, train.seed, train.batch_size)
    if key not in _DATA:
        if len(_DATA) >= 4:
            _DATA.pop(next(iter(_DATA)))
        _DATA[key] = TaskData(train.task, tokenizer, seed=train.seed, batch_size=train.batch_size)
    return _DATA[key]


def _base(tokenizer, n_layers: int, **overrides) -> ModelConfig:
    return ModelConfig.preset("tiny", vocab_size=tokenizer.get_vocab_size(), n_layers=n_layers, **overrides)


def _train_config(task: str, steps: int, lr: float, warmup_steps: int, seed: int) -> TrainConfig:
    return TrainConfig(task=task, steps=steps, lr=lr, warmup_steps=warmup_steps, batch_size=16, seed=seed,
                       eval_every=0, snapshot_every=0, sample_every=0, min_lr_ratio=1.0, device="cpu")


def residual_comparison(tokenizer, n_layers: int = 12, steps: int = 60, task: str = "lm", lr: float = 1e-2,
                        seed: int = 0, init: str = "model", progress: Progress = None) -> list[Run]:
    """The same 12-layer pre-norm stack with and without x + F(x): gradients per layer at init, then `steps`
    training steps each (same seed, same batches). Without the bypass ‖∂L/∂x_l‖ shrinks layer by layer toward
    the input (a product of ∂F/∂x alone); with it each factor is I + ∂F/∂x."""
    train = _train_config(task, steps, lr, 10, seed)
    return _runs([(f"residual={r}", _base(tokenizer, n_layers, residual=r), train) for r in (True, False)],
                 tokenizer, progress, init)


def norm_placement(tokenizer, n_layers: int = 6, steps: int = 60, task: str = "lm", lr: float = 1e-2,
                   warmup_steps: int = 20, seed: int = 0, init: str = "xavier", progress: Progress = None) -> list[Run]:
    """Pre-norm vs post-norm, each with and without learning-rate warm-up (same seed, same data); Xavier init
    by default, the setting of the 2017 paper and of Xiong et al. 2020. Post-norm has no final LayerNorm
    (ln_f): its stream is already normalised after every block, while pre-norm's bypass adds up unnormalised."""
    variants = []
    for position in ("pre", "post"):
        for warm in (warmup_steps, 0):
            cfg = _base(tokenizer, n_layers, norm_position=position)
            variants.append((f"{position}-norm, warm-up {warm}", cfg, _train_config(task, steps, lr, warm, seed)))
    return _runs(variants, tokenizer, progress, init)


def norm_kinds(tokenizer, n_layers: int = 2, steps: int = 60, task: str = "lm", lr: float = 1e-2, seed: int = 0,
               progress: Progress = None) -> list[Run]:
    """The transformer with each norm kind inside (ln1, ln2, ln_f), trained the same way."""
    train = _train_config(task, steps, lr, 10, seed)
    return _runs([(kind, _base(tokenizer, n_layers, norm=kind), train) for kind in NORMS], tokenizer, progress)


@torch.no_grad()
def batch_attention(model, ids: torch.Tensor) -> torch.Tensor:
    """Every layer's attention weights for a batch: (L, N, H, T, T), each sample its own matrices."""
    with eval_mode(model):
        return model(ids.to(model.device), trace=True).trace.stack("probs")


# -- what the page measures: claims, tables and the sentences around the numbers --------------------------------
Batch = torch.Tensor              # (N, T, d_model): the random batch of the first two views
MEAN_TOL, VAR_TOL = 1e-5, 1e-5    # float32 rounding of a mean / variance over a handful of numbers
RMS_TOL = 1e-4                    # RMSNorm's root mean square is 1 up to ε
FLAT_FACTOR = 2.0                 # "about the same at every depth": within this factor from block L to block 1
VANISH_FACTOR = 0.1               # "vanishes toward the input": block 1 gets under a tenth of block L's gradient
WARM_TOL = 0.1                    # nats: pre-norm without warm-up "trains fine" if within this of with warm-up
WARMUP_BATCHES = 5                # training batches that fill BatchNorm's running statistics
LOSS_TOL = 1e-5                   # the mean of the loss terms vs the model's own loss


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


def tail(losses: Sequence[float]) -> float:
    """The loss at the end of a run: the mean of its last sixth (a single step's loss is noisy)."""
    k = max(1, len(losses) // 6)
    return float(np.mean(losses[-k:]))


def tail_words(steps: int) -> str:
    k = max(1, steps // 6)
    return "the last step's loss" if k == 1 else f"mean of the last {k} steps"


def residual_claims(with_res: Run, without: Run) -> list[Fact]:
    """With x + F(x) the gradient reaching each block is flat over depth; without it, it vanishes toward the input."""
    g, h = with_res.gradients.stream, without.gradients.stream
    flat, vanish = max(g) / min(g), h[0] / h[-1]
    return [Fact(flat < FLAT_FACTOR, f"With the residual the gradient reaching each block is about the same at every "
                                     f"depth (largest / smallest = {flat:.2f}): each factor is I + ∂F/∂x."),
            Fact(vanish < VANISH_FACTOR, f"Without it, block 1 gets {vanish:.2g} of the gradient block 12 gets "
                                         f"({1 / vanish:.0f}× less): a product of 12 factors ∂F/∂x alone.")]


def survival_note(with_res: Run, without: Run) -> str:
    return (f"What survives 12 blocks of the input (mean cosine of the last block's output with the embeddings): "
            f"{with_res.stream.input_cosine[-1]:.2f} with the residual, {without.stream.input_cosine[-1]:.2f} without.")


def residual_loss_claim(with_res: Run, without: Run, steps: int) -> Fact:
    a, b = tail(with_res.losses), tail(without.losses)
    return Fact(a < b, f"After {steps} steps: loss {a:.3f} with the residual, {b:.3f} without ({tail_words(steps)}).")


def placement_rows(runs: list[Run]) -> list[dict]:
    """The four runs' loss at the start and at the end (the lowest end marked), and whether each diverged."""
    rows = [{"setup": r.label, "loss at the start": f"{r.losses[0]:.3f}", "loss at the end": f"{tail(r.losses):.3f}",
             "diverged": "yes" if r.diverged else "no"} for r in runs]
    best = min(range(len(runs)), key=lambda i: tail(runs[i].losses))
    rows[best]["setup"] += " (lowest)"
    return rows


PLACEMENT_CLAIMS = ("post-norm needs warm-up", "pre-norm does not", "pre-norm beats post-norm without warm-up",
                    "post-norm's gradients grow toward the output", "pre-norm's are flat")


def placement_claims(runs: list[Run]) -> list[Fact]:
    """The lecture's claims (PLACEMENT_CLAIMS) measured on the runs of norm_placement, in that order."""
    pre_w, pre_0, post_w, post_0 = (tail(r.losses) for r in runs)
    post_g, pre_g = runs[2].gradients.params, runs[0].gradients.params
    return [Fact(post_0 > post_w or runs[3].diverged,
                 f"Post-norm needs warm-up: without it, its loss ends at {post_0:.3f}, with it at {post_w:.3f}."),
            Fact(pre_0 <= pre_w + WARM_TOL, f"Pre-norm trains without warm-up: {pre_0:.3f} without, {pre_w:.3f} "
                                            f"with (tolerance {WARM_TOL} nats)."),
            Fact(pre_0 < post_0, f"Without warm-up, pre-norm ends below post-norm: {pre_0:.3f} vs {post_0:.3f}."),
            Fact(post_g[-1] > post_g[0], f"At initialisation post-norm's gradients grow toward the output: block "
                                         f"{len(post_g)} gets {post_g[-1] / post_g[0]:.2f}× block 1's."),
            Fact(max(pre_g) / min(pre_g) < FLAT_FACTOR,
                 f"Pre-norm's are about the same at every depth: largest / smallest = {max(pre_g) / min(pre_g):.2f}.")]


def placement_summary(claims: list[Fact]) -> str | None:
    """Where the measurement does not back every claim, which ones and why (None when all hold)."""
    missed = [name for name, c in zip(PLACEMENT_CLAIMS, claims) if not c.ok]
    if not missed:
        return None
    return (f"On this small model the measurement backs {len(claims) - len(missed)} of the {len(claims)} claims; "
            f"not here: {'; '.join(missed)}. " + PLACEMENT_CAVEAT)


def final_norm_note(pre: Run, post: Run) -> str:
    """Why pre-norm has a final LayerNorm and post-norm none, with the stream's measured size."""
    a, b = pre.stream.norms, post.stream.norms
    return (f"**Why the final LayerNorm exists only in pre-norm.** Pre-norm adds F(LN(x)) to x and never normalises x "
            f"itself, so the stream's size is whatever the blocks added up to (measured at initialisation: {a[0]:.2f} "
            f"after block 1, {a[-1]:.2f} after block {len(a)}); `ln_f` normalises it once before the output head. "
            f"Post-norm ends every block with a LayerNorm, so its stream is already normalised ({b[-1]:.2f} ≈ "
            f"√d_model = {math.sqrt(pre.config.d_model):.2f}); another LayerNorm would change nothing, and the model "
            "has none. " + BYPASS_PRICE)


# -- the batch dimension on a real model --------------------------------------------------------------------------
def batch_ids(tokenizer, enc: Encoded, other: str, pad_id: int, max_len: int,
              bos: bool) -> tuple[list[list[int]], list[list[str]]]:
    """Sample 1 = the typed sentence (enc), sample 2 = `other` encoded; the shorter one padded at the end."""
    second = encode(tokenizer, other, max_len=max_len, bos=bos)
    T = max(len(enc.ids), len(second.ids))
    rows, tokens = [], []
    for e in (enc, second):
        rows.append([*e.ids, *[pad_id] * (T - len(e.ids))])
        tokens.append([*e.tokens, *[PAD] * (T - len(e.ids))])
    return rows, tokens


def batch_facts(model, ids: Sequence[Sequence[int]]) -> dict:
    """batch_independence's measurements and one traced pass of the batch (every layer's weights, (L, N, H, T, T)),
    as plain numbers and arrays."""
    ids = torch.tensor(ids)
    r = batch_independence(model, ids)
    return dict(shapes=r.shapes, mask_shape=r.mask_shape, change=r.sample1_change, mean=r.mean_loss,
                model_loss=r.model_loss, diff=r.loss_difference, losses=r.token_losses.cpu().numpy(),
                scored=r.scored.cpu().numpy(), probs=batch_attention(model, ids).numpy())


def shapes_note(f: dict) -> str:
    N, H = f["shapes"]["q"][:2]
    return (f"Working shapes in layer 0 of the sidebar's model, from a live trace: q, k, v are "
            f"**(N, H, T, d_k) = {f['shapes']['q']}**, the attention weights **(N, H, T, T) = "
            f"{f['shapes']['probs']}**: N·H = {N * H} separate T×T matrices.")


def mask_claim(f: dict, causal: bool) -> Fact:
    N, H = f["shapes"]["q"][:2]
    mask = f["mask_shape"]
    return Fact(math.prod(mask[:-2]) == 1, f"The {'causal ' if causal else ''}mask is one {mask} tensor, "
                                           f"broadcast over N = {N} and H = {H}: every sample gets the same rule.")


def independence_claim(f: dict) -> Fact:
    return Fact(f["change"] == 0.0, f"Replacing every token of sample 2 by random ids changes sample 1's logits by "
                                    f"{num(f['change'])}: the samples of a batch never meet.")


def loss_columns(f: dict, tokens: list[list[str]]) -> dict[str, list[str]]:
    """The loss term by term: a column per position t→t+1, a cell per sample ("—" where the target is not scored)."""
    losses, scored = f["losses"], f["scored"]
    return {f"{t}→{t + 1}": [f"{losses[n, t]:.3f} ({tokens[n][t + 1]})" if scored[n, t] else "—"
                             for n in range(len(tokens))] for t in range(losses.shape[1] - 1)}


def loss_claim(f: dict) -> Check:
    return Check(f["diff"], LOSS_TOL, f"The mean of the {int(f['scored'].sum())} scored terms, {f['mean']:.4f}, is "
                                      f"the model's loss on the batch, {f['model_loss']:.4f}")


# -- what the page says -------------------------------------------------------------------------------------------
GROUPS_CAPTION = (
    "Rows are tokens (s2·t1 = sample 2, position 1), columns are features; colour is the normalised value (red "
    "positive, blue negative; hover for numbers). Each outlined box is one group of cells that share a mean and a "
    "variance, the first one in orange: LayerNorm and RMSNorm a row, BatchNorm a whole column across every sample "
    "(dotted lines separate the samples).")
PLACEMENT_CAVEAT = (
    "So it does not back the lecture's story as a whole, and that is worth saying plainly. The claim comes from Xiong "
    "et al. (2020), *On Layer Normalization in the Transformer Architecture*: at initialisation a post-norm model's "
    "gradients near the output do not shrink with the depth L, while pre-norm's scale like 1/√L, so a post-norm model "
    "takes large first steps and needs warm-up to survive them. That is a statement about deep, wide models trained "
    "long (their runs: 6- and 12-layer models with d_model 512–768). Here a few blocks of width 32 for a few dozen "
    "steps leave that factor small, and the initialisation, learning rate and data order move the curves as much. Try "
    "12 blocks, or the Train page's comparison at a size you choose.")
ALL_CLAIMS_HOLD = "On this model every claim holds as measured."
BYPASS_PRICE = ("The price of that: post-norm normalises the bypass too, so the residual path is no longer the "
                "untouched identity that pre-norm keeps.")
LOSS_TERMS = (
    "**The loss, term by term**: each cell is one position's cross-entropy for predicting the next token, named in "
    "brackets (— where the target is `<pad>`: not scored). The `<pad>` positions only read earlier tokens (causal "
    "mask), so they change nothing for the real ones.")
BATCHNORM_MODEL = ("This model uses BatchNorm: in training mode it would take statistics over the batch, and then the "
                   "samples do meet. The check above runs in eval mode (running statistics).")
