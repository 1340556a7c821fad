"""What the Encoder page proves: a masked-LM encoder fills in blanks from both sides. The page opens on the English
encoder (the English model's BPE, WordNet's text: a student's sentence has no <unk>); the toy encoder, which knows only
the classroom corpus's words, keeps the agreement and pronoun measurements built on that corpus."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import checkpoint, data
from viz_model.english import encode_lines, load_heldout
from viz_model.lecture import LECTURE_SENTENCES
from viz_model.lessons.common import Fact
from viz_model.mlm import N_SPECIAL, mask_words, run_masked, run_masked_ids
from viz_model.model import TinyTransformer, eval_mode
from viz_model.tokenizer import BOS, EOS, MASK, UNK, display_token, encode

SINGULAR_VERBS = frozenset(v[0] for v in data.AGREE_VERBS)  # is, was, seems, looks
PLURAL_VERBS = frozenset(v[1] for v in data.AGREE_VERBS)    # are, were, seem, look
TWIN = {a: b for pair in data.AGREE_VERBS for a, b in (pair, pair[::-1])}  # is <-> are, was <-> were, ...
ENGLISH = "english-encoder"  # the page's default: the English model's byte-level BPE, trained on WordNet's text
SHIPPED = "encoder-mlm"      # the toy encoder: the classroom corpus's words (its agreement and pronoun lessons)
DECODER = "classroom"        # the shipped causal decoder a toy encoder is compared with
DECODERS = {ENGLISH: "english"}  # ... and the English encoder's: the English model, the same tokenizer
BANK = next(s for s in LECTURE_SENTENCES if "bank" in s.lower())  # "The bank by the river"
QUERY, KEY = "bank", "river"
MAX_TOP_K = 10             # fill-ins computed per mask; the page's top-k slider shows the first k
# (metadata key, what it measures, the quality bar)
METRICS = [
    ("agreement_number_top1", "Agreement across a distractor noun: the top-1 verb has the subject's number", "≥ 90 %"),
    ("agreement_pair_accuracy", "Agreement: p(right form) > p(its twin), e.g. are vs is", ""),
    ("pronoun_top1", "Pronoun fixed by its antecedent (gender, number, animacy): top-1 is right", "≥ 90 %"),
    ("random_mask_top1", "Random masked words (each word with p = 0.15): top-1 is the word", ""),
    ("random_mask_top5", "Random masked words: the word is among the top 5", ""),
]


def decoder_for(key: str) -> str:
    """The shipped causal decoder that reads a sentence as this encoder does (the same tokenizer)."""
    return DECODERS.get(key, DECODER)


def is_byte_level(tokenizer) -> bool:
    """A byte-level BPE (any text is some tokens) rather than a word-level vocabulary (unknown words are <unk>)."""
    return type(tokenizer.decoder).__name__ == "ByteLevel"


def encoder_name(key: str, title: str, tokenizer) -> str:
    """The picker's name of an encoder, by what it can read."""
    if is_byte_level(tokenizer):
        size = f"{tokenizer.get_vocab_size():,} BPE tokens"
        return f"English encoder ({size}): English sentences, never <unk>" if key == ENGLISH else f"{title} ({size})"
    n = f"{tokenizer.get_vocab_size():,}-word vocabulary"  # as the classroom model's title counts its words
    return f"Toy encoder ({n}): agreement and pronoun lessons" if key == SHIPPED else f"{title} ({n})"


@functools.lru_cache(maxsize=256)
def bidirectional(path: str, mtime: float) -> bool:
    """A TinyTransformer checkpoint trained without the causal mask (its JSON config says causal: false)."""
    try:
        doc = checkpoint.read_metadata(path)
    except (OSError, ValueError):
        return False
    return doc.get("kind", "transformer") == "transformer" and (doc.get("config") or {}).get("causal") is False


@dataclass(frozen=True)
class MaskedWord:
    """A held-out sentence (words) with one word to hide at `index` (a word index, no <bos>)."""

    words: tuple[str, ...]
    index: int

    @property
    def answer(self) -> str:
        return self.words[self.index]


