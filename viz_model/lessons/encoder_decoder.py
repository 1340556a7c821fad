"""What the Encoder-decoder page proves: a cross-attention head learns the toy language's word alignment, and
reusing the encoder's K/V makes each decoding step cheaper than re-encoding the source."""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import data
from viz_model.generate import Sampling
from viz_model.lessons.common import Check, Claim, Fact, StepView
from viz_model.model import eval_mode
from viz_model.model_text import md_text
from viz_model.seq2seq import Seq2SeqTrace, Seq2SeqTransformer, decode_steps, encode_source, greedy_batch, guided_head
from viz_model.tokenizer import BOS, EOS, Encoded, display_token

# Sentences of the toy language (the lecture's first, two the model never trained on), then two lecture sentences
# outside it: the model translates them anyway, and the page says there is no reference.
EXAMPLES = ("The cat sat on the mat", "the old king thanked the children when they giggled",
            "the keys near the dog are on the table", "the happy girl waited by the river at night",
            "after the tall boy saw the girl , she smiled all day", "the little dog slept under the old table",
            "The bank by the river", "She gave him the book because he asked for it")


def toy_vocabulary(tokenizer) -> tuple[int, int]:
    """(English words the translator reads, words of the toy language it writes), counted in its tokenizer."""
    english = {*data.WORD_CLASSES, *(w for pair in data.MULTIWORD for w in pair)}  # the toy grammar's words
    toy, vocab = set(data.target_vocabulary()), tokenizer.get_vocab()
    return sum(1 for w in vocab if w in english), sum(1 for w in vocab if w in toy)


def toy_language_text(tokenizer) -> str:
    """What the page says up front: the translator knows a toy language, of so many words, and nothing else."""
    n_english, n_toy = toy_vocabulary(tokenizer)
    return (f"This translator speaks a **toy language of {n_toy} words** (toy Pig Latin) and reads only the "
            f"**{n_english} English words** of its toy grammar: any other word is `<unk>`, and a sentence outside the "
            "grammar gets no reference translation. Pick one of its sentences in the picker below, or type your own "
            "with its words.")


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

    @property
    def claim(self) -> Fact:
        return Fact(self.same_tokens, f"Both ways choose the same {self.tokens} tokens")

    @property
    def caption(self) -> str:
        note = (" Here the saving is within the per-step overhead and the timing noise of a shared server: this model "
                "and sentence are tiny." if self.speedup < 1.2 else "")
        return (f"With reuse {1000 * self.seconds_reuse:.1f} ms, re-encoding the source at every step "
                f"{1000 * self.seconds_reencode:.1f} ms: {self.speedup:.1f}× (best of 3, tracing off).{note} The work "
                "saved grows with the source length, the number of target words and the model's size; "
                "`bench/bench_seq2seq.py` measures 16 and 64 target tokens.")


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


def best_timing(model: Seq2SeqTransformer, tokenizer, text: str, runs: int = 3) -> DecodeTiming:
    """The fastest of `runs` decode_timing runs each way (a shared server is noisy); same_tokens only if every run
    chose the same tokens both ways."""
    done = [decode_timing(model, tokenizer, text, model.config.max_len) for _ in range(runs)]
    best = min(done, key=lambda r: r.seconds_reuse)
    return DecodeTiming(best.tokens, best.seconds_reuse, min(r.seconds_reencode for r in done),
                        all(r.same_tokens for r in done), best.cross_kv_shape)


