"""The English model's text, tokenizer, batches and recipe: real prose, so no sentence a student types is `<unk>`.

Text: WordNet 3.0 (Debian's `wordnet-base`, under the WordNet licence): every synset's gloss and its example
sentences ("living things collectively" / "the oceans are teeming with life"), about 1.5 M words, plus a sample of
the classroom corpus and the lecture's sentences so the lecture still reads well. Synsets are split by a hash of
their offset: 3 % test (held out, never trained on, shown on the Start page), 2 % validation, the rest training.
A second held-out source the model never saw is Python's own documentation (`pydoc_data.topics`, PSF licence).

Tokenizer: byte-level BPE (`tokenizers`), 8,192 tokens, lower-cased, a space before the first word: any text,
emoji and right-to-left scripts included, is some sequence of byte tokens, never `<unk>`.

    .venv/bin/python scripts/build_assets.py english [--device auto] [--steps N]
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from viz_model import ASSETS_DIR
from viz_model.data import Batch, corpus_split, masked_batch, pad_batch
from viz_model.lecture import LECTURE_SENTENCES
from viz_model.mlm import masked_lm_loss
from viz_model.tokenizer import BOS, EOS, MASK, PAD, build_bpe_tokenizer
from viz_model.train import Trainer

WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
HELDOUT_PATH = ASSETS_DIR / "english_heldout.json"   # the test split's sample and the other source, shipped
MODEL_PATH = ASSETS_DIR / "models" / "english.safetensors"
TEST_SHARE, VALID_SHARE = 0.03, 0.02
VOCAB_SIZE = 8192
CLASSROOM_SENTENCES = 4000   # classroom corpus sentences mixed into training (about 3 % of the tokens)


# -- text ----------------------------------------------------------------------------------------------
def parse_wordnet_line(line: str) -> tuple[str, list[str]]:
    """(gloss, example sentences) of one synset line of a WordNet data file: the text after '|' holds the
    gloss, then '; "an example"' parts."""
    text = line.split(" | ", 1)[1].strip() if " | " in line else ""
    examples = [e.strip() for e in re.findall(r'"([^"]+)"', text) if e.strip()]
    gloss = text.split('"', 1)[0].strip().rstrip(";").strip()
    return gloss, examples


def wordnet_synsets(folder: str | Path = WORDNET_DIR) -> list[tuple[str, list[str]]]:
    """(synset id, its texts: gloss first, then examples) for every synset, in file order."""
    folder = Path(folder)
    missing = [n for n in WORDNET_FILES if not (folder / n).is_file()]
    if missing:
        raise ValueError(f"WordNet is not in {folder} (missing {', '.join(missing)}); on Debian/Ubuntu: "
                         "apt-get install wordnet-base")
    out = []
    for name in WORDNET_FILES:
        pos = name.split(".")[1]
        for line in (folder / name).read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or " | " not in line:  # the licence header
                continue
            gloss, examples = parse_wordnet_line(line)
            texts = [t for t in (gloss, *examples) if t]
            if texts:
                out.append((f"{pos}{line.split(' ', 1)[0]}", texts))
    return out


def split_of(key: str) -> str:
    """'test' | 'valid' | 'train' from a stable hash of the synset id (never Python's salted hash())."""
    x = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    return "test" if x < TEST_SHARE else "valid" if x < TEST_SHARE + VALID_SHARE else "train"


@dataclass
class EnglishText:
    train: list[str]
    valid: list[str]
    test: list[str]
    words: int = 0  # words of WordNet text in all three


def english_text(folder: str | Path = WORDNET_DIR) -> EnglishText:
    """WordNet's glosses and examples split by synset, plus classroom and lecture sentences in training."""
    parts: dict[str, list[str]] = {"train": [], "valid": [], "test": []}
    words = 0
    for key, texts in wordnet_synsets(folder):
        parts[split_of(key)].extend(texts)
        words += sum(len(t.split()) for t in texts)
    classroom = corpus_split(0).train[:CLASSROOM_SENTENCES]
    train = [*parts["train"], *classroom, *LECTURE_SENTENCES]
    random.Random(0).shuffle(train)
    return EnglishText(train, parts["valid"], parts["test"], words)


def python_docs(max_paragraphs: int = 400) -> list[str]:
    """Prose paragraphs of Python's documentation (pydoc_data.topics): a source the model never trained on."""
    from pydoc_data.topics import topics

    out = []
    for name in sorted(topics):
        for para in re.split(r"\n\s*\n", topics[name]):
            lines = [ln.strip() for ln in para.splitlines()]
            text = " ".join(ln for ln in lines if ln)
            # prose only: no code (>>> or indented), no tables or rules, a few sentences long
            if (any(ln.startswith((">>>", "...", "+", "=", "*")) for ln in lines) or para.startswith("   ")
                    or not 60 <= len(text) <= 600 or not text[0].isalpha()):
                continue
            out.append(text)
    return out[:: max(1, len(out) // max_paragraphs)][:max_paragraphs]


def heldout_sample(text: EnglishText, n: int = 400) -> dict[str, list[str]]:
    """What the app measures live: n test-split texts of WordNet and n paragraphs of the Python docs."""
    rng = random.Random(7)
    return {"wordnet": rng.sample(text.test, min(n, len(text.test))), "python_docs": python_docs(n)}


def load_heldout() -> dict[str, list[str]]:
    """The shipped held-out sample (assets/english_heldout.json)."""
    if not HELDOUT_PATH.exists():
        raise ValueError(f"the English held-out sample is missing from {HELDOUT_PATH}; rebuild the English model.")
    return json.loads(HELDOUT_PATH.read_text(encoding="utf-8"))


# -- tokenizer -----------------------------------------------------------------------------------------
def build_english_tokenizer(texts: Iterable[str], vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """Byte-level BPE on the training text (with a space before the first word, as inside a sentence)."""
    return build_bpe_tokenizer(texts, vocab_size=vocab_size, prefix_space=True)


def encode_lines(tokenizer: Tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """<bos> ids <eos> per text."""
    bos, eos = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
    return [[bos, *e.ids, eos] for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


# -- batches -------------------------------------------------------------------------------------------
@dataclass
class EnglishData:
    """Batches of English: each row starts at a text's <bos> and packs whole texts up to seq_len tokens; a share
    of rows is a random token sequence repeated to fill the row (scored from its second copy on), so an induction
    head forms within a small budget (the classroom task does the same with words; with a tenth of the rows and one
    repeat each, about 1.5 % of the scored tokens, no induction head had formed after 3,000 steps; with a quarter of
    the rows filled, heads 1-3 of layer 1 induct at 0.97-0.98 after 4,000). batch(step) depends only on (seed, step).
    The Trainer reads batch(step) and heldout_batches()."""

    train_ids: list[list[int]]
    valid_ids: list[list[int]]
    pad_id: int
    bos_id: int
    vocab_size: int
    seed: int = 0
    batch_size: int = 64
    seq_len: int = 256
    repeat_fraction: float = 0.1
    first_id: int = 5  # ids below this are special tokens: never in a random sequence
    _heldout: list[Batch] = field(default_factory=list, repr=False)

    @classmethod
    def from_text(cls, tokenizer: Tokenizer, text: EnglishText, **kw: Any) -> EnglishData:
        return cls(encode_lines(tokenizer, text.train), encode_lines(tokenizer, text.valid),
                   tokenizer.token_to_id(PAD), tokenizer.token_to_id(BOS), tokenizer.get_vocab_size(), **kw)

    def _packed_row(self, rng: random.Random) -> list[int]:
        row: list[int] = []
        while len(row) < self.seq_len + 1:
            row += self.train_ids[rng.randrange(len(self.train_ids))]
        return row[: self.seq_len + 1]

    def _repeat_row(self, rng: random.Random) -> tuple[list[int], int]:
        """<bos> r r r ... filling the row, r random tokens: every copy after the first is predictable."""
        n = rng.randint(8, min(48, self.seq_len // 2 - 1))
        words = [rng.randrange(self.first_id, self.vocab_size) for _ in range(n)]
        reps = -(-self.seq_len // n)
        return [self.bos_id, *(words * reps)][: self.seq_len + 1], n + 2  # scored from seq[n + 2]: copy 2's 2nd

    def batch(self, step: int) -> Batch:
        rng = random.Random(self.seed * 1_000_003 + step)
        seqs, score_from = [], []
        for _ in range(self.batch_size):
            if rng.random() < self.repeat_fraction:
                seq, start = self._repeat_row(rng)
            else:
                seq, start = self._packed_row(rng), 0
            seqs.append(seq)
            score_from.append(start)
        return Batch(*pad_batch(seqs, self.pad_id, score_from))

    def heldout_batches(self, batch_size: int = 128, limit: int = 2048) -> list[Batch]:
        """Validation texts one per row (as a student's sentence runs), the first `limit` of them."""
        if not self._heldout:
            seqs = [s[: self.seq_len + 1] for s in self.valid_ids[:limit]]
            self._heldout = [Batch(*pad_batch(seqs[i: i + batch_size], self.pad_id))
                             for i in range(0, len(seqs), batch_size)]
        return self._heldout


SOURCES = {"train": "WordNet 3.0 glosses and examples (Debian wordnet-base, WordNet licence), "
                    f"{CLASSROOM_SENTENCES} classroom-corpus sentences, the lecture's sentences",
           "heldout": "the WordNet test split (3 % of synsets, by hash) and Python's documentation (PSF licence)"}


# -- the recipe ----------------------------------------------------------------------------------------
RECIPE: dict[str, Any] = dict(
    model=dict(vocab_size=VOCAB_SIZE, d_model=256, n_heads=4, n_layers=4, d_ff=1024, max_len=256, dropout=0.1,
               pos_encoding="rope"),
    train=dict(steps=4000, batch_size=64, lr=2e-3, warmup_steps=200, weight_decay=0.1, seed=0),
    data=dict(seq_len=256, repeat_fraction=0.25),
    title="English (WordNet prose, BPE)",
    description="4 layers x 4 heads, d_model 256, RoPE, byte-level BPE of 8,192 tokens (lower-cased): a word it never "
                "saw is split into pieces it knows, never <unk>; it reads up to 256 tokens. Trained on WordNet's 118k "
                "glosses and 48k example sentences (about 1.5 M words) and a sample of the classroom corpus.",
)


# -- the English encoder (masked LM) --------------------------------------------------------------------
ENCODER_PATH = ASSETS_DIR / "models" / "english-encoder.safetensors"


def english_tokenizer(path: str | Path = MODEL_PATH) -> Tokenizer:
    """The English model's own BPE tokenizer, read from its checkpoint's JSON: the encoder reuses it unchanged (its
    ids 0..4 are <pad> <unk> <bos> <eos> <mask>, so the decoder's ids and the encoder's are the same)."""
    path = Path(path)
    doc_path = path.with_suffix(".json")
    if not doc_path.exists():
        raise ValueError(f"the English model's tokenizer is read from {doc_path}, which is missing; build it first "
                         "(scripts/build_assets.py english).")
    tok = Tokenizer.from_str(json.dumps(json.loads(doc_path.read_text(encoding="utf-8"))["tokenizer"]))
    if tok.token_to_id(MASK) != 4:
        raise ValueError(f"the English tokenizer in {doc_path} has no <mask> at id 4.")
    return tok


@dataclass
class EnglishMaskedData:
    """Batches for the English encoder, trained like BERT: each row packs whole texts, <bos> text <eos> <bos> ...,
    up to seq_len tokens (a text longer than that is cut), padded on the right; `mlm.mask_tokens` then hides 15 % of
    the ordinary tokens (80 % <mask>, 10 % a random token, 10 % unchanged) and only those are scored. The padding
    is a key mask, so no token reads a pad. batch(step) depends only on (seed, step). The Trainer reads batch(step)
    and heldout_batches()."""

    train_ids: list[list[int]]
    valid_ids: list[list[int]]
    pad_id: int
    mask_id: int
    vocab_size: int
    seed: int = 0
    batch_size: int = 64
    seq_len: int = 64
    mlm_probability: float = 0.15
    _heldout: list[Batch] = field(default_factory=list, repr=False)

    @classmethod
    def from_text(cls, tokenizer: Tokenizer, text: EnglishText, **kw: Any) -> EnglishMaskedData:
        return cls(encode_lines(tokenizer, text.train), encode_lines(tokenizer, text.valid),
                   tokenizer.token_to_id(PAD), tokenizer.token_to_id(MASK), tokenizer.get_vocab_size(), **kw)

    def _row(self, rng: random.Random) -> list[int]:
        row = self.train_ids[rng.randrange(len(self.train_ids))][: self.seq_len]
        while True:
            nxt = self.train_ids[rng.randrange(len(self.train_ids))]
            if len(row) + len(nxt) > self.seq_len:
                return row
            row = row + nxt

    def _masked(self, seqs: Sequence[Sequence[int]], generator) -> Batch:
        return masked_batch(seqs, self.pad_id, self.mask_id, self.vocab_size, self.mlm_probability, generator)

    def batch(self, step: int) -> Batch:
        rng = random.Random(self.seed * 1_000_003 + step)
        seqs = [self._row(rng) for _ in range(self.batch_size)]
        return self._masked(seqs, torch.Generator().manual_seed(self.seed * 1_000_003 + step))

    def heldout_batches(self, batch_size: int = 128, limit: int = 2048) -> list[Batch]:
        """Validation texts one per row (as a student's sentence is read), the same masks every time."""
        if not self._heldout:
            seqs = [s[: self.seq_len] for s in self.valid_ids[:limit]]
            self._heldout = [self._masked(seqs[i: i + batch_size], torch.Generator().manual_seed(777 + i))
                             for i in range(0, len(seqs), batch_size)]
        return self._heldout


class MaskedLMTrainer(Trainer):
    """The Trainer on masked LM, its loss from `mlm.masked_lm_loss` (the LM head only at the scored positions:
    the same loss, about twice the steps per second with 8,192 tokens)."""

    def _loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        dev = self.device
        loss = masked_lm_loss(self.model, batch.ids.to(dev), batch.targets.to(dev), batch.key_padding_mask.to(dev))
        return loss, loss


ENCODER_RECIPE: dict[str, Any] = dict(
    model=dict(vocab_size=VOCAB_SIZE, d_model=128, n_heads=4, n_layers=4, d_ff=512, max_len=64, dropout=0.0,
               pos_encoding="rope", causal=False),
    # 2,000 steps: 1.85 steps/s measured on one thread of a shared 2-core machine, so about 18 minutes of training
    train=dict(task="mlm", steps=2000, batch_size=32, lr=3e-3, warmup_steps=100, weight_decay=0.01, seed=0),
    data=dict(seq_len=64, mlm_probability=0.15),
    title="English encoder (WordNet prose, BPE, masked LM)",
    description="4 layers x 4 heads, d_model 128, bidirectional (no causal mask), trained like BERT to fill in "
                "<mask>: the English model's byte-level BPE of 8,192 tokens (lower-cased), so an English sentence "
                "has no <unk>; reads up to 64 tokens. Trained on WordNet's glosses and example sentences.",
)
