"""A seeded toy corpus with structure a teacher can point at, toy tasks, and batching.

The corpus mixes short office e-mails, subject-verb agreement across a distractor noun, pronouns whose
antecedent is fixed by gender / number / animacy (and whose next word depends on *which* noun it is, so a
model must look back at the antecedent to predict it), place phrases and the lecture's example sentences.
Toy tasks (copy, reverse, induction) use single letters so that attention patterns read at a glance.

Everything is deterministic for a seed. The held-out split is decided by a hash of the sentence text, so a
sentence is always on the same side of the split, whatever the seed. The sentence tasks (masked LM, translation)
also train on `grammar_sentence`, a sampler of every rule of the toy grammar, with a second split by sentence
shape (`skeleton`): some whole shapes are never trained on, to test the grammar rather than the templates.

    python -m viz_model.data --write-assets   # tokenizers + corpus sample under assets/
"""

from __future__ import annotations

import argparse
import random
import re
import unicodedata
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch

from viz_model.lecture import LECTURE_SENTENCES
from viz_model.mlm import mask_tokens
from viz_model.model import IGNORE_INDEX

TASKS = ("lm", "copy", "reverse", "induction", "recall", "mlm", "translate")
SENTENCE_TASKS = ("mlm", "translate")  # corpus sentences for an encoder / an encoder-decoder, not toy letters
TASK_LABELS = {"lm": "classroom corpus (language modelling)", "copy": "copy", "reverse": "reverse",
               "induction": "repeated random sequence (induction)",
               "recall": "recall a noun 1-60 tokens back (long dependency)",
               "mlm": "masked language modelling (encoder)", "translate": "translation (encoder-decoder)"}


# -- pronoun sentences -------------------------------------------------------------------------------
# noun -> (pronoun class, the verb only this noun does). The verb after the pronoun names the antecedent.
NOUNS: dict[str, tuple[str, str]] = {
    "boy": ("he", "laughed"), "man": ("he", "coughed"), "king": ("he", "ruled"), "father": ("he", "snored"),
    "girl": ("she", "smiled"), "woman": ("she", "sang"), "queen": ("she", "waved"), "mother": ("she", "cooked"),
    "dog": ("it", "barked"), "cat": ("it", "purred"), "horse": ("it", "neighed"), "bird": ("it", "chirped"),
    "children": ("they", "giggled"), "students": ("they", "studied"), "farmers": ("they", "harvested"),
    "teachers": ("they", "graded"),
}
ADJECTIVES = ("old", "young", "little", "tall", "happy", "tired")
GIFTS = ("book", "ball", "apple", "letter")
TAILS = ((), ("loudly",), ("again",), ("all", "day"), ("at", "night"))
# {A} first noun, {B} second noun, {P} pronoun, {V} its verb. "{G}" a gift (never used with "it").
PRONOUN_TEMPLATES = (
    "the {A} met the {B} and {P} {V}",
    "the {A} followed the {B} because {P} {V}",
    "after the {A} saw the {B} , {P} {V}",
    "the {A} waited for the {B} until {P} {V}",
    "the {A} gave the {B} the {G} because {P} {V}",
    "the {A} thanked the {B} when {P} {V}",
)

# -- agreement, e-mails, places ----------------------------------------------------------------------
AGREE_NOUNS = (("key", "keys"), ("dog", "dogs"), ("report", "reports"), ("student", "students"),
               ("box", "boxes"), ("cat", "cats"), ("letter", "letters"), ("book", "books"))
AGREE_PREPS = ("near", "by", "behind", "with", "next to")
AGREE_VERBS = (("is", "are"), ("was", "were"), ("seems", "seem"), ("looks", "look"))
AGREE_ENDINGS = ("ready", "here", "on the table", "late", "new", "in the box")
NAMES = ("anna", "bob", "carol", "dave", "emma", "frank")
DOCS = ("report", "slides", "invoice", "agenda", "notes", "budget")
WHEN = ("today", "tomorrow", "by friday", "before the meeting", "this morning", "after lunch")
EMAIL_TEMPLATES = (
    "please send the {D} {W}",
    "please send the {D} to {N} {W}",
    "hi {N} , please send the {D} {W} . thanks , {M}",
    "can you send the {D} {W} ?",
    "send the {D} before the {E}",
    "thanks for the {D} , {N}",
    "please review the {D} and send it to {N}",
    "{N} will send the {D} {W}",
)
PLACE_SUBJECTS = ("cat", "dog", "book", "bird", "boy", "girl", "bank", "house", "tree", "lamp")
PLACE_VERBS = ("sat", "slept", "stood", "is", "was", "waited")
PLACE_PREPS = ("on", "under", "by", "near", "behind", "in")
PLACES = ("mat", "table", "river", "door", "bed", "shelf", "hill", "road", "window", "chair")

TOY_ALPHABET = tuple("abcdefghijklmnopqrstuvwxyz")
TOY_SEP = ":"
KIND_WEIGHTS = {"pronoun": 0.45, "agreement": 0.2, "email": 0.2, "place": 0.12, "lecture": 0.03}


@dataclass(frozen=True)
class PronounExample:
    """A pronoun sentence and where its pronoun and antecedent sit (word = token index, no <bos>)."""

    words: tuple[str, ...]
    pronoun_index: int
    antecedent_index: int
    distractor_index: int

    @property
    def text(self) -> str:
        return " ".join(self.words)


