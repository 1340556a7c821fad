"""Did the translator train on this sentence, or on its shape? Held out by the content-hash split, else found by
replaying its training draws from the recipe in its metadata (once per process, one replay at a time)."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from viz_model import data

# TaskData's translation pool (its defaults: the sentences of corpus_split(0, 20_000, 256)), replayed below; a test
# checks the replay against TaskData.batch, so a change there fails it instead of mislabelling sentences.
_CORPUS, _HELDOUT = 20_000, 256


@dataclass(frozen=True)
class Membership:
    """Where a source sentence stands with a model's training data, as far as its metadata lets us know."""
    side: str                 # "held out", "trained", "never drawn", "not in the corpus" or "unknown"
    batches: int = 0          # training batches that held it ("trained")
    steps: int = 0            # training batches in all (0 when unknown)

    @property
    def caption(self) -> str:
        return {
            "held out": "Held out: the model never trained on this sentence.",
            "trained": f"In the training set: {self.batches:,} of the model's {self.steps:,} training batches held "
                       "this sentence.",
            "never drawn": f"Not held out, yet in none of the model's {self.steps:,} training batches: the model "
                           "never trained on this sentence (it was in the pool batches are drawn from).",
            "not in the corpus": "Not held out, and not among the sentences its training batches are drawn from: "
                                 "the model never trained on this sentence.",
            "unknown": "Not held out; it may or may not be in this model's training data (its metadata does not "
                       "say how it was trained).",
        }[self.side]


def _key(text: str) -> str:
    return " ".join(data.source_words(text))


# One replay at a time: a second caller (the page, while warm_membership's thread replays) waits for the first's
# result instead of replaying the same seconds of draws beside it (lru_cache alone lets both compute).
_REPLAYING = threading.Lock()


def _training_draws(seed: int, steps: int, batch_size: int, grammar_size: int = data.GRAMMAR_POOL,
                    ) -> tuple[dict[str, int], frozenset[str]]:
    with _REPLAYING:
        return _replayed_draws(seed, steps, batch_size, grammar_size)


def _recipe(metadata: dict | None) -> tuple[int, int, int, int] | None:
    """(seed, steps, batch size, grammar size) of a model the Trainer trained on the translation task; else None."""
    meta = metadata or {}
    cfg = meta.get("train_config") or {}
    steps, batch_size = meta.get("steps", cfg.get("steps")), cfg.get("batch_size")
    if cfg.get("task") != "translate" or steps is None or batch_size is None or "seed" not in cfg:
        return None
    return int(cfg["seed"]), int(steps), int(batch_size), int(cfg.get("grammar_size", 0))


def warm_membership(metadata: dict | None) -> bool:
    """Replay a translator's training draws ahead of the page (a few seconds, once per process): a lecture that will
    open the Encoder-decoder page starts it in the background, so the step opens at once. False: nothing to replay."""
    recipe = _recipe(metadata)
    if recipe is not None:
        _trained_skeletons(*recipe)
    return recipe is not None


# lru_cache, not ui.cache.cached (ui-only): a pure function of immutable arguments (the recipe's numbers), kept
# per process; ui.lecture's warm-up thread fills it ahead of the page (callers read its dict, never change it)
@functools.lru_cache(maxsize=4)
def _replayed_draws(seed: int, steps: int, batch_size: int, grammar_size: int) -> tuple[dict[str, int], frozenset[str]]:
    """({sentence: training batches that held it}, the pool's sentences): TaskData.batch(step) for every step, replayed
    with the pool and the draw it uses, data.sentence_pool and data.sentence_draws."""
    pool = [_key(t) for t in data.sentence_pool("translate", grammar_size, _CORPUS, _HELDOUT)]
    counts: dict[str, int] = {}
    for step in range(steps):
        for k in {pool[i] for i in data.sentence_draws(seed, step, batch_size, len(pool))}:
            counts[k] = counts.get(k, 0) + 1
    return counts, frozenset(pool)


def training_membership(text: str, metadata: dict | None) -> Membership:
    """Held out (the content-hash split: never trained on), in N training batches, in none, or unknown: exact for a
    model trained on the translation task by the Trainer (its metadata's seed, steps and batch size), else unknown
    unless held out."""
    if data.is_heldout(text):
        return Membership("held out")
    recipe = _recipe(metadata)
    if recipe is None:
        return Membership("unknown")
    counts, pool = _training_draws(*recipe)
    k, steps = _key(text), recipe[1]
    if k in counts:
        return Membership("trained", counts[k], steps)
    return Membership("never drawn" if k in pool else "not in the corpus", 0, steps)


@dataclass(frozen=True)
class ShapeMembership:
    """Whether a sentence's skeleton (data.skeleton: its word classes) was among the model's training sentences'."""
    skeleton: str
    side: str          # "held out", "trained", "never drawn" or "unknown"
    sentences: int = 0  # distinct training sentences of this skeleton the batches held ("trained")

    @property
    def caption(self) -> str:
        shape = f"Its skeleton ({self.skeleton})"
        return {
            "held out": f"{shape} is one of the shapes kept out of training: no training sentence had it, so the "
                        "translation tests the grammar, not memory.",
            "trained": f"{shape} was in training: {self.sentences:,} training sentence"
                       f"{'s' * (self.sentences != 1)} of this shape.",
            "never drawn": f"{shape} was in none of the model's training batches: it never saw a sentence of this "
                           "shape.",
            "unknown": f"{shape} is not one of the shapes kept out of the shipped models' training; whether this model "
                       "saw it, its metadata does not say.",
        }[self.side]


# lru_cache, not ui.cache.cached (ui-only): a pure function of immutable arguments, as _replayed_draws
@functools.lru_cache(maxsize=4)
def _trained_skeletons(seed: int, steps: int, batch_size: int, grammar_size: int) -> dict[str, int]:
    """{skeleton: distinct training sentences of it that the batches held}."""
    counts: dict[str, int] = {}
    for sentence in _training_draws(seed, steps, batch_size, grammar_size)[0]:
        shape = data.skeleton(sentence)
        counts[shape] = counts.get(shape, 0) + 1
    return counts


def shape_membership(text: str, metadata: dict | None) -> ShapeMembership:
    """Whether the skeleton of `text` (a sentence of the toy language) was in training: held out by the structural
    split (data.is_heldout_skeleton: for every model TaskData trains), else counted by replaying the training draws
    as training_membership does; unknown without a Trainer's recipe."""
    shape = data.skeleton(text)
    if data.is_heldout_skeleton(shape):
        return ShapeMembership(shape, "held out")
    recipe = _recipe(metadata)
    if recipe is None:
        return ShapeMembership(shape, "unknown")
    counts = _trained_skeletons(*recipe)
    return ShapeMembership(shape, "trained" if shape in counts else "never drawn", counts.get(shape, 0))


# -- what the page says ------------------------------------------------------------------------------------------------
REPLAY_SPINNER = ("Replaying the translator's training batches to find whether it saw this sentence (a few seconds, "
                  "once per server; every later student gets it at once)…")
