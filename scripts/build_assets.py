"""Rebuild every shipped asset: tokenizers, corpus sample, and the models under assets/models/.

    .venv/bin/python scripts/build_assets.py                 # everything (about 45 minutes on 2 cores: each
                                                             # translator about 14, the masked-LM encoder 8)
    .venv/bin/python scripts/build_assets.py induction       # just some models
Models train one at a time with one CPU thread (fastest for these small matrices on a shared machine).
"""

from __future__ import annotations

import sys

import torch

from viz_model import ASSETS_DIR
from viz_model.data import write_assets
from viz_model.lessons import encoder, encoder_decoder
from viz_model.train import RECIPES, TrainConfig, train_and_save

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


def main(names: list[str]) -> None:
    torch.set_num_threads(1)
    if not names:
        write_assets()
    for name in names or list(RECIPES):
        if name not in RECIPES:
            raise SystemExit(f"unknown model {name!r}; choose from {sorted(RECIPES)}")
        build(name)


if __name__ == "__main__":
    main(sys.argv[1:])
