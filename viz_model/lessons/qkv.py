"""What the Q, K and V page proves: attention as a soft database lookup, and what sharing Q=K, K=V or using raw
X costs (score symmetry, self-attention, minimal pairs, held-out loss), measured on live models (torch/numpy only).

Every function takes `models`, a mapping {name: TinyTransformer}; a model's variant is its own config.qkv.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from viz_model.config import QKV_MODES
from viz_model.lessons.common import Check, Fact
from viz_model.model import TinyTransformer, Trace
from viz_model.model_text import md_text, md_token
from viz_model.tokenizer import Encoded, encode

VARIANT_LABELS = {"separate": "separate W_Q, W_K, W_V", "shared_qk": "shared Q = K", "shared_kv": "shared K = V",
                  "none": "raw X (XXᵀ attention)"}
SHIPPED = {"separate": "classroom", "shared_qk": "qkv-shared_qk", "shared_kv": "qkv-shared_kv", "none": "qkv-none"}
# One word differs (an animate subject vs an object); the last word is shared. All words are in the corpus.
MINIMAL_PAIRS = (("the cat sat", "the mat sat"), ("the dog barked", "the box barked"),
                 ("the bird chirped", "the table chirped"), ("the king ruled", "the lamp ruled"),
                 ("the boy smiled", "the book smiled"))
CLAIM_SENTENCES = ("the cat sat on the mat", "the boy gave the girl the book because she smiled",
                   "please send the report today", "the dog near the tree barked loudly",
                   "after the king thanked the queen , he smiled")
SYMMETRY_TOL = 1e-6     # ‖S − Sᵀ‖/‖S‖ at or below this is symmetric (float32 rounding is ~1e-7)
ASYMMETRY_MIN = 0.1     # at or above this is clearly asymmetric (an unrelated random matrix gives about √2)
SELF_MARGIN = 0.05      # "more weight on itself": self share higher than separate's by 5 points or more
MOST_ROWS = 0.5         # "in most rows": the diagonal is the row max in more than half of them
COSINE_MARGIN = 0.01    # "blurrier": the minimal-pair cosine higher by more than this
NEARLY_SAME = 0.9       # "nearly the same output": a cosine at or above this (1 = the same direction)
LOSS_TOL = 0.02         # nats: run-to-run noise; "does not perform worse" within this
LOOKUP_TOL = 1e-5       # float32 rounding of a sum of T products
METADATA_TOL = 1e-4     # the recomputed held-out loss against the checkpoint's own number


def label(variant: str) -> str:
    return VARIANT_LABELS.get(variant, variant)


def asym_text(value: float) -> str:
    """‖S − Sᵀ‖/‖S‖ as every panel title, table cell and caption on the page writes it (one rounding)."""
    return f"{value:.2f}"


def lesson_text(enc: Encoded, raw: str) -> str:
    """The text the lesson functions encode: the typed text, or what is left of it after truncation."""
    if not enc.truncated:
        return raw
    return " ".join(t for t in enc.tokens if t != "<bos>")


def default_query(tokens: list[str]) -> int:
    """The query the lookup opens on: 'sat' if the sentence has it, else the last token."""
    lower = [t.lower() for t in tokens]
    return lower.index("sat") if "sat" in lower else len(tokens) - 1


# -- running a sentence ---------------------------------------------------------------------------
def encode_sentence(model: TinyTransformer, tok, text: str, allow_unknown: bool = True) -> tuple[list[int], list[str]]:
    """'<bos> text' as ids and labels; ValueError for an empty, too long or (optionally) unknown-word text."""
    enc = encode(tok, text, bos=True)
    if len(enc.ids) < 2:
        raise ValueError("type a sentence: there is nothing to attend to.")
    if len(enc.ids) > model.config.max_len:
        raise ValueError(f"this model reads at most {model.config.max_len - 1} words; the text has "
                         f"{len(enc.ids) - 1}.")
    if enc.unknown and not allow_unknown:
        raise ValueError(f"the model does not know {', '.join(repr(w) for w in enc.unknown)}; use words of the "
                         "classroom corpus.")
    return enc.ids, enc.tokens


@torch.no_grad()
def traced(model: TinyTransformer, ids: Sequence[int]) -> Trace:
    """One traced forward pass in eval mode (the model's train/eval mode is restored)."""
    was = model.training
    model.eval()
    out = model(torch.tensor([list(ids)], device=model.device), trace=True)
    model.train(was)
    return out.trace


def _check_head(model: TinyTransformer, layer: int, head: int) -> None:
    cfg = model.config
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"choose a layer in 0..{cfg.n_layers - 1} and a head in 0..{cfg.n_heads - 1}.")


