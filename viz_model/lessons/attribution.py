"""Attention against attribution (#40, item 2): for a sentence and the token the model predicts next, one score per
input token from four methods, side by side, and how far their rankings agree (torch and numpy only).

- **Raw attention**: the last position's row of one head, and the mean over that layer's heads.
- **Attention rollout** (Abnar & Zuidema, 2020): per layer Â = 0.5·mean_h(A) + 0.5·I (the residual stream),
  rows renormalised, multiplied from the first layer to the last; the last position's row.
- **Gradient × input**, signed dot product: s_t = ∂ log p(target) / ∂e_t · e_t, e_t the token embedding (the output of
  `tok_emb`, as `viz_model.gradients` takes it). Signed, because a token can speak against the prediction, and occlusion
  (below) is signed too; a dot product, because it is the first-order estimate of the change in log p when e_t is set
  to zero, the closest gradient analogue of removing the token (a norm ‖∂/∂e_t‖ would say how sensitive, not in which
  direction). With `embed_scale` the embedding is multiplied by √d_model after `tok_emb`: the gradient divides by the
  same factor, so the dot product is the same on either side of the scale.
  The gradient is taken the way `viz_model.gradients` takes it: a forward hook on the model's shared `tok_emb` under
  the same lock (the app's sessions share one module), ignoring other threads' forwards, in eval mode, log p in float64.
- **Occlusion**: replace each token in turn by the model's padding token and measure the drop in log p(target),
  Δ_t = log p(target | sentence) − log p(target | sentence with token t replaced). The padding token is the model's
  own "no word here": it carries no meaning the model learned (a baseline such as "the" or "." would itself be a word
  with a meaning). It is still an input the model reads, so Δ_t compares the token with that baseline, not with
  nothing. A token that is the padding token itself has Δ = 0 by construction, and the page says so. All the occluded
  sentences go through one batched forward pass, with the unchanged sentence as one more row (its Δ must be 0).

The start token a model puts in front (<bos>) is not a word the student typed, and heads park much of their weight on
it (an attention sink): it is left out of the comparison, and its share of the head's weight is reported instead.
Rank agreement is Spearman's ρ (the Pearson correlation of the ranks, ties averaged), computed here with numpy.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.gradients import _SHARED_MODULE
from viz_model.lessons.common import Check, Fact, row_sum_error
from viz_model.model import eval_mode

DEFAULT_TEXT = "The trophy didn't fit in the suitcase because it"  # lecture.PROMPTS[2]: its next word is a guess
TOP_K = 5                 # the targets a student may pick: the model's top 5 next tokens
AGREE = 0.5               # ρ ≥ this: "agrees with occlusion"
MIN_WORDS = 2             # fewer typed tokens: nothing to attribute
SINK_SHARE = 0.5          # the start token holds at least this share of the head's row: "an attention sink"
MIN_RANKED = 3            # fewer: every ρ is ±1, so agreement is not stated
LOGP_TOL = 1e-4           # float32 model, log p compared across passes (batched vs single, traced vs fast path)
ROW_TOL = 1e-9            # rollout is multiplied in float64
MAX_TOKENS = 64           # the page reads at most this many tokens: occlusion runs one row per token, so its cost grows
#                           as T³ (a 256-token text took 33 s on one loaded core, 64 tokens 1.3 s)
OCCLUSION_TOKENS = 8192   # tokens per occlusion pass: a 64-token sentence in one pass, a 256-token one in 8
METHODS = ("head", "mean", "rollout", "grad_x_input", "occlusion")


@dataclass(frozen=True)
class Attribution:
    """One sentence's attribution for one target: the scores of each method over the typed tokens (start token
    left out), the rank correlations between them, and the measurements behind the live checks."""

    tokens: list[str]             # the typed tokens, in order (n,)
    positions: list[int]          # their positions in the model's input
    layer: int
    head: int
    target_id: int
    target: str                   # the target token's text
    logp: float                   # log p(target) at the last position (float64 from the traced pass)
    scores: dict[str, np.ndarray]  # METHODS -> (n,)
    rho: np.ndarray               # (M, M) Spearman's ρ between METHODS (NaN where a method is constant)
    start_share: float | None     # the head's weight on the start token (None: the model uses none)
    baseline: str                 # the occlusion baseline token's text
    same_as_baseline: list[int]   # indices (into tokens) of tokens that are the baseline itself: Δ = 0 by construction
    rollout_row_error: float      # max |row sum − 1| over rollout's rows
    self_occlusion: float         # |log p of the unchanged row in the occlusion batch − logp|
    own_output: float             # |logp − log_softmax of the model's own output (fast path, no trace, no hook)|


# -- the methods ------------------------------------------------------------------------------------------------
def rollout(probs: torch.Tensor) -> torch.Tensor:
    """(T, T) attention rollout of probs (L, H, T, T): the product Â_{L−1} ⋯ Â_0 of Â_l = 0.5·mean_h(A_l) + 0.5·I,
    each row renormalised (Abnar & Zuidema, 2020), in float64. Row t: how much of token t's top-layer stream each
    input token reaches through attention and the residual."""
    probs = torch.as_tensor(probs)
    if probs.ndim != 4 or probs.shape[-1] != probs.shape[-2]:
        raise ValueError(f"rollout needs attention weights of shape (L, H, T, T), got {tuple(probs.shape)}.")
    a = probs.double().mean(1)                                       # (L, T, T)
    eye = torch.eye(a.shape[-1], dtype=torch.float64, device=a.device)
    out = eye
    for layer in a:
        hat = 0.5 * layer + 0.5 * eye
        hat = hat / hat.sum(-1, keepdim=True)
        out = hat @ out                                              # the later layer on the left
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (ties get their average rank); NaN when either side is constant."""
    ra, rb = _ranks(np.asarray(a, dtype=float)), _ranks(np.asarray(b, dtype=float))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), dtype=float)
    ranks[order] = np.arange(len(x), dtype=float)
    for v in np.unique(x):  # ties: the mean of their ranks
        tie = x == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def rank_matrix(scores: dict[str, np.ndarray]) -> np.ndarray:
    """(M, M) Spearman's ρ between every pair of methods (1 on the diagonal unless a method is constant)."""
    names = list(scores)
    return np.array([[spearman(scores[a], scores[b]) for b in names] for a in names])


