"""The job registry: events as the page reads them, deterministic pause/resume, the divergence guard, the queue,
leases and the reaper, and checkpoints that survive an interrupted save. Everything through JobRegistry."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from viz_model import checkpoint
from viz_model.lessons import train as T
from viz_model.runtime import jobs as J
from viz_model.runtime import runs as R
from viz_model.runtime import train_process as P

TINY = T.TrainSpec(preset="tiny", task="induction", steps=24, every=8, batch_size=4)


@pytest.fixture
def reg():
    r = J.JobRegistry(slots=2, grace_s=0.5, reap_every_s=3600)
    yield r
    r.shutdown()


def gated(n: int, gate: threading.Event):
    """A fake event source: n steps, each waiting for `gate` (lets a test hold a job in RUNNING)."""
    def start(job):
        def gen():
            for i in range(1, n + 1):
                gate.wait(5)
                yield {"kind": "step", "step": i}
        return gen()
    return start


def weights(job) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in job.result.model.state_dict().items()}


def test_trainer_events_arrive_as_the_page_reads_them(reg):
    job = reg.wait(reg.submit("me", "t", TINY.steps, P.make_events(TINY)).id, 120)
    assert job.status == J.DONE and job.step == TINY.steps
    kinds = [e["kind"] for e in job.events]
    assert kinds[:TINY.every] == ["step"] * TINY.every
    assert kinds[TINY.every: TINY.every + 3] == ["eval", "snapshot", "sample"]
    h = T.history(job.events_since())
    assert h.steps == list(range(1, TINY.steps + 1))
    assert h.snap_steps == h.eval_steps == [8, 16, 24]
    assert all(np.isfinite(h.loss)) and h.loss[-1] < h.loss[0]
    L, H = job.result.config.n_layers, job.result.config.n_heads
    snap = h.snaps[-1]
    assert snap.shape[:2] == (L, H) and np.allclose(snap.sum(-1), 1, atol=1e-5)
    assert np.allclose(np.triu(snap, 1), 0)  # causal: no attention to the future
    assert set(h.roles) == {"previous-token", "first-token", "induction"} and h.roles["induction"].shape == (3, L, H)
    assert max(h.lr) == pytest.approx(TINY.lr) and h.lr[0] < h.lr[2]  # warm-up then the peak
    assert h.samples[-1]["prompt"] == T.sample_prompt("induction")


def test_pause_then_resume_gives_the_same_weights_as_an_uninterrupted_run(reg):
    spec = T.TrainSpec(preset="tiny", task="copy", steps=30, every=15, batch_size=4, seed=3)
    straight = reg.wait(reg.submit("a", "straight", spec.steps, P.make_events(spec)).id, 120)
    job = reg.submit("b", "paused", spec.steps, P.make_events(spec))
    while job.step < 5:
        time.sleep(0.005)
    reg.pause(job.id)
    reg.wait(job.id, 30)
    assert job.status == J.PAUSED and 5 <= job.step < spec.steps
    at_pause = job.step
    time.sleep(0.2)
    assert job.step == at_pause  # nothing trains while paused, and the slot is free
    assert reg.running() == []
    reg.resume(job.id)
    reg.wait(job.id, 120)
    assert job.status == J.DONE and job.step == spec.steps
    a, b = weights(straight), weights(job)
    assert all(torch.equal(a[k], b[k]) for k in a)
    losses = [[e["loss"] for e in j.events if e["kind"] == "step"] for j in (straight, job)]
    assert losses[0] == losses[1]


def test_divergence_guard_stops_the_job_and_restores_last_good_weights(reg):
    spec = T.TrainSpec(preset="tiny", task="copy", steps=40, every=10, batch_size=4)
    good = {}

    def poisoned(job):
        run = T.Run(spec)
        job.result = run

        def gen():
            for ev in run.events():
                yield ev
                if ev["kind"] == "sample" and ev["step"] == 10:  # just after the step-10 "last good" copy
                    good.update({k: v.clone() for k, v in run.model.state_dict().items()})
                    with torch.no_grad():
                        run.model.blocks[0].mlp[0].weight.fill_(float("nan"))
        return gen()

    job = reg.wait(reg.submit("me", "nan", spec.steps, poisoned).id, 60)
    assert job.status == J.DIVERGED
    assert "step 11" in job.message and "nan" in job.message.lower() and "restored" in job.message
    restored = job.result.model.state_dict()
    assert all(torch.isfinite(v).all() for v in restored.values())
    assert all(torch.equal(restored[k], good[k]) for k in good)
    assert job.step == 10


def test_extra_runs_wait_in_a_fifo_queue_with_visible_positions():
    reg = J.JobRegistry(slots=1, reap_every_s=3600)
    gate = threading.Event()
    try:
        a, b, c = (reg.submit(o, o, 3, gated(3, gate)) for o in ("a", "b", "c"))
        assert (a.status, b.status, c.status) == (J.RUNNING, J.QUEUED, J.QUEUED)
        assert (reg.queue_position(b.id), reg.queue_position(c.id)) == (1, 2)
        reg.stop(a.id)
        gate.set()
        reg.wait(a.id, 5)
        reg.wait(b.id, 5)
        assert a.status == J.STOPPED and b.status == J.DONE
        reg.wait(c.id, 5)
        assert c.status == J.DONE and reg.queue_position(c.id) is None
    finally:
        gate.set()
        reg.shutdown()


def test_a_closed_tab_does_not_leak_its_training_thread(reg):
    gate = threading.Event()
    reg.acquire_lease("tab")
    job = reg.submit("tab", "orphan", 10**6, gated(10**6, gate))
    gate.set()
    reg.release_lease("tab")
    assert reg.reap() == []  # within the grace period (a network blip re-acquires)
    assert job.status == J.RUNNING
    reg.reap(time.time() + 1.0)
    reg.wait(job.id, 5)
    assert job.status == J.RECLAIMED and "closed" in job.message
    job._thread.join(5)
    assert not job._thread.is_alive()


def test_runs_past_the_maximum_runtime_are_reclaimed():
    reg = J.JobRegistry(slots=1, max_runtime_s=0.05, reap_every_s=0.02)
    gate = threading.Event()
    gate.set()
    try:
        reg.acquire_lease("tab")
        job = reg.submit("tab", "long", 10**6, gated(10**6, gate))
        reg.wait(job.id, 5)
        assert job.status == J.RECLAIMED and "limit" in job.message
    finally:
        reg.shutdown()


def test_oversized_runs_are_refused_with_a_sentence_before_anything_starts():
    big = T.TrainSpec(preset="custom", n_layers=6, n_heads=8, d_model=256, steps=5000, batch_size=64, seq_len=128)
    with pytest.raises(ValueError, match="too big for the shared server"):
        T.validate(big, 300)
    with pytest.raises(ValueError, match="divisible by n_heads"):
        T.validate(T.TrainSpec(preset="custom", d_model=24, n_heads=5), 300)
    with pytest.raises(ValueError, match="layers must be between 1 and 6"):
        T.validate(T.TrainSpec(preset="custom", n_layers=7), 300)


def test_an_interrupted_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    run = T.Run(T.TrainSpec(preset="tiny", steps=10))
    first = R.save_run(run, "mine", "owner", tmp_path)
    before = checkpoint.load_checkpoint(first).model.state_dict()
    with torch.no_grad():
        run.model.tok_emb.weight.add_(1.0)
    calls = {"n": 0}
    real = checkpoint._atomic_write

    def dies_on_the_second_file(path, data):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("power cut")
        real(path, data)

    monkeypatch.setattr(checkpoint, "_atomic_write", dies_on_the_second_file)
    with pytest.raises(KeyboardInterrupt):
        R.save_run(run, "mine", "owner", tmp_path)
    after = checkpoint.load_checkpoint(first).model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert sorted(p.name for p in first.parent.iterdir()) == [first.with_suffix(".json").name, first.name]
    monkeypatch.undo()
    second = R.save_run(run, "mine", "owner", tmp_path)
    assert not first.exists() and R.model_key(second) == "mine"
    assert torch.equal(checkpoint.load_checkpoint(second).model.tok_emb.weight, run.model.tok_emb.weight)
