"""What the Encoder-decoder page proves: a cross-attention head learns the toy language's word alignment, and
reusing the encoder's K/V makes each decoding step cheaper than re-encoding the source."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import torch

from viz_model import data
from viz_model.model import eval_mode
from viz_model.seq2seq import Seq2SeqTrace, Seq2SeqTransformer, decode_steps, encode_source, greedy_batch, guided_head


def alignment_hits(cross_attention: torch.Tensor, alignment: list[int], source_ids: list[int] | None = None,
                   ) -> torch.Tensor:
    """(L, H, n) bool: target word j's cross-attention row peaks on its aligned source word; given the source's
    token ids, a peak on an identical copy of that word counts too (copy-aware: 'the' ... 'the').

    cross_attention: (L, H, T_tgt, T_src) with row j the query that predicts target word j; rows after the
    alignment's length (e.g. the one predicting <eos>) are not scored.
    """
    if cross_attention.ndim != 4:
        raise ValueError(f"cross-attention must be (layers, heads, T_tgt, T_src), got {tuple(cross_attention.shape)}.")
    n = len(alignment)
    if n == 0 or cross_attention.shape[2] < n:
        raise ValueError(f"the alignment has {n} target words but the cross-attention {cross_attention.shape[2]} rows.")
    peaks = cross_attention[:, :, :n, :].argmax(-1)  # (L, H, n)
    target = torch.as_tensor(alignment, device=peaks.device)
    if source_ids is None:
        return peaks == target
    ids = torch.as_tensor(source_ids, device=peaks.device)
    ids = torch.cat([ids, ids.new_full((cross_attention.shape[3] - len(ids),), -1)])  # padding keys: no word
    return ids[peaks] == ids[target]


def alignment_accuracy(cross_attention: torch.Tensor, alignment: list[int], source_ids: list[int] | None = None,
                       ) -> torch.Tensor:
    """Per head (L, H): share of target words whose cross-attention row peaks on their aligned source word (or, given
    source_ids, on an identical copy of it: see alignment_hits)."""
    return alignment_hits(cross_attention, alignment, source_ids).float().mean(-1)


def guide_weight(metadata: dict | None) -> float:
    """The weight of the alignment guide the model trained with: a recipe's train_config (shipped models) or the
    Train page's train_spec (a student's saved run); 0 when no head was guided."""
    meta = metadata or {}
    return float(max((meta.get(k) or {}).get("align_weight") or 0 for k in ("train_config", "train_spec")))


def guided_of(metadata: dict | None, config) -> tuple[int, int] | None:
    """(layer, head) the model's training guided toward the alignment (see guide_weight), else None."""
    return guided_head(config) if guide_weight(metadata) > 0 else None


def best_head(accuracy, exclude: tuple[int, int] | None = None) -> tuple[int, int]:
    """(layer, head) of the highest (L, H) accuracy, leaving out `exclude` (the guided head) when given."""
    acc = torch.as_tensor(accuracy, dtype=torch.float64).clone()
    if exclude is not None and acc.numel() > 1:
        acc[exclude] = -1.0
    return divmod(int(acc.argmax()), acc.shape[1])


@dataclass
class TeacherForced:
    """The model reading a source and its reference translation: every attention of every layer."""

    source_tokens: list[str]     # words as typed, then <eos>
    target_tokens: list[str]     # the reference words (what rows 0..n-1 predict), then <eos>
    alignment: list[int]         # source index of each reference word
    trace: Seq2SeqTrace          # .encoder / .decoder / .cross, batch of one
    cross_attention: torch.Tensor  # (L, H, T_tgt, T_src)