@torch.no_grad()
def decoding_tensors(model: Seq2SeqTransformer, src_ids, t_tgt: int) -> tuple[list[dict], int]:
    """(one row per tensor decoding keeps, measured on this source: encoder output, cross K/V, the decoder's cache
    for a decoder input of t_tgt tokens; the number of decoder layers that project cross K/V)."""
    cfg = model.config
    state = model.encode(torch.tensor([list(src_ids)], device=model.device))
    k, v = state.cross_kv[0]
    rows = [("encoder output (memory)", "T_src × d_model", tuple(state.memory.shape[1:]), "once per source"),
            ("cross-attention K, each decoder layer", "H × T_src × d_k", tuple(k.shape[1:]), "once per source"),
            ("cross-attention V, each decoder layer", "H × T_src × d_k", tuple(v.shape[1:]), "once per source"),
            ("decoder self-attention K and V cache, each layer", "H × T_tgt × d_k", (cfg.n_heads, t_tgt, cfg.d_k),
             "one row more per step")]
    return ([{"tensor": a, "shape": b, "here": " × ".join(map(str, c)), "computed": d} for a, b, c, d in rows],
            len(state.cross_kv))



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


# -- the page's source and its step-by-step decoding ----------------------------------------------------------
@dataclass(frozen=True)
class Source:
    text: str                    # the vocabulary entries the model reads (after truncation), joined by spaces
    ids: tuple[int, ...]         # source ids, <eos> last
    labels: tuple[str, ...]      # vocabulary entries ('<unk>' for unknown words), '<eos>' last
    reference: str | None        # the toy language's translation, None outside it
    alignment: tuple[int, ...] | None
    reason: str | None           # why the source is outside the toy language


def source_of(tokenizer, enc: Encoded) -> Source:
    """The source as the model reads it (tokenizer.encode's pieces, <eos> added) with the toy language's reference
    translation of the words as typed, or why there is none."""
    try:  # the words as typed, so that a refusal names the word ("'zebra' is not a word of the toy language")
        reference, alignment = data.reference_translation(" ".join(enc.tokens))
        reason = None
    except ValueError as e:
        reference, alignment, reason = None, None, str(e)
    # " ".join(pieces): the words as the model reads them (lower case, <unk>), re-encoding to the same ids
    return Source(" ".join(enc.pieces), (*enc.ids, tokenizer.token_to_id(EOS)), (*enc.pieces, EOS), reference,
                  None if alignment is None else tuple(alignment), reason)


def decode_views(model: Seq2SeqTransformer, tokenizer, src_ids, strategy: Sampling, seed: int,
                 n_top: int = 10) -> list[StepView]:
    """Every decoding step of this setting (encoder once, cross K/V reused, decoder KV cache) as the page shows it."""
    views = []
    for d in decode_steps(model, list(src_ids), strategy=strategy, seed=seed, max_new_tokens=model.config.max_len,
                          tokenizer=tokenizer, bos_id=tokenizer.token_to_id(BOS), eos_id=tokenizer.token_to_id(EOS)):
        g = d.step
        views.append(StepView.of(g, g.token, lambda top: [display_token(tokenizer, int(i)) for i in top],
                                 d.cross_attention, n_top))
    return views


def decoder_input(tokenizer, steps: list[StepView]) -> tuple[list[int], list[str], list[str]]:
    """(ids, tokens, row labels) of <bos> + the chosen words (the last one too while decoding goes on): row j is
    the query that chose word j + 1, labelled 'input → chosen' ('?' for the word not chosen yet)."""
    fed = steps[:-1] if steps and steps[-1].stop_reason else steps
    ids, tokens = [tokenizer.token_to_id(BOS), *(v.token_id for v in fed)], [BOS, *(v.token for v in fed)]
    produced = [v.token for v in steps] + ["?"] * (len(ids) - len(steps))
    return ids, tokens, [f"{t} → {p}" for t, p in zip(tokens, produced)]


def translation_claim(words: list[str], reference: str) -> Fact:
    same = " ".join(words) == reference
    return Fact(same, "The translation equals the reference word for word." if same else
                "The translation differs from the reference.")