@torch.no_grad()
def masked_probs(model: TinyTransformer, tokenizer, items: list[tuple[list[str], list[int]]]) -> list[torch.Tensor]:
    """For each (words, positions): the encoder's softmax (n_positions, V) with those words replaced by <mask>.

    Sequences are <bos> words <eos>, right-padded in one batch; padding keys are masked out.
    """
    bos, eos, pad, unk, mask_id = (tokenizer.token_to_id(t) for t in ("<bos>", "<eos>", "<pad>", "<unk>", MASK))
    seqs = []
    for words, positions in items:
        ids = [_id(tokenizer, w, unk) for w in words]
        for p in positions:
            ids[p] = mask_id
        seqs.append([bos, *ids, eos])
    ids = data.pad_right(seqs, pad).to(model.device)  # (N, T)
    with eval_mode(model):
        logits = model(ids, key_padding_mask=ids != pad).logits.float()  # (N, T, V)
    probs = torch.softmax(logits, dim=-1).cpu()
    return [probs[i, [p + 1 for p in positions]] for i, (_, positions) in enumerate(items)]  # +1 for <bos>


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


def sentence_ids(tokenizer, words: list[str]) -> list[int]:
    """<bos> words <eos>, as the encoder reads a sentence (a word it does not know is <unk>)."""
    bos, eos, unk = (tokenizer.token_to_id(t) for t in ("<bos>", "<eos>", "<unk>"))
    return [bos, *(_id(tokenizer, w, unk) for w in words), eos]


def _id(tokenizer, word: str, unk: int) -> int:
    i = tokenizer.token_to_id(word)
    return unk if i is None else i


# -- the Fill-in tab -------------------------------------------------------------------------------------
def default_masks(words: list[str]) -> list[int]:
    """Hide an agreement verb if the sentence has one (is/are, was/were, ...), else the first noun after 'the'
    or 'a' (the cat, the bank), else the second word: a blank with words on both sides."""
    low = [w.strip().lower() for w in words]  # a byte-level BPE's tokens carry their space: ' the'
    verbs = [i for i, w in enumerate(low) if w in TWIN]
    nouns = [i + 1 for i, w in enumerate(low[:-1]) if w in ("the", "a") and low[i + 1].isalpha()]
    return (verbs or nouns or [min(1, len(words) - 1)])[:1]


@dataclass(frozen=True)
class Blanks:
    """The sentence the encoder reads: its ids with <mask> at each blank, the text shown, and per blank the hidden
    token's label and id (None for a <mask> typed in the text)."""

    text: str
    ids: tuple[int, ...]        # no <bos> / <eos>
    labels: tuple[str, ...]     # one per id, "<mask>" at each blank
    answers: tuple[str | None, ...]
    answer_ids: tuple[int | None, ...]


def blanks(tokenizer, ids: list[int], words: list[str], pieces: list[str], picked: list[int]) -> Blanks:
    """Hide the tokens at `picked` (indices into ids, words and pieces: no <bos>). A word-level sentence is written
    with its words; a byte-level BPE's with the tokens' own text, so a hidden piece of a word shows as <mask> inside
    it ("grand<mask>other"). The ids are what the encoder reads: not the text encoded again, which would split the
    rest of such a word differently."""
    mask_id, chosen = tokenizer.token_to_id(MASK), set(picked)
    masked = [mask_id if i in chosen else t for i, t in enumerate(ids)]
    if is_byte_level(tokenizer):
        text = "".join((" " if pieces[i].startswith(" ") or pieces[i] == MASK else "") + MASK if m == mask_id
                       else display_token(tokenizer, m) for i, m in enumerate(masked)).strip()
    else:
        text = mask_words(words, picked)
    at = [i for i, m in enumerate(masked) if m == mask_id]
    labels = tuple(MASK if m == mask_id else w for m, w in zip(masked, words))
    return Blanks(text, tuple(masked), labels, tuple(pieces[i] if i in chosen else None for i in at),
                  tuple(ids[i] if i in chosen else None for i in at))