@torch.no_grad()
def teacher_forced(model: Seq2SeqTransformer, tokenizer, source: str) -> TeacherForced:
    """Run the source with its reference translation as the decoder input; ValueError outside the toy language."""
    target, alignment = data.reference_translation(source)
    src, labels, _ = encode_source(model, tokenizer, source)
    tgt = [tokenizer.token_to_id("<bos>"), *(tokenizer.token_to_id(w) for w in target.split())]
    with eval_mode(model):
        out = model(torch.tensor([src], device=model.device), torch.tensor([tgt], device=model.device), trace=True)
    cross = torch.stack([lt.probs[0] for lt in out.trace.cross]).float().cpu()  # (L, H, T_tgt, T_src)
    return TeacherForced(labels, [*target.split(), "<eos>"], alignment, out.trace, cross)


@torch.no_grad()
def alignment_scores(model: Seq2SeqTransformer, tokenizer, sentences: list[str], copy_aware: bool = False,
                     ) -> torch.Tensor:
    """(L, H) alignment accuracy pooled over every target word of the sentences (teacher forcing, one batch);
    copy_aware: a peak on an identical copy of the aligned source word counts as aligned."""
    pairs = [data.reference_translation(s) for s in sentences]
    pad, bos, eos = (tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>"))
    sources = [[*(tokenizer.token_to_id(w) for w in data.source_words(s)), eos] for s in sentences]
    src = data.pad_right(sources, pad)
    tgt = data.pad_right([[bos, *(tokenizer.token_to_id(w) for w in t.split())] for t, _ in pairs], pad)
    with eval_mode(model):
        trace = model(src.to(model.device), tgt.to(model.device), trace=True).trace
    cross = torch.stack([lt.probs for lt in trace.cross], 1).float().cpu()  # (B, L, H, T_tgt, T_src)
    hits = torch.zeros(cross.shape[1:3])
    for b, (_, alignment) in enumerate(pairs):
        hits += alignment_hits(cross[b], alignment, sources[b] if copy_aware else None).float().sum(-1)
    return hits / sum(len(a) for _, a in pairs)


def word_class(source_word: str, target_word: str) -> str:
    """The grammar's class of an aligned pair: NOUN, VERB, ADJ, DET, ... ; 'PLURAL' for the plural word 'ka'."""
    if target_word == data.PLURAL_WORD:
        return "PLURAL"
    return data.WORD_CLASSES.get(source_word, "PREP" if source_word in ("next", "to") else "ADV")


@torch.no_grad()
def alignment_by_class(model: Seq2SeqTransformer, tokenizer, sentences: list[str], layer: int, head: int,
                       copy_aware: bool = False) -> dict[str, tuple[float, int]]:
    """One head's alignment accuracy per word class of the aligned pair: {class: (accuracy, n target words)}.

    Shows where a head aligns (nouns, adjectives) and where it looks elsewhere (a 'the' among several, a verb
    whose identity its neighbour also carries); copy_aware: a peak on an identical copy of the word counts."""
    hits: dict[str, list[bool]] = {}
    for s in sentences:
        tf = teacher_forced(model, tokenizer, s)
        words = data.source_words(s)
        ids = [tokenizer.token_to_id(w) for w in words] if copy_aware else None
        row = alignment_hits(tf.cross_attention, tf.alignment, ids)[layer, head].tolist()
        for j, (hit, a) in enumerate(zip(row, tf.alignment)):
            hits.setdefault(word_class(words[a], tf.target_tokens[j]), []).append(hit)
    return {c: (sum(h) / len(h), len(h)) for c, h in sorted(hits.items())}


def exact_match(model: Seq2SeqTransformer, tokenizer, sentences: list[str]) -> float:
    """Share of sentences whose greedy translation equals the reference word for word."""
    eos = tokenizer.token_to_id("<eos>")
    sources = [[*(tokenizer.token_to_id(w) for w in data.source_words(s)), eos] for s in sentences]
    outputs = greedy_batch(model, sources, max_new_tokens=model.config.max_len, bos_id=tokenizer.token_to_id("<bos>"),
                           eos_id=eos)
    refs = [data.reference_translation(s)[0] for s in sentences]
    return sum(" ".join(tokenizer.id_to_token(i) for i in out) == ref for out, ref in zip(outputs, refs)) / len(refs)


def heldout_metrics(model: Seq2SeqTransformer, tokenizer, n: int = 400, guided: bool = False) -> dict:
    """The shipped translator's metadata: exact match and per-head alignment on sentences never trained on;
    `guided` (training pulled seq2seq.guided_head toward the alignment): also that head's score and the best
    head that was not guided."""
    sentences = data.heldout_sentences(n, seed=1, translatable=True)
    scores = alignment_scores(model, tokenizer, sentences)  # (L, H)
    layer, head = best_head(scores)
    by_class = alignment_by_class(model, tokenizer, sentences, layer, head)
    out = {"exact_match": exact_match(model, tokenizer, sentences), "n_sentences": len(sentences),
           "alignment_accuracy": [[round(float(a), 4) for a in row] for row in scores],
           "best_alignment_head": {"layer": layer, "head": head, "accuracy": float(scores[layer, head])},
           "best_head_by_class": {c: [round(a, 4), n] for c, (a, n) in by_class.items()}}
    if guided:
        g_layer, g_head = guided_head(model.config)
        u_layer, u_head = best_head(scores, exclude=(g_layer, g_head))
        out["guided_head"] = {"layer": g_layer, "head": g_head, "accuracy": float(scores[g_layer, g_head])}
        out["best_unguided_head"] = {"layer": u_layer, "head": u_head, "accuracy": float(scores[u_layer, u_head])}
    return out



STRUCTURAL_SPLITS = {"seen": "unseen sentences of skeletons the model trained on",
                     "unseen": "sentences of skeletons (whole shapes) kept out of training"}


def structural_metrics(model: Seq2SeqTransformer, tokenizer, n: int = 200, guided: bool = False) -> dict:
    """Exact match and the best head's alignment (plain and copy-aware) per structural split (STRUCTURAL_SPLITS):
    does the translator know the grammar, or only the shapes it saw? `guided`: the best head is the best one that
    was not guided (seq2seq.guided_head), and the guided head's scores are added."""
    exclude = guided_head(model.config) if guided else None
    out = {}
    for split in STRUCTURAL_SPLITS:
        sentences = data.structural_sentences(n, split)
        plain = alignment_scores(model, tokenizer, sentences)
        copy = alignment_scores(model, tokenizer, sentences, copy_aware=True)  # (L, H)
        layer, head = best_head(copy, exclude=exclude)
        by_class = alignment_by_class(model, tokenizer, sentences, layer, head, copy_aware=True)
        out[split] = {"n_sentences": len(sentences), "exact_match": exact_match(model, tokenizer, sentences),
                      "best_head": {"layer": layer, "head": head, "alignment": round(float(plain[layer, head]), 4),
                                    "copy_aware_alignment": round(float(copy[layer, head]), 4)},
                      "copy_aware_alignment": [[round(float(a), 4) for a in row] for row in copy],
                      "best_head_by_class": {c: [round(a, 4), k] for c, (a, k) in by_class.items()}}
        if exclude is not None:
            out[split]["guided_head"] = {"layer": exclude[0], "head": exclude[1],
                                         "copy_aware_alignment": round(float(copy[exclude]), 4)}
    return out

@dataclass
class DecodeTiming:
    """The same greedy translation decoded two ways, timed on this machine."""

    tokens: int                     # target tokens decoded (each run)
    seconds_reuse: float            # encoder once, cross K/V once, decoder KV cache
    seconds_reencode: float         # the whole source encoded again at every step, no cache
    same_tokens: bool               # both ways chose the same tokens
    cross_kv_shape: tuple[int, ...]  # (B, H, T_src, d_k): K (and V) of one decoder layer, computed once

    @property
    def speedup(self) -> float:
        return self.seconds_reencode / max(self.seconds_reuse, 1e-12)


def decode_timing(model: Seq2SeqTransformer, tokenizer, text: str, max_new_tokens: int = 32) -> DecodeTiming:
    """Decode `text` greedily with and without reusing the encoder (tracing off: only the arithmetic)."""
    ids, _, _ = encode_source(model, tokenizer, text)
    kw = dict(max_new_tokens=max_new_tokens, attention=False, bos_id=tokenizer.token_to_id("<bos>"),
              eos_id=tokenizer.token_to_id("<eos>"))
    with eval_mode(model):
        runs = {}
        for reuse in (True, False):
            t0 = time.perf_counter()
            steps = decode_steps(model, ids, use_cache=reuse, reuse_encoder=reuse, **kw)
            runs[reuse] = [d.step.token_id for d in steps]
            runs[reuse, "s"] = time.perf_counter() - t0
        with torch.no_grad():
            shape = tuple(model.encode(torch.tensor([ids], device=model.device)).cross_kv[0][0].shape)
    return DecodeTiming(len(runs[True]), runs[True, "s"], runs[False, "s"], runs[True] == runs[False], shape)



@torch.no_grad()
def three_attentions(model: Seq2SeqTransformer, src_ids, tgt_ids, pad: int = 0) -> dict:
    """One traced pass (source + `pad` pads, decoder input): for "encoder", "decoder" and "cross", every layer's
    weights (L, H, Tq, Tk) and where a query may attend (Tq, Tk), as numpy arrays."""
    src = torch.tensor([[*src_ids, *[model.config.pad_id] * pad]], device=model.device)  # (1, T_src)
    with eval_mode(model):
        tr = model(src, torch.tensor([list(tgt_ids)], device=model.device), trace=True).trace
    out = {}
    for kind in ("encoder", "decoder", "cross"):
        layers = getattr(tr, kind)
        probs = torch.stack([lt.probs[0] for lt in layers]).float().cpu()  # (L, H, Tq, Tk)
        mask = layers[0].mask
        allowed = (torch.ones(probs.shape[2:], dtype=torch.bool) if mask is None else
                   torch.isfinite(mask).expand(layers[0].probs.shape)[0, 0].cpu())  # (Tq, Tk)
        out[kind] = (probs.numpy(), allowed.numpy())
    return out

__all__ = ["STRUCTURAL_SPLITS", "DecodeTiming", "Membership", "ShapeMembership", "TeacherForced",
           "alignment_accuracy", "alignment_by_class", "alignment_hits", "alignment_scores", "best_head",
           "decode_timing", "exact_match", "guide_weight", "guided_of", "heldout_metrics", "shape_membership",
           "structural_metrics", "teacher_forced", "three_attentions", "training_membership", "word_class"]


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


@functools.lru_cache(maxsize=4)
def _training_draws(seed: int, steps: int, batch_size: int, grammar_size: int = data.GRAMMAR_POOL,
                    ) -> tuple[dict[str, int], frozenset[str]]:
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
    meta = metadata or {}
    cfg = meta.get("train_config") or {}
    steps, batch_size = meta.get("steps", cfg.get("steps")), cfg.get("batch_size")
    if cfg.get("task") != "translate" or steps is None or batch_size is None or "seed" not in cfg:
        return Membership("unknown")
    counts, pool = _training_draws(int(cfg["seed"]), int(steps), int(batch_size), int(cfg.get("grammar_size", 0)))
    k = _key(text)
    if k in counts:
        return Membership("trained", counts[k], int(steps))
    return Membership("never drawn" if k in pool else "not in the corpus", 0, int(steps))


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
    meta = metadata or {}
    cfg = meta.get("train_config") or {}
    steps, batch_size = meta.get("steps", cfg.get("steps")), cfg.get("batch_size")
    if cfg.get("task") != "translate" or steps is None or batch_size is None or "seed" not in cfg:
        return ShapeMembership(shape, "unknown")
    counts = _trained_skeletons(int(cfg["seed"]), int(steps), int(batch_size), int(cfg.get("grammar_size", 0)))
    return ShapeMembership(shape, "trained" if shape in counts else "never drawn", counts.get(shape, 0))