def top_next(model, ids: Sequence[int], k: int = TOP_K) -> list[tuple[int, float]]:
    """The model's k most probable next tokens after ids: [(id, p)], most probable first (one fast pass)."""
    _check_input(model, ids)
    with torch.no_grad(), eval_mode(model):
        logits = model(torch.tensor([list(ids)], device=model.device)).logits[0, -1].double()
    p = torch.softmax(logits, -1)
    top = torch.topk(p, min(k, len(p)))
    return [(int(i), float(v)) for v, i in zip(top.values.cpu(), top.indices.cpu())]


def rank_of(value) -> int:
    """The target picker's value: its own rank (0 = most probable), or a link's label "2 · was" (1-based)."""
    if isinstance(value, int):
        return max(value, 0)
    digits = str(value).strip().split(" ", 1)[0]
    return int(digits) - 1 if digits.isdigit() and int(digits) > 0 else 0


def target_label(rank: int, text: str) -> str:
    """The target picker's label (the link's value): 1-based rank and the token, e.g. "1 · was"."""
    return f"{rank + 1} · {text.strip() or repr(text)}"


def occlusion_answer(res: Attribution, last: int) -> tuple[list[str], list[int], str]:
    """The class question "Which token matters most for this prediction, measured by occlusion?" over the last
    `last` typed tokens: (choices, [the largest Δ's index, ties all], why, with the head's own top token beside)."""
    first = max(0, len(res.tokens) - last)
    keys = list(range(first, len(res.tokens)))
    delta = res.scores["occlusion"]
    choices = [f"{res.positions[i]} {res.tokens[i].strip() or repr(res.tokens[i])}" for i in keys]
    best = float(delta[keys].max())
    correct = [j for j, i in enumerate(keys) if delta[i] >= best - 1e-9]
    top, att = keys[correct[0]], int(np.argmax(res.scores["head"][keys])) + first
    why = (f"Replacing each token by {res.baseline}, log p(“{res.target.strip()}”) drops most for "
           f"“{res.tokens[top].strip()}” (Δ = {delta[top]:+.3f}). Layer {res.layer} head {res.head}'s attention "
           + ("puts the same token first." if att == top else
              f"puts “{res.tokens[att].strip()}” first ({res.scores['head'][att]:.0%} of its weight)."))
    return choices, correct, why