def reads_caption(tokenizer) -> str:
    """How this encoder reads the sentence (the page's caption under the box)."""
    if is_byte_level(tokenizer):
        return ("The encoder reads `<bos>` + your sentence's tokens + `<eos>`, in one pass, in both directions. Its "
                f"tokens are the English model's byte-level BPE ({tokenizer.get_vocab_size():,} tokens, lower-cased): "
                "a long or rare word is several pieces, and each piece can be hidden on its own.")
    return ("The encoder reads `<bos>` + your words + `<eos>`, in one pass, in both directions. Its vocabulary has "
            f"{tokenizer.get_vocab_size():,} words: any other word is `<unk>`.")


def example_sentences(tokenizer) -> tuple[str, dict[str, str]]:
    """(caption, {button name: sentence with <mask>}) for the Fill-in tab: for the English encoder a held-out WordNet
    text (never trained on) and a student's own sentence; for a toy encoder its corpus's held-out agreement and
    pronoun sentences."""
    if is_byte_level(tokenizer):
        return ("Try a held-out WordNet text the encoder never saw, or a sentence of your own:",
                {"held-out": english_examples(1)[0], "yours": STUDENT_SENTENCE})
    return ("Held-out sentences the encoder never saw:",
            {name: mask_words(list(it.words), [it.index])
             for name, it in (("agreement", agreement_items(1)[0]), ("pronoun", pronoun_items(1)[0]))})


@functools.lru_cache(maxsize=4)
def english_examples(n: int = 2) -> tuple[str, ...]:
    """n sentences of the held-out WordNet sample (never trained on) with one word hidden (default_masks)."""
    out = []
    for text in load_heldout()["wordnet"]:
        words = text.split()
        if 7 <= len(words) <= 14 and all(w.isalpha() for w in words) and any(w in ("the", "a") for w in words[:-1]):
            out.append(mask_words(words, default_masks(words)))
        if len(out) == n:
            break
    return tuple(out)


def masked_text(words: list[str], pieces: list[str], picked: list[int]) -> tuple[str, list[str | None]]:
    """The sentence the encoder reads (picked words -> <mask>) and the hidden word of each <mask>, in order
    (None for a <mask> typed in the text)."""
    text = mask_words(words, picked)
    answers = [pieces[i] if i in picked else None for i in range(len(words)) if i in picked or pieces[i] == MASK]
    return text, answers


def masked_run(model: TinyTransformer, tokenizer, text: str, top_k: int = MAX_TOP_K) -> dict:
    """One traced encoder pass: the labels (<unk> where the tokenizer read one), each mask's position, top-k
    fill-ins and full distribution, and every head's attention (L, H, T, T)."""
    run = run_masked(model, tokenizer, text, top_k=top_k, trace=True)
    unk = tokenizer.token_to_id(UNK)
    tokens = [UNK if int(i) == unk else t for t, i in zip(run.tokens, run.ids.tolist())]
    attention = run.trace.stack("probs")[:, 0].numpy()  # (L, H, T, T)
    return dict(tokens=tokens, positions=run.mask_positions, fills=run.fills, probs=run.probs.numpy(),
                attention=attention, text=text)


def masked_ids_run(model: TinyTransformer, tokenizer, b: Blanks, top_k: int = MAX_TOP_K) -> dict:
    """masked_run on the ids of `b` as they are (mlm.run_masked_ids): the same dict, its labels from `b`."""
    run = run_masked_ids(model, tokenizer, list(b.ids), list(b.labels), top_k=top_k, trace=True)
    unk = tokenizer.token_to_id(UNK)
    tokens = [UNK if int(i) == unk else t for t, i in zip(run.tokens, run.ids.tolist())]
    attention = run.trace.stack("probs")[:, 0].numpy()  # (L, H, T, T)
    return dict(tokens=tokens, positions=run.mask_positions, fills=run.fills, probs=run.probs.numpy(),
                attention=attention, text=b.text)