# -- the three attention kinds --------------------------------------------------------------------------------
def three_panels(run: dict, layer: int, head: int, src_labels: list[str], tgt_labels: list[str],
                 fed: list[str]) -> tuple[list[tuple], int]:
    """(the figure's panels: encoder self, decoder self, cross of one head of three_attentions' `run`; the encoder
    layer shown: the decoder's layer, or the encoder's last when it has fewer layers)."""
    (ep, ea), (dp, da), (cp, ca) = run["encoder"], run["decoder"], run["cross"]
    enc_layer = min(layer, ep.shape[0] - 1)
    Ts, Tt = len(src_labels), len(tgt_labels)
    return [(f"encoder self: {Ts} × {Ts}, padding only (both directions)", ep[enc_layer, head], ea, src_labels,
             src_labels),
            (f"decoder self: {Tt} × {Tt}, causal", dp[layer, head], da, tgt_labels, fed),
            (f"cross: {Tt} × {Ts}, queries from the decoder, keys/values from the encoder", cp[layer, head], ca,
             tgt_labels, src_labels)], enc_layer


def three_claims(run: dict, real: int, pad: int, steps: list[StepView], plain_cross=None) -> list[Claim]:
    """The masks hold in three_attentions' `run` of a source of `real` tokens plus `pad` pads: cross rows sum to 1
    over the real tokens, future and padded keys get exactly 0, the step-by-step rows equal the one pass, and
    (plain_cross: the same pass without pads) the pads change nothing."""
    (cp, ca), (dp, da) = run["cross"], run["decoder"]
    claims: list[Claim] = [Check(float(np.abs(cp[..., :real].sum(-1) - 1).max()), 1e-5,
                                 f"Every cross-attention row sums to 1 over the {real} real source tokens")]
    future = np.triu(np.ones(da.shape, dtype=bool), 1)  # (T_tgt, T_tgt): key after the query
    zero = bool((dp[..., future] == 0).all()) and bool((cp[..., real:] == 0).all())
    masks_ok = bool((da == ~future).all()) and bool(ca[:, :real].all()) and not bool(ca[:, real:].any())
    claims.append(Fact(zero and masks_ok,
                       "Future target keys and the padded source keys get weight exactly 0.0" if pad else
                       "Future target keys get weight exactly 0.0 (causal); no source key is masked (there is no "
                       "padding)"))
    if steps:
        rows = np.stack([v.attention for v in steps], axis=2)  # (L, H, n, T_src) from the step-by-step decoding
        claims.append(Check(float(np.abs(rows - cp[:, :, : len(steps), :real]).max()), 1e-5,
                            f"The {len(steps)} rows decoded one word at a time (encoder once, caches) equal this one "
                            "pass over the whole output"))
    if pad:
        # 1e-5 like the other float32 checks: a padded pass sums over more (zero-weight) keys in another order, and
        # its rounding differs by up to ~1e-6 after two layers (6.6e-7 on two threads, above 1e-6 on one)
        claims.append(Check(float(np.abs(plain_cross - cp[..., :real]).max()), 1e-5,
                            f"Adding {pad} pads changes nothing the real tokens see"))
    return claims


# -- the alignment view ---------------------------------------------------------------------------------------
def crossings(alignment, labels, target: list[str]) -> list[str]:
    """Where the alignment is not the identity: a word moved before another, or one source word becoming two."""
    a, out = alignment or (), []
    for j in range(1, len(a)):
        if a[j] < a[j - 1]:
            out.append(f"“{md_text(target[j])}” (source word {a[j]} “{md_text(labels[a[j]])}”) comes after "
                       f"“{md_text(target[j - 1])}” (source word {a[j - 1]} “{md_text(labels[a[j - 1]])}”)")
        elif a[j] == a[j - 1]:
            out.append(f"“{md_text(labels[a[j]])}” becomes two words: “{md_text(target[j - 1])} {md_text(target[j])}”")
    return out


def shown_head(metadata: dict | None, accuracy) -> tuple[int, int]:
    """The head the alignment view opens on: the metadata's best alignment head (held-out), else this sentence's."""
    best = (metadata or {}).get("best_alignment_head")
    if best and best.get("layer", 99) < accuracy.shape[0] and best.get("head", 99) < accuracy.shape[1]:
        return int(best["layer"]), int(best["head"])
    return best_head(accuracy)