def _check_input(model, ids: Sequence[int], start: int = 0) -> None:
    if not getattr(model.config, "causal", True):
        raise ValueError(NOT_CAUSAL)
    if len(ids) - start < 1:
        raise ValueError(EMPTY)
    if len(ids) > model.config.max_len:
        raise ValueError(f"The sentence has {len(ids)} tokens; this model reads at most {model.config.max_len}.")


def traced_gradient(model, ids: Sequence[int], target: int) -> tuple[torch.Tensor, torch.Tensor, float]:
    """One traced pass with the gradient: (probs (L, H, T, T), gradient × input (T,) float64, log p(target) float64).
    The hook and the lock are viz_model.gradients' (the module is shared by every session)."""
    x = torch.tensor([list(ids)], device=model.device)
    captured: list[torch.Tensor] = []
    me = threading.get_ident()

    def capture(_module, _inputs, output):
        if threading.get_ident() != me:  # another session's forward on the shared model: leave it alone
            return None
        leaf = output.detach().requires_grad_(True)  # (1, T, d_model)
        captured.append(leaf)
        return leaf

    with _SHARED_MODULE:
        handle = model.tok_emb.register_forward_hook(capture)
        try:
            with eval_mode(model), torch.enable_grad():
                out = model(x, trace=True)
                logp = F.log_softmax(out.logits[0, -1].double(), -1)[target]
                (grad,) = torch.autograd.grad(logp, captured[0])      # (1, T, d_model)
        finally:
            handle.remove()
    probs = torch.stack([layer.probs[0].detach() for layer in out.trace.layers])  # (L, H, T, T)
    gxi = (grad[0].double() * captured[0][0].detach().double()).sum(-1)          # (T,)
    return probs, gxi.cpu(), float(logp.detach())


@torch.no_grad()
def last_logits(model, rows: torch.Tensor) -> torch.Tensor:
    """(B, V) the last position's logits of each row of rows (B, T): the blocks on the fast path, then the final norm
    and the LM head on the last position only (the head over every position was most of a long batch's time)."""
    out = model(rows, trace_layers=(), logits=False)           # no layer traced; the stream after each block kept
    return model.head(model.ln_f(out.trace.residual[-1][:, -1]))  # (B, V)