def fill_rows(tokenizer, run: dict, answers: list[str | None], answer_ids: list[int | None] | None = None
              ) -> list[dict[str, str]]:
    """Per mask: the top fill-in, and where the hidden word ranks among all V words (`answer_ids`: the hidden
    tokens' ids where the label is not the vocabulary entry, as a byte-level BPE's ' baked' for 'Ġbaked')."""
    rows = []
    ids = list(answer_ids) if answer_ids is not None else [None] * len(answers)
    for n, (pos, fills, p, ans, aid) in enumerate(zip(run["positions"], run["fills"], run["probs"], answers, ids)):
        i = None if ans is None else aid if aid is not None else tokenizer.token_to_id(ans)
        rows.append({"mask": f"{n + 1} (token {pos})", "top-1": fills[0][0], "p(top-1)": f"{fills[0][1]:.3f}",
                     "hidden word": "— (typed <mask>)" if ans is None else ans,
                     "p(hidden word)": "—" if i is None or ans == UNK else f"{p[i]:.3f}",
                     "its rank": ("not in the vocabulary" if ans == UNK else "—") if i is None or ans == UNK
                     else f"{int((p > p[i]).sum()) + 1} of {len(p)}"})
    return rows


def both_sides_facts(attention: np.ndarray, layer: int, head: int, positions: list[int]) -> list[Fact]:
    """Each <mask> puts some of its attention on the tokens after it in this head: (L, H, T, T) attention."""
    T = attention.shape[-1]
    out = []
    for n, p in enumerate(positions):
        later, after = float(attention[layer, head, p, p + 1:].sum()), T - 1 - p
        out.append(Fact(later > 0, f"`<mask>` {n + 1} (token {p}) puts {later:.3f} of its attention on the {after} "
                                   f"token{'' if after == 1 else 's'} after it in this head: it reads both sides. A "
                                   "causal decoder gets exactly 0 there."))
    return out


def row_sum_text(attention: np.ndarray) -> str:
    return f"Row sums: max |1 − sum| = {float(np.abs(attention.sum(-1) - 1).max()):.0e} over every head and query."


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


# -- the English encoder: fill-in accuracy on held-out WordNet text against a unigram baseline ------------------
FILL_P, FILL_SEED = 0.15, 0   # each ordinary token of a held-out text is hidden with this probability


@dataclass(frozen=True)
class Unigram:
    """Token frequencies of the training text: the baseline that fills every blank from counts alone, ignoring
    the sentence (its best guess is the most frequent token everywhere). Add-one smoothed over ordinary tokens."""

    probs: torch.Tensor    # (V,) 0 for the special tokens
    ranked: list[int]      # the 5 most frequent ordinary tokens, most frequent first

    @classmethod
    def fit(cls, seqs, vocab_size: int) -> Unigram:
        flat = torch.tensor([i for s in seqs for i in s], dtype=torch.long)
        counts = torch.bincount(flat, minlength=vocab_size).double() + 1.0   # (V,)
        counts[:N_SPECIAL] = 0.0
        probs = counts / counts.sum()
        return cls(probs, probs.topk(5).indices.tolist())


def fill_in_items(tokenizer, texts: list[str], max_len: int, p: float = FILL_P, seed: int = FILL_SEED
                  ) -> list[tuple[list[int], list[int]]]:
    """(<bos> ids <eos> cut to max_len, the positions to hide) per text: each ordinary token is hidden with
    probability p (at least one per text), all drawn from one seeded generator: the same blanks on every machine."""
    gen = torch.Generator().manual_seed(seed)
    items = []
    for ids in encode_lines(tokenizer, texts):
        ids = ids[: max_len - 1] + [ids[-1]]                        # keep the <eos>
        draw = torch.rand(len(ids), generator=gen)
        ordinary = [t for t, i in enumerate(ids) if i >= N_SPECIAL]
        if not ordinary:
            continue
        hidden = [t for t in ordinary if draw[t] < p] or [ordinary[int(draw[0] * len(ordinary))]]
        items.append((ids, hidden))
    return items