# -- the database analogy ---------------------------------------------------------------------------
@dataclass
class Contributor:
    index: int      # key position
    token: str
    weight: float   # softmax weight p_j
    norm: float     # ‖p_j · v_j‖: how much this value adds to the output


@dataclass
class Lookup:
    """One query's lookup. Under shared K = V with RoPE, v is the unrotated k (RoPE turns Q and K only);
    under raw X, q, k and v are the normed input itself (q and k rotated with RoPE)."""

    variant: str
    tokens: list[str]
    layer: int
    head: int
    query: int               # query position (0 = <bos>)
    q: np.ndarray            # (d_k,) the query (after RoPE where used)
    k: np.ndarray            # (T, d_k) every key (after RoPE where used)
    v: np.ndarray            # (T, d_k) every value (never rotated)
    scores: np.ndarray       # (T,) q·k_j / sqrt(d_k), before the mask
    allowed: np.ndarray      # (T,) bool: keys the mask lets this query see
    probs: np.ndarray        # (T,) softmax over the allowed keys (0 elsewhere)
    out: np.ndarray          # (d_k,) Σ_j p_j v_j, recomputed here
    contributors: list[Contributor]  # allowed keys, largest ‖p_j v_j‖ first
    error: float             # max |out − the traced head_out| (the model's own computation)


@torch.no_grad()
def lookup(model: TinyTransformer, tok, text: str, layer: int, head: int, query: int) -> Lookup:
    """Attention as a soft lookup for one query: q against every k, the softmax, and the weighted sum of v's,
    recomputed from the traced q, k, v of `layer`/`head` and compared with the model's own head output."""
    _check_head(model, layer, head)
    ids, tokens = encode_sentence(model, tok, text)
    if not 0 <= query < len(ids):
        raise ValueError(f"choose a query position in 0..{len(ids) - 1}.")
    lt = traced(model, ids).layers[layer]
    q, k, v = lt.q[0, head, query], lt.k[0, head], lt.v[0, head]    # (d_k,), (T, d_k), (T, d_k)
    scores = (k @ q) / math.sqrt(q.shape[-1])                         # (T,)
    allowed = torch.isfinite(lt.mask.expand_as(lt.scores)[0, head, query])  # (T,)
    probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)  # (T,)
    parts = probs[:, None] * v                                        # (T, d_k) p_j v_j
    out = parts.sum(0)                                                # (d_k,)
    norms = parts.norm(dim=-1)                                        # (T,)
    order = [int(j) for j in torch.argsort(norms, descending=True) if allowed[j]]
    contributors = [Contributor(j, tokens[j], float(probs[j]), float(norms[j])) for j in order]
    error = float((out - lt.head_out[0, head, query]).abs().max())
    arr = lambda t: t.detach().cpu().numpy()  # noqa: E731
    return Lookup(model.config.qkv, tokens, layer, head, query, arr(q), arr(k), arr(v), arr(scores),
                  arr(allowed), arr(probs), arr(out), contributors, error)


def lookup_check(lk: Lookup) -> Check:
    return Check(lk.error, LOOKUP_TOL, "Σ_j p_j v_j recomputed here equals the model's own head output for this query")