@torch.no_grad()
def occlusion(model, ids: Sequence[int], target: int, positions: Sequence[int], baseline: int) -> tuple[np.ndarray,
                                                                                                         float]:
    """(Δ per position (n,), log p of the unchanged sentence): every position in `positions` replaced by `baseline`
    in turn, batched (one forward pass up to OCCLUSION_TOKENS tokens, a few for a long text), the last row the
    unchanged sentence."""
    base = torch.tensor(list(ids), device=model.device)
    rows = base.repeat(len(positions) + 1, 1)                      # (n + 1, T)
    for r, p in enumerate(positions):
        rows[r, p] = baseline
    per_pass = max(1, OCCLUSION_TOKENS // len(ids))
    with eval_mode(model):
        logits = torch.cat([last_logits(model, rows[i:i + per_pass]) for i in range(0, len(rows), per_pass)])
    logp = F.log_softmax(logits.double(), -1)[:, target].cpu().numpy()  # (n + 1,)
    return logp[-1] - logp[:-1], float(logp[-1])


@torch.no_grad()
def own_logp(model, ids: Sequence[int], target: int) -> float:
    """log p(target) from the model's own output: the fast path, no trace, no hook."""
    with eval_mode(model):
        logits = model(torch.tensor([list(ids)], device=model.device)).logits[0, -1].double()
    return float(F.log_softmax(logits, -1)[target])


@dataclass(frozen=True)
class Passes:
    """What the model passes measure for one sentence and one target, whatever layer and head the page shows: every
    layer's attention, gradient × input, occlusion and the log p checks (the page caches it; a head is a lookup)."""

    probs: torch.Tensor           # (L, H, T, T)
    rolled: torch.Tensor          # (T, T) rollout, float64
    gxi: torch.Tensor             # (T,) gradient × input, float64
    logp: float
    delta: np.ndarray             # (n,) occlusion's Δ over positions start..T-1
    unchanged: float              # log p of the unchanged row of the occlusion batch
    own: float                    # log p from the model's own fast path


def passes(model, ids: Sequence[int], target: int, *, start: int = 0, baseline: int = 0) -> Passes:
    """The model passes behind every method (one traced pass with the gradient, the occlusion batch, one plain
    pass), for ids as the model reads it (a start token first when start = 1) and the target token id."""
    _check_input(model, ids, start)
    if not 0 <= target < model.config.vocab_size:
        raise ValueError(f"The target token id {target} is not in the model's vocabulary.")
    if len(ids) - start < MIN_WORDS:
        raise ValueError(ONE_TOKEN)
    probs, gxi, logp = traced_gradient(model, ids, target)
    delta, unchanged = occlusion(model, ids, target, range(start, len(ids)), baseline)
    return Passes(probs, rollout(probs), gxi, logp, delta, unchanged, own_logp(model, ids, target))


def attribution_of(m: Passes, ids: Sequence[int], tokens: Sequence[str], *, layer: int, head: int, target: int,
                   start: int = 0, baseline: tuple[int, str] = (0, "<pad>"), target_text: str = "") -> Attribution:
    """Each method's scores over the typed tokens for one layer and head, from the passes (no model call)."""
    L, H = m.probs.shape[:2]
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"This model has layers 0–{L - 1} and heads 0–{H - 1}.")
    words = list(range(start, len(ids)))
    scores = {"head": m.probs[layer, head, -1, words].double().cpu().numpy(),
              "mean": m.probs[layer, :, -1, words].double().mean(0).cpu().numpy(),
              "rollout": m.rolled[-1, words].cpu().numpy(), "grad_x_input": m.gxi[words].numpy(),
              "occlusion": m.delta}
    return Attribution(
        tokens=[tokens[p] for p in words], positions=words, layer=layer, head=head, target_id=target,
        target=target_text, logp=m.logp, scores=scores, rho=rank_matrix(scores),
        start_share=float(m.probs[layer, head, -1, 0]) if start else None, baseline=baseline[1],
        same_as_baseline=[i for i, p in enumerate(words) if ids[p] == baseline[0]],
        rollout_row_error=row_sum_error(m.rolled), self_occlusion=abs(m.unchanged - m.logp),
        own_output=abs(m.own - m.logp))


def attribute(model, ids: Sequence[int], tokens: Sequence[str], *, layer: int, head: int, target: int,
              start: int = 0, baseline: tuple[int, str] = (0, "<pad>"), target_text: str = "") -> Attribution:
    """Every method on one sentence: ids as the model reads it (a start token first when start = 1), tokens their
    texts, the target token id; layer and head for raw attention; baseline (id, text) for occlusion."""
    _check_input(model, ids, start)
    cfg = model.config
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"This model has layers 0–{cfg.n_layers - 1} and heads 0–{cfg.n_heads - 1}.")
    m = passes(model, ids, target, start=start, baseline=baseline[0])
    return attribution_of(m, ids, tokens, layer=layer, head=head, target=target, start=start, baseline=baseline,
                          target_text=target_text)