def pronoun_sentence(rng: random.Random) -> PronounExample:
    """Two nouns of different pronoun classes; the pronoun picks one; its verb says which one."""
    a, b = rng.sample(sorted(NOUNS), 2)
    while NOUNS[a][0] == NOUNS[b][0]:
        b = rng.choice(sorted(NOUNS))
    target = rng.choice((a, b))
    pron, verb = NOUNS[target]
    templates = [t for t in PRONOUN_TEMPLATES if pron != "it" or "{G}" not in t]
    template = rng.choice(templates)
    fill = {"{A}": a, "{B}": b, "{P}": pron, "{V}": verb, "{G}": rng.choice(GIFTS)}
    words: list[str] = []
    index = {}
    for w in template.split():
        if w in ("{A}", "{B}") and rng.random() < 0.3:
            words.append(rng.choice(ADJECTIVES))
        if w in ("{A}", "{B}", "{P}"):
            index[w] = len(words)
        words.append(fill.get(w, w))
    words.extend(rng.choice(TAILS))
    ante, other = ("{A}", "{B}") if target == a else ("{B}", "{A}")
    return PronounExample(tuple(words), index["{P}"], index[ante], index[other])


def agreement_sentence(rng: random.Random) -> str:
    """Subject-verb agreement with a distractor of the other number between them."""
    subj, dist = rng.sample(AGREE_NOUNS, 2)
    plural = rng.random() < 0.5
    verb = rng.choice(AGREE_VERBS)[plural]
    return f"the {subj[plural]} {rng.choice(AGREE_PREPS)} the {dist[not plural]} {verb} {rng.choice(AGREE_ENDINGS)}"


def email_sentence(rng: random.Random) -> str:
    d, e = rng.sample(DOCS, 2)
    n, m = rng.sample(NAMES, 2)
    template = rng.choice(EMAIL_TEMPLATES)
    return template.format(D=d, E=e, N=n, M=m, W=rng.choice(WHEN)).replace("{", "").replace("}", "")


def place_sentence(rng: random.Random) -> str:
    return (f"the {rng.choice(PLACE_SUBJECTS)} {rng.choice(PLACE_VERBS)} {rng.choice(PLACE_PREPS)} "
            f"the {rng.choice(PLACES)}")


def random_sentence(rng: random.Random) -> tuple[str, str]:
    """(kind, lower-cased text) drawn from the corpus mixture."""
    kind = rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]
    if kind == "pronoun":
        return kind, pronoun_sentence(rng).text
    if kind == "agreement":
        return kind, agreement_sentence(rng)
    if kind == "email":
        return kind, email_sentence(rng)
    if kind == "place":
        return kind, place_sentence(rng)
    return kind, rng.choice(LECTURE_SENTENCES).lower()


def is_heldout(text: str, fraction: float = 0.1) -> bool:
    """Stable split by content: the same sentence is always on the same side (lecture sentences: train)."""
    if text in _LECTURE_LOWER:
        return False
    return zlib.crc32(text.encode()) % 1000 < fraction * 1000


_LECTURE_LOWER = frozenset(s.lower() for s in LECTURE_SENTENCES)


def generate_corpus(n: int, seed: int = 0) -> list[str]:
    """n sentences from the mixture (duplicates allowed, as in real text). Deterministic for a seed."""
    rng = random.Random(seed)
    return [random_sentence(rng)[1] for _ in range(n)]


@dataclass
class CorpusSplit:
    train: list[str]
    heldout: list[str]


# lru_cache (core has no ui.cache.cached): the corpus is a pure function of immutable arguments (ints; it reads no
# file), drawn once per recipe instead of per batch. The same for the three below. Results are shared: read-only.
@lru_cache(maxsize=4)
def corpus_split(seed: int = 0, n: int = 20_000, heldout_size: int = 256) -> CorpusSplit:
    """Unique sentences, split by content hash; heldout capped at heldout_size (first ones drawn)."""
    seen: dict[str, None] = dict.fromkeys(generate_corpus(n, seed))
    train = [s for s in seen if not is_heldout(s)]
    heldout = [s for s in seen if is_heldout(s)][:heldout_size]
    return CorpusSplit(train + [s.lower() for s in LECTURE_SENTENCES], heldout)


