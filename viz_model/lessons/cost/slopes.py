"""What the page shows of a sweep: the log–log lines and table, and the lecture's "memory grows with T²" held
against the measured slope (a claim, or a note when the lengths measured cannot decide it)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model.lessons.common import Fact, fit_slope, measured_ago
from viz_model.lessons.cost.measure import CPU_MEMORY_METHOD
from viz_model.lessons.cost.sweep import MODES, PATHS, CostSweep

SLOPE_OK = (1.8, 2.2)     # the band for "memory grows with T²"
SHORT = {"materialised": "T×T (traced)", "sdpa": "SDPA"}
ABBREV = {"materialised": "T×T", "sdpa": "SDPA", "forward": "fwd", "forward+backward": "fwd+bwd"}


@dataclass(frozen=True)
class Note:
    """A sentence the page shows between the claims, as an "info" box or a "caption": a measurement that cannot
    decide the claim (too few or too short lengths), or the numbers beside it."""

    kind: str
    text: str


def _modes(sweep: CostSweep) -> list[str]:
    return [m for m in MODES if any(r.mode == m for r in sweep.rows)]


def _num(v: float) -> str:
    """Three significant digits, without exponents: 0.00391, 1.53, 436, 1,234."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def sweep_lines(sweep: CostSweep, metric: str) -> list[dict]:
    """The log–log chart's lines for "time" or "memory": each path and mode with its fitted slope, and for memory
    the computed size of one T×T score matrix."""
    lines = []
    for mode in _modes(sweep):
        for path in PATHS:
            Ts, ms, mb = sweep.series(path, mode)
            slope = sweep.slope(path, mode)
            lines.append(dict(name=f"{SHORT[path]}, {mode}", T=Ts, y=ms if metric == "time" else mb, kind=path,
                              mode=mode, slope=slope.time if metric == "time" else slope.memory))
    if metric == "memory":
        mb = list(sweep.score_matrix_mb)
        lines.append(dict(name="one T×T score matrix (computed, not measured)", T=list(sweep.Ts), y=mb,
                          kind="computed", mode="computed", slope=fit_slope(sweep.Ts, mb)))
    return lines


def sweep_caption(sweep: CostSweep, when: float, wall_s: float) -> str:
    ago = measured_ago(when)
    return (f"Measured on **{sweep.device}** {ago} (took {wall_s:.0f} s): one causal "
            f"attention layer, d_model {sweep.d_model}, {sweep.n_heads} heads, batch {sweep.batch}, "
            f"{sweep.dtype}. Median of 3 timed runs after a warm-up.")


def sweep_rows(sweep: CostSweep) -> list[dict]:
    """One row per T: the T×T matrix's computed size, then ms and MB measured for each path and mode."""
    rows = []
    for T, tt in zip(sweep.Ts, sweep.score_matrix_mb):
        row = {"T": f"{T:,}", "T×T MB (computed)": _num(tt)}
        for mode in _modes(sweep):
            for path in PATHS:
                r = sweep.row(T, path, mode)
                name = f"{ABBREV[path]} {ABBREV[mode]}"
                row[f"{name} ms"] = "skipped" if r.skipped else _num(r.ms)
                row[f"{name} MB"] = "skipped" if r.skipped else _num(r.peak_mb)
        rows.append(row)
    return rows


def skipped_text(sweep: CostSweep) -> str | None:
    skipped = sorted({(r.T, r.path, r.mode, r.skipped) for r in sweep.rows if r.skipped})
    if not skipped:
        return None
    return "**Skipped points**\n" + "\n".join(f"- T = {T:,}, {SHORT[p]}, {m}: {why}" for T, p, m, why in skipped)


def _memory_claim(sweep: CostSweep, mode: str) -> Fact | Note:
    """The traced path's memory slope in this mode against the quadratic: a Fact, or a Note when the lengths
    cannot decide it."""
    lo, hi = SLOPE_OK
    m = sweep.slope("materialised", mode)
    if m.memory is None:
        return Note("info", f"{mode}: fewer than two lengths were measured, so there is no slope to fit. Widen the "
                            "T range.")
    over = f"T = {', '.join(f'{t:,}' for t in m.fit_Ts)}"
    if lo <= m.memory <= hi:
        return Fact(True, f"T×T (traced) path, {mode}: measured memory slope **{m.memory:.2f}** over {over} "
                          "(2 = quadratic).")
    if max(m.fit_Ts) < 512:
        return Note("info", f"T×T (traced) path, {mode}: memory slope {m.memory:.2f} over {over} — at such short T "
                            "the fixed buffers and the (T, d_model) tensors still weigh as much as the T×T matrix. "
                            "Extend the range to T ≥ 512 to see the quadratic.")
    return Fact(False, f"T×T (traced) path, {mode}: measured memory slope **{m.memory:.2f}** over {over}, "
                       f"outside [{lo}, {hi}]: not the quadratic the lecture predicts on this run.")


def slope_claims(sweep: CostSweep) -> list[Fact | Note]:
    """The lecture's "memory grows with T²" against the measured slopes, mode by mode, with SDPA's slope and the
    time slopes as notes beside it."""
    out: list[Fact | Note] = []
    for mode in _modes(sweep):
        out.append(_memory_claim(sweep, mode))
        sd = sweep.slope("sdpa", mode)
        if sweep.slope("materialised", mode).memory is not None and sd.memory is not None:
            out.append(Note("caption", f"SDPA, {mode}: memory slope {sd.memory:.2f} (1 = linear) — it never stores "
                                       "the T×T matrix."))
    fwd_t, sdpa_t = sweep.slope("materialised", "forward").time, sweep.slope("sdpa", "forward").time
    on_cpu = sweep.memory_method == CPU_MEMORY_METHOD
    if fwd_t is not None and sdpa_t is not None:
        out.append(Note("caption", f"Time slopes (forward): T×T {fwd_t:.2f}, SDPA {sdpa_t:.2f}. Time is noisier than "
                        f"memory, and on a {'CPU' if on_cpu else 'GPU'} it shows a lower slope at small T because "
                        "fixed overheads (Python, kernel calls, thread start-up) weigh as much as the T² work there. "
                        "Both paths still do T² multiply-adds: SDPA saves memory, not the quadratic work."
                        + (" Above 2, as here, usually means the T×T matrices have outgrown the CPU's caches, so "
                           "each entry also costs a trip to main memory." if on_cpu and fwd_t > SLOPE_OK[1] else "")))
    return out


def gpu_name() -> str | None:
    """The server's GPU, or None without one."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


# -- what the page says ------------------------------------------------------------------------------------------------
LECTURE_QUOTE = "> *The score matrix has one entry per pair of positions, so memory grows with T².* — the lecture"

NO_GPU = ("**No GPU on this server:** `torch.cuda.is_available()` is False, so only the CPU is measured. On a "
          "GPU the same sweep would reach much longer T before memory runs out. Its memory slopes would be the "
          "same — about 2 for the T×T path, about 1 for SDPA, whose fused (FlashAttention-style) kernels never "
          "write the T×T matrix to GPU memory — because memory counts entries, not speed. Its time curve would "
          "start flat (at small T a GPU mostly waits on kernel launches) and bend up to the quadratic once the "
          "T² work fills the chip.")

RNN_WORK = ("An RNN does **O(n·d²)** work for a sequence (one d×d matrix per step, n steps one after another); "
            "attention does **O(n²·d)** (every pair of positions, all at once). Attention wins while n < d, "
            "and it runs in parallel; past that the n² term is the trade that was made.")
