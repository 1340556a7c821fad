"""The KV-cache trade: a decoder keeps every earlier token's K and V, so each new token costs one row of
attention; the cache grows linearly with T and with layers (computed from the models' shapes, nothing measured)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from viz_model.files import dir_stamp
from viz_model.lessons.cost.slopes import _num
from viz_model.lessons.cost.sweep import _check_ts, score_matrix_bytes


def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_k: int, T: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """Bytes of a KV cache: a K and a V vector of d_k numbers per layer, KV head, position and sequence."""
    return 2 * n_layers * n_kv_heads * d_k * T * batch * dtype_bytes


@dataclass(frozen=True)
class KVModel:
    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_k: int
    dtype_bytes: int       # 4 for our float32 models, 2 for fp16/bf16 serving
    note: str = ""


@dataclass(frozen=True)
class KVRow:
    model: str
    T: int
    n_layers: int
    n_kv_heads: int
    d_k: int
    dtype_bytes: int
    bytes: int             # kv_cache_bytes(...)
    per_token_bytes: int   # the same for T = 1
    score_matrix_bytes: int  # one layer's (1, H, T, T) score matrix at this T, for comparison


# Lecture-sized models, the usual published shapes (Llama-2-7B: 32 layers x 32 heads of 128; Llama-3-8B keeps
# 8 K/V heads for its 32 query heads: grouped-query attention).
LECTURE_MODELS = (
    KVModel("lecture-sized (32 layers, 32 heads, d_k 128, fp16)", 32, 32, 32, 128, 2, "Llama-2-7B-shaped"),
    KVModel("same with 8 K/V heads (GQA, fp16)", 32, 32, 8, 128, 2, "Llama-3-8B-shaped"),
)


def kv_model_from_config(name: str, config: Any, dtype_bytes: int = 4) -> KVModel:
    """A KVModel from a ModelConfig or its dict (n_kv_heads defaults to n_heads)."""
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    n_heads, d_model = int(get("n_heads")), int(get("d_model"))
    n_kv = get("n_kv_heads") or n_heads
    return KVModel(name, int(get("n_layers")), n_heads, int(n_kv), d_model // n_heads, dtype_bytes,
                   f"d_model {d_model}, built for T <= {get('max_len', '?')}")


def shipped_kv_models(models_dir: str | Path | None = None) -> list[KVModel]:
    """The shipped checkpoints' shapes, read from their JSON configs (no weights loaded); read again only when a
    file of the folder changes (the English models' JSON holds their tokenizer: 0.5 MB parsed on every Cost page
    run was 16 % of a 60-follower class's server time, py-spy)."""
    from viz_model import ASSETS_DIR

    folder = Path(models_dir) if models_dir is not None else ASSETS_DIR / "models"
    return list(_shipped_kv_models(str(folder), dir_stamp(folder, ".json")))


# lru_cache, not ui.cache.cached (ui-only): a pure function of immutable arguments, the folder's JSON files' identity
# among them (a new, removed or rewritten checkpoint changes the key); a tuple of frozen rows, shared read-only.
@functools.lru_cache(maxsize=8)
def _shipped_kv_models(folder: str, stamp: tuple) -> tuple[KVModel, ...]:
    from viz_model.checkpoint import read_metadata

    models = []
    for name, _mtime, _size in stamp:
        path = Path(folder) / name
        try:
            config = read_metadata(path.with_suffix(".safetensors"))["config"]
            models.append(kv_model_from_config(path.stem, config, dtype_bytes=4))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a checkpoint's JSON
    return tuple(models)


def kv_cache_table(Ts: Sequence[int] = (64, 1024, 4096, 32768), models: Sequence[KVModel] | None = None,
                   batch: int = 1) -> list[KVRow]:
    """The cache's size for every model and T: linear in T and in layers, against one layer's T×T scores."""
    models = list(models) if models is not None else [*shipped_kv_models(), *LECTURE_MODELS]
    rows = []
    for m in models:
        for T in _check_ts(Ts):
            rows.append(KVRow(
                m.name, T, m.n_layers, m.n_kv_heads, m.d_k, m.dtype_bytes,
                kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_k, T, batch, m.dtype_bytes),
                kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_k, 1, 1, m.dtype_bytes),
                score_matrix_bytes(T, n_heads=m.n_heads, batch=batch, dtype_bytes=m.dtype_bytes),
            ))
    return rows