def pronoun_examples(n: int = 200, seed: int = 1234, split: str = "heldout") -> list[PronounExample]:
    """n distinct pronoun sentences from one side of the split, for head scoring."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}.")
    rng, out, seen = random.Random(seed), [], set()
    for _ in range(200 * n):
        ex = pronoun_sentence(rng)
        if ex.text not in seen and is_heldout(ex.text) == (split == "heldout"):
            seen.add(ex.text)
            out.append(ex)
            if len(out) == n:
                break
    return out


# -- toy tasks ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToyExample:
    """Words of one toy sequence and the first word index whose prediction is scored (None = all)."""

    words: tuple[str, ...]
    score_from: int  # targets for predicting words[score_from:] count in the loss; earlier ones are ignored
    eos: bool = True  # append <eos> (and score predicting it); recall scores its one answer only


def toy_example(task: str, rng: random.Random, min_len: int = 5, max_len: int = 10) -> ToyExample:
    """copy: 'x1..xn : x1..xn'; reverse: 'x1..xn : xn..x1'; induction: 'x1..xn x1..xn' (scored from x2);
    recall: a noun, filler letters, ':', the noun again, at a random distance (min_len/max_len do not apply)."""
    if task == "recall":
        return recall_example(rng, rng.randint(1, RECALL_MAX_DISTANCE))
    seq = rng.sample(TOY_ALPHABET, rng.randint(min_len, max_len))
    n = len(seq)
    if task == "copy":
        return ToyExample((*seq, TOY_SEP, *seq), n + 1)
    if task == "reverse":
        return ToyExample((*seq, TOY_SEP, *reversed(seq)), n + 1)
    if task == "induction":
        return ToyExample((*seq, *seq), n + 1)
    raise ValueError(f"unknown toy task {task!r}; choose one of {TASKS[1:]}.")


RECALL_MAX_DISTANCE = 60  # recall inputs are distance + 2 tokens long: they fit a max_len of 64
RECALL_KEYS = tuple(sorted(NOUNS))  # 16 nouns: chance is 1/16


def recall_example(rng: random.Random, distance: int) -> ToyExample:
    """'key f1 .. f(d-1) : key': the answer is the noun `distance` positions before the ':' that asks for it.

    In the model's input (<bos> key f.. :), the key sits at index 1 and the ':' that must predict it at
    index distance + 1, the last position. Only that one prediction is scored (no <eos>).
    """
    if not isinstance(distance, int) or distance < 1:
        raise ValueError(f"the recall distance must be a whole number of at least 1, got {distance!r}.")
    key = rng.choice(RECALL_KEYS)
    filler = tuple(rng.choice(TOY_ALPHABET) for _ in range(distance - 1))
    return ToyExample((key, *filler, TOY_SEP, key), distance + 1, eos=False)


# (attention probe, sample prompt): the encoder's probe has a <mask>; the translator's probe swaps an
# adjective, splits a plural and moves two verbs (the source side; its cross-attention is what is watched).
SENTENCE_PROBES = {
    "mlm": ("the boy gave the girl the book because <mask> smiled", "the keys near the dog <mask> on the table"),
    "translate": ("the old king thanked the children when they giggled", "the keys near the dog are on the table"),
}


# The language model's probe and sample prompt (the others come from SENTENCE_PROBES or a seeded toy example).
LM_PROBE, LM_PROMPT = "the boy gave the girl the book because she smiled", "please send the"


def probe_text(task: str) -> str:
    """A fixed input whose attention the trainer snapshots while it learns."""
    return LM_PROBE if task == "lm" else _task_text(task, 0, seed=7, length=8)


def sample_prompt(task: str) -> str:
    """What the trainer completes greedily to show progress."""
    return LM_PROMPT if task == "lm" else _task_text(task, 1, seed=11, length=7)


def _task_text(task: str, which: int, seed: int, length: int) -> str:
    """SENTENCE_PROBES[task][which], or a seeded toy example (whole for the probe, up to its scored part for the
    prompt)."""
    if task in SENTENCE_PROBES:
        return SENTENCE_PROBES[task][which]
    ex = toy_example(task, random.Random(seed), length, length)
    return " ".join(ex.words if which == 0 else ex.words[: ex.score_from])


# -- the toy translation language --------------------------------------------------------------------
# Source: the corpus's pronoun, agreement and place sentences, read by the small clause grammar below (and, for
# training, grammar_sentence's draws of every rule of it).
# Target: every word in Pig Latin ('cat' -> 'atcay', 'apple' -> 'appleway'), adjectives after their noun,
# each clause's verb at the end of its clause, and a plural noun as two words, its stem and the plural word
# 'ka' ('dogs' -> 'ogday ka'). The alignment (target word -> source word) is known by construction.
#
#   sentence   := clause (CONJ clause)* | "after" clause "," clause
#   clause     := subject VERB complement*           ->  subject complement* VERB
#   subject    := PRON | NP [PREP NP]
#   NP         := "the" [ADJ] NOUN                   ->  "the" NOUN [ka] [ADJ]
#   complement := NP | PREP NP | ADV | PRED
PLURAL_WORD = "ka"
PLURAL_STEMS = {**{pl: sg for sg, pl in AGREE_NOUNS}, "children": "child", "farmers": "farmer",
                "teachers": "teacher"}
TEMPLATE_VERBS = ("met", "followed", "saw", "waited", "gave", "thanked")
MULTIWORD = {("next", "to"): "PREP", ("all", "day"): "ADV", ("at", "night"): "ADV"}


def _word_classes() -> dict[str, str]:
    groups = {
        "DET": ("the",), "COMMA": (",",), "AFTER": ("after",), "CONJ": ("and", "because", "until", "when"),
        "PRON": ("he", "she", "it", "they"), "ADJ": ADJECTIVES, "ADV": ("loudly", "again"),
        "NOUN": (*NOUNS, *(w for pair in AGREE_NOUNS for w in pair), *GIFTS, *PLACE_SUBJECTS, *PLACES,
                 "table", "box"),
        "VERB": (*(v for _, v in NOUNS.values()), *TEMPLATE_VERBS, *(w for p in AGREE_VERBS for w in p),
                 *PLACE_VERBS),
        "PREP": (*(p for p in AGREE_PREPS if " " not in p), *PLACE_PREPS, "for"),
        "PRED": tuple(e for e in AGREE_ENDINGS if " " not in e),
    }
    classes: dict[str, str] = {}
    for cls, words in groups.items():
        for w in words:
            if classes.setdefault(w, cls) != cls:
                raise AssertionError(f"{w!r} is both {classes[w]} and {cls}")  # a lexicon bug, not user input
    return classes


WORD_CLASSES = _word_classes()


def pig_latin(word: str) -> str:
    """The toy language's word: 'cat' -> 'atcay', 'queen' -> 'eenquay', 'apple' -> 'appleway'; ',' stays."""
    if not word.isalpha():
        return word
    if word[0] in "aeiou":
        return word + "way"
    i = 2 if word.startswith("qu") else 1
    while i < len(word) and word[i] not in "aeiouy":
        i += 1
    return word[i:] + word[:i] + "ay"


