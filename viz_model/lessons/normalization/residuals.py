"""Residual connections: a block computes x + F(x), so the gradient always has the identity to flow back
through; the same deep stack with and without it, its gradients per block and a short run of each."""

from __future__ import annotations

from viz_model.lessons.common import Fact
from viz_model.lessons.normalization.runs import Progress, Run, _base, _runs, _train_config, tail, tail_words


def residual_comparison(tokenizer, n_layers: int = 12, steps: int = 60, task: str = "lm", lr: float = 1e-2,
                        seed: int = 0, init: str = "model", progress: Progress = None) -> list[Run]:
    """The same 12-layer pre-norm stack with and without x + F(x): gradients per layer at init, then `steps`
    training steps each (same seed, same batches). Without the bypass ‖∂L/∂x_l‖ shrinks layer by layer toward
    the input (a product of ∂F/∂x alone); with it each factor is I + ∂F/∂x."""
    train = _train_config(task, steps, lr, 10, seed)
    return _runs([(f"residual={r}", _base(tokenizer, n_layers, residual=r), train) for r in (True, False)],
                 tokenizer, progress, init)


FLAT_FACTOR = 2.0                 # "about the same at every depth": within this factor from block L to block 1


VANISH_FACTOR = 0.1               # "vanishes toward the input": block 1 gets under a tenth of block L's gradient


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
