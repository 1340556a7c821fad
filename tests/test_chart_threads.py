"""A cached figure is one object for every session: its first reads (the summary, the dict sent to the browser) may
come from several script threads at once. Plotly builds a fast_figure's trace objects on the first read of .data,
popping keys as it goes, which failed with KeyError('type') when two sessions did it together (class mode's bench)."""

import sys
import threading

import numpy as np

from viz_model.figures.attention import attention_heatmap
from viz_model.ui import chart


def test_many_sessions_reading_a_new_figure_at_once_all_get_it():
    errors: list[str] = []
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race showed 37 times in 320 reads
    try:
        for _ in range(40):
            fig = attention_heatmap(np.random.default_rng(0).random((12, 12)), [f"t{i}" for i in range(12)],
                                    allowed=np.tril(np.ones((12, 12), bool)), title="shared")

            def read(i: int, fig=fig) -> None:
                try:
                    chart._Serialized(fig) if i % 2 else chart._summary(fig)
                except Exception as e:  # noqa: BLE001 - any failure of a session counts
                    errors.append(repr(e)[:80])

            threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert fig.__dict__["_lab_dict"]["data"][0]["type"] == "heatmap" and fig.__dict__["_lab_summary"]
    finally:
        sys.setswitchinterval(before)
    assert errors == []