def target_words(word: str) -> list[str]:
    """One source word in the toy language: one word, or two for a plural noun (stem + 'ka')."""
    if word in PLURAL_STEMS:
        return [pig_latin(PLURAL_STEMS[word]), PLURAL_WORD]
    return [pig_latin(word)]


def target_vocabulary() -> list[str]:
    """Every word the toy language can produce (the shared word tokenizer appends them to its vocabulary)."""
    source = {*WORD_CLASSES, *(w for pair in MULTIWORD for w in pair)}
    return sorted({t for w in source for t in target_words(w)} - source)


def source_words(text: str) -> list[str]:
    """Lower-cased words and punctuation, split as the word tokenizer splits them (one word = one token)."""
    return re.findall(r"\w+|[^\w\s]", unicodedata.normalize("NFKC", text or "").lower())


def _units(words: list[str]) -> list[tuple[str, tuple[int, ...]]]:
    """(word class, word indices) of each unit: a word, or a two-word unit of MULTIWORD ('next to', 'at night')."""
    units, i = [], 0
    while i < len(words):
        pair = tuple(words[i: i + 2])
        if pair in MULTIWORD:
            units.append((MULTIWORD[pair], (i, i + 1)))
            i += 2
            continue
        if words[i] not in WORD_CLASSES:
            raise ValueError(f"'{words[i]}' is not a word of the toy language (it knows the words of the "
                             f"corpus's pronoun, agreement and place sentences).")
        units.append((WORD_CLASSES[words[i]], (i,)))
        i += 1
    return units


class _Parser:
    """Recursive descent over (class, word indices) units; each rule returns source indices in target order."""

    def __init__(self, words: list[str]):
        self.words, self.units = words, _units(words)
        self.i = 0
        self.rules: list[str] = []  # every rule applied, in order (names in PARSER_RULES)

    def peek(self) -> str | None:
        return self.units[self.i][0] if self.i < len(self.units) else None

    def take(self, cls: str, what: str) -> list[int]:
        if self.peek() != cls:
            where = f"at '{self.words[self.units[self.i][1][0]]}'" if self.i < len(self.units) else "at the end"
            raise ValueError(f"this sentence is outside the toy language: it expected {what} {where}.")
        self.i += 1
        return list(self.units[self.i - 1][1])

    def _unit_text(self) -> str:
        return " ".join(self.words[k] for k in self.units[self.i][1])

    def _prep(self) -> str:
        """'preposition', or 'next to' for the one two-word preposition (a rule of its own in the lexer)."""
        return "next to" if self._unit_text() == "next to" else "preposition"

    def noun_phrase(self) -> list[int]:
        det = self.take("DET", "'the'")
        self.rules.append("np:adjective" if self.peek() == "ADJ" else "np:bare")
        adj = self.take("ADJ", "an adjective") if self.peek() == "ADJ" else []
        return det + self.take("NOUN", "a noun after 'the'") + adj  # the adjective moves after its noun

    def clause(self) -> list[int]:
        if self.peek() == "PRON":
            self.rules.append("subject:pronoun")
            subject = self.take("PRON", "a pronoun")
        else:
            subject = self.noun_phrase()
            if self.peek() == "PREP":
                self.rules.append(f"subject:noun phrase + {self._prep()}")
                subject += self.take("PREP", "a preposition") + self.noun_phrase()
            else:
                self.rules.append("subject:noun phrase")
        verb = self.take("VERB", "a verb after the subject")
        rest: list[int] = []
        while self.peek() in ("DET", "PREP", "ADV", "PRED"):
            if self.peek() == "DET":
                self.rules.append("complement:noun phrase")
                rest += self.noun_phrase()
            elif self.peek() == "PREP":
                self.rules.append(f"complement:{self._prep()} + noun phrase")
                rest += self.take("PREP", "a preposition") + self.noun_phrase()
            else:
                self.rules.append(f"complement:{self.peek()} {self._unit_text()}")
                rest += self.take(self.peek(), "a word")
        return subject + rest + verb  # the verb goes to the end of its clause

    def sentence(self) -> list[int]:
        if self.peek() == "AFTER":
            self.rules.append("sentence:after clause , clause")
            order = self.take("AFTER", "'after'") + self.clause() + self.take("COMMA", "','") + self.clause()
        else:
            order = self.clause()
            while self.peek() == "CONJ":
                self.rules.append(f"sentence:clause {self._unit_text()} clause")
                order += self.take("CONJ", "a conjunction") + self.clause()
        if self.i != len(self.units):
            self.take("END", "the end of the sentence")  # raises with the first unexpected word
        return order


def reference_translation(text: str) -> tuple[str, list[int]]:
    """(target text, alignment): alignment[j] is the index of the source word that target word j translates.

    Source word indices are word-tokenizer token indices (no <bos>). A ValueError says why a sentence is
    outside the toy language.
    """
    words = source_words(text)
    if not words:
        raise ValueError("there is nothing to translate: type a sentence.")
    target, alignment = [], []
    for k in _Parser(words).sentence():
        for t in target_words(words[k]):
            target.append(t)
            alignment.append(k)
    return " ".join(target), alignment


def is_translatable(text: str) -> bool:
    try:
        reference_translation(text)
    except ValueError:
        return False
    return True


def parse_rules(text: str) -> list[str]:
    """The grammar rules the parser applies to `text`, in order (each a name of PARSER_RULES); ValueError as
    reference_translation."""
    parser = _Parser(source_words(text))
    parser.sentence()
    return parser.rules


