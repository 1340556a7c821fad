"""A folder shaped like GPT-2 small (124M parameters, random weights) in Hugging Face layout, for the benches.

    folder = gpt2_small.ensure()   # runs/bench/gpt2-small: built once (about a minute), then reused

config.json + model.safetensors from transformers' GPT2Config() (d 768, 12 layers x 12 heads, 1024 positions,
vocab 50,257), written by save_pretrained(safe_serialization=True); tokenizer.json is a byte-level BPE trained with
`tokenizers` on the shipped corpus and the repository's Markdown (a few thousand tokens, so no text is <unk>; the
model's 50,257 rows are more than the tokenizer uses, which viz_model.hf accepts). Nothing is downloaded. The
folder lives under the git-ignored runs/ and is rebuilt only when it is missing or incomplete.
Run: .venv/bin/python bench/gpt2_small.py [--force]   (prints the folder)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "runs" / "bench" / "gpt2-small"
NAME = FOLDER.name
FILES = ("config.json", "model.safetensors", "tokenizer.json")
BPE_VOCAB = 8000


def _texts() -> list[str]:
    """Training text for the tokenizer: the shipped corpus files and the repository's Markdown."""
    paths = sorted((ROOT / "assets").rglob("*.txt")) + sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").rglob("*.md"))
    out = []
    for p in paths:
        try:
            out.extend(line for line in p.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip())
        except OSError:
            continue
    return out or ["the cat sat on the mat"]


def build(folder: Path = FOLDER) -> Path:
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config())  # 124M, float32 as the hub's
    model.save_pretrained(tmp, safe_serialization=True)
    del model
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_texts(), trainer)
    tok.save(str(tmp / "tokenizer.json"))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def ensure(force: bool = False) -> Path:
    """The folder, built first if it is missing or incomplete (or force)."""
    if force or not all((FOLDER / f).is_file() for f in FILES):
        FOLDER.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        build(FOLDER)
        print(f"built {FOLDER} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return FOLDER


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true")
    print(ensure(ap.parse_args().force))