@torch.no_grad()
def fill_in_accuracy(model: TinyTransformer, tokenizer, texts: list[str], unigram_ranked: list[int],
                     batch_size: int = 64) -> dict[str, float | int]:
    """Every hidden token of the held-out texts replaced by <mask> (as a student types it), the encoder run once per
    text: top-1 and top-5 accuracy and mean cross-entropy (nats) over the hidden tokens, beside the unigram
    baseline's top-1 and top-5 (its ranked tokens guessed at every blank)."""
    items = fill_in_items(tokenizer, texts, model.config.max_len)
    pad, mask_id = tokenizer.token_to_id("<pad>"), tokenizer.token_to_id(MASK)
    top1 = top5 = 0
    loss = 0.0
    answers_all = []
    with eval_mode(model):
        for i in range(0, len(items), batch_size):
            chunk = items[i: i + batch_size]
            ids = data.pad_right([s for s, _ in chunk], pad)                       # (B, T)
            inputs = ids.clone()
            for row, (_, hidden) in enumerate(chunk):
                inputs[row, hidden] = mask_id
            logits = model(inputs.to(model.device), key_padding_mask=(ids != pad).to(model.device)).logits
            for row, (_, hidden) in enumerate(chunk):
                lp = torch.log_softmax(logits[row, hidden].float(), dim=-1).cpu()  # (k, V)
                answers = ids[row, hidden]                                        # (k,)
                best = lp.topk(5, dim=-1).indices                                  # (k, 5)
                top1 += int((best[:, 0] == answers).sum())
                top5 += int((best == answers[:, None]).any(-1).sum())
                loss -= float(lp.gather(-1, answers[:, None]).sum())
                answers_all += answers.tolist()
    n = len(answers_all)
    answers = torch.tensor(answers_all)
    ranked = torch.tensor(unigram_ranked[:5])
    return {"fill_top1": top1 / n, "fill_top5": top5 / n, "fill_loss": loss / n,
            "unigram_top1": float((answers == ranked[0]).float().mean()),
            "unigram_top5": float((answers[:, None] == ranked).any(-1).float().mean()),
            "n_texts": len(items), "n_masked": n}


def heldout_fill_texts(excluded: list[int] = ()) -> list[str]:
    """The WordNet test-split sample shipped with the English model (assets/english_heldout.json), less the texts
    at `excluded` (those that also occur, word for word, in the training text: the build records them)."""
    drop = set(excluded)
    return [t for i, t in enumerate(load_heldout()["wordnet"]) if i not in drop]


def fill_in_metrics(model: TinyTransformer, tokenizer, meta: dict) -> dict[str, float | int]:
    """fill_in_accuracy recomputed now on the texts the build measured (the unigram's ranked tokens from `meta`)."""
    return fill_in_accuracy(model, tokenizer, heldout_fill_texts(meta.get("heldout_excluded", [])),
                            meta["unigram_ranked"])


def unigram_loss(unigram: Unigram, tokenizer, texts: list[str], max_len: int) -> float:
    """The unigram baseline's mean cross-entropy (nats) on the same hidden tokens as fill_in_accuracy."""
    answers = [ids[t] for ids, hidden in fill_in_items(tokenizer, texts, max_len) for t in hidden]
    return float(-unigram.probs[answers].log().mean())


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

@dataclass
class LookAhead:
    """'The bank by the river': how much `query` attends to `key` in each layer and head, (L, H)."""

    tokens: list[str]
    query_index: int
    key_index: int
    weight: torch.Tensor  # (L, H)


@torch.no_grad()
def attention_weight(model: TinyTransformer, tokenizer, text: str, query: str, key: str) -> LookAhead:
    """The attention weight from word `query` to word `key` (first occurrences) in every layer and head, on
    <bos> words <eos> as the encoder reads a sentence everywhere else (`masked_probs`, the Fill-in tab).

    A causal decoder gives exactly 0 when `key` comes after `query`; an encoder need not. A byte-level BPE reads
    the sentence as its tokens (' bank'): `query` and `key` must each be one token."""
    ids, labels, _ = bank_ids(tokenizer, text)
    words = ["<bos>", *data.source_words(text), "<eos>"] if not is_byte_level(tokenizer) else labels
    found = [w.strip().lower() for w in words]
    if query not in found or key not in found:
        raise ValueError(f"the sentence must contain both '{query}' and '{key}'"
                         + (", each as one token." if is_byte_level(tokenizer) else "."))
    with eval_mode(model):
        trace = model(torch.tensor([ids], device=model.device), trace=True).trace
    q, k = found.index(query), found.index(key)  # token indices, <bos> at 0
    weight = torch.stack([lt.probs[0, :, q, k] for lt in trace.layers]).float().cpu()  # (L, H)
    return LookAhead(words, q, k, weight)


