"""The cost of attention: the T×T matrix makes memory quadratic in T; SDPA avoids it; the KV cache is linear."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
import torch

from viz_model.attention import MultiHeadAttention
from viz_model.lessons import cost

TS = (32, 64, 128, 256)
D_MODEL, N_HEADS = 8, 4  # tiny d_model, several heads: the T×T terms dominate already at T = 64


@pytest.fixture(scope="module")
def sweep() -> cost.CostSweep:
    return cost.cost_sweep(TS, d_model=D_MODEL, n_heads=N_HEADS, device="cpu", backward=True, repeats=1)


def test_score_matrix_bytes_equal_the_traced_scores_tensor():
    assert cost.score_matrix_bytes(256, n_heads=4, batch=2) == 2 * 4 * 256 * 256 * 4 == 2_097_152
    layer = MultiHeadAttention(16, 4)
    _, record, _ = layer(torch.randn(3, 40, 16), trace=True, is_causal=True)
    assert record.scores.nbytes == cost.score_matrix_bytes(40, n_heads=4, batch=3)
    assert record.probs.nbytes == cost.score_matrix_bytes(40, n_heads=4, batch=3)


def test_cpu_peak_counts_the_tensors_alive_together():
    def two_at_once():
        a = torch.ones(1000, 1000)  # 4,000,000 bytes
        b = a * 2                   # another 4,000,000 while a is alive
        del a, b
        c = torch.ones(500, 1000)   # 2,000,000 after both are freed: not a new peak
        del c

    peak = cost.cpu_peak_bytes(two_at_once)
    assert 8_000_000 <= peak <= 8_000_000 + 256  # + a few bytes: the scalar 2 becomes a 0-dim tensor


CONCURRENT_PROFILES = """
import threading, torch
from viz_model.lessons import cost
def work():
    for _ in range(30):
        torch.ones(500, 500).sum()