def _rule_names() -> tuple[str, ...]:
    adverbs = (*(w for w, c in WORD_CLASSES.items() if c == "ADV"), *(" ".join(p) for p, c in MULTIWORD.items()
                                                                     if c == "ADV"))
    return ("sentence:after clause , clause", *(f"sentence:clause {c} clause" for c in _CLASS_WORDS["CONJ"]),
            "subject:pronoun", "subject:noun phrase", "subject:noun phrase + preposition",
            "subject:noun phrase + next to", "np:bare", "np:adjective", "complement:noun phrase",
            "complement:preposition + noun phrase", "complement:next to + noun phrase",
            *(f"complement:ADV {a}" for a in sorted(adverbs)),
            *(f"complement:PRED {p}" for p in _CLASS_WORDS["PRED"]))


_CLASS_WORDS = {c: tuple(sorted(w for w, k in WORD_CLASSES.items() if k == c)) for c in set(WORD_CLASSES.values())}
PARSER_RULES = _rule_names()  # every rule the parser has: a grammar sampler must reach each one


def skeleton(text: str) -> str:
    """A sentence's shape: the word class of each unit ('the old dog near the box is here' ->
    'DET ADJ NOUN PREP DET NOUN VERB PRED'). ValueError for a word outside the toy language."""
    return " ".join(cls for cls, _ in _units(source_words(text)))


# -- the toy grammar, sampled ------------------------------------------------------------------------
# Every rule of _Parser, words drawn by class, so a model meets the shapes a student can type and not only
# the corpus templates. Two regularities hold in every sentence, for the masked-LM lessons: an agreement
# verb (is/are, was/were, ...) has its subject's number, and a noun's own verb (NOUNS: 'barked' for the dog)
# follows only that noun or its pronoun, so the verb after a pronoun names the antecedent.
GRAMMAR_MAX_SOURCE = 26  # source words; with <eos> they fit the translators' max_len of 32
GRAMMAR_MAX_TARGET = 30  # target words (a plural noun is two); with <bos> they fit 32
GRAMMAR_ADVERBS = ("loudly", "again", "all day", "at night")
GRAMMAR_PREPS = (*_CLASS_WORDS["PREP"], "next to")
_OWN_VERBS = frozenset(v for _, v in NOUNS.values())
_AGREE_FORMS = {w: pair for pair in AGREE_VERBS for w in pair}
_OTHER_VERBS = tuple(v for v in _CLASS_WORDS["VERB"] if v not in _OWN_VERBS)
_PLURAL_WORDS = frozenset((*PLURAL_STEMS, "they"))


def _noun_phrase(rng: random.Random, noun: str | None = None) -> list[str]:
    adjective = [rng.choice(ADJECTIVES)] if rng.random() < 0.3 else []
    return ["the", *adjective, noun or rng.choice(_CLASS_WORDS["NOUN"])]


def _complement(rng: random.Random, kind: str) -> list[str]:
    if kind == "np":
        return _noun_phrase(rng)
    if kind == "pp":
        return [*rng.choice(GRAMMAR_PREPS).split(), *_noun_phrase(rng)]
    if kind == "adv":
        return rng.choice(GRAMMAR_ADVERBS).split()
    return [rng.choice(_CLASS_WORDS["PRED"])]


def _predicate(rng: random.Random, head: str) -> list[str]:
    """A verb for the subject whose head word is `head` (a noun or pronoun), then its complements."""
    kind = rng.choices(("own", "transitive", "agree", "place", "free"), weights=(3, 3, 3, 2, 3))[0]
    if kind == "own" and head in NOUNS:
        verb, rest = NOUNS[head][1], []
    elif kind == "transitive":
        verb = rng.choice(TEMPLATE_VERBS)
        rest = {"gave": ["np", "np"], "waited": ["pp"]}.get(verb, ["np"])
    elif kind == "agree":
        verb, rest = rng.choice(AGREE_VERBS)[0], [rng.choice(("pred", "pred", "pp"))]
    elif kind == "place":
        verb, rest = rng.choice(("sat", "slept", "stood", "waited", "is", "was")), ["pp"]
    else:  # any verb, any complements: shapes no template has
        verb, rest = rng.choice(_OTHER_VERBS), rng.choices(("np", "pp", "adv", "pred"), k=rng.randint(0, 3))
    if verb in _AGREE_FORMS:
        verb = _AGREE_FORMS[verb][head in _PLURAL_WORDS]
    if kind != "free" and rng.random() < 0.35:
        rest = [*rest, "adv"]
    return [verb, *(w for k in rest for w in _complement(rng, k))]


def _clause(rng: random.Random, nouns: list[str]) -> list[str]:
    """One clause; a pronoun subject refers to a noun of an earlier clause (`nouns`, which the clause extends)."""
    antecedents = [n for n in nouns if n in NOUNS]
    if rng.random() < (0.5 if antecedents else 0.1):
        head = rng.choice(antecedents or sorted(NOUNS))
        subject = [NOUNS[head][0]]
    else:
        subject = _noun_phrase(rng)
        head = subject[-1]
        if rng.random() < 0.35:  # a prepositional phrase: for agreement, a distractor noun before the verb
            subject += [*rng.choice(GRAMMAR_PREPS).split(), *_noun_phrase(rng)]
    words = [*subject, *_predicate(rng, head)]
    nouns.extend(w for w in words if WORD_CLASSES.get(w) == "NOUN")
    return words


