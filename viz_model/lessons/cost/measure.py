"""How one run is measured on this machine: its median wall time, and its peak memory (torch's CPU allocator
events from the profiler, on one thread; CUDA's peak counter on a GPU)."""

from __future__ import annotations

import concurrent.futures
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

CPU_MEMORY_METHOD = (
    "peak of live bytes that torch's CPU allocator handed out during one run, from torch.profiler "
    "(profile_memory=True) allocation and free events summed in time order; the input and the layer's weights, "
    "allocated before the run, are not counted, nor is BLAS/oneDNN scratch memory outside torch's allocator"
)

CUDA_MEMORY_METHOD = (
    "torch.cuda.max_memory_allocated() during one run minus torch.cuda.memory_allocated() before it "
    "(peak statistics reset first); the caching allocator's reserved but unused memory is not counted"
)


def available_memory(device: torch.device) -> tuple[int, str]:
    """(free bytes, where the number came from): CUDA's free memory, else MemAvailable from /proc/meminfo."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free), "free GPU memory (torch.cuda.mem_get_info)"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    except OSError:
        pass
    return 4 * 2**30, "a fixed 4 GiB (this system has no /proc/meminfo)"


def device_name(device: str | torch.device) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    model = "CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    n = torch.get_num_threads()
    return f"{model}, {n} thread{'s' if n > 1 else ''}"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_ms(run: Callable[[], None], device: torch.device, repeats: int = 3, warmup: int = 1) -> float:
    """Median wall time in ms of `repeats` runs after `warmup` runs (synchronised on CUDA)."""
    for _ in range(warmup):
        run()
    _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        _sync(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# Every profile runs on this one thread. Each Streamlit session runs its script on a thread of its own, and two
# torch.profiler sessions overlapping on two threads crash the process (SIGSEGV, 3 of 3 runs; #26). Kineto also logs
# "External init callback must run in same thread as registerClient" once per process, for the first profile off
# the main thread where torch registered it: harmless, and no Streamlit script runs on the main thread.
_PROFILER_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="cost-profiler")


def cpu_peak_bytes(run: Callable[[], None]) -> int:
    """Peak live bytes allocated by torch on the CPU during run() (see CPU_MEMORY_METHOD)."""
    return _PROFILER_THREAD.submit(_profiled_peak, run).result()


def _profiled_peak(run: Callable[[], None]) -> int:
    from torch.profiler import ProfilerActivity, profile

    os.environ.setdefault("KINETO_LOG_LEVEL", "99")  # kineto otherwise prints two log lines per profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = [(e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for _t, nbytes in sorted(events):
        live += nbytes
        peak = max(peak, live)
    return peak


def peak_bytes(run: Callable[[], None], device: torch.device) -> int:
    """Peak memory of one run above what was allocated before it."""
    if device.type != "cuda":
        return cpu_peak_bytes(run)
    _sync(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    run()
    _sync(device)
    return max(0, torch.cuda.max_memory_allocated(device) - before)


def _is_oom(err: BaseException) -> bool:
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate" in text