def alignment_sentence(acc, copies, layer: int, head: int, n: int) -> str:
    """How often one head peaks on the aligned source word (acc) and on any copy of it (copies), both (L, H)."""
    hits, copy_hits = int(round(acc[layer, head] * n)), int(round(copies[layer, head] * n))
    return (f"Rows are the reference words fed to the decoder (teacher forcing, as the held-out score is "
            f"measured). Head L{layer}·H{head} peaks on the aligned source word for **{hits} of {n}** target "
            f"words (**{acc[layer, head]:.0%}**)"
            + (f"; counting a peak on an identical copy of that word (another “the”) as aligned, **{copy_hits} "
               f"of {n}** (**{copies[layer, head]:.0%}**)." if copy_hits != hits else
               ", the same counting a peak on an identical copy of the word as aligned."))


def guided_sentence(acc, guided: tuple[int, int]) -> str:
    u_layer, u_head = best_head(acc, exclude=guided)
    return (f"Head L{guided[0]}·H{guided[1]} was guided toward this alignment in training. The best head that was "
            f"not: L{u_layer}·H{u_head}, **{acc[u_layer, u_head]:.0%}** on this sentence.")


def accuracy_panels(acc, metadata: dict | None) -> dict[str, np.ndarray]:
    """This sentence's (L, H) alignment accuracy, beside the metadata's held-out one when it has the same shape."""
    panels = {"this sentence": acc}
    held = (metadata or {}).get("alignment_accuracy")
    if held is not None and np.shape(held) == acc.shape:
        panels["held-out sentences (metadata)"] = np.asarray(held, dtype=float)
    return panels


def guide_note(metadata: dict | None, config) -> str | None:
    """What the page says about a model whose training guided one head toward the alignment (None: no head was)."""
    guided = guided_of(metadata, config)
    if guided is None:
        return None
    return (f"In this model head L{guided[0]}·H{guided[1]} was **guided** toward the known alignment while it "
            f"trained: an extra loss (weight {guide_weight(metadata):g}) on -log(its attention on the aligned source "
            "word), as Garg et al. (2019) do to read alignments off a translator. Its alignment is taught; every "
            "other head found its own way. Nothing in the translation loss asks a head to align.")


# -- held-out scores ------------------------------------------------------------------------------------------
def metadata_metrics(meta: dict, guided: tuple[int, int] | None) -> list[tuple[str, object, str | None] | None]:
    """The four metrics (label, value, help) of the metadata's held-out scores; None where the model has none."""
    best, unguided = meta.get("best_alignment_head", {}), meta.get("best_unguided_head")
    taught = " (the guided head)" if guided == (best.get("layer"), best.get("head")) else ""
    return [("Exact match (metadata)", f"{meta['exact_match']:.1%}", "greedy translation = reference"),
            ("Best head's alignment (metadata)", f"{best.get('accuracy', float('nan')):.1%}",
             f"layer {best.get('layer')}, head {best.get('head')}{taught}"),
            ("Best head not guided (metadata)", f"{unguided['accuracy']:.1%}",
             f"layer {unguided['layer']}, head {unguided['head']}: it found its own way") if unguided else None,
            ("Held-out sentences", int(meta.get("n_sentences", 400)), None)]


def heldout_claims(live: dict, guided: tuple[int, int] | None) -> list[Fact]:
    """heldout_metrics measured now against the shipped translator's bars: exact match ≥ 95 %, best head ≥ 80 %."""
    em, best = live["exact_match"], live["best_alignment_head"]
    taught = " (guided in training)" if guided == (best["layer"], best["head"]) else ""
    return [Fact(em >= 0.95, f"Exact match {em:.1%} (goal: at least 95 %)"),
            Fact(best["accuracy"] >= 0.80, f"Layer {best['layer']}, head {best['head']}{taught} aligns "
                 f"{best['accuracy']:.1%} of target words (goal: at least 80 %)")]


