"""Helpers several lessons share (one home, so that no lesson imports another: the independence contract)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from viz_model import generate as G
from viz_model.masks import causal_mask
from viz_model.rnn import RecurrentLM

ROW_SUM_TOL = 1e-5  # float32 softmax rows: |sum - 1| is about 1e-7; a ✓ beyond this tolerance would be false


@dataclass(frozen=True)
class Check:
    """A claim as a value: the measured error, the tolerance it must stay within, and the sentence it checks. A page
    renders it (ui.widgets.show_check) and never prints a ✓ it did not compute."""

    error: float
    tol: float
    claim: str

    @property
    def ok(self) -> bool:
        return self.error <= self.tol  # NaN is not ok


@dataclass(frozen=True)
class Fact:
    """A claim whose measurement is a yes/no computed by the lesson (an error raised, an order held, a count reached),
    with the sentence that states it and the numbers in it. Rendered like a Check (ui.widgets.show_check).

    A lecture's (or a paper's) claim tested on these small models also carries what was measured, the number the
    verdict is about, the threshold in words and a gentle note where it does not hold; one that does not hold is a
    finding about the claim on this model, not a failure of the app (show_check draws it as a warning)."""

    ok: bool
    claim: str
    measurement: str = ""   # what was measured, with the numbers ('' for a plain fact)
    value: float = math.nan  # the number the verdict is about
    tolerance: str = ""     # when it holds, in words
    note: str = ""          # where the measurement does not back the claim ('' otherwise)


@dataclass
class WrongWay:
    """A demonstration of a method that does not work ("what goes wrong"), not a claim about the model: `shown` is
    computed (the method did go wrong here, by the numbers in `claim`). Drawn in a neutral style, never as a ✗
    (ui.widgets.show_check), so a lesson's deliberate counter-example does not look like a failure of the app."""

    shown: bool
    claim: str

    @property
    def ok(self) -> bool:
        return self.shown


Claim = Check | Fact | WrongWay  # what a lesson's claims(...) returns a list of, in the order the page shows them


@dataclass
class TeacherForcing:
    """Teacher forcing, one idea for every page: ONE pass over the true tokens (core generate.teacher_forced) gives
    every position's prediction at once. forced[i] = log p(truth[i] | context + truth[:i]), top[i] the model's pick
    there; check: the claim that the one pass equals a run per true prefix (None: nothing to check, the model reads
    both directions); free: the model's own greedy continuation, where a page shows it beside (Generate)."""

    forced: torch.Tensor                        # (n,) float64
    top: list[int]                              # (n,)
    check: Check | Fact | None = None
    free: list = field(default_factory=list)    # generate.GenStep, one per token of its own continuation

    @classmethod
    def of(cls, model, context: Sequence[int], truth: Sequence[int]) -> TeacherForcing:
        """forced and top from one pass over context + truth[:-1] (check and free are the lesson's to add)."""
        ids = [*context, *truth]
        logp = G.teacher_forced(model, ids[:-1])[len(context) - 1:]  # (n, V): the rows that predict truth
        return cls(logp[torch.arange(len(truth)), torch.tensor(list(truth))], [int(i) for i in logp.argmax(-1)])

    @property
    def summary(self) -> str:
        return f"{len(self.forced)} predictions from one pass; mean loss {-float(self.forced.mean()):.3f} nats."


@dataclass
class StepView:
    """One decoding step as a page keeps it: the chosen token and its log-probability, the top-N bars (p the model's,
    q after the strategy's filter, `chosen` the chosen token's bar) and the step's attention, not the vocab vectors."""

    position: int
    token_id: int
    token: str
    logprob: float
    labels: list[str]
    p: np.ndarray
    q: np.ndarray
    chosen: int
    attention: np.ndarray  # (L, H, T): the new token's query over the prefix (a translator's: over the source)
    stop_reason: str | None

    @classmethod
    def of(cls, step, token: str, labels: Callable[[np.ndarray], list[str]], attention: torch.Tensor,
           n: int) -> StepView:
        """From a generate.GenStep: `labels` names token ids, `attention` is the row to keep, n the bars."""
        top = top_ids(step.probs, step.token_id, n)
        return cls(step.position, step.token_id, token, step.logprob, labels(top), step.probs[top].numpy(),
                   step.filtered_probs[top].numpy(), int(np.nonzero(top == step.token_id)[0][0]),
                   attention.numpy(), step.stop_reason)


def top_ids(probs, chosen: int, n: int) -> np.ndarray:
    """Ids of the n most probable tokens under the model (plus the chosen one if it is not among them)."""
    top = np.argsort(-np.asarray(probs), kind="stable")[:n]
    return top if chosen in top else np.append(top, chosen)


def row_sum_error(probs) -> float:
    """The one row-sum check: the largest |sum - 1| over every row of `probs` (a numpy array or a tensor, rows on
    the last axis), summed in its own dtype as the model's softmax is (float32: about 1e-7). A NaN row gives NaN,
    which no tolerance passes; no rows give 0.0."""
    if isinstance(probs, torch.Tensor):
        return float((probs.detach().sum(-1) - 1).abs().max()) if probs.numel() else 0.0
    a = np.asarray(probs)
    return float(np.abs(a.sum(-1) - 1).max()) if a.size else 0.0


