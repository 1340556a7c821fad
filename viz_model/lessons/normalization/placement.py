"""Where the norm sits: post-norm (the 2017 Transformer) normalises the residual sum, pre-norm (GPT-2 on)
only the block's input; the lecture's warm-up claims measured on four short runs, and the three norm kinds trained."""

from __future__ import annotations

import math

from viz_model.config import NORMS
from viz_model.lessons.common import Fact
from viz_model.lessons.normalization.residuals import FLAT_FACTOR
from viz_model.lessons.normalization.runs import Progress, Run, _base, _runs, _train_config, tail


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


WARM_TOL = 0.1                    # nats: pre-norm without warm-up "trains fine" if within this of with warm-up


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


# -- what the page says ------------------------------------------------------------------------------------------
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
