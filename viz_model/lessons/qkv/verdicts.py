"""The lecture's (and papers') claims about the variants, each measured over several sentences and the
minimal pairs on the shipped models, with its tolerance and a gentle note where it does not hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.config import QKV_MODES
from viz_model.lessons.common import Fact
from viz_model.lessons.qkv.loss import LOSS_TOL
from viz_model.lessons.qkv.pairs import MINIMAL_PAIRS, minimal_pair
from viz_model.lessons.qkv.symmetry import ASYMMETRY_MIN, SYMMETRY_TOL, asymmetry, self_attention
from viz_model.lessons.qkv.variants import VARIANT_LABELS, encode_sentence, traced
from viz_model.model import TinyTransformer

CLAIM_SENTENCES = ("the cat sat on the mat", "the boy gave the girl the book because she smiled",
                   "please send the report today", "the dog near the tree barked loudly",
                   "after the king thanked the queen , he smiled")


SELF_MARGIN = 0.05      # "more weight on itself": self share higher than separate's by 5 points or more


MOST_ROWS = 0.5         # "in most rows": the diagonal is the row max in more than half of them


COSINE_MARGIN = 0.01    # "blurrier": the minimal-pair cosine higher by more than this


NEARLY_SAME = 0.9       # "nearly the same output": a cosine at or above this (1 = the same direction)


@dataclass
class VariantSummary:
    variant: str
    asymmetry_max: float      # over every layer, head and claim sentence
    asymmetry_mean: float
    self_share: float         # mean diagonal weight over layers, heads and sentences
    diag_max_rate: float
    chance_share: float
    pair_cos_attn: float      # mean over the minimal pairs of the first layer's attention-output cosine
    pair_cos_hidden: float    # ... of the final residual stream's cosine
    heldout_loss: float | None  # nats per token on the corpus's held-out split (None if not measured)
    pair_cos_each: tuple[float, ...] = ()  # the first layer's cosine for each minimal pair, in order


@torch.no_grad()
def summarize(model: TinyTransformer, tok, sentences: Sequence[str] = CLAIM_SENTENCES,
              pairs: Sequence[tuple[str, str]] = MINIMAL_PAIRS, heldout_loss: float | None = None) -> VariantSummary:
    """One model's measurements over every layer and head of several sentences and minimal pairs."""
    asym, shares = [], []
    for text in sentences:
        trace = traced(model, encode_sentence(model, tok, text)[0])
        for lt in trace.layers:
            allowed = torch.isfinite(lt.mask.expand_as(lt.scores))        # (1, H, T, T)
            asym.append(asymmetry(lt.scores[0]))                           # (H,)
            shares.append(self_attention(lt.probs, allowed))
    asym_all = torch.cat(asym)
    share, rate, chance = (float(np.mean(col)) for col in zip(*shares))
    results = [minimal_pair({"m": model}, tok, a, b) for a, b in pairs]
    name = model.config.qkv
    each = tuple(r.attn_cos[name][0] for r in results)
    return VariantSummary(name, float(asym_all.max()), float(asym_all.mean()), share, rate, chance,
                          float(np.mean(each)), float(np.mean([r.hidden_cos[name] for r in results])), heldout_loss,
                          each)


def _verdict(claim: str, measurement: str, value: float, holds: bool, tolerance: str, note: str) -> Fact:
    """A lecture's (or a paper's) claim measured on these models: the one claim type, lessons.common.Fact."""
    return Fact(holds, claim, measurement=measurement, value=value, tolerance=tolerance, note=note)


def _by_variant(summaries: Sequence[VariantSummary]) -> dict[str, VariantSummary]:
    by = {s.variant: s for s in summaries}
    if set(by) != set(QKV_MODES):
        raise ValueError(f"the claims compare all four variants; got {sorted(by)}.")
    return by


