"""Logit lens page (#40 item 1): server time at T = 32 on a GPT-2-small-shaped folder (124M, random weights,
bench/gpt2_small.py) side by side with the English model. Quality bar: at most 1 s on GPT-2 small.

Measured in one process on the machine's torch threads (the app's per-request setting: 1 thread, see the sidebar's
Device; --threads to change): (a) the lens's model pass and read-out (lessons.lens.lens_view: what a cache miss
computes), (b) the page's figures (figures.lens, built from that result), (c) the whole page in AppTest on a sentence
it has not seen (a cold cache for that sentence; the model already loaded), each the median of --repeats runs.
Run: nice -n 10 .venv/bin/python bench/bench_lens.py [--repeats 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
T = 32
WORDS = ("the cat sat on the mat because it was tired and the dog ran to the park with a ball while she read a book "
         "about rivers and trains in the cold winter night").split()


def _sentence(ckpt, seed: int) -> list[int]:
    from viz_model.model_text import encode_for, uses_bos

    words = WORDS[seed % len(WORDS):] + WORDS[: seed % len(WORDS)]
    ids = encode_for(ckpt, " ".join(words * 3), bos=uses_bos(ckpt)).ids
    return ids[:T]


def _median(fn, repeats: int) -> float:
    out = []
    for i in range(repeats):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def measure(name: str, ckpt, repeats: int) -> dict:
    from viz_model.figures import lens as figs
    from viz_model.lessons import lens
    from viz_model.model_text import token_texts

    model = ckpt.model
    lens.lens_view(model, _sentence(ckpt, 0))  # warm-up (first-call allocations)
    views = {}

    def run_pass(i):
        views[i] = lens.lens_view(model, _sentence(ckpt, i + 1))

    t_pass = _median(run_pass, repeats)

    def run_figs(i):
        v, ids = views[i], _sentence(ckpt, i + 1)
        toks = token_texts(ckpt, ids)
        rows = lens.row_names(v.n_rows - 1)
        figs.top_token_map(v.top_p, lens.top_texts(v, lambda x: token_texts(ckpt, x)), toks, rows, "map")
        figs.rank_curve(v.final_rank[:, -1], v.final_p[:, -1], rows, "x", "y", model.config.vocab_size)

    t_figs = _median(run_figs, repeats)
    return {"model": name, "layers": model.config.n_layers, "vocab": model.config.vocab_size,
            "params": sum(p.numel() for p in model.parameters()), "pass": t_pass, "figures": t_figs}


def page_time(model_title: str, text_for, repeats: int) -> float:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["model_key"] = model_title
    at.run()
    at.switch_page("app_pages/lens.py").run()
    times = []
    for i in range(repeats):
        at.text_input(key="lens_text").set_value(text_for(i))
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(ROOT / "bench"))
    import gpt2_small

    folder = gpt2_small.ensure()
    os.environ["ATTENTION_LAB_MODEL_DIRS"] = str(folder.parent)
    from viz_model.checkpoint import load_checkpoint
    from viz_model.ui import models

    english = load_checkpoint(ROOT / "assets" / "models" / "english.safetensors")
    gpt2 = load_checkpoint(folder)
    rows = [measure("English", english, args.repeats), measure("GPT-2 small (folder)", gpt2, args.repeats)]
    titles = {e.key: e.title for e in models.available_models(("transformer",))}

    def text_for(ck):
        from viz_model.model_text import encode_for

        def make(i):
            words = WORDS[(i + 3) % len(WORDS):] + WORDS[: (i + 3) % len(WORDS)]
            text = " ".join(words * 3)
            ids = encode_for(ck, text).ids  # cut to T tokens' worth of words
            while len(ids) > T - 1:
                text = text.rsplit(" ", 1)[0]
                ids = encode_for(ck, text).ids
            return text
        return make

    rows[0]["page"] = page_time(titles.get("english", "english"), text_for(english), args.repeats)
    rows[1]["page"] = page_time(titles[folder.name], text_for(gpt2), args.repeats)
    print(f"Logit lens at T = {T}, torch threads {args.threads}, median of {args.repeats} (seconds)\n")
    print("| model | layers | vocab | params | lens pass | figures | page run (new sentence) | ÷ English (page) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['layers']} | {r['vocab']:,} | {r['params'] / 1e6:.0f}M | {r['pass']:.3f} | "
              f"{r['figures']:.3f} | {r['page']:.3f} | {r['page'] / rows[0]['page']:.1f}× |")


if __name__ == "__main__":
    main()
