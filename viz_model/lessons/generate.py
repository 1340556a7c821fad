"""What the Generate page proves, measured: teacher forcing scores every position of a given sentence in one pass
(equal to scoring each true prefix on its own), while free running feeds the model its own choices."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model import generate as G
from viz_model.lessons.common import Check
from viz_model.model import eval_mode


@dataclass
class TeacherForcing:
    forced: torch.Tensor      # (n,) log p(truth[i] | context + truth[:i]) from one pass
    separate: torch.Tensor    # (n,) the same, one run per true prefix
    top: list[int]            # (n,) the model's top pick at each position of the true prefix
    free: list[G.GenStep]     # the model's own continuation from the context (greedy)

    @property
    def check(self) -> Check:
        n = len(self.forced)
        return Check(float((self.forced - self.separate).abs().max()), 1e-5,
                     f"One teacher-forced pass (all {n} predictions at once) equals {n} separate runs on each "
                     "true prefix, in log p")


@torch.no_grad()
def teacher_forcing(model, context: list[int], truth: list[int], tokenizer, eos_id: int | None) -> TeacherForcing:
    """Score `truth` after `context` with the true prefix (one pass and one run per prefix), the top pick at each of
    its positions, and the model's own greedy continuation of the same length."""
    forced = G.score(model, context, truth)
    separate = G.score_stepwise(model, context, truth)
    with eval_mode(model):
        logits = model(torch.tensor([context + truth[:-1]], device=model.device)).logits[0]  # (T, vocab)
    top = [int(i) for i in logits[len(context) - 1:].argmax(-1)]  # the rows that predict truth[0], truth[1], ...
    free = list(G.generate(model, context, strategy="greedy", max_new_tokens=len(truth), tokenizer=tokenizer,
                           attention=False, eos_id=eos_id))
    return TeacherForcing(forced, separate, top, free)