def symmetry_claims(summaries: Sequence[VariantSummary]) -> list[Fact]:
    """Claims (a) and (b): XXᵀ and Q = K give symmetric scores, separate W_Q, W_K do not, and Q = K favours
    the diagonal (Reformer)."""
    by = _by_variant(summaries)
    none, qk, sep = by["none"], by["shared_qk"], by["separate"]
    rows = []
    for s, claim in ((none, "Raw-embedding attention XXᵀ makes one vector serve two roles, so its scores are "
                            "symmetric: S = Sᵀ."),
                     (qk, "One matrix for Q and K (shared Q = K) gives symmetric scores too (with RoPE as well).")):
        rows.append(_verdict(claim, f"largest ‖S − Sᵀ‖/‖S‖ over every head and sentence: {s.asymmetry_max:.1e}",
                             s.asymmetry_max, s.asymmetry_max <= SYMMETRY_TOL, f"≤ {SYMMETRY_TOL:g}", ""))
    holds = sep.asymmetry_mean >= ASYMMETRY_MIN
    rows.append(_verdict(
        "Separate W_Q and W_K break the symmetry: how well i matches j is not how well j matches i (so 'sat' "
        "can look for a subject while 'cat' looks for something else).",
        f"mean ‖S − Sᵀ‖/‖S‖ of separate: {sep.asymmetry_mean:.3f} (shared K = V: {by['shared_kv'].asymmetry_mean:.3f})",
        sep.asymmetry_mean, holds, f"≥ {ASYMMETRY_MIN:g} (0 = symmetric, about 1.41 = unrelated)",
        "" if holds else "On this model the separate projections learned nearly symmetric scores."))
    rows.append(self_claim(qk, none, sep))
    return rows


def self_claim(qk: VariantSummary, none: VariantSummary, sep: VariantSummary) -> Fact:
    """Reformer's point: with Q = K a token's best match is itself. Holds when shared Q = K's self weight is above
    separate's by SELF_MARGIN and its diagonal is the row max in more than MOST_ROWS of the rows."""
    gap = qk.self_share - sep.self_share
    holds = gap >= SELF_MARGIN and qk.diag_max_rate > MOST_ROWS
    if holds:
        note = ""
    elif gap < SELF_MARGIN:
        note = (f"On this small causal model, training moved shared Q = K's weight off the diagonal: its self "
                f"weight is only {gap:+.3f} from separate's.")
    else:
        note = (f"Shared Q = K does lean on itself more than separate ({gap:+.3f}), but itself is the largest weight "
                f"in only {qk.diag_max_rate:.0%} of rows: not most of them.")
    return _verdict(
        "With Q = K a token's best match is itself: it puts more weight on itself than with separate projections, "
        "and itself is its largest weight in most rows (Reformer masks it).",
        f"mean self weight: shared Q = K {qk.self_share:.3f}, raw X {none.self_share:.3f}, separate "
        f"{sep.self_share:.3f} (even spread {sep.chance_share:.3f}); diagonal is the row max in "
        f"{qk.diag_max_rate:.0%} / {none.diag_max_rate:.0%} / {sep.diag_max_rate:.0%} of rows",
        gap, holds, f"shared Q = K's self weight ≥ separate's + {SELF_MARGIN:g}, and its diagonal is the row max in "
                    f"more than {MOST_ROWS:.0%} of rows", note)


def pair_claims(kv: VariantSummary, sep: VariantSummary) -> list[Fact]:
    """Claim (c) in two measured parts: K = V makes the minimal pair's shared word more alike than separate does
    (by more than COSINE_MARGIN), and 'nearly the same' (a cosine of NEARLY_SAME or more)."""
    gap = kv.pair_cos_attn - sep.pair_cos_attn
    wins = sum(a > b for a, b in zip(kv.pair_cos_each, sep.pair_cos_each))
    n = len(kv.pair_cos_each)
    measured = (f"mean cosine of the first layer's attention output for the shared word over {n} pairs: shared "
                f"K = V {kv.pair_cos_attn:.3f}, separate {sep.pair_cos_attn:.3f} (final hidden state "
                f"{kv.pair_cos_hidden:.3f} vs {sep.pair_cos_hidden:.3f})")
    blurrier = gap > COSINE_MARGIN
    same = kv.pair_cos_attn >= NEARLY_SAME
    return [
        _verdict("K reused as V blurs the roles: the shared word of a minimal pair ('the cat sat' / 'the mat sat') "
                 "comes out more alike than with separate projections.",
                 measured + f"; K = V is the more alike in {wins} of {n} pairs", gap, blurrier,
                 f"shared K = V's cosine > separate's + {COSINE_MARGIN:g}",
                 "" if blurrier else f"Measured, not assumed: here K = V does not make the two outputs more alike "
                                     f"({gap:+.3f})."),
        _verdict("With K = V, 'the cat sat' and 'the mat sat' give nearly the same output for 'sat'.",
                 measured, kv.pair_cos_attn, same, f"shared K = V's cosine ≥ {NEARLY_SAME:g} (1 = the same direction)",
                 "" if same else f"A cosine of {kv.pair_cos_attn:.2f} is far from 'nearly the same': on this small "
                                 "model the two sentences still give clearly different outputs."),
    ]