def grammar_sentence(rng: random.Random, max_source: int = GRAMMAR_MAX_SOURCE,
                     max_target: int = GRAMMAR_MAX_TARGET) -> str:
    """A sentence of the toy grammar, of any shape its parser accepts: one to four clauses joined by any
    conjunction, or 'after' clause ',' clause; at most max_source words and max_target target words."""
    for _ in range(1000):
        nouns: list[str] = []
        if rng.random() < 0.15:
            words = ["after", *_clause(rng, nouns), ",", *_clause(rng, nouns)]
        else:
            words = _clause(rng, nouns)
            for _ in range(rng.choices((0, 1, 2, 3), weights=(3, 4, 3, 1))[0]):
                words += [rng.choice(_CLASS_WORDS["CONJ"]), *_clause(rng, nouns)]
        if len(words) <= max_source and sum(len(target_words(w)) for w in words) <= max_target:
            return " ".join(words)
    raise ValueError(f"no sentence of the toy grammar fits in {max_source} words ({max_target} translated).")


SKELETON_HELDOUT = 0.15  # share of skeletons (whole shapes) kept out of training
GRAMMAR_POOL = 40_000    # grammar sentences a sentence task trains on, beside the corpus


@lru_cache(maxsize=1)  # pure: no argument, derived from corpus_split() (see there)
def corpus_skeletons() -> frozenset[str]:
    """The shapes of the corpus's translatable sentences (its templates): always on the training side."""
    split = corpus_split()
    return frozenset(skeleton(t) for t in (*split.train, *split.heldout) if is_translatable(t))


def is_heldout_skeleton(shape: str) -> bool:
    """Stable split by shape, as is_heldout by text: a fixed set of skeletons no training sentence has."""
    return zlib.crc32(b"skeleton " + shape.encode()) % 1000 < SKELETON_HELDOUT * 1000 and \
        shape not in corpus_skeletons()


@lru_cache(maxsize=2)  # pure function of immutable arguments (ints), as corpus_split
def grammar_pool(size: int = GRAMMAR_POOL, seed: int = 0) -> tuple[str, ...]:
    """`size` distinct grammar sentences for training: none held out by text (is_heldout) or by shape."""
    rng, out = random.Random(10_007 + seed), {}
    for _ in range(20 * size):
        text = grammar_sentence(rng)
        if not is_heldout(text) and not is_heldout_skeleton(skeleton(text)):
            out[text] = None
            if len(out) == size:
                break
    return tuple(out)


def sentence_pool(task: str, grammar_size: int = GRAMMAR_POOL, corpus_size: int = 20_000,
                  heldout_size: int = 256) -> list[str]:
    """What a sentence task draws its training batches from: the corpus's training side (translation: its
    translatable sentences), then grammar_pool(grammar_size) (none when 0, the recipe before #25)."""
    split = corpus_split(0, corpus_size, heldout_size)
    corpus = split.train if task == "mlm" else [t for t in split.train if is_translatable(t)]
    return [*corpus, *grammar_pool(grammar_size)] if grammar_size else corpus


@lru_cache(maxsize=2)  # pure function of an int, as corpus_split
def pool_skeletons(grammar_size: int = GRAMMAR_POOL) -> frozenset[str]:
    """The skeletons of the translation training pool."""
    return frozenset(skeleton(t) for t in sentence_pool("translate", grammar_size))


def structural_sentences(n: int, split: str, seed: int = 1, grammar_size: int = GRAMMAR_POOL) -> list[str]:
    """n distinct grammar sentences never trained on: 'seen', a skeleton of the training pool (the sentence held
    out by is_heldout); 'unseen', a held-out skeleton."""
    if split not in ("seen", "unseen"):
        raise ValueError(f"split must be 'seen' or 'unseen', got {split!r}.")
    rng, out, shapes = random.Random(seed), {}, pool_skeletons(grammar_size)
    for _ in range(2000 * n):
        text = grammar_sentence(rng)
        shape = skeleton(text)
        ok = is_heldout_skeleton(shape) if split == "unseen" else is_heldout(text) and shape in shapes
        if ok:
            out[text] = None
            if len(out) == n:
                break
    return list(out)


def heldout_sentences(n: int, seed: int = 0, kind: str | None = None, translatable: bool = False) -> list[str]:
    """n distinct corpus sentences (of one kind, or the mixture) from the held-out side of the split."""
    rng, out = random.Random(seed), {}
    for _ in range(400 * n):
        k, text = random_sentence(rng)
        if (kind is None or k == kind) and is_heldout(text) and (not translatable or is_translatable(text)):
            out[text] = None
            if len(out) == n:
                break
    return list(out)


# -- batching ----------------------------------------------------------------------------------------
def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, score_from: Sequence[int] | None = None,
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (ids, targets), both (B, T): targets[t] = ids[t+1]; pad (and unscored) targets = pad_id.

    score_from[i] is the first index of seqs[i] whose *prediction* counts; None = every next token.
    """
    T = max(len(s) for s in seqs) - 1
    if T < 1:
        raise ValueError("every sequence needs at least two tokens to predict one.")
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    targets = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        s = torch.as_tensor(list(s), dtype=torch.long)
        ids[i, : len(s) - 1] = s[:-1]
        targets[i, : len(s) - 1] = s[1:]
        if score_from is not None:
            targets[i, : max(score_from[i] - 1, 0)] = pad_id
    return ids, targets


def lm_stream(token_ids: Sequence[Sequence[int]], block_size: int, batch_size: int, seed: int = 0,
              ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless packed language-modelling batches: sentences concatenated, random windows of block_size+1."""
    flat = torch.tensor([t for seq in token_ids for t in seq], dtype=torch.long)
    if len(flat) <= block_size + 1:
        raise ValueError("the corpus is shorter than one block.")
    gen = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(flat) - block_size - 1, (batch_size,), generator=gen)
        chunk = torch.stack([flat[s: s + block_size + 1] for s in starts.tolist()])  # (B, block+1)
        yield chunk[:, :-1], chunk[:, 1:]