def bank_ids(tokenizer, text: str) -> tuple[list[int], list[str], list[str]]:
    """<bos> + the sentence's word ids + <eos> in this tokenizer (as the Fill-in tab and attention_weight read it),
    the labels, and the words it does not know (none for a byte-level BPE: its labels are its tokens)."""
    if is_byte_level(tokenizer):
        enc = encode(tokenizer, text)
        bos, eos = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
        return [bos, *enc.ids, eos], [BOS, *enc.tokens, EOS], []
    words = data.source_words(text)
    unknown = [w for w in words if tokenizer.token_to_id(w) is None]
    return sentence_ids(tokenizer, words), [BOS, *(UNK if w in unknown else w for w in words), EOS], unknown


def reading_mismatch(runs: dict[str, tuple]) -> str:
    """A warning when the models' tokenizers read the sentence differently ({name: bank_ids(...)}), else ''."""
    if len({tuple(labels) for _, labels, _ in runs.values()}) == 1 and not any(u for *_, u in runs.values()):
        return ""
    return ("The two models' tokenizers do not read this sentence the same way: "
            + "; ".join(f"{n}: {' '.join(lab)}" for n, (_, lab, _) in runs.items()))


def best_head(look: LookAhead, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The (layer, head) among the first n_layers × n_heads that puts the most weight on the key."""
    best = np.unravel_index(int(look.weight[:n_layers, :n_heads].argmax()), (n_layers, n_heads))
    return int(best[0]), int(best[1])


def query_row(probs: np.ndarray, allowed: np.ndarray, query: int, head) -> tuple[np.ndarray, np.ndarray]:
    """The query's attention over every key, (T,), in one head or the heads' mean ("mean"), from one layer's
    (H, T, T) probs, and which keys it may read, (T,), from the (T, T) allowed."""
    return (probs.mean(0)[query] if head == "mean" else probs[head, query]), allowed[query]


def y_top(rows) -> float:
    """One y scale for several bar charts of (weights, allowed) rows: a quarter above the largest weight."""
    return min(1.0, 1.25 * max(float(r.max()) for r, _ in rows)) + 0.02


def shown_weight(look: LookAhead, layer: int, head) -> tuple[str, str]:
    """(which head, the measured weight on the key as the page's metric writes it) in one head or their mean."""
    w = look.weight[layer].numpy()                                       # (H,)
    shown = float(w.mean() if head == "mean" else w[head])
    return ("mean of the heads" if head == "mean" else f"head {head}"), (f"{shown:.4f}" if shown else "0 (exactly)")


def look_ahead_facts(enc: LookAhead, dec: LookAhead) -> list[Fact]:
    """The encoder's query reads the key in every head; the causal decoder's puts exactly 0 on it in every head."""
    e, d = enc.weight.numpy(), dec.weight.numpy()                       # (L, H) each
    L, H = e.shape
    layer, head = np.unravel_index(int(e.argmax()), e.shape)
    return [Fact(float(e.min()) > 0, f"Encoder: “{QUERY}” can read “{KEY}” in every head: up to {e.max():.3f} of its "
                                     f"attention (layer {layer}, head {head}), {e.mean():.3f} on average over the "
                                     f"{L * H} heads, and no head gives it exactly 0 (smallest {e.min():.2g})."),
            Fact(float(d.max()) == 0.0, f"Causal decoder: “{QUERY}” puts exactly {float(d.max()):g} on “{KEY}” in "
                                        f"all {d.size} heads: “{KEY}” comes later, so the mask hides it.")]


def weight_rows(look: LookAhead) -> list[dict[str, str]]:
    """The query's weight on the key, one row per layer, one column per head."""
    return [{f"head {j}": f"{x:.4f}" for j, x in enumerate(row)} for row in look.weight.numpy()]


# -- the Held-out metrics tab --------------------------------------------------------------------------------
def pct(x) -> str:
    return "—" if x is None else f"{100 * float(x):.1f} %"


def metric_rows(meta: dict, live: dict | None) -> list[dict[str, str]]:
    """Each held-out measure as recorded when trained, recomputed now (when `live`), and its quality bar."""
    return [{"measure": what, "recorded when trained": pct(meta.get(key)),
             "recomputed now": pct(live.get(key)) if live else "press the button", "target": bar}
            for key, what, bar in METRICS]


def recorded_facts(meta: dict, live: dict) -> list[Fact]:
    """The recomputed numbers equal the recorded ones (a metric not recorded is not compared)."""
    same = all(meta.get(k) is None or abs(meta[k] - live[k]) < 1e-9 for k, *_ in METRICS)
    return [Fact(same, "The recomputed numbers equal the ones recorded when the model was saved." if same else
                 "The recomputed numbers differ from the recorded ones: the weights or the data changed since the "
                 "model was saved.")]


# (encoder's key, unigram baseline's key, what it measures) on the English encoder's held-out WordNet text
FILL_METRICS = [
    ("fill_top1", "unigram_top1", "A hidden token of held-out WordNet text: the top-1 fill-in is that token"),
    ("fill_top5", "unigram_top5", "... the hidden token is among the top 5"),
]
FILL_TOL = 0.01  # recomputed vs recorded accuracy: float32 on another machine may flip a near tie, rarely more


def fill_metric_rows(meta: dict, live: dict | None) -> list[dict[str, str]]:
    """The English encoder's fill-in accuracy as recorded at the build, recomputed now (when `live`), and the unigram
    baseline's on the same blanks; then the cross-entropy at the blanks (recorded), the encoder's beside the
    unigram's."""
    rows = [{"measure": what, "encoder, recorded when trained": pct(meta.get(key)),
             "encoder, recomputed now": pct(live.get(key)) if live else "press the button",
             "unigram baseline": pct(meta.get(base))} for key, base, what in FILL_METRICS]
    if meta.get("fill_loss") is not None:
        rows.append({"measure": "Cross-entropy at the blanks (nats; lower is better)",
                     "encoder, recorded when trained": f"{meta['fill_loss']:.3f}",
                     "encoder, recomputed now": f"{live['fill_loss']:.3f}" if live else "press the button",
                     "unigram baseline": f"{meta.get('unigram_loss', float('nan')):.3f}"})
    return rows


def fill_facts(meta: dict, live: dict | None = None) -> list[Fact]:
    """The encoder beats the unigram baseline (top-1 at the blanks), and the recomputed accuracy is the recorded one
    within FILL_TOL."""
    enc, base = meta["fill_top1"], meta["unigram_top1"]
    top = meta.get("unigram_top_token", "?").strip()
    out = [Fact(enc > base, f"On {meta['n_masked']:,} hidden tokens of {meta['n_texts']} held-out WordNet texts the "
                            f"encoder's first guess is right {enc:.1%} of the time; guessing the most frequent token "
                            f"(“{top}”) everywhere is right {base:.1%} of the time ({enc / max(base, 1e-9):.1f}×).")]
    if live:
        diff = max(abs(meta[k] - live[k]) for k, *_ in FILL_METRICS)
        out.append(Fact(diff <= FILL_TOL, f"Recomputed on this server: within {diff:.4f} of the recorded accuracy "
                                          f"(allowed: {FILL_TOL})."))
    return out


def is_fill_in(meta: dict) -> bool:
    """The metadata records the English encoder's held-out fill-ins (not a toy encoder's agreement and pronouns)."""
    return "fill_top1" in meta


def records_nothing(meta: dict) -> bool:
    """The metadata records no held-out measurement (an encoder a student trained): the button measures them."""
    return not is_fill_in(meta) and all(meta.get(k) is None for k, *_ in METRICS)


def live_metrics(model: TinyTransformer, tokenizer, meta: dict) -> dict:
    """The held-out measurements of this encoder, now: fill_in_metrics or heldout_metrics."""
    return fill_in_metrics(model, tokenizer, meta) if is_fill_in(meta) else heldout_metrics(model, tokenizer)


def metric_table(meta: dict, live: dict | None) -> list[dict[str, str]]:
    return fill_metric_rows(meta, live) if is_fill_in(meta) else metric_rows(meta, live)


def metric_facts(meta: dict, live: dict | None) -> list[Fact]:
    """The English encoder: it beats the unigram, recomputed = recorded; a toy one: recomputed = recorded."""
    if is_fill_in(meta):
        return fill_facts(meta, live)
    return recorded_facts(meta, live) if live else []


def metrics_text(meta: dict) -> str:
    return FILL_TEXT if is_fill_in(meta) else METRICS_TEXT


def live_counts_text(live: dict) -> str:
    return (f"On {live['n_agreement']} agreement sentences, {live['n_pronoun']} pronoun sentences and "
            f"{live['n_random_masked']} randomly masked words of the held-out corpus.")


def structural_rows(shapes: dict) -> list[dict[str, str]]:
    """The metadata's fill-ins on grammar sentences of skeletons the encoder trained on and of skeletons kept out."""
    keys = (("agreement_number_top1", "agreement: top-1 verb has the subject's number"),
            ("agreement_pair_accuracy", "agreement: is beats are (and each pair)"), ("pronoun_top1", "pronoun: top-1"))
    return [{"measure": what, **{f"{split} skeletons": pct(shapes[split][key]) for split in ("seen", "unseen")
                                 if split in shapes}} for key, what in keys]


# -- what the page says -------------------------------------------------------------------------------
WHY_MLM = (
    "An encoder has no causal mask: position *t* can read token *t + 1*. Trained to predict the next word, it would "
    "simply **copy** the next word from its input: the loss collapses towards zero and nothing is learned about "
    "language. Masked language modelling closes that shortcut. About 15 % of the words are chosen; of those, 80 % "
    "become `<mask>`, 10 % a random word and 10 % stay as they were, and the loss counts only the chosen positions. "
    "The word to predict is not in the input, so the model has to infer it from **both** sides.")
ABLATION_TEXT = ("That ablation trains the same model twice, with and without the causal mask, on next-token "
                 "prediction: the no-mask loss falls far below the causal one by reading the future, and its greedy "
                 "text falls apart once the future is not there to read.")
METRICS_TEXT = ("Measured on sentences the encoder never trained on: held-out agreement sentences (*the keys near the "
                "dog `<mask>` ready*), pronoun sentences (*the queen thanked the man because `<mask>` …*), and the "
                "held-out corpus with random words masked.")
STRUCTURAL_TEXT = ("On new sentences of the toy grammar, by their *skeleton* (word classes, DET ADJ NOUN VERB …): "
                   "shapes the encoder trained on, and shapes kept out of training altogether.")


def missing_encoder_text(missing: str, have_other: bool) -> str:
    """A shipped encoder is not installed: say so, how to build it, and whether another encoder stands in."""
    return (f"The shipped encoder **{missing}** is not installed (assets/models/{missing}.safetensors is missing), so "
            f"the page cannot show it. Build it with `.venv/bin/python scripts/build_assets.py {missing}`."
            + (" Meanwhile the page runs another encoder." if have_other else ""))


PICKER_HELP = ("The English encoder reads English as the English model's byte-level BPE tokens (lower-cased), so no "
               "word is `<unk>` (a long sentence is cut to its context length). The toy encoder knows only the "
               "classroom corpus's words: the agreement and pronoun measurements on the Held-out metrics tab are built "
               "on them.")
STUDENT_SENTENCE = "My grandmother baked <mask> while the storm knocked out the <mask>"
TOY_METRICS_TEXT = ("The agreement and pronoun measurements (*the keys near the dog `<mask>` ready*) are the toy "
                    "encoder's: they are built on the classroom corpus's words. Pick “Toy encoder” above to see them.")
FILL_TEXT = ("Measured on text the encoder never trained on: the WordNet test split (3 % of WordNet's synsets, "
             "by hash) shipped with the English model. In each text every token is hidden with probability "
             f"{FILL_P:.0%} (at least one per text, drawn with a fixed seed) and replaced by `<mask>`; the encoder "
             "reads the text once. The baseline guesses from token counts in the training text alone, ignoring the "
             "sentence.")
NO_METRICS_TEXT = ("This model's metadata records no held-out metrics (only the shipped encoder has them): press the "
                   "button to measure them.")