def contributor_rows(lk: Lookup, top_n: int = 5) -> list[dict[str, str]]:
    """The top `top_n` contributors by ‖p_j v_j‖, with their weights and their share of Σ‖p_j v_j‖."""
    total = sum(c.norm for c in lk.contributors) or 1.0
    return [{"key": f"{c.index} · {c.token}", "weight p_j": f"{c.weight:.3f}", "‖p_j · v_j‖": f"{c.norm:.3f}",
             "share of Σ‖p_j · v_j‖": f"{c.norm / total:.0%}"} for c in lk.contributors[:top_n]]


def contributors_text(lk: Lookup) -> str:
    """Whose value the answer mostly is, and the largest weight when that is another key's."""
    first = lk.contributors[0]
    by_weight = max(lk.contributors, key=lambda c: c.weight)
    text = (f"The answer is mostly the value of {md_token(first.token)} (position {first.index}, "
            f"p = {first.weight:.2f}, ‖p·v‖ = {first.norm:.2f})")
    if by_weight.index != first.index:
        text += (f"; {md_token(by_weight.token)} has the largest weight ({by_weight.weight:.2f}) but a shorter value "
                 "vector, so it adds less")
    return text + "."


# -- symmetry and self-attention ----------------------------------------------------------------------
def asymmetry(scores: torch.Tensor) -> torch.Tensor:
    """‖S − Sᵀ‖ / ‖S‖ (Frobenius) over the last two dims: (..., T, T) -> (...). 0 exactly when S = Sᵀ."""
    diff = torch.linalg.matrix_norm(scores - scores.transpose(-2, -1))   # (...,)
    return diff / torch.linalg.matrix_norm(scores).clamp_min(1e-30)


def self_attention(probs: torch.Tensor, allowed: torch.Tensor) -> tuple[float, float, float]:
    """(mean diagonal weight, share of rows whose diagonal is the row max, the uniform-attention baseline) over
    (..., T, T) probs, counting only rows that may see more than one key (a causal row 0 sees only itself)."""
    allowed = allowed.expand_as(probs)
    rows = allowed.sum(-1) > 1                                         # (..., T)
    diag = probs.diagonal(dim1=-2, dim2=-1)                            # (..., T)
    is_max = diag >= probs.amax(-1)                                    # (..., T)
    chance = 1.0 / allowed.sum(-1).clamp_min(1)                        # (..., T)
    if not rows.any():
        raise ValueError("every query sees only itself here: use a sentence of at least two words.")
    return float(diag[rows].mean()), float(is_max[rows].float().mean()), float(chance[rows].mean())


@dataclass
class VariantScores:
    variant: str
    tokens: list[str]
    scores: np.ndarray       # (T, T) the head's scaled QKᵀ before the mask
    probs: np.ndarray        # (T, T) after the mask and softmax
    asymmetry: float         # ‖S − Sᵀ‖ / ‖S‖ before the mask
    self_share: float        # mean diagonal weight (rows with more than one visible key)
    diag_max_rate: float     # share of those rows whose largest weight is on the token itself
    chance_share: float      # the self share if each row spread its weight evenly


@torch.no_grad()
def variant_scores(models: Mapping[str, TinyTransformer], tok, text: str, layer: int, head: int,
                   ) -> list[VariantScores]:
    """One head's score matrix per model on the same sentence, with its asymmetry and self-attention."""
    out = []
    for model in models.values():
        _check_head(model, layer, head)
        ids, tokens = encode_sentence(model, tok, text)
        lt = traced(model, ids).layers[layer]
        s, p = lt.scores[0, head], lt.probs[0, head]                  # (T, T)
        allowed = torch.isfinite(lt.mask.expand_as(lt.scores)[0, head])  # (T, T)
        share, rate, chance = self_attention(p, allowed)
        out.append(VariantScores(model.config.qkv, tokens, s.cpu().numpy(), p.cpu().numpy(),
                                 float(asymmetry(s)), share, rate, chance))
    return out


def variant_rows(rows: Sequence[VariantScores]) -> list[dict[str, str]]:
    return [{"variant": label(r.variant), "‖S − Sᵀ‖ / ‖S‖": asym_text(r.asymmetry),
             "mean weight on itself": f"{r.self_share:.3f}", "itself is the largest weight": f"{r.diag_max_rate:.0%}",
             "even spread": f"{r.chance_share:.3f}"} for r in rows]


