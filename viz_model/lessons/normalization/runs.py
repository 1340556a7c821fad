"""The short training runs the Residual and Pre- vs post-norm tabs compare: one small stack per setting, its
gradients per block and its residual stream at initialisation, then its loss per step (same seed, same batches)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import nn

from viz_model.config import ModelConfig
from viz_model.data import TaskData
from viz_model.model import TinyTransformer, eval_mode
from viz_model.train import DivergedEvent, StepEvent, TrainConfig, Trainer

Progress = Callable[[float], None] | None


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
    try:
        with torch.enable_grad(), eval_mode(model, training=True):
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


def _task_data(tokenizer, train: TrainConfig) -> TaskData:
    """Encoding the corpus takes longer than a few training steps: one TaskData per tokenizer and task, reused
    (batch(step) is a pure function of the step, so sharing it between runs and calls changes nothing)."""
    return _shared_task_data(tokenizer.to_str(), train.task, train.seed, train.batch_size)


# lru_cache (lessons have no ui.cache.cached): a pure function of immutable arguments, the tokenizer as its JSON text.
@functools.lru_cache(maxsize=4)
def _shared_task_data(tokenizer_json: str, task: str, seed: int, batch_size: int) -> TaskData:
    return TaskData(task, Tokenizer.from_str(tokenizer_json), seed=seed, batch_size=batch_size)


def _base(tokenizer, n_layers: int, **overrides) -> ModelConfig:
    return ModelConfig.preset("tiny", vocab_size=tokenizer.get_vocab_size(), n_layers=n_layers, **overrides)


def _train_config(task: str, steps: int, lr: float, warmup_steps: int, seed: int) -> TrainConfig:
    return TrainConfig(task=task, steps=steps, lr=lr, warmup_steps=warmup_steps, batch_size=16, seed=seed,
                       eval_every=0, snapshot_every=0, sample_every=0, min_lr_ratio=1.0, device="cpu")


def tail(losses: Sequence[float]) -> float:
    """The loss at the end of a run: the mean of its last sixth (a single step's loss is noisy)."""
    k = max(1, len(losses) // 6)
    return float(np.mean(losses[-k:]))


def tail_words(steps: int) -> str:
    k = max(1, steps // 6)
    return "the last step's loss" if k == 1 else f"mean of the last {k} steps"
