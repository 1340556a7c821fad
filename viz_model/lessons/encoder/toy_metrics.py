"""The toy encoder's held-out measurements on sentences it never trained on: subject-verb agreement across a
distractor, pronouns fixed by their antecedent, random masks, and sentence shapes seen and kept out of training."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from viz_model import data
from viz_model.lessons.encoder.models import PLURAL_VERBS, SINGULAR_VERBS, TWIN, MaskedWord, masked_probs
from viz_model.model import TinyTransformer


def agreement_items(n: int = 200, seed: int = 0) -> list[MaskedWord]:
    """Held-out agreement sentences ('the keys near the dog are ready') with the verb to be masked."""
    out = []
    for text in data.heldout_sentences(n, seed=seed, kind="agreement"):
        words = tuple(text.split())
        out.append(MaskedWord(words, next(i for i, w in enumerate(words) if w in TWIN)))
    return out


def pronoun_items(n: int = 200) -> list[MaskedWord]:
    """Held-out pronoun sentences with the pronoun to be masked (its antecedent fixes it; so does its verb)."""
    return [MaskedWord(ex.words, ex.pronoun_index) for ex in data.pronoun_examples(n, split="heldout")]


@dataclass
class AgreementResult:
    number_top1: float   # the top-1 word is a verb of the subject's number (is/was/seems/looks for one key)
    pair: float          # p(correct form) > p(its other-number twin): is vs are, was vs were, ...
    n: int


def agreement_accuracy(model: TinyTransformer, tokenizer, items: list[MaskedWord]) -> AgreementResult:
    """Subject-verb agreement across a distractor noun of the other number, the verb masked."""
    probs = masked_probs(model, tokenizer, [(list(it.words), [it.index]) for it in items])
    number = pair = 0
    for it, p in zip(items, probs):
        p = p[0]
        top = tokenizer.id_to_token(int(p.argmax()))
        same_number = SINGULAR_VERBS if it.answer in SINGULAR_VERBS else PLURAL_VERBS
        number += top in same_number
        pair += bool(p[tokenizer.token_to_id(it.answer)] > p[tokenizer.token_to_id(TWIN[it.answer])])
    return AgreementResult(number / len(items), pair / len(items), len(items))


def top1_accuracy(model: TinyTransformer, tokenizer, items: list[MaskedWord]) -> float:
    """Share of items whose hidden word is the encoder's top-1 prediction."""
    probs = masked_probs(model, tokenizer, [(list(it.words), [it.index]) for it in items])
    hits = [tokenizer.id_to_token(int(p[0].argmax())) == it.answer for it, p in zip(items, probs)]
    return sum(hits) / len(items)


def random_mask_accuracy(model: TinyTransformer, tokenizer, sentences: list[str], p: float = 0.15,
                         seed: int = 0) -> tuple[float, float, int]:
    """(top-1, top-5, n masked) over random positions: each word masked with probability p (at least one)."""
    rng = random.Random(seed)
    items = []
    for text in sentences:
        words = text.split()
        chosen = [i for i in range(len(words)) if rng.random() < p] or [rng.randrange(len(words))]
        items.append((words, chosen))
    top1 = top5 = n = 0
    for (words, chosen), probs in zip(items, masked_probs(model, tokenizer, items)):
        answers = torch.tensor([tokenizer.token_to_id(words[i]) for i in chosen])  # (k,)
        best = probs.topk(5, dim=-1).indices                                       # (k, 5)
        top1 += int((best[:, 0] == answers).sum())
        top5 += int((best == answers[:, None]).any(-1).sum())
        n += len(chosen)
    return top1 / n, top5 / n, n


def heldout_metrics(model: TinyTransformer, tokenizer, n: int = 200) -> dict[str, float | int]:
    """The shipped encoder's metadata: every number on sentences it never trained on."""
    agree = agreement_accuracy(model, tokenizer, agreement_items(n))
    top1, top5, n_random = random_mask_accuracy(model, tokenizer, data.corpus_split().heldout)
    return {"agreement_number_top1": agree.number_top1, "agreement_pair_accuracy": agree.pair,
            "pronoun_top1": top1_accuracy(model, tokenizer, pronoun_items(n)),
            "random_mask_top1": top1, "random_mask_top5": top5, "n_agreement": agree.n,
            "n_pronoun": n, "n_random_masked": n_random}


_OWN_VERBS = {verb: pron for pron, verb in data.NOUNS.values()}  # 'barked' -> 'it': the verb names the noun


def structural_items(split: str, n: int = 200, seed: int = 1) -> tuple[list[MaskedWord], list[MaskedWord]]:
    """(agreement, pronoun) items from grammar sentences of a structural split (data.structural_sentences): the
    first agreement verb of a sentence (its subject's number fixes it) and the first pronoun followed by its
    antecedent's own verb (that verb fixes it); up to n of each."""
    agree: list[MaskedWord] = []
    pron: list[MaskedWord] = []
    for text in data.structural_sentences(12 * n, split, seed=seed):
        words = tuple(text.split())
        verb = next((i for i, w in enumerate(words) if w in TWIN), None)
        if verb is not None and len(agree) < n:
            agree.append(MaskedWord(words, verb))
        p = next((i for i, w in enumerate(words[:-1]) if _OWN_VERBS.get(words[i + 1]) == w), None)
        if p is not None and len(pron) < n:
            pron.append(MaskedWord(words, p))
        if len(agree) == len(pron) == n:
            break
    return agree, pron


def structural_metrics(model: TinyTransformer, tokenizer, n: int = 200) -> dict[str, dict[str, float | int]]:
    """Agreement and pronoun fill-ins on grammar sentences never trained on, per structural split: of skeletons
    the encoder trained on ('seen') and of skeletons kept out of training ('unseen')."""
    out = {}
    for split in ("seen", "unseen"):
        agree_items, pron_items = structural_items(split, n)
        agree = agreement_accuracy(model, tokenizer, agree_items)
        out[split] = {"agreement_number_top1": agree.number_top1, "agreement_pair_accuracy": agree.pair,
                      "pronoun_top1": top1_accuracy(model, tokenizer, pron_items), "n_agreement": agree.n,
                      "n_pronoun": len(pron_items)}
    return out
