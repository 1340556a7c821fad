"""The event-yielding Trainer: learning, exact pause/resume, the divergence guard, and the CLI."""

import subprocess
import sys
import threading

import pytest
import torch

from viz_model.train import (
    AttentionSnapshot,
    DivergedEvent,
    DoneEvent,
    EvalEvent,
    SampleEvent,
    StepEvent,
    TrainConfig,
    Trainer,
    build_model,
    lr_at,
)

QUIET = dict(eval_every=0, snapshot_every=0, sample_every=0)


def fresh(tok, steps=20, **kw):
    torch.manual_seed(0)
    model = build_model("tiny", tok, pos_encoding="rope")
    cfg = TrainConfig(**{"steps": steps, "batch_size": 16, "lr": 3e-3, "warmup_steps": 5, **QUIET, **kw})
    return Trainer(model, tok, cfg)


def weights(trainer):
    return {k: v.clone() for k, v in trainer.model.state_dict().items()}


def same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_thirty_step_tiny_run_lowers_the_loss_and_reports_every_event(tok):
    trainer = fresh(tok, steps=30, eval_every=15, snapshot_every=15, sample_every=30)
    events = list(trainer)
    steps = [e for e in events if isinstance(e, StepEvent)]
    evals = [e for e in events if isinstance(e, EvalEvent)]
    assert [e.step for e in steps] == list(range(1, 31))
    assert sum(e.loss for e in steps[-5:]) / 5 < steps[0].loss - 0.5
    assert evals[-1].heldout_loss < evals[0].heldout_loss
    assert all(e.tokens_per_s > 0 and e.grad_norm > 0 for e in steps)
    snap = next(e for e in events if isinstance(e, AttentionSnapshot))
    T = len(snap.tokens)
    assert len(snap.probs) == 2 and snap.probs[0].shape == (2, T, T)
    assert torch.allclose(snap.probs[0].sum(-1), torch.ones(2, T), atol=1e-5)
    assert any(isinstance(e, SampleEvent) for e in events)
    assert isinstance(events[-1], DoneEvent) and events[-1].reason == "finished"


def test_warmup_then_cosine_schedule():
    cfg = TrainConfig(steps=100, lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(1e-4)
    assert lr_at(9, cfg) == pytest.approx(1e-3)
    assert lr_at(55, cfg) == pytest.approx(0.55e-3)
    assert lr_at(100, cfg) == pytest.approx(1e-4)


def test_pause_and_resume_from_state_gives_identical_weights(tok):
    straight = fresh(tok)
    list(straight)
    first = fresh(tok)
    for _ in range(8):
        first.step()
    state = first.state_dict()
    resumed = fresh(tok)  # a new model, optimizer and data: everything must come from `state`
    resumed.load_state_dict(state)
    list(resumed)
    assert resumed.step_count == straight.step_count == 20
    assert same(weights(resumed), weights(straight))


def test_stop_event_pauses_and_iteration_continues_exactly(tok):
    straight = fresh(tok, steps=12)
    list(straight)
    trainer, stop = fresh(tok, steps=12), threading.Event()
    for ev in trainer.run(stop):
        if isinstance(ev, StepEvent) and ev.step == 5:
            stop.set()
    assert trainer.step_count == 5 and trainer.finished_reason == "stopped"
    trainer.finished_reason, trainer.stopped = None, False  # resume
    list(trainer)
    assert same(weights(trainer), weights(straight))


def test_divergence_guard_on_nan_restores_last_good_weights(tok):
    trainer = fresh(tok, good_every=5)
    for _ in range(5):
        trainer.step()
    good = weights(trainer)
    trainer.step()
    with torch.no_grad():
        trainer.model.tok_emb.weight[7, 0] = float("nan")
    events = trainer.step()
    assert isinstance(events[0], DivergedEvent) and "nan" in events[0].message.lower()
    assert events[0].restored_step == 5
    assert isinstance(events[-1], DoneEvent) and events[-1].reason == "diverged"
    assert same(weights(trainer), good) and trainer.step_count == 5
    assert trainer.step() == []  # stays stopped


def test_divergence_guard_on_exploding_gradient(tok):
    trainer = fresh(tok, steps=30, lr=1e6, warmup_steps=1, max_grad_norm=50.0, good_every=1)
    events = list(trainer)
    diverged = [e for e in events if isinstance(e, DivergedEvent)]
    assert diverged and "learning rate" in diverged[0].message
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    assert trainer.step_count < 30


def test_cli_help_lists_the_options():
    out = subprocess.run([sys.executable, "-m", "viz_model.train", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    for flag in ("--preset", "--pos-encoding", "--task", "--steps", "--seed", "--device", "--out"):
        assert flag in out.stdout