def _noise(gap: float) -> str:
    return (f" A gap of {abs(gap):.4f} nats is within run-to-run noise (under {LOSS_TOL:g}; one training run each)."
            if abs(gap) < LOSS_TOL else "")


def loss_claims(losses: Mapping[str, float]) -> list[Fact]:
    """Claim (d) from {variant: held-out loss}. 'Lowest' and 'the most' are read literally (any gap counts); a
    gap under LOSS_TOL is named as within run-to-run noise (one seed each: seed-to-seed noise is not measured)."""
    text = ", ".join(f"{VARIANT_LABELS[m]} {losses[m]:.4f}" for m in QKV_MODES)
    best, worst = min(losses, key=losses.get), max(losses, key=losses.get)
    gap = losses["separate"] - losses[best]
    holds = best == "separate"
    rows = [_verdict("Separate Q, K and V are worth their parameters: they give the lowest held-out loss.",
                     f"held-out loss (nats/token): {text}", gap, holds, "separate has the lowest loss of the four",
                     "" if holds else f"On this small model {VARIANT_LABELS[best]} is lower, by {gap:.4f} nats."
                     + _noise(gap))]
    cost = losses["shared_qk"] - losses["separate"]
    holds = cost <= LOSS_TOL
    rows.append(_verdict("Reformer (Kitaev et al., 2020): shared-QK attention 'does not perform worse'.",
                         f"shared Q = K − separate: {cost:+.4f} nats", cost, holds,
                         f"at most {LOSS_TOL:g} nats above separate (run-to-run noise)",
                         "" if holds else f"On this small model shared Q = K costs {cost:.3f} nats of held-out "
                                          "loss; Reformer's report is on larger models and other tasks."))
    cost = losses["none"] - losses["separate"]
    holds = worst == "none"
    rows.append(_verdict("Without projections (raw XXᵀ) attention cannot choose what to look for: it costs the most.",
                         f"held-out loss (nats/token): {text}; raw X − separate: {cost:+.4f} nats",
                         cost, holds, "raw X has the highest loss of the four",
                         "" if holds else f"On this small model raw X's loss is {abs(cost):.4f} nats "
                                          f"{'below' if cost < 0 else 'above'} separate projections', although "
                                          f"it has no W_Q, W_K, W_V at all." + _noise(losses[worst] - losses["none"])))
    return rows


def role_claims(summaries: Sequence[VariantSummary]) -> list[Fact]:
    """Claims (c) and (d): K = V blurs roles (minimal pairs), and the held-out loss of each variant (left out when a
    loss was not measured)."""
    by = _by_variant(summaries)
    losses = {s.variant: s.heldout_loss for s in summaries}
    loss_rows = [] if any(v is None for v in losses.values()) else loss_claims(losses)
    return [*pair_claims(by["shared_kv"], by["separate"]), *loss_rows]


def claims(summaries: Sequence[VariantSummary]) -> list[Fact]:
    """The lecture's claims as measured rows, in the page's order."""
    return symmetry_claims(summaries) + role_claims(summaries)


def claims_intro(rows: Sequence[Fact], model: TinyTransformer, steps: int | None) -> str:
    """How many claims hold, and the size of the models they were measured on."""
    size = sum(p.numel() for p in model.parameters())
    return (f"**{sum(r.ok for r in rows)} of {len(rows)}** claims hold on these small models. Where one does not, "
            f"the page says so: the lecture speaks of large trained models; these have {model.config.n_layers} layers "
            f"and {size:,} parameters" + (f", trained for {steps:,} steps." if steps else "."))
