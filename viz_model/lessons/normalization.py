"""Why transformers normalise per token: LayerNorm vs BatchNorm vs RMSNorm, the batch axis, residuals, pre/post-norm."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.config import NORMS, ModelConfig
from viz_model.data import TaskData
from viz_model.model import IGNORE_INDEX, TinyTransformer, eval_mode, make_norm
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
    losses = F.cross_entropy(out.logits.transpose(1, 2), flat, ignore_index=IGNORE_INDEX, reduction="none")  # (N, T)
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


__all__ = ["AXES", "BatchIndependence", "BatchOfOne", "INITS", "LayerGradients", "NormStats", "OneTokenAtATime",
           "PaddingEffect", "ResidualStream", "Run", "TrainEval", "batch_independence", "batch_of_one",
           "init_weights", "layer_gradient_norms", "norm_kinds", "norm_layer", "norm_placement", "normalize",
           "one_token_at_a_time", "padding_effect", "residual_comparison", "residual_stream", "train_vs_eval"]


@torch.no_grad()
def batch_attention(model, ids: torch.Tensor) -> torch.Tensor:
    """Every layer's attention weights for a batch: (L, N, H, T, T), each sample its own matrices."""
    with eval_mode(model):
        return model(ids.to(model.device), trace=True).trace.stack("probs")