def symmetry_facts(rows: Sequence[VariantScores]) -> list[Fact]:
    """Shared Q = K and raw X: the head's scores are symmetric (‖S − Sᵀ‖/‖S‖ within SYMMETRY_TOL)."""
    out = []
    for r in rows:
        if r.variant in ("shared_qk", "none"):
            sym = r.asymmetry <= SYMMETRY_TOL
            out.append(Fact(sym, f"{label(r.variant)}: ‖S − Sᵀ‖/‖S‖ = {r.asymmetry:.1e} "
                                 + (f"(≤ {SYMMETRY_TOL:g}), the scores are symmetric: token i matches j exactly as "
                                    "well as j matches i." if sym else
                                    f"(> {SYMMETRY_TOL:g}): the scores are not symmetric here.")))
    return out


def asymmetry_caption(rows: Sequence[VariantScores]) -> str:
    """The separate and K = V variants' asymmetry beside a random matrix's ('' when neither is shown)."""
    asym = [f"{label(r.variant)} {asym_text(r.asymmetry)}" for r in rows if r.variant in ("separate", "shared_kv")]
    if not asym:
        return ""
    return ("With separate W_Q and W_K the matrix is asymmetric (" + ", ".join(asym) + "; an unrelated random matrix "
            "gives about 1.41). The even spread is the weight on itself if a row spread its weight evenly over the "
            "keys it may read.")


# -- minimal pairs ------------------------------------------------------------------------------------
def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """cos(a, b) = a·b / (‖a‖‖b‖) of two vectors (ValueError for a zero vector: no direction)."""
    a, b = a.double().flatten(), b.double().flatten()
    na, nb = a.norm(), b.norm()
    if na == 0 or nb == 0:
        raise ValueError("a zero vector has no direction: the cosine is undefined.")
    return float(a @ b / (na * nb))


@dataclass
class PairResult:
    a: str
    b: str
    word: str                           # the shared last word
    position: int                       # its position (with <bos> at 0)
    differs_at: int                     # the one position where the sentences differ
    attn_cos: dict[str, list[float]]    # variant -> per layer: cosine of the attention output (after W_O)
    hidden_cos: dict[str, float]        # variant -> cosine of the final residual stream (before the last norm)


def _pair_positions(tok, a: str, b: str) -> tuple[int, int]:
    ea, eb = encode(tok, a, bos=True), encode(tok, b, bos=True)
    diff = [i for i, (x, y) in enumerate(zip(ea.ids, eb.ids)) if x != y]
    if len(ea.ids) != len(eb.ids) or len(diff) != 1:
        raise ValueError("a minimal pair has the same number of words and differs in exactly one of them.")
    if diff[0] == len(ea.ids) - 1:
        raise ValueError("the last word must be the shared one: put the differing word before it.")
    return diff[0], len(ea.ids) - 1


@torch.no_grad()
def minimal_pair(models: Mapping[str, TinyTransformer], tok, a: str, b: str) -> PairResult:
    """How differently each model represents the shared last word of two sentences that differ in one word."""
    differs_at, pos = _pair_positions(tok, a, b)
    attn_cos, hidden_cos = {}, {}
    for model in models.values():
        ta = traced(model, encode_sentence(model, tok, a, allow_unknown=False)[0])
        tb = traced(model, encode_sentence(model, tok, b, allow_unknown=False)[0])
        name = model.config.qkv
        attn_cos[name] = [cosine(la.attn_out[0, pos], lb.attn_out[0, pos]) for la, lb in zip(ta.layers, tb.layers)]
        hidden_cos[name] = cosine(ta.residual[-1][0, pos], tb.residual[-1][0, pos])
    word = encode(tok, a, bos=True).tokens[pos]
    return PairResult(a, b, word, pos, differs_at, attn_cos, hidden_cos)


