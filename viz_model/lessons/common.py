"""Helpers several lessons share (one home, so that no lesson imports another: the independence contract)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def decimate(n: int, cap: int) -> np.ndarray:
    """At most `cap` evenly spaced indices of range(n), always including 0 (keeps big heatmaps light)."""
    if n <= cap:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(int))


def fit_slope(Ts: Sequence[int], ys: Sequence[float]) -> float | None:
    """Least-squares slope of log y on log T; None with fewer than two usable points."""
    pts = [(math.log(t), math.log(y)) for t, y in zip(Ts, ys) if y is not None and y > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T  # (n,), (n,)
    return float(np.polyfit(x, y, 1)[0])