def row_sums(probs, claim: str, tol: float = ROW_SUM_TOL) -> Check:
    """Softmax rows sum to 1, as a Check: row_sum_error(probs) within tol."""
    return Check(row_sum_error(probs), tol, claim)


def measured_ago(when: float) -> str:
    """How long ago a measurement made at time.time() == when was: '12 s ago', '3 min ago'."""
    age = max(0, int(time.time() - when))
    return f"{age} s ago" if age < 120 else f"{age // 60} min ago"


def decimate(n: int, cap: int) -> np.ndarray:
    """At most `cap` evenly spaced indices of range(n), always including 0 (keeps big heatmaps light)."""
    if n <= cap:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(int))


def fit_slope(Ts: Sequence[int], ys: Sequence[float]) -> float | None:
    """Least-squares slope of log y on log T; None with fewer than two usable points."""
    pts = [(math.log(t), math.log(y)) for t, y in zip(Ts, ys) if y is not None and y > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T  # (n,), (n,)
    return float(np.polyfit(x, y, 1)[0])


# -- causal = one pass, not sequential ------------------------------------------------------------
@torch.no_grad()
def prefix_check(model, ids, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(T,) max |logits_t(full pass) - logits_t(prefix 0..t alone)|, both under `attn_mask` (None: causal). An RNN
    or LSTM has no mask to pass: it reads left to right, and each prefix simply runs alone."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    ids = (ids[None] if ids.ndim == 1 else ids[:1]).to(model.device)  # (1, T): the first sequence
    T = ids.shape[1]
    mask = causal_mask(T) if attn_mask is None else attn_mask.bool()
    masked = not isinstance(model, RecurrentLM)
    run = lambda t: model(ids[:, :t], **({"attn_mask": mask[:t, :t]} if masked else {})).logits[0]  # noqa: E731
    full = run(T)                                                           # (T, vocab)
    return torch.stack([(run(t + 1)[t] - full[t]).abs().max() for t in range(T)]).cpu()


@torch.no_grad()
def layer_attention(model, ids, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(probs (H, T, T), allowed (T, T)) of one layer from a pass that traces only that layer and stops there (no
    later block, no LM head: GPT-2 small's layer 0 at T = 32 in 6 ms instead of 85)."""
    from viz_model.model import eval_mode

    with eval_mode(model):
        out = model(torch.tensor([list(ids)], device=model.device), trace_layers=(layer,), logits=False)
    return out.trace.layers[layer].probs[0].float().cpu().numpy(), out.trace.allowed(layer)[0, 0].cpu().numpy()


def roles_measured_on(meta: dict | None, folder: bool) -> str:
    """What a model's recorded head roles were measured on, in a student's words: the English model and a model folder
    score their heads on repeated random tokens (lessons.real_models); the word-level models on held-out sentences of
    their training task (heads.head_roles)."""
    if folder or "text_roles" in (meta or {}):
        return "on repeated random tokens (a random run, then the same run again)"
    return "on held-out sentences of its training task"


def first_token_words(start: tuple[int, str] | None, ids: Sequence[int]) -> str:
    """How a sentence names its first token: "the start token `<bos>`" when the model's start token (id, text) opens
    it, else "the first token"."""
    return f"the start token `{start[1]}`" if start and len(ids) and ids[0] == start[0] else "the first token"


def head_behaviour(probs: np.ndarray, ids: Sequence[int]) -> dict[str, float | None]:
    """How one head spreads its weight on this sentence (probs (T, T)), in the terms its role was scored in
    (heads.role_scores_on_ids): the mean weight of queries 1..T−1 on the token before, on the first token and on
    themselves; and, over the queries whose token appeared earlier, on the token after its last earlier copy
    ("induction"; None when nothing repeats)."""
    T = len(ids)
    if T < 2:
        return {"previous-token": None, "first-token": None, "self": None, "induction": None}
    t = np.arange(1, T)
    out: dict[str, float | None] = {"previous-token": float(probs[t, t - 1].mean()),
                                    "first-token": float(probs[t, 0].mean()), "self": float(probs[t, t].mean())}
    last: dict[int, int] = {}
    targets = []  # (query, key after the query token's last earlier copy)
    for q, token in enumerate(ids):
        if token in last and last[token] + 1 < q:
            targets.append((q, last[token] + 1))
        last[token] = q
    out["induction"] = float(np.mean([probs[q, k] for q, k in targets])) if targets else None
    return out


def behaviour_words(role: str, b: dict[str, float | None], first_token: str = "the first token") -> str:
    """A head's weights on this sentence (head_behaviour), in words led by the ones its role is about."""
    spread = (f"{b['previous-token']:.2f} of its weight on the token before, {b['first-token']:.2f} on "
              f"{first_token}, {b['self']:.2f} on itself")
    if role == "induction" and b["induction"] is None:
        rest = "rests" if b["first-token"] >= 0.5 else "puts"
        return (f"nothing repeats here, so an induction head has nothing to copy: it {rest} {b['first-token']:.2f} "
                f"of its weight on {first_token}")
    if role == "induction":
        return (f"{b['induction']:.2f} of its weight goes to the token after an earlier copy of the current one "
                f"(where a token repeats); {spread}")
    return spread