@dataclass
class Batch:
    ids: torch.Tensor      # (B, T)
    targets: torch.Tensor  # (B, T), pad_id where nothing is predicted
    key_padding_mask: torch.Tensor | None = None  # (B, T) True = real token; for an encoder (mlm)
    src: torch.Tensor | None = None               # (B, T_src) source ids of an encoder-decoder (translate)
    alignment: torch.Tensor | None = None         # (B, T_tgt) translate: the source index decoder row j translates,
                                                  # IGNORE_INDEX for the row predicting <eos> and for padding


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """(B, T) ids, each sequence followed by pad_id up to the longest."""
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out


def masked_batch(seqs: Sequence[Sequence[int]], pad_id: int, mask_id: int, vocab_size: int, p: float,
                 generator: torch.Generator) -> Batch:
    """A masked-LM batch of token rows: padded on the right, BERT's masking (mlm.mask_tokens), targets only at the
    masked positions (pad elsewhere, the Batch convention), the pads as the key padding mask. One body for the
    classroom encoder's data and the English encoder's."""
    ids = pad_right(seqs, pad_id)  # (B, T)
    inputs, targets = mask_tokens(ids, mask_id=mask_id, vocab_size=vocab_size, p=p, generator=generator)
    targets = targets.masked_fill(targets == IGNORE_INDEX, pad_id)  # the Batch convention: pad = no target
    return Batch(inputs, targets, key_padding_mask=ids != pad_id)


def sentence_draws(seed: int, step: int, batch_size: int, pool_size: int) -> list[int]:
    """The pool indices of a sentence task's training batch at `step`: from (seed, step) alone, so a model's
    training sentences can be replayed from its metadata (lessons.encoder_decoder.training_membership)."""
    rng = random.Random(seed * 1_000_003 + step)
    return [rng.randrange(pool_size) for _ in range(batch_size)]