out = []
threads = [threading.Thread(target=lambda: out.append(cost.cpu_peak_bytes(work))) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
print(sorted(out))
"""


def test_two_students_measuring_memory_at_once_do_not_crash_the_server():
    """Each Streamlit session runs on its own thread; torch.profiler sessions overlapping on two threads crashed
    the process (SIGSEGV, measured 3 of 3 runs on the old code). In a subprocess, so a crash fails this test only."""
    import ast
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CONCURRENT_PROFILES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    peaks = ast.literal_eval(done.stdout.strip().splitlines()[-1])  # the four peaks the script printed
    assert len(peaks) == 4 and len(set(peaks)) == 1 and peaks[0] >= 1_000_000  # each saw the 500×500 floats


def test_sizes_grow_with_T(sweep):
    tt = sweep.score_matrix_mb
    assert all(b / a == pytest.approx(4.0) for a, b in zip(tt, tt[1:]))  # doubling T quadruples T×T
    for path in cost.PATHS:
        for mode in cost.MODES:
            Ts, ms, mb = sweep.series(path, mode)
            assert Ts == list(TS) and all(t > 0 for t in ms)
            assert all(b > a for a, b in zip(mb, mb[1:])), (path, mode, mb)


def test_materialised_memory_slope_is_quadratic(sweep):
    for mode in cost.MODES:
        s = sweep.slope("materialised", mode)
        assert s.fit_Ts == (64, 128, 256)  # the upper half of the range
        assert 1.8 <= s.memory <= 2.2, (mode, s)


def test_materialised_path_holds_three_score_matrices_and_sdpa_not_one(sweep):
    for i, T in enumerate(TS[2:], start=2):
        tt_mb = sweep.score_matrix_mb[i]
        for mode in cost.MODES:
            assert sweep.row(T, "materialised", mode).peak_mb >= 3 * tt_mb  # scores, scores + mask, probs
            assert sweep.row(T, "sdpa", mode).peak_mb < 0.5 * tt_mb


def test_measured_peak_stays_below_the_guard_prediction(sweep):
    for r in sweep.rows:
        assert r.peak_mb <= r.predicted_mb, r
        if r.path == "materialised" and r.T >= 128:  # the T×T terms alone bound it, without the slack
            assert r.peak_mb <= r.predicted_mb - cost.SLACK_BYTES / 2**20, r


def test_sweep_states_device_limit_and_method(sweep):
    n = torch.get_num_threads()
    assert sweep.device.endswith(f"{n} thread" + ("s" if n > 1 else ""))
    free, _ = cost.available_memory(torch.device("cpu"))
    assert 0 < sweep.memory_limit_bytes <= free and "MemAvailable" in sweep.limit_note
    assert "torch.profiler" in sweep.memory_method and not sweep.cancelled


def test_sdpa_and_traced_outputs_and_gradients_agree():
    torch.manual_seed(0)
    layer = MultiHeadAttention(16, 4)
    x = torch.randn(2, 48, 16, requires_grad=True)  # (B, T, d_model)
    outs, grads = [], []
    for trace in (True, False):
        y, _, _ = layer(x, trace=trace, is_causal=True)  # (B, T, d_model)
        (gx,) = torch.autograd.grad((y * torch.linspace(-1, 1, 16)).sum(), x)
        outs.append(y.detach())
        grads.append(gx)
    torch.testing.assert_close(outs[0], outs[1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-5)


def test_memory_guard_skips_a_T_that_would_not_fit():
    limit = cost.predicted_peak_bytes("materialised", "forward", 128, d_model=D_MODEL, n_heads=N_HEADS) - 1
    s = cost.cost_sweep([64, 128], d_model=D_MODEL, n_heads=N_HEADS, device="cpu", backward=False, repeats=1,
                        memory_limit_bytes=limit)
    assert s.memory_limit_bytes == limit and "caller" in s.limit_note
    assert not s.row(64, "materialised", "forward").skipped
    skipped = s.row(128, "materialised", "forward")
    assert skipped.skipped and skipped.ms is None and skipped.peak_mb is None
    assert not s.row(128, "sdpa", "forward").skipped  # no T×T matrix: it still fits
    assert s.slope("materialised", "forward").fit_Ts == (64,) and s.slope("materialised", "forward").memory is None


def test_progress_counts_every_point_and_stop_cancels_the_rest():
    calls, stop = [], threading.Event()

    def progress(done, total, message):
        calls.append((done, total, message))
        stop.set()  # the page's Cancel button, pressed during the first point

    s = cost.cost_sweep([32, 64], d_model=D_MODEL, n_heads=N_HEADS, backward=True, repeats=1,
                        progress=progress, stop_event=stop)
    assert calls[0][:2] == (0, 8) and calls[-1][:2] == (8, 8)
    assert s.cancelled and len(s.rows) == 8
    assert not s.rows[0].skipped and all(r.skipped == "cancelled" for r in s.rows[1:])


def test_bad_inputs_are_explained():
    with pytest.raises(ValueError, match="sequence length"):
        cost.cost_sweep([], d_model=8, n_heads=4)
    with pytest.raises(ValueError, match="divisible"):
        cost.cost_sweep([32], d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="memory limit"):
        cost.cost_sweep([32], d_model=8, n_heads=4, memory_limit_bytes=0)


def test_kv_cache_bytes_match_the_vllm_paper():
    # Kwon et al. 2023, "Efficient Memory Management for LLM Serving with PagedAttention", section 3: OPT-13B's
    # cache per token is 2 (K and V) x 5120 (hidden size = 40 heads x 128) x 40 (layers) x 2 (FP16) = 800 KB,
    # "as much as 1.6 GB" for one 2048-token request.
    assert cost.kv_cache_bytes(40, 40, 128, 1, dtype_bytes=2) == 819_200
    assert cost.kv_cache_bytes(40, 40, 128, 2048, dtype_bytes=2) == 1_677_721_600
    # Hand-computed: the lecture-sized model (32 layers x 32 heads x 128) at T = 4096 in fp16 is exactly 2 GiB.
    assert cost.kv_cache_bytes(32, 32, 128, 4096, batch=1, dtype_bytes=2) == 2 * 2**30
    assert cost.kv_cache_bytes(32, 32, 128, 4096, batch=3, dtype_bytes=4) == 12 * 2**30


def test_kv_cache_table_covers_shipped_and_lecture_models():
    rows = cost.kv_cache_table(Ts=(64, 4096))
    by = {(r.model, r.T): r for r in rows}
    classroom = by[("classroom", 64)]  # 2 layers x 4 heads x d_k 32, float32: 2*2*4*32*64*4 = 131,072 bytes
    assert (classroom.n_layers, classroom.n_kv_heads, classroom.d_k) == (2, 4, 32)
    assert classroom.bytes == 131_072 and classroom.per_token_bytes == 2048
    lecture, gqa = (m.name for m in cost.LECTURE_MODELS)
    assert by[(lecture, 4096)].bytes == 2 * 2**30 and by[(gqa, 4096)].bytes == 2**29  # 8 of 32 K/V heads
    assert by[(lecture, 4096)].score_matrix_bytes == 32 * 4096 * 4096 * 2  # one layer's scores, fp16
    assert by[(lecture, 4096)].bytes == 64 * by[(lecture, 64)].bytes  # linear in T


# -- what the page shows: claims, tables and sentences from lessons.cost (#27) -------------------------------
def _with_memory(sweep: cost.CostSweep, scale) -> cost.CostSweep:
    """The sweep with each materialised peak replaced by scale(T): a memory curve whose slope the test sets."""
    rows = [replace(r, peak_mb=scale(r.T)) if r.path == "materialised" else r for r in sweep.rows]
    return replace(sweep, rows=rows, slopes=cost._fit_slopes(rows, cost.MODES, None))


def test_slope_claims_hold_on_a_measured_sweep_and_fail_on_a_linear_one(sweep):
    claims = cost.slope_claims(sweep)
    facts = [c for c in claims if not isinstance(c, cost.Note)]
    assert len(facts) == 2 and all(f.ok for f in facts)
    for mode, fact in zip(cost.MODES, facts):
        assert f"{mode}: measured memory slope **{sweep.slope('materialised', mode).memory:.2f}**" in fact.claim
    assert sum(n.text.startswith("SDPA, ") for n in claims if isinstance(n, cost.Note)) == 2
    # long lengths whose materialised memory grows linearly: the claim must fail
    long_ts = replace(sweep, Ts=tuple(T * 8 for T in sweep.Ts),
                           rows=[replace(r, T=r.T * 8) for r in sweep.rows])
    linear = _with_memory(long_ts, lambda T: 0.01 * T)
    failed = [c for c in cost.slope_claims(linear) if not isinstance(c, cost.Note)]
    assert len(failed) == 2 and not any(f.ok for f in failed) and "outside [1.8, 2.2]" in failed[0].claim
    # the same at short T cannot decide: a note, no ✗
    short = cost.slope_claims(_with_memory(sweep, lambda T: 0.01 * T))
    assert all(isinstance(c, cost.Note) for c in short)
    assert "Extend the range to T ≥ 512" in short[0].text


def test_sweep_rows_and_lines_carry_every_path_and_mode(sweep):
    rows = cost.sweep_rows(sweep)
    assert [r["T"] for r in rows] == [f"{T:,}" for T in TS]
    r = sweep.row(TS[-1], "materialised", "forward+backward")
    assert rows[-1]["T×T fwd+bwd MB"] == cost._num(r.peak_mb) and rows[-1]["SDPA fwd ms"] != "skipped"
    memory = cost.sweep_lines(sweep, "memory")
    assert len(memory) == 5 and memory[-1]["slope"] == pytest.approx(2.0)  # the computed T×T: exactly T²
    assert cost.skipped_text(sweep) is None


def test_kv_rows_and_sentence_follow_the_layers():
    groups = cost.kv_models("classroom", {"n_layers": 2, "n_heads": 4, "d_model": 128, "max_len": 64}, 32)
    names = ["; ".join(n) for n, _ in groups]
    assert any("classroom (sidebar)" in n for n in names)
    rows = {r["model"]: r for r in cost.kv_rows(groups)}
    lecture = next(r for n, r in rows.items() if n.startswith("lecture-sized: 32 heads of d_k 128, 16-bit"))
    assert lecture["T = 4,096"] == "2 GiB" and lecture["layers"] == 32  # 2·32·32·128·4096·2 bytes
    assert "holds **16 GiB** (512 MiB per layer); with 8 K/V heads (GQA) 4 GiB" in cost.kv_text(32)
    assert "holds **4 GiB** (512 MiB per layer)" in cost.kv_text(8)
    assert cost.size_text(1536) == "1.5 KiB" and cost.size_text(12) == "12 B"


def test_shipped_kv_models_read_each_folder_once_and_again_when_a_file_changes(tmp_path, monkeypatch):
    """The Cost page asks for the shipped models' shapes on every run; the English models' JSON (0.5 MB, their
    tokenizer inside) was parsed each time (16 % of a 60-follower class's server time). Read once per folder state."""
    import json
    import os
    import shutil

    from viz_model import ASSETS_DIR, checkpoint

    shutil.copy(ASSETS_DIR / "models" / "classroom.json", tmp_path / "classroom.json")
    reads = []
    real = checkpoint.read_metadata
    monkeypatch.setattr(checkpoint, "read_metadata", lambda path: reads.append(path) or real(path))
    first = cost.shipped_kv_models(tmp_path)
    assert [m.name for m in first] == ["classroom"] and len(reads) == 1
    assert cost.shipped_kv_models(tmp_path) == first and len(reads) == 1  # the same folder: not read again
    doc = json.loads((tmp_path / "classroom.json").read_text())
    doc["config"]["n_layers"] = first[0].n_layers + 3
    (tmp_path / "classroom.json").write_text(json.dumps(doc))
    os.utime(tmp_path / "classroom.json", ns=(1, 1))  # another mtime whatever the clock's resolution
    again = cost.shipped_kv_models(tmp_path)
    assert len(reads) == 2 and again[0].n_layers == first[0].n_layers + 3  # a rewritten file is read again
    again.clear()  # a caller's list is its own: the cache is not changed through it
    assert cost.shipped_kv_models(tmp_path)[0].n_layers == first[0].n_layers + 3
