"""GPU check (< 3 minutes on an H200): the cost sweep on CUDA and a short mixed-precision training run.

On a machine without CUDA it prints "no CUDA" and exits 0.
Run: .venv/bin/python bench/gpu_check.py [--max-T 32768] [--steps 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_cost beside this file

from bench_cost import format_sweep  # noqa: E402

from viz_model.lessons import cost  # noqa: E402


def train_run(steps: int, amp: bool) -> str:
    """The classroom preset trained for `steps` on CUDA: speed, losses and the autocast dtype."""
    from viz_model.tokenizer import load_tokenizer
    from viz_model.train import EvalEvent, StepEvent, TrainConfig, Trainer, build_model

    tokenizer = load_tokenizer("word")
    torch.manual_seed(0)
    model = build_model("classroom", tokenizer)
    cfg = TrainConfig(steps=steps, batch_size=48, lr=2e-3, device="cuda", amp=amp, eval_every=steps,
                      snapshot_every=0, sample_every=0)
    trainer = Trainer(model, tokenizer, cfg)
    first = last = None
    heldout = float("nan")
    start = time.perf_counter()
    for ev in trainer:
        if isinstance(ev, StepEvent):
            first = first or ev
            last = ev
        elif isinstance(ev, EvalEvent):
            heldout = ev.heldout_loss
    wall = time.perf_counter() - start
    dtype = str(trainer._amp_dtype).removeprefix("torch.") if trainer._amp_dtype else "float32"
    return (f"amp={amp!s:5s} autocast {dtype:8s} {trainer.step_count} steps in {wall:5.1f} s "
            f"({trainer.step_count / trainer.train_seconds:6.1f} steps/s, {last.tokens_per_s:,.0f} tok/s last step); "
            f"loss {first.loss:.3f} -> {last.loss:.3f}, held-out {heldout:.3f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-T", type=int, default=32768)
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA")
        return 0
    start = time.perf_counter()
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    Ts = [2**i for i in range(6, 20) if 2**i <= args.max_T]
    s = cost.cost_sweep(Ts, d_model=128, n_heads=4, device="cuda", backward=True, repeats=5, time_budget_s=90)
    print(format_sweep(s))
    print(f"sweep took {time.perf_counter() - start:.1f} s\n")
    for amp in (True, False):
        print(train_run(args.steps, amp))
    print(f"total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
