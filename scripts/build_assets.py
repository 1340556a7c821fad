"""Rebuild every shipped asset: tokenizers, corpus sample, and the models under assets/models/.

    .venv/bin/python scripts/build_assets.py                 # everything (about 45 minutes on 2 cores: each
                                                             # translator about 14, the masked-LM encoder 8)
    .venv/bin/python scripts/build_assets.py induction       # just some models
    .venv/bin/python scripts/build_assets.py english [--device cuda] [--steps N] [--wordnet DIR]
    .venv/bin/python scripts/build_assets.py english-encoder [--device auto] [--steps N]   # after english
Models train one at a time with one CPU thread (fastest for these small matrices on a shared machine). The English
model and the English encoder (viz_model/english.py) train on CUDA where there is one ("auto"); they need Debian's
wordnet-base. The encoder reuses the English model's tokenizer and is sized for one CPU thread (about 25 minutes on a
shared 2-core machine); --measure-only measures a saved one again.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch

from viz_model import ASSETS_DIR, checkpoint, english
from viz_model.config import ModelConfig
from viz_model.data import write_assets
from viz_model.lessons import encoder, encoder_decoder
from viz_model.lessons import english as english_measures
from viz_model.model import TinyTransformer
from viz_model.tokenizer import display_token
from viz_model.train import RECIPES, EvalEvent, StepEvent, TrainConfig, Trainer, train_and_save

# Held-out measurements a task's shipped model records in its metadata (the lesson modules compute them):
# on the corpus's held-out sentences, and per structural split (seen / unseen skeletons) under "structural".
LESSONS = {"mlm": encoder, "translate": encoder_decoder}


def metrics_of(task: str, guided: bool = False):
    lesson, kw = LESSONS[task], ({"guided": True} if guided else {})

    def metrics(model, tokenizer) -> dict:
        return {**lesson.heldout_metrics(model, tokenizer, **kw),
                "structural": lesson.structural_metrics(model, tokenizer, **kw)}
    return metrics


def build(name: str) -> dict:
    r = RECIPES[name]
    cfg = TrainConfig(task=r["task"], steps=r["steps"], lr=r["lr"], batch_size=r["batch_size"], seed=0,
                      device="cpu", eval_every=250, snapshot_every=0, sample_every=500, **r.get("train", {}))
    # the guided head's score is reported apart from the best head that found its own way
    metrics = metrics_of(r["task"], guided=bool(cfg.align_weight)) if r["task"] in LESSONS else None
    return train_and_save(ASSETS_DIR / "models" / f"{name}.safetensors", preset=r["preset"],
                          model_overrides=r["model"], train=cfg, title=r["title"], description=r["description"],
                          kind=r.get("kind", "transformer"), metrics=metrics)


def build_english(out: str | Path = english.MODEL_PATH, device: str = "auto", steps: int | None = None,
                  wordnet: str | Path = english.WORDNET_DIR, log=print) -> dict:
    """Build the BPE tokenizer, train the English model, measure it on held-out text, save checkpoint + sample."""
    t0 = time.perf_counter()
    text = english.english_text(wordnet)
    tokenizer = english.build_english_tokenizer(text.train)
    R = english.RECIPE
    data = english.EnglishData.from_text(tokenizer, text, **R["data"], batch_size=R["train"]["batch_size"])
    n_tokens = sum(map(len, data.train_ids))
    log(f"text: {len(text.train):,} train / {len(text.valid):,} valid / {len(text.test):,} test texts, "
        f"{text.words:,} WordNet words, {n_tokens:,} training tokens ({time.perf_counter() - t0:.0f} s)")
    cfg = TrainConfig(**{**R["train"], **({"steps": steps} if steps else {})}, device=device, eval_every=250,
                      snapshot_every=0, sample_every=0)
    torch.manual_seed(cfg.seed)
    trainer = Trainer(TinyTransformer(ModelConfig.from_dict(R["model"])), tokenizer, cfg, data=data)
    log(f"training {trainer.model.num_params():,} parameters for {cfg.steps} steps on {trainer.device}")
    for ev in trainer:
        if isinstance(ev, StepEvent) and (ev.step % 100 == 0 or ev.step == 1):
            log(f"step {ev.step:5d}  loss {ev.loss:.4f}  lr {ev.lr:.2e}  {ev.tokens_per_s:,.0f} tok/s")
        elif isinstance(ev, EvalEvent):
            log(f"step {ev.step:5d}  validation loss {ev.heldout_loss:.4f}  accuracy {ev.accuracy:.3f}")
    model = trainer.model.to("cpu").eval()
    heldout = english.heldout_sample(text)
    english.HELDOUT_PATH.write_text(json.dumps(heldout, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    meta = {
        "title": R["title"], "description": R["description"], "task": "english", "kind": "transformer",
        "tokenizer": "english-bpe", "bos": True, "pos_encoding": "rope", "params": model.num_params(),
        "steps": trainer.step_count, "seed": cfg.seed, "train_loss": round(trainer.last_loss, 5),
        "train_seconds": round(trainer.train_seconds, 1), "device": str(trainer.device),
        "train_tokens": n_tokens, "wordnet_words": text.words, "recipe": {k: R[k] for k in ("model", "train", "data")},
        "train_config": asdict(cfg), "sources": english.SOURCES,
    }
    bigram = english_measures.Bigram.fit(data.train_ids, tokenizer.get_vocab_size())
    meta.update(english_measures.measure(model, tokenizer, heldout, bigram=bigram))
    meta["build_seconds"] = round(time.perf_counter() - t0, 1)
    checkpoint.save(model, tokenizer, out, meta)
    log(f"saved {out}: {json.dumps(english_measures.summary(meta))}")
    return meta


def build_english_encoder(out: str | Path = english.ENCODER_PATH, device: str = "auto", steps: int | None = None,
                          wordnet: str | Path = english.WORDNET_DIR, log=print) -> dict:
    """Train the English masked-LM encoder (the English model's BPE, WordNet's text, BERT's masking), save it, then
    measure its fill-ins on the held-out WordNet sample against the unigram baseline (measure_english_encoder)."""
    t0 = time.perf_counter()
    text = english.english_text(wordnet)
    tokenizer = english.english_tokenizer()
    R = english.ENCODER_RECIPE
    data = english.EnglishMaskedData.from_text(tokenizer, text, **R["data"], seed=R["train"]["seed"],
                                               batch_size=R["train"]["batch_size"])
    n_tokens = sum(map(len, data.train_ids))
    log(f"text: {len(text.train):,} train / {len(text.valid):,} valid texts, {n_tokens:,} training tokens "
        f"({time.perf_counter() - t0:.0f} s)")
    cfg = TrainConfig(**{**R["train"], **({"steps": steps} if steps else {})}, device=device, eval_every=400,
                      snapshot_every=0, sample_every=0)
    torch.manual_seed(cfg.seed)
    trainer = english.MaskedLMTrainer(TinyTransformer(ModelConfig.from_dict(R["model"])), tokenizer, cfg, data=data)
    log(f"training {trainer.model.num_params():,} parameters for {cfg.steps} steps on {trainer.device} "
        f"({torch.get_num_threads()} thread(s))")
    for ev in trainer:
        if isinstance(ev, StepEvent) and (ev.step % 50 == 0 or ev.step == 1):
            log(f"step {ev.step:5d}  loss {ev.loss:.4f}  lr {ev.lr:.2e}  {ev.step / ev.elapsed_s:.2f} steps/s")
        elif isinstance(ev, EvalEvent):
            log(f"step {ev.step:5d}  validation masked loss {ev.heldout_loss:.4f}  accuracy {ev.accuracy:.3f}")
    model = trainer.model.to("cpu").eval()
    meta = {
        "title": R["title"], "description": R["description"], "task": "mlm", "kind": "transformer",
        "tokenizer": "english-bpe", "bos": True, "pos_encoding": R["model"]["pos_encoding"],
        "params": model.num_params(), "steps": trainer.step_count, "seed": cfg.seed,
        "train_loss": round(trainer.last_loss, 5), "train_seconds": round(trainer.train_seconds, 1),
        "steps_per_second": round(trainer.step_count / max(trainer.train_seconds, 1e-9), 3),
        "device": str(trainer.device), "threads": torch.get_num_threads(), "train_tokens": n_tokens,
        "recipe": {k: R[k] for k in ("model", "train", "data")}, "train_config": asdict(cfg),
        "sources": english.SOURCES,
    }
    checkpoint.save(model, tokenizer, out, meta)
    return measure_english_encoder(out, wordnet, text=text, build_started=t0, log=log)


def measure_english_encoder(path: str | Path = english.ENCODER_PATH, wordnet: str | Path = english.WORDNET_DIR,
                            text: english.EnglishText | None = None, build_started: float | None = None,
                            log=print) -> dict:
    """Held-out fill-in accuracy of the saved English encoder against the unigram baseline, written into its
    metadata: on the WordNet test split's shipped sample, less any text that also occurs in the training text."""
    t0 = time.perf_counter()
    ckpt = checkpoint.load_checkpoint(path)
    text = text or english.english_text(wordnet)
    tok, seen = ckpt.tokenizer, set(text.train)
    sample = english.load_heldout()["wordnet"]
    excluded = [i for i, t in enumerate(sample) if t in seen]
    unigram = encoder.Unigram.fit(english.encode_lines(tok, text.train), tok.get_vocab_size())
    texts = encoder.heldout_fill_texts(excluded)
    meta = {**ckpt.metadata, "heldout_excluded": excluded, "unigram_ranked": unigram.ranked,
            "unigram_top_token": display_token(tok, unigram.ranked[0]), "fill_p": encoder.FILL_P,
            "fill_seed": encoder.FILL_SEED}
    meta.update(encoder.fill_in_accuracy(ckpt.model, tok, texts, unigram.ranked))
    meta["unigram_loss"] = encoder.unigram_loss(unigram, tok, texts, ckpt.model.config.max_len)
    if build_started is not None:
        meta["build_seconds"] = round(time.perf_counter() - build_started, 1)
    meta["measure_seconds"] = round(time.perf_counter() - t0, 1)
    checkpoint.save(ckpt.model, tok, path, meta)
    log(f"saved {path}: " + json.dumps({k: meta.get(k) for k in (
        "params", "steps", "build_seconds", "train_seconds", "steps_per_second", "fill_top1", "fill_top5",
        "unigram_top1", "unigram_top5", "fill_loss", "unigram_loss", "n_texts", "n_masked")}))
    return meta


def remeasure_english(path: str | Path = english.MODEL_PATH, wordnet: str | Path = english.WORDNET_DIR,
                      log=print) -> dict:
    """Measure the shipped English model again (on this machine, with the shipped held-out sample and the bigram
    refitted from WordNet's training split) and rewrite its metadata; the weights are unchanged."""
    ckpt = checkpoint.load_checkpoint(path)
    text = english.english_text(wordnet)
    bigram = english_measures.Bigram.fit(english.encode_lines(ckpt.tokenizer, text.train),
                                         ckpt.tokenizer.get_vocab_size())
    meta = {**ckpt.metadata, **english_measures.measure(ckpt.model, ckpt.tokenizer, english.load_heldout(), bigram)}
    meta["measured_on"] = "cpu"
    checkpoint.save(ckpt.model, ckpt.tokenizer, path, meta)
    log(f"measured {path}: {json.dumps(english_measures.summary(meta))}")
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Rebuild Attention Lab's shipped assets (all of them by default).")
    p.add_argument("names", nargs="*", help=f"models to build: english, english-encoder, {', '.join(RECIPES)}")
    p.add_argument("--device", default="auto", help="the English models' device: auto | cpu | cuda | mps")
    p.add_argument("--steps", type=int, default=None, help="the English models: fewer steps for a quick trial")
    p.add_argument("--wordnet", default=str(english.WORDNET_DIR), help="folder of WordNet's data.* files")
    p.add_argument("--out", default=None, help="the English model's (or encoder's) .safetensors path")
    p.add_argument("--measure-only", action="store_true", help="the English models: measure the shipped one again")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if not args.names:
        write_assets()
    for name in args.names or [*RECIPES, "english", "english-encoder"]:
        if name == "english":
            torch.set_num_threads(2)  # its matrices are large enough for two threads to help
            out = args.out or english.MODEL_PATH
            if args.measure_only:
                remeasure_english(out, args.wordnet)
            else:
                build_english(out, device=args.device, steps=args.steps, wordnet=args.wordnet)
        elif name == "english-encoder":  # needs the English model first: it reuses that model's tokenizer
            torch.set_num_threads(1)  # sized to train on one CPU thread
            out = args.out or english.ENCODER_PATH
            if args.measure_only:
                measure_english_encoder(out, args.wordnet)
            else:
                build_english_encoder(out, device=args.device, steps=args.steps, wordnet=args.wordnet)
        elif name in RECIPES:
            build(name)
        else:
            raise SystemExit(f"unknown model {name!r}; choose from english, english-encoder, "
                             f"{', '.join(sorted(RECIPES))}")


if __name__ == "__main__":
    main()
