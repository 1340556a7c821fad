"""Alignment: a cross-attention head learns the toy language's known word alignment, scored by where each
target word's row peaks (teacher forcing), per head and per word class."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model import data
from viz_model.model import eval_mode
from viz_model.model_text import md_text
from viz_model.seq2seq import Seq2SeqTrace, Seq2SeqTransformer, encode_source, guided_head


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


# -- what the page says ------------------------------------------------------------------------------------------------
NOT_GUIDED = ("No head of this translator was told to align: any alignment here, it found on its own while learning "
              "to translate. Where the decoder can tell the next word from what it has already written (the “ka” "
              "after a plural noun), no head needs to look at its source word.")