def pair_rows(names: Sequence[str], attn: Sequence[list[float]], hidden: Sequence[float]) -> list[dict[str, str]]:
    """Per variant: the shared word's cosine after each layer's attention and of the final hidden state."""
    return [{"variant": name, **{f"attention output, layer {i}": f"{c:.3f}" for i, c in enumerate(row)},
             "final hidden state": f"{h:.3f}"} for name, row, h in zip(names, attn, hidden)]


def pair_caption(variants: Sequence[str], attn: Sequence[list[float]]) -> str:
    """Shared K = V against separate in layer 0 for this pair ('' unless both are shown)."""
    if "shared_kv" not in variants or "separate" not in variants:
        return ""
    kv, sep = attn[list(variants).index("shared_kv")][0], attn[list(variants).index("separate")][0]
    return (f"Layer 0 attention output: shared K = V {kv:.3f} against separate {sep:.3f} for this pair "
            f"({'more' if kv > sep else 'less'} alike). The Claims tab averages over all {len(MINIMAL_PAIRS)} pairs.")


# -- the summary over sentences and the lecture's claims ------------------------------------------
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


# -- the Train page's one-click ablation --------------------------------------------------------------
def qkv_variants(spec):
    """The four runs of a qkv ablation: `spec` (a dataclass with a `qkv` field, e.g. TrainSpec) with each mode."""
    if "qkv" not in {f.name for f in fields(spec)}:
        raise ValueError("this run spec has no 'qkv' setting, so it cannot be varied.")
    return [replace(spec, qkv=mode) for mode in QKV_MODES]


# -- what the page says -------------------------------------------------------------------------------
HOW = {"separate": "q, k and v come from three separate projections W_Q, W_K, W_V.",
       "shared_qk": "q and k come from one projection (W_Q = W_K): q·k is the same both ways, only RoPE's rotation "
                    "differs between positions.",
       "shared_kv": "k and v come from one projection (W_K = W_V): v is k before RoPE's rotation, so what a token is "
                    "found by is also what it hands over.",
       "none": "there are no projections: q, k and v are the normed input itself (q and k rotated by RoPE), XXᵀ "
               "attention."}
VALUES_TEXT = ("**Values**: the answer is the weighted sum Σ_j p_j v_j of the keys' v vectors (rows p_j · v_j, then "
               "their sum).")
SCORES_CAPTION = ("The whole matrix before the causal mask (which later hides everything above the diagonal); red "
                  "positive, blue negative, each panel on its own scale centred at 0. asym = ‖S − Sᵀ‖/‖S‖.")
TRAIN_TEXT = ("Train them yourself: the Train page's **Compare setups** tab retrains the four variants live, side by "
              "side, and overlays their loss curves (pick **Q, K and V** under **Vary** there).")


def or_list(names: Sequence[str]) -> str:
    """“a”, “b” or “c”: names quoted as literal Markdown."""
    quoted = [f"“{md_text(n)}”" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def variant_note(variant: str, model_key: str, others: Sequence[str]) -> str:
    """Which variant the sidebar model is and what that means for q, k and v; for the separate one, which of the
    other shipped variants (`others`, as the Model picker names them) to pick."""
    where = f"the shipped `{model_key}`, " if model_key in SHIPPED.values() else ""
    text = f"The sidebar model ({where}**{label(variant)}**): {HOW.get(variant, '')}"
    if variant != "separate":
        return text + " It is not the usual separate-projection model."
    return text + (f" Pick {or_list(others)} in the sidebar's Model picker to see the others." if others else "")


def lookup_text(token: str) -> str:
    return (f"**Query** = the q of {md_token(token)}; **keys** = the k of every token it may read; the **scores** "
            "q·k_j/√d_k say how well each key matches; the **softmax** turns them into weights p_j that sum to 1.")


def pair_text(pair: PairResult) -> str:
    return (f"The vectors of the shared word {md_token(pair.word)} (position {pair.position}) in “{md_text(pair.a)}” "
            f"and in “{md_text(pair.b)}”: for each layer its **attention output** (the attention block's output after "
            "W_O, before it is added to the residual stream) and the **final hidden state** (the residual stream after "
            "the last block, before the final norm). Cosine 1 = the same direction; the lecture expects K = V to blur "
            "the two sentences together.")