# -- the claims and the sentences, from the numbers -------------------------------------------------------------
def claims(res: Attribution) -> list[Check | Fact]:
    """The live checks: rollout's rows sum to 1; the unchanged sentence in the occlusion batch gives the same log p
    (occluding nothing changes nothing); the log p the page uses is the model's own output."""
    out: list[Check | Fact] = [
        Check(res.rollout_row_error, ROW_TOL, "every row of the attention rollout sums to 1"),
        Check(res.self_occlusion, LOGP_TOL, "occlusion of nothing changes nothing: the unchanged sentence, run in the "
                                            "same batch as the occluded ones, gives Δ = 0"),
        Check(res.own_output, LOGP_TOL, f"log p(“{res.target.strip()}”) = {res.logp:.4g} used here equals the "
                                        "model's own output (a plain pass, no trace, no gradient)")]
    if res.same_as_baseline:
        names = ", ".join(f"“{res.tokens[i].strip()}” (token {res.positions[i]})" for i in res.same_as_baseline)
        out.append(Fact(bool(np.all(np.abs(res.scores["occlusion"][res.same_as_baseline]) <= LOGP_TOL)),
                        f"{names} is the baseline {res.baseline} itself: replacing it by itself gives Δ = 0"))
    return out


def method_names(layer: int, head: int, short: bool = False) -> dict[str, str]:
    """What each method is called on the page and in the hover (short: the charts' column labels)."""
    if short:
        return {"head": f"head {head}", "mean": "mean of heads", "rollout": "rollout", "grad_x_input": "grad × input",
                "occlusion": "occlusion"}
    return {"head": f"attention, layer {layer} head {head}", "mean": f"attention, mean of layer {layer}'s heads",
            "rollout": "attention rollout", "grad_x_input": "gradient × input", "occlusion": "occlusion (Δ log p)"}


def top_tokens(res: Attribution) -> dict[str, int]:
    """Each method's top token (the index into res.tokens of its largest score; the first on a tie)."""
    return {m: int(np.argmax(s)) for m, s in res.scores.items()}


def agreement_sentence(res: Attribution) -> str:
    """Which methods agree with occlusion (ρ ≥ AGREE) on this sentence and which do not, with each ρ."""
    names = method_names(res.layer, res.head)
    n = len(res.tokens)
    occ = res.scores["occlusion"]
    if np.ptp(occ) <= LOGP_TOL:
        return OCCLUSION_FLAT.format(n=n)
    if n < MIN_RANKED:
        return TOO_FEW.format(n=n)
    j = METHODS.index("occlusion")
    rho = {m: res.rho[i, j] for i, m in enumerate(METHODS) if m != "occlusion"}
    agree = [f"{names[m]} (ρ = {r:.2f})" for m, r in rho.items() if r >= AGREE]
    weak = [f"{names[m]} (ρ = {r:.2f})" for m, r in rho.items() if not r >= AGREE]
    said = f"On these {n} tokens, "
    said += (f"{_join(agree)} rank{'s' if len(agree) == 1 else ''} the tokens as occlusion does (ρ ≥ {AGREE})"
             if agree else f"no method ranks the tokens as occlusion does (every ρ < {AGREE})")
    if weak and agree:
        said += f"; {_join(weak)} do{'es' if len(weak) == 1 else ''} not"
    best = max(rho, key=lambda m: -2.0 if math.isnan(rho[m]) else rho[m])
    return said + f". Closest to the causal test: {names[best]}."


