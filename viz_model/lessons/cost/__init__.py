"""What attention costs: time and peak memory of one layer against T, the T×T score matrix, and the KV cache.

The lecture's order, one idea per module: measure (how one run is timed and its peak memory read on this
machine), sweep (one attention layer against T, the traced path beside SDPA, slopes on log–log), slopes (what the
page shows of a sweep: lines, table, the lecture's "memory grows with T²" against the measured slope) and kv_cache
(the KV cache's trade, computed from the models' shapes)."""

from __future__ import annotations

from viz_model.lessons.cost.kv_cache import (
    KV_TS,
    LECTURE_MODELS,
    TABLE_TS,
    KVModel,
    KVRow,
    kv_cache_bytes,
    kv_cache_table,
    kv_lines,
    kv_model_from_config,
    kv_models,
    kv_rows,
    kv_text,
    shipped_kv_models,
    size_text,
)
from viz_model.lessons.cost.measure import (
    CPU_MEMORY_METHOD,
    CUDA_MEMORY_METHOD,
    available_memory,
    cpu_peak_bytes,
    device_name,
    peak_bytes,
    time_ms,
)
from viz_model.lessons.cost.slopes import (
    ABBREV,
    LECTURE_QUOTE,
    NO_GPU,
    RNN_WORK,
    SHORT,
    SLOPE_OK,
    Note,
    _num,
    gpu_name,
    skipped_text,
    slope_claims,
    sweep_caption,
    sweep_lines,
    sweep_rows,
)
from viz_model.lessons.cost.sweep import (
    DEFAULT_TS,
    LINEAR_UNITS,
    MEMORY_FRACTION,
    MODES,
    PATHS,
    SLACK_BYTES,
    TT_UNITS,
    CostRow,
    CostSweep,
    Progress,
    Slope,
    _check_ts,
    _fit_slopes,
    cost_sweep,
    predicted_peak_bytes,
    score_matrix_bytes,
)

__all__ = [
    "CPU_MEMORY_METHOD", "CUDA_MEMORY_METHOD", "available_memory", "device_name", "time_ms", "cpu_peak_bytes",
    "peak_bytes", "PATHS", "MODES", "DEFAULT_TS", "MEMORY_FRACTION", "TT_UNITS", "LINEAR_UNITS", "SLACK_BYTES",
    "Progress", "CostRow", "Slope", "CostSweep", "score_matrix_bytes", "predicted_peak_bytes", "_fit_slopes",
    "_check_ts", "cost_sweep", "SLOPE_OK", "SHORT", "ABBREV", "Note", "_num", "sweep_lines", "sweep_caption",
    "sweep_rows", "skipped_text", "slope_claims", "gpu_name", "LECTURE_QUOTE", "NO_GPU", "RNN_WORK",
    "kv_cache_bytes", "KVModel", "KVRow", "LECTURE_MODELS", "kv_model_from_config", "shipped_kv_models",
    "kv_cache_table", "KV_TS", "TABLE_TS", "kv_models", "size_text", "kv_lines", "kv_rows", "kv_text",
]
