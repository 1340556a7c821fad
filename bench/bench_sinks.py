"""The Attention sinks page's computations on the English model, timed (one torch thread, as the app runs), and the
StreamingLLM table: perplexity once the cache is full for the window alone, + the first 1 and 4 tokens, and recompute,
per stream kind and window. python bench/bench_sinks.py [--windows 16 32 64 128 256] [--tokens 512]"""

import argparse
import math
import os
import time

import torch

from viz_model.checkpoint import load_checkpoint
from viz_model.lessons import sinks as lesson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    ap.add_argument("--tokens", type=int, default=512)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ck = load_checkpoint(os.path.join(ROOT, "assets", "models", "english.safetensors"))
    m = ck.model
    seqs = lesson.heldout_ids(ck, "wordnet")
    _, t_share = timed(lambda: lesson.first_token_share(m, seqs))
    cmp, t_loss = timed(lambda: lesson.loss_comparison(m, seqs))
    ids = lesson.stream_ids(ck, "wordnet", "one", args.tokens)
    _, t_default = timed(lambda: lesson.stream_experiment(m, ids, lesson.DEFAULT_WINDOW, lesson.DEFAULT_SINKS))
    print(f"load average {os.getloadavg()[0]:.2f}; first-token map {t_share:.2f} s, loss comparison {t_loss:.2f} s, "
          f"default stream (W={lesson.DEFAULT_WINDOW}, {args.tokens} tokens) {t_default:.2f} s")
    losses = ", ".join(f"{r['input']} {r['loss (nats)']:.3f}" for r in lesson.loss_table(cmp))
    print(f"loss on held-out texts: {losses}")
    print("\n| stream | W | window alone | + first 1 | + first 4 | recompute | seconds |")
    print("|---|---|---|---|---|---|---|")
    for kind in lesson.STREAMS:
        ids = lesson.stream_ids(ck, "wordnet", kind, args.tokens)
        for w in args.windows:
            t0 = time.perf_counter()
            rows = (*lesson.stream_caches(m, ids, w, (0, 1, 4)), lesson.stream_recompute(m, ids, w))
            ppl = [math.exp(x[w - 1:].mean()) for x in rows]
            print(f"| {kind} | {w} | " + " | ".join(f"{p:.1f}" for p in ppl) + f" | {time.perf_counter() - t0:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
