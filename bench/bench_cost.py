"""The cost of attention on this machine: time and peak memory of one layer against T, both paths, and the KV cache.

Prints one table (T, the T×T matrix's computed MB, then ms and measured MB for the materialised path and for SDPA,
forward and forward+backward), the fitted log-log slopes, and the KV-cache table.
Run: nice -n 5 .venv/bin/python bench/bench_cost.py [--device cpu] [--max-T 4096] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from viz_model.lessons import cost


def _cell(row: cost.CostRow) -> str:
    if row.skipped:
        return f"{'skipped':>19s}"
    return f"{row.ms:9.2f} {row.peak_mb:9.2f}"


def format_sweep(s: cost.CostSweep) -> str:
    modes = [m for m in cost.MODES if any(r.mode == m for r in s.rows)]
    cols = [(p, m) for m in modes for p in cost.PATHS]
    short = {"materialised": "T×T", "sdpa": "SDPA", "forward": "fwd", "forward+backward": "fwd+bwd"}
    head1 = f"{'':>6s} {'T×T':>9s} " + " ".join(f"{short[p] + ' ' + short[m]:>19s}" for p, m in cols)
    head2 = f"{'T':>6s} {'MB':>9s} " + " ".join(f"{'ms':>9s} {'MB':>9s}" for _ in cols)
    lines = [f"device: {s.device}; one causal layer, d_model {s.d_model}, {s.n_heads} heads, batch {s.batch}, "
             f"{s.dtype}", f"memory limit: {s.limit_note}", f"memory measured: {s.memory_method}", head1, head2]
    for T, tt in zip(s.Ts, s.score_matrix_mb):
        lines.append(f"{T:6d} {tt:9.2f} " + " ".join(_cell(s.row(T, p, m)) for p, m in cols))
    skipped = sorted({(r.T, r.path, r.mode, r.skipped) for r in s.rows if r.skipped})
    lines += [f"  skipped T={T} {p} {m}: {why}" for T, p, m, why in skipped]
    lines.append("fitted log-log slopes (least squares on log T):")
    for sl in s.slopes:
        fmt = (lambda v: "  n/a" if v is None else f"{v:5.2f}")
        lines.append(f"  {sl.path:13s} {sl.mode:17s} time {fmt(sl.time)}  memory {fmt(sl.memory)}  "
                     f"over T = {', '.join(map(str, sl.fit_Ts))}")
    return "\n".join(lines)


def format_kv(rows: list[cost.KVRow]) -> str:
    lines = [f"{'model':52s} {'T':>6s} {'layers':>6s} {'kv heads':>8s} {'d_k':>4s} {'B/num':>5s} "
             f"{'per token':>10s} {'KV cache':>12s} {'1 layer T×T':>12s}"]
    for r in rows:
        lines.append(f"{r.model[:52]:52s} {r.T:6d} {r.n_layers:6d} {r.n_kv_heads:8d} {r.d_k:4d} {r.dtype_bytes:5d} "
                     f"{_size(r.per_token_bytes):>10s} {_size(r.bytes):>12s} {_size(r.score_matrix_bytes):>12s}")
    return "\n".join(lines)


def _size(n: int) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--min-T", type=int, default=64)
    p.add_argument("--max-T", type=int, default=4096)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (the machine is shared)")
    p.add_argument("--time-budget", type=float, default=150.0, help="seconds; later points are skipped")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    Ts = [t for t in (2**i for i in range(4, 20)) if args.min_T <= t <= args.max_T]
    start = time.perf_counter()
    s = cost.cost_sweep(Ts, d_model=args.d_model, n_heads=args.heads, batch=args.batch, device=args.device,
                        backward=True, repeats=args.repeats, time_budget_s=args.time_budget)
    print(format_sweep(s))
    print(f"sweep took {time.perf_counter() - start:.1f} s\n")
    print(format_kv(cost.kv_cache_table()))


if __name__ == "__main__":
    main()