KV_TS = tuple(2**i for i in range(6, 16))   # 64 … 32,768 tokens in the cache
TABLE_TS = (64, 1024, 4096, 32768)


def _merged_label(names: list[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return f"{names[0]} and {len(names) - 1} more of the same shape"


def _lecture_name(m: KVModel) -> str:
    """The lecture model's name without its layer count (the slider changes it; the legend shows it)."""
    gqa = f", {m.n_kv_heads} K/V heads (GQA)" if m.n_kv_heads < m.n_heads else ""
    return f"lecture-sized: {m.n_heads} heads of d_k {m.d_k}{gqa}, {8 * m.dtype_bytes}-bit"


def kv_models(sidebar_name: str, sidebar_config: Any, lecture_layers: int) -> list[tuple[list[str], KVModel]]:
    """Shipped models, the sidebar's model and the lecture-sized ones, models of identical shape merged."""
    shipped = shipped_kv_models()
    if sidebar_name in {m.name for m in shipped}:
        shipped = [replace(m, name=f"{m.name} (sidebar)") if m.name == sidebar_name else m for m in shipped]
    else:
        shipped.append(kv_model_from_config(f"{sidebar_name} (sidebar)", sidebar_config, dtype_bytes=4))
    lecture = [replace(m, n_layers=lecture_layers, name=_lecture_name(m)) for m in LECTURE_MODELS]
    merged: dict[tuple, tuple[list[str], KVModel]] = {}
    for m in [*shipped, *lecture]:
        shape = (m.n_layers, m.n_heads, m.n_kv_heads, m.d_k, m.dtype_bytes)
        if shape in merged:
            merged[shape][0].append(m.name)
        else:
            merged[shape] = ([m.name], m)
    return list(merged.values())


def size_text(n: float) -> str:
    """Bytes in the largest binary unit they fill: 1.53 GiB, 436 KiB, 12 B."""
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            return f"{_num(n / div)} {unit}"
    return f"{n:,.0f} B"


def kv_lines(groups: list[tuple[list[str], KVModel]]) -> list[dict]:
    """The KV-cache chart's lines: each shape's cache in MiB at every T of KV_TS."""
    lines = []
    for names, m in groups:
        rows = kv_cache_table(KV_TS, [m])
        lines.append(dict(name=_merged_label(names), T=[r.T for r in rows], mib=[r.bytes / 2**20 for r in rows],
                          layers=m.n_layers, note=f"{m.n_kv_heads} K/V heads × d_k {m.d_k}, {m.dtype_bytes} bytes "
                                                  f"per number; {m.note}"))
    return lines


def kv_rows(groups: list[tuple[list[str], KVModel]]) -> list[dict]:
    """The KV-cache table: one row per shape, its cache at each T of TABLE_TS and one layer's T×T at the last."""
    rows = []
    for names, m in groups:
        kv = kv_cache_table(TABLE_TS, [m])
        row = {"model": "; ".join(names), "layers": m.n_layers, "K/V heads × d_k": f"{m.n_kv_heads} × {m.d_k}",
               "bytes/number": m.dtype_bytes, "per token": size_text(kv[0].per_token_bytes)}
        row.update({f"T = {r.T:,}": size_text(r.bytes) for r in kv})
        row[f"1 layer's T×T at {TABLE_TS[-1]:,}"] = size_text(kv[-1].score_matrix_bytes)
        rows.append(row)
    return rows


def kv_text(layers: int) -> str:
    """The lecture-sized cache at the longest T, with and without GQA, against one layer's T×T score matrix."""
    big = kv_cache_table((TABLE_TS[-1],), [replace(LECTURE_MODELS[0], n_layers=layers)])[0]
    gqa = kv_cache_table((TABLE_TS[-1],), [replace(LECTURE_MODELS[1], n_layers=layers)])[0]
    return (f"At T = {big.T:,} the lecture-sized model's cache holds **{size_text(big.bytes)}** "
            f"({size_text(big.bytes / layers)} per layer); with {gqa.n_kv_heads} K/V heads (GQA) "
            f"{size_text(gqa.bytes)}. The cache is linear in T and in layers; without it, each new token would "
            "recompute every earlier K and V. For comparison, one layer's full T×T score matrix at this T "
            f"would be {size_text(big.score_matrix_bytes)}, which SDPA never stores.")
