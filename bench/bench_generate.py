"""Tokens/s with and without the KV cache at 32, 128 and 512 new tokens (greedy, same tokens checked).

Model: the classroom preset (d_model 128, 4 heads, 2 layers) with max_len=640 and random weights — speed does
not depend on training. Each setting runs generate() exactly as the Generate page does (attention row traced),
and once without tracing (the plain decoding loop). Best of `--repeats` runs.

    .venv/bin/python bench/bench_generate.py [--repeats 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from viz_model.config import ModelConfig
from viz_model.generate import generate
from viz_model.model import TinyTransformer

PROMPT = [2, 17, 20, 5]  # <bos> + 3 word ids: any ids below vocab_size do


def build_model() -> TinyTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig.preset("classroom", vocab_size=2000, max_len=640)
    return TinyTransformer(cfg).eval()


def timed(model, n: int, use_cache: bool, attention: bool, repeats: int) -> tuple[float, list[int], torch.Tensor]:
    best, ids, logits = float("inf"), [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        steps = list(generate(model, PROMPT, strategy="greedy", max_new_tokens=n, seed=0, use_cache=use_cache,
                              stop_at_eos=False, attention=attention))
        best = min(best, time.perf_counter() - t0)
        ids, logits = [s.token_id for s in steps], torch.stack([s.logits for s in steps])
    return best, ids, logits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lengths", type=int, nargs="+", default=[32, 128, 512])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = build_model()
    list(generate(model, PROMPT, max_new_tokens=4, stop_at_eos=False))  # warm-up
    print(f"classroom preset, max_len 640, random weights, prompt {len(PROMPT)} tokens, "
          f"{args.threads} threads, best of {args.repeats}")
    print(f"{'mode':<16}{'new tokens':>11}{'no cache tok/s':>16}{'cache tok/s':>13}{'speedup':>9}"
          f"{'same tokens':>13}{'max |Δlogit|':>14}")
    for attention in (True, False):
        for n in args.lengths:
            t_off, ids_off, lg_off = timed(model, n, False, attention, args.repeats)
            t_on, ids_on, lg_on = timed(model, n, True, attention, args.repeats)
            diff = (lg_off - lg_on).abs().max().item()
            mode = "page (traced)" if attention else "plain"
            print(f"{mode:<16}{n:>11}{n / t_off:>16.0f}{n / t_on:>13.0f}{t_off / t_on:>8.1f}×"
                  f"{'✓' if ids_off == ids_on else '✗':>13}{diff:>14.1e}")


if __name__ == "__main__":
    main()