def top_sentence(res: Attribution) -> str:
    """The top token by each method, and whether the attention methods' top token is occlusion's."""
    names = method_names(res.layer, res.head)
    tops = top_tokens(res)
    occ = tops["occlusion"]
    parts = [f"{names[m]}: “{res.tokens[i].strip()}”" for m, i in tops.items()]
    same = [names[m] for m in ("head", "mean", "rollout") if tops[m] == occ]
    tail = (f"Occlusion's top token is also the top of {_join(same)}." if same else
            "No attention method puts occlusion's top token first.")
    return "The top token by each method: " + "; ".join(parts) + ". " + tail


def start_sentence(res: Attribution) -> str | None:
    """The start token's share of the head's weight, left out of the comparison ("a sink" only when it holds most)."""
    if res.start_share is None:
        return None
    sink = " (an attention sink)" if res.start_share >= SINK_SHARE else ""
    return START_NOTE.format(share=res.start_share, layer=res.layer, head=res.head, sink=sink)


def target_sentence(text: str, p: float, rank: int) -> str:
    """What is explained: the picked next token, its probability and its rank among the model's choices."""
    which = "most probable" if rank == 0 else f"number {rank + 1}"
    return (f"The model gives **“{text.strip() or repr(text)}”** p = {p:.1%} as the next token (its {which} choice). "
            "Which input tokens did that prediction use?")


def _join(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- what the page says -----------------------------------------------------------------------------------------
INTRO = ("The model predicts the next token. **Which input tokens did it use?** Four answers, side by side on your "
         "sentence: the **attention** of one head (and the mean of its layer's heads), **attention rollout** (Abnar & "
         "Zuidema, 2020: attention multiplied through the layers, with the residual stream as ½·I), **gradient × "
         "input** (how log p of the prediction moves with each token's embedding), and **occlusion**, a causal test: "
         "replace one token by a blank and measure how much log p drops.")
NOTE = ("Attention weights say where a head reads from, not why the model predicts what it does. Jain & Wallace "
        "(2019) found attention often disagrees with gradient and occlusion measures, and that other attention "
        "patterns can give the same prediction; Wiegreffe & Pinter (2019) answered that attention can still be an "
        "explanation, but only when it is tested, not assumed. Occlusion is the test here: where attention agrees "
        "with it, attention was a fair guide on this sentence; where not, it was not.")
BASELINE_NOTE = ("Occlusion replaces each token in turn by {baseline}, the model's own “no word here”, in one "
                 "batch. Δ > 0: the token helped the prediction; Δ < 0: it spoke against it.")
METHODS_NOTE = ("Colour: each method's scores divided by its largest |score|, so methods on different scales compare "
                "(hover for the raw value). Attention and rollout are weights ≥ 0; gradient × input and occlusion are "
                "signed.")
START_NOTE = ("The start token is left out: it is not a word you typed, and layer {layer} head {head} gives it "
              "{share:.0%} of its weight from the last token{sink}.")
CUT = ("Your text has {n} tokens; this view reads at most {limit} (occlusion runs the model once more per token), "
       "so only the first {limit} are used.")
EMPTY = "Type a sentence: the box is empty or holds only spaces."
ONE_TOKEN = ("Your text is one token: the prediction can only come from it, so there is nothing to attribute. "
             "Type at least two tokens.")
NOT_CAUSAL = ("This model reads both directions (an encoder): it does not predict a next token, so there is no "
              "prediction to attribute. Pick a decoder in the sidebar.")
OCCLUSION_FLAT = ("Occluding any one of these {n} tokens leaves log p unchanged: occlusion gives no ranking to "
                  "compare with on this sentence.")
TOO_FEW = ("With {n} tokens every rank correlation is ±1 or undefined, so agreement is not stated: type a longer "
           "sentence.")
LAYER_HELP = "The layer whose attention the first two columns show (the last layer first); rollout uses every layer."
TARGET_HELP = "The model's five most probable next tokens; every method explains the one picked here."
