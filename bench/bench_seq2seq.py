"""Encoder-decoder decoding tokens/s: encoder K/V reused vs the source re-encoded at every step (16/64 tokens).

Model: the shipped translator's architecture (d_model 64, 4 heads, 2 encoder + 2 decoder layers) with
max_len=128 and random weights (speed does not depend on training); <eos> never stops a run. Three ways,
side by side in one run, best of `--repeats`:
  re-encode   the whole source encoded again every step and the whole target prefix re-run (no cache)
  enc reused  the source encoded once and its cross K/V reused, the target prefix re-run (no self cache)
  reused+KV   the source encoded once, cross K/V reused, and the decoder's self-attention KV cache
The same greedy tokens are checked for all three.

    .venv/bin/python bench/bench_seq2seq.py [--repeats 3] [--threads 1] [--source 12 48]
"""

from __future__ import annotations

import argparse
import time

import torch

from viz_model.seq2seq import Seq2SeqConfig, Seq2SeqTransformer, decode_steps

MODES = {"re-encode": dict(use_cache=False, reuse_encoder=False),
         "enc reused": dict(use_cache=False, reuse_encoder=True),
         "reused+KV": dict(use_cache=True, reuse_encoder=True)}


def build_model() -> Seq2SeqTransformer:
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(vocab_size=293, d_model=64, n_heads=4, n_layers=2, n_encoder_layers=2, d_ff=256,
                        max_len=128, pos_encoding="learned")
    return Seq2SeqTransformer(cfg).eval()


def timed(model, src: list[int], n: int, mode: dict, attention: bool, repeats: int) -> tuple[float, list[int]]:
    best, ids = float("inf"), []
    for _ in range(repeats):
        t0 = time.perf_counter()
        steps = list(decode_steps(model, src, max_new_tokens=n, attention=attention, eos_id=-1, **mode))
        best = min(best, time.perf_counter() - t0)
        ids = [d.step.token_id for d in steps]
    return best, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lengths", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--source", type=int, nargs="+", default=[12, 48], help="source lengths in tokens")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = build_model()
    list(decode_steps(model, [10, 11, 3], max_new_tokens=4, eos_id=-1))  # warm-up
    print(f"translator architecture, max_len 128, random weights, {args.threads} thread(s), best of {args.repeats}")
    print(f"{'mode':<15}{'T_src':>6}{'T_tgt':>6}" + "".join(f"{m + ' tok/s':>17}" for m in MODES)
          + f"{'reuse+KV / re-encode':>22}{'enc reused / re-encode':>24}{'same':>6}")
    for attention in (True, False):
        for t_src in args.source:
            src = [5 + i % 280 for i in range(t_src - 1)] + [3]
            for n in args.lengths:
                runs = {name: timed(model, src, n, mode, attention, args.repeats) for name, mode in MODES.items()}
                speed = {name: n / t for name, (t, _) in runs.items()}
                same = len({tuple(ids) for _, ids in runs.values()}) == 1
                label = "page (traced)" if attention else "plain"
                print(f"{label:<15}{t_src:>6}{n:>6}" + "".join(f"{speed[m]:>17.0f}" for m in MODES)
                      + f"{speed['reused+KV'] / speed['re-encode']:>21.2f}×"
                      + f"{speed['enc reused'] / speed['re-encode']:>23.2f}×{'✓' if same else '✗':>6}")


if __name__ == "__main__":
    main()
