"""What each variant costs: the held-out loss of the four shipped models (same data, size, seed and steps),
recomputed here and compared with the number each checkpoint saved when it was trained."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from viz_model.lessons.common import Fact
from viz_model.model import TinyTransformer

LOSS_TOL = 0.02         # nats: run-to-run noise; "does not perform worse" within this


METADATA_TOL = 1e-4     # the recomputed held-out loss against the checkpoint's own number


@torch.no_grad()
def heldout_loss(model: TinyTransformer, tok, seed: int = 0) -> float:
    """The mean held-out loss per scored token on the classroom corpus (train.evaluate, the metadata's number)."""
    from viz_model.data import TaskData
    from viz_model.train import evaluate

    return evaluate(model, TaskData("lm", tok, seed=seed))[0]


def loss_rows(names: Sequence[str], losses: Sequence[float], stored: Sequence[float | None]) -> list[dict[str, str]]:
    return [{"variant": n, "measured now (nats/token)": f"{x:.4f}",
             "in the checkpoint's metadata": "—" if m is None else f"{m:.4f}"}
            for n, x, m in zip(names, losses, stored)]


def metadata_facts(losses: Sequence[float], stored: Sequence[float | None]) -> list[Fact]:
    """The recomputed held-out losses equal the ones saved at training time (none when nothing was saved)."""
    pairs = [(x, m) for x, m in zip(losses, stored) if m is not None]
    if not pairs:
        return []
    err = max(abs(x - m) for x, m in pairs)
    return [Fact(err <= METADATA_TOL, f"Recomputed here, the held-out losses match the numbers saved at training time "
                                      f"(largest difference {err:.1e} nats).")]


def spread_text(losses: Sequence[float]) -> str:
    return (f"All {len(losses)} are within {max(losses) - min(losses):.4f} nats of each other. One training run each: "
            "seed-to-seed noise is not measured, so a gap this small says little.")