def unguided_line(acc, guided: tuple[int, int]) -> str:
    u_layer, u_head = best_head(acc, exclude=guided)
    return f"The best head that was not guided: layer {u_layer}, head {u_head}, **{acc[u_layer, u_head]:.1%}**."


def structural_rows(structural: dict) -> list[dict]:
    """One row per structural split of the metadata: sentences, exact match, the best head's alignment."""
    rows = []
    for split, what in STRUCTURAL_SPLITS.items():
        m = structural.get(split)
        if m:
            b = m["best_head"]
            rows.append({"sentences": what, "n": m["n_sentences"], "exact match": f"{m['exact_match']:.1%}",
                         "head": f"L{b['layer']}·H{b['head']}", "alignment": f"{b['alignment']:.1%}",
                         "copy-aware alignment": f"{b['copy_aware_alignment']:.1%}"})
    return rows


def by_class_columns(structural: dict) -> dict[str, dict[str, str]]:
    """{'<split> skeletons': {word class: the best head's copy-aware alignment}}, one column per structural split."""
    by_class = {split: structural[split]["best_head_by_class"] for split in STRUCTURAL_SPLITS if split in structural}
    return {f"{split} skeletons": {c: f"{a:.0%} of {k}" for c, (a, k) in classes.items()}
            for split, classes in by_class.items()}


def structural_claims(structural: dict, guided: tuple[int, int] | None) -> list[Fact]:
    """The unseen skeletons against the bars: exact match ≥ 95 %, the best (unguided) head's copy-aware alignment
    ≥ 80 %; none when the metadata has no unseen split."""
    unseen = structural.get("unseen", {})
    if not unseen:
        return []
    em, al = unseen["exact_match"], unseen["best_head"]["copy_aware_alignment"]
    who = "best head not guided" if guided is not None else "best head"
    return [Fact(em >= 0.95, f"Exact match on unseen skeletons {em:.1%} (goal: at least 95 %)"),
            Fact(al >= 0.80, f"The {who}'s copy-aware alignment on unseen skeletons {al:.1%} (goal: at least 80 %)")]


def reuse_sentence(n_layers: int) -> str:
    return (f"The source never changes while the translation is written, so the encoder runs **once** and each of "
            f"the {n_layers} decoder layers projects its cross-attention K and V **once**. Every step then computes "
            "only the new word's query (and its own K, V for the decoder's cache).")


# -- what the page says -----------------------------------------------------------------------------------------
TRANSLATOR = "translate"  # the shipped translator's model key (assets/models/translate.*)
MISSING_TRANSLATOR = ("The shipped translation model is missing: there is no `assets/models/translate.safetensors` "
                      "(with its `.json`). Build it with `python scripts/build_assets.py translate`, or train one on "
                      "the Train page (task “translation (encoder-decoder)”) and come back.")
THREE_CAPTION = ("Grey × = masked (−∞ before the softmax, weight exactly 0). The encoder reads the whole source both "
                 "ways; the decoder reads only the words it has written; cross-attention lets every target position "
                 "read every real source word. Row labels: the decoder's input → the word that row chose (? = next).")
REPLAY_SPINNER = ("Replaying the translator's training batches to find whether it saw this sentence (a few seconds, "
                  "once per server; every later student gets it at once)…")
NO_REFERENCE = ("This source is not in the toy language, so there is no known alignment to compare with. Below: the "
                "cross-attention of the model's own translation.")
NOT_GUIDED = ("No head of this translator was told to align: any alignment here, it found on its own while learning "
              "to translate. Where the decoder can tell the next word from what it has already written (the “ka” "
              "after a plural noun), no head needs to look at its source word.")
SHAPES_INTRO = ("**Seen and unseen sentence shapes.** A sentence's *skeleton* is its word classes (DET ADJ NOUN VERB "
                "…). Some skeletons were kept out of training altogether; a translator that learnt the grammar "
                "translates them as well as new sentences of shapes it saw.")