class TaskData:
    """Batches for one task. batch(step) depends only on (seed, step): resuming needs no stream state."""

    def __init__(self, task: str, tokenizer, seed: int = 0, batch_size: int = 32, corpus_size: int = 20_000,
                 heldout_size: int = 256, no_bos_fraction: float = 0.2, repeat_fraction: float = 0.15,
                 mlm_probability: float = 0.15, grammar_size: int = GRAMMAR_POOL):
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose one of {TASKS}.")
        self.task, self.tokenizer, self.seed, self.batch_size = task, tokenizer, seed, batch_size
        self.no_bos_fraction, self.repeat_fraction = no_bos_fraction, repeat_fraction
        self.mlm_probability = mlm_probability  # mlm: BERT's share of selected tokens
        self.pad_id, self.bos_id, self.eos_id = (tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>"))
        if task in SENTENCE_TASKS:  # grammar_size: grammar sentences beside the corpus (sentence_pool)
            self._init_sentences(corpus_size, heldout_size, grammar_size)
        elif task == "lm":
            split = corpus_split(0, corpus_size, heldout_size)  # the corpus itself is fixed; seed orders batches
            self.train_ids = self._encode(split.train)
            self.heldout_ids = self._encode(split.heldout)
            self.heldout_from = [1] * len(self.heldout_ids)
            # Words for "repeated phrase" examples (random words, then the same words again): they reward a
            # previous-token head in layer 0 and an induction head in layer 1, as in real text.
            vocab = tokenizer.get_vocab()
            self.repeat_ids = sorted(i for w, i in vocab.items() if w.isalpha() and len(w) > 1)
        else:
            rng = random.Random(10_000 + TASKS.index(task))  # held-out toy sequences: their own fixed seed
            exs = [toy_example(task, rng) for _ in range(heldout_size)]
            self.heldout_ids = [self._ids(ex.words, ex.eos) for ex in exs]
            self.heldout_from = [ex.score_from + 1 for ex in exs]  # +1 for <bos>

    def _ids(self, words: Sequence[str], eos: bool = True) -> list[int]:
        return [self.bos_id, *(self.tokenizer.token_to_id(w) for w in words), *([self.eos_id] if eos else [])]

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [[self.bos_id, *e.ids, self.eos_id] for e in self.tokenizer.encode_batch(list(texts))]

    def _init_sentences(self, corpus_size: int, heldout_size: int, grammar_size: int) -> None:
        """mlm: sentences as <bos> words <eos>; translate: (source, target) pairs of the toy language. Held out:
        the corpus's held-out side and, with grammar sentences, 128 of skeletons kept out of training."""
        split = corpus_split(0, corpus_size, heldout_size)
        pool = sentence_pool(self.task, grammar_size, corpus_size, heldout_size)
        unseen = structural_sentences(128, "unseen", seed=2, grammar_size=grammar_size) if grammar_size else []
        self.mask_id, self.vocab_size = self.tokenizer.token_to_id("<mask>"), self.tokenizer.get_vocab_size()
        if self.task == "mlm":
            self.train_ids, self.heldout_ids = self._encode(pool), self._encode([*split.heldout, *unseen])
            self.heldout_from = [1] * len(self.heldout_ids)
            return
        if self.tokenizer.token_to_id(PLURAL_WORD) is None:
            raise ValueError("this tokenizer has no words of the toy language; use the shipped word tokenizer.")
        self.train_pairs = self._pairs(pool)
        self.heldout_pairs = self._pairs([*(t for t in split.heldout if is_translatable(t)), *unseen])
        self.heldout_ids = [tgt for _, tgt, _ in self.heldout_pairs]

    def _pairs(self, texts) -> list[tuple[list[int], list[int], list[int]]]:
        """(source ids + <eos>, <bos> + target ids + <eos>, alignment) for each source sentence."""
        texts = list(texts)
        refs = [reference_translation(t) for t in texts]
        src = [[*e.ids, self.eos_id] for e in self.tokenizer.encode_batch(texts)]
        return list(zip(src, self._encode([t for t, _ in refs]), [a for _, a in refs]))

    def _sentence_batch(self, seqs: Sequence, generator: torch.Generator) -> Batch:
        if self.task == "translate":  # decoder input <bos> y1.., targets y1..<eos>; source padded on the right
            ids, targets = pad_batch([tgt for _, tgt, _ in seqs], self.pad_id)
            alignment = torch.full(ids.shape, IGNORE_INDEX, dtype=torch.long)  # (B, T_tgt); row n predicts <eos>
            for i, (_, _, a) in enumerate(seqs):
                alignment[i, : len(a)] = torch.as_tensor(a, dtype=torch.long)
            return Batch(ids, targets, src=pad_right([src for src, _, _ in seqs], self.pad_id), alignment=alignment)
        return masked_batch(seqs, self.pad_id, self.mask_id, self.vocab_size, self.mlm_probability, generator)

    def batch(self, step: int) -> Batch:
        rng = random.Random(self.seed * 1_000_003 + step)
        if self.task in SENTENCE_TASKS:
            pool = self.train_ids if self.task == "mlm" else self.train_pairs
            seqs = [pool[i] for i in sentence_draws(self.seed, step, self.batch_size, len(pool))]
            return self._sentence_batch(seqs, torch.Generator().manual_seed(self.seed * 1_000_003 + step))
        if self.task == "lm":
            seqs, score_from = [], []
            for _ in range(self.batch_size):
                if rng.random() < self.repeat_fraction:
                    words = rng.sample(self.repeat_ids, rng.randint(4, 10))
                    seqs.append([self.bos_id, *words, *words, self.eos_id])
                    score_from.append(len(words) + 2)  # only the second copy is predictable
                    continue
                seq = self.train_ids[rng.randrange(len(self.train_ids))]
                seqs.append(seq[1:] if rng.random() < self.no_bos_fraction else seq)
                score_from.append(1)
            return Batch(*pad_batch(seqs, self.pad_id, score_from))
        exs = [toy_example(self.task, rng) for _ in range(self.batch_size)]
        return Batch(*pad_batch([self._ids(ex.words, ex.eos) for ex in exs], self.pad_id,
                                [ex.score_from + 1 for ex in exs]))

    def heldout_batches(self, batch_size: int = 128) -> list[Batch]:
        if self.task in SENTENCE_TASKS:  # the same masks every time: one fixed generator per held-out batch
            pool = self.heldout_ids if self.task == "mlm" else self.heldout_pairs
            return [self._sentence_batch(pool[i: i + batch_size], torch.Generator().manual_seed(777 + i))
                    for i in range(0, len(pool), batch_size)]
        out = []
        for i in range(0, len(self.heldout_ids), batch_size):
            out.append(Batch(*pad_batch(self.heldout_ids[i: i + batch_size], self.pad_id,
                                        self.heldout_from[i: i + batch_size])))
        return out


# -- assets ------------------------------------------------------------------------------------------
def tokenizer_texts() -> list[str]:
    """Every sentence the tokenizers are trained on: the corpus, the lecture, and the toy alphabet."""
    split = corpus_split()
    return [*split.train, *split.heldout, *LECTURE_SENTENCES, " ".join((*TOY_ALPHABET, TOY_SEP))]


def corpus_sample(n_per_kind: int = 12, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines = ["# Attention Lab training corpus: a readable sample (generated by viz_model.data, seed 0)", ""]
    makers = {"pronoun": lambda: pronoun_sentence(rng).text, "agreement": lambda: agreement_sentence(rng),
              "email": lambda: email_sentence(rng), "place": lambda: place_sentence(rng)}
    for kind, make in makers.items():
        lines += [f"## {kind}", *(make() for _ in range(n_per_kind)), ""]
    lines += ["## lecture", *(s.lower() for s in LECTURE_SENTENCES), ""]
    for task in (t for t in TASKS[1:] if t not in SENTENCE_TASKS):
        lines += [f"## toy task: {task}", *(" ".join(toy_example(task, rng).words) for _ in range(3)), ""]
    return "\n".join(lines)


def write_assets() -> None:
    from viz_model import ASSETS_DIR
    from viz_model.tokenizer import build_bpe_tokenizer, build_word_tokenizer, extend_word_vocab

    texts = tokenizer_texts()
    (ASSETS_DIR / "tokenizers").mkdir(parents=True, exist_ok=True)
    # The toy language's words come last, so every corpus word keeps the id it had before they were added.
    word = extend_word_vocab(build_word_tokenizer(texts), target_vocabulary())
    word.save(str(ASSETS_DIR / "tokenizers" / "word.json"))
    build_bpe_tokenizer(texts, vocab_size=512).save(str(ASSETS_DIR / "tokenizers" / "bpe.json"))
    (ASSETS_DIR / "corpus_sample.txt").write_text(corpus_sample() + "\n", encoding="utf-8")
    print(f"wrote tokenizers and corpus sample under {ASSETS_DIR}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Attention Lab corpus: print a sample or write the assets.")
    parser.add_argument("--write-assets", action="store_true", help="build assets/tokenizers/*.json and the sample")
    parser.add_argument("--sample", type=int, default=0, help="print N sentences from the corpus")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.write_assets:
        write_assets()
    for line in generate_corpus(args.sample, args.seed):
        print(line)


if __name__ == "__main__":
    main()
