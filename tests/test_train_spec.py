"""The Train page's run spec: every architecture switch reaches the model, and every comparison it offers runs
copies that differ in one thing, each with its own label (the curves are keyed by it)."""

import itertools

import pytest
import torch

from viz_model.lessons import train as T
from viz_model.lessons.common import prefix_check as prefix_errors
from viz_model.tokenizer import encode, load_tokenizer

VOCAB = load_tokenizer("word").get_vocab_size()


@pytest.mark.parametrize("kind", T.ABLATIONS)
def test_every_comparison_varies_one_thing_and_labels_each_run(kind):
    base = T.TrainSpec(steps=10, every=5, task="recall", seq_len=64)
    specs = T.ablation_specs(base, kind)
    assert len(specs) >= 2 and len({s.label() for s in specs}) == len(specs)
    changed = {f for a, b in itertools.combinations(specs, 2) for f in a.__dataclass_fields__
               if getattr(a, f) != getattr(b, f)}
    assert changed and changed <= {"pos_encoding", "mask", "qkv", "norm_position", "warmup", "norm", "residual",
                                   "arch"}
    for s in specs:
        T.validate(s, VOCAB)  # each is a model the server may train


@pytest.mark.parametrize("field, value", [("qkv", "shared_qk"), ("qkv", "none"), ("norm", "rmsnorm"),
                                          ("norm", "batchnorm"), ("residual", False)])
def test_architecture_switches_reach_the_model(field, value):
    spec = T.TrainSpec(**{field: value})
    assert getattr(spec.model_config(VOCAB), field) == value
    assert getattr(T.Run(spec).model.config, field) == value


def test_no_warmup_starts_at_the_full_learning_rate():
    with_warmup = T.Run(T.TrainSpec(steps=100, warmup=True)).trainer.config
    without = T.Run(T.TrainSpec(steps=100, warmup=False)).trainer.config
    assert with_warmup.warmup_steps == 10 and without.warmup_steps == 0
    ev = next(e for e in T.Run(T.TrainSpec(steps=20, every=10, warmup=False)).events() if e["kind"] == "step")
    assert ev["lr"] == pytest.approx(3e-3)


def test_a_shared_qk_run_trains():
    run = T.Run(T.TrainSpec(qkv="shared_qk", steps=12, every=6))
    losses = [e["loss"] for e in run.events() if e["kind"] == "step"]
    assert len(losses) == 12 and losses[-1] < losses[0]


def test_every_task_has_a_label_on_the_page():
    from viz_model.data import TASK_LABELS, TASKS

    assert set(TASK_LABELS) == set(TASKS)


@pytest.mark.parametrize("arch", ["rnn", "lstm"])
def test_an_rnn_run_builds_torchs_recurrent_model_and_trains_on_recall(arch):
    from viz_model.rnn import RecurrentLM
    from viz_model.runtime.train_process import ProcessRun

    spec = T.TrainSpec(arch=arch, task="recall", steps=15, every=5, seq_len=64)
    run = T.Run(spec)
    assert isinstance(run.model, RecurrentLM) and run.model.kind == arch
    events = list(run.events())
    losses = [e["loss"] for e in events if e["kind"] == "step"]
    assert len(losses) == 15 and not any(e["kind"] == "snapshot" for e in events)  # no attention to snapshot
    assert isinstance(ProcessRun(spec, run.n_params).model, RecurrentLM)  # the parent's copy is the same kind


def test_translation_builds_an_encoder_decoder_and_masked_lm_an_encoder():
    from viz_model.seq2seq import Seq2SeqTransformer

    assert isinstance(T.Run(T.TrainSpec(task="translate", steps=10, every=5)).model, Seq2SeqTransformer)
    assert T.TrainSpec(task="mlm", mask="causal").model_config(VOCAB).causal is False
    with pytest.raises(ValueError, match="reads left to right"):
        T.TrainSpec(arch="rnn", task="translate").model_config(VOCAB)


def test_a_translation_run_snapshots_cross_attention_with_its_row_labels():
    events = list(T.Run(T.TrainSpec(task="translate", steps=10, every=5)).events())
    snap = next(e for e in events if e["kind"] == "snapshot")
    L, H, Tt, Ts = snap["probs"].shape
    assert (Tt, Ts) == (len(snap["query_tokens"]), len(snap["tokens"])) and snap["roles"] == {}
    h = T.history(events)
    assert h.query_tokens == snap["query_tokens"]


def test_model_kind_comparison_trains_all_three_and_other_comparisons_need_a_transformer():
    specs = T.ablation_specs(T.TrainSpec(task="recall", seq_len=64), "kind")
    assert [s.arch for s in specs] == ["transformer", "rnn", "lstm"]
    with pytest.raises(ValueError, match="varies a part of a transformer"):
        T.ablation_specs(T.TrainSpec(arch="lstm"), "qkv")


def test_only_a_translation_run_can_guide_a_head_and_its_label_says_so():
    spec = T.TrainSpec(task="translate", steps=10, every=5, align_weight=0.05)
    T.validate(spec, VOCAB)
    assert "guided ×0.05" in spec.label() and "guided" not in T.TrainSpec(task="translate").label()
    assert T.Run(spec).trainer.config.align_weight == 0.05
    with pytest.raises(ValueError, match="known alignment"):
        T.validate(T.TrainSpec(task="lm", align_weight=0.05), VOCAB)
    with pytest.raises(ValueError, match="between 0 and 1"):
        T.validate(T.TrainSpec(task="translate", align_weight=2.0), VOCAB)


# -- what the page shows, computed by the lesson -------------------------------------------------------------------
def test_teacher_forcing_claim_holds_for_a_causal_run_and_fails_under_a_bidirectional_mask():
    run = T.Run(T.TrainSpec(steps=10))
    tf = T.teacher_forcing_check(run, "the cat sat on the mat")
    assert tf.check.ok and tf.check.claim.startswith("Each row equals running its prefix alone")
    rows = T.forcing_rows(run, tf, "the cat sat on the mat")
    mean = sum(r["loss"] for r in rows) / len(rows)
    assert tf.summary == f"{len(rows)} predictions from one pass; mean loss {mean:.3f} nats."
    ids = torch.tensor(encode(run.tok, "the cat sat on the mat", bos=True).ids)
    err = float(prefix_errors(run.model, ids, attn_mask=torch.ones(len(ids), len(ids))).max())  # the future visible
    bad = T.prefix_claim(err)
    assert not bad.ok and bad.claim.startswith("One-pass predictions differ from prefix runs by")
    assert T.teacher_forcing_check(T.Run(T.TrainSpec(steps=10, mask="bidirectional")), "the cat sat").check is None


def test_a_batchnorm_runs_prefix_check_runs_in_eval_mode():
    """In training mode BatchNorm refuses a one-token prefix (torch raises); the check runs as the table does."""
    run = T.Run(T.TrainSpec(steps=10, norm="batchnorm"))
    run.model.train()
    assert T.teacher_forcing_check(run, "the cat sat on the mat").check.ok and run.model.training


def test_the_no_mask_demo_fails_before_any_training_and_holds_past_the_gap():
    d = T.mask_demo(T.Run(T.TrainSpec(steps=10)), T.Run(T.TrainSpec(steps=10, mask="bidirectional")))
    untrained = T.mask_demo_claim(d)  # nothing learned to copy yet: hiding the future changes almost nothing
    assert not untrained.ok and untrained.claim.endswith("train longer (300+ steps on the tiny model).")
    copied = {**d, "free_peeking": 0.4, "free_no_future": 0.4 + T.MASK_GAP + 0.01}
    assert T.mask_demo_claim(copied).ok and T.mask_demo_rows(d)["model"] == ["causal mask", "no mask"]


def test_progress_text_gives_speed_and_time_left_only_while_running():
    class Job:
        title, step, total, status, events = "tiny · lm", 40, 200, "running", [{"kind": "step", "tokens_per_s": 1234.0}]

        def events_since(self, start):
            return self.events[start:]

        def eta_seconds(self):
            return 12.0

        def steps_per_second(self):
            return 3.0

    job = Job()
    assert T.progress_text(job, True) == ("tiny · lm — step 40/200 · running · 3.0 steps/s · 1,234 tokens/s · about "
                                          "12 s left")
    assert T.progress_text(job, False) == "tiny · lm — step 40/200 · running"


def test_the_forms_summary_and_the_evolution_notes_name_the_setup():
    spec = T.TrainSpec(task="translate", align_weight=0.05)
    cfg, n = T.validate(spec, load_tokenizer("word").get_vocab_size())
    assert T.spec_summary(spec, cfg, n).startswith(f"{n:,} parameters · {cfg.n_layers} layers × ")
    notes = T.evolution_notes(spec, 3, active=True, translation=True)
    assert notes[0].startswith("3 snapshots of the probe") and "(weight 0.05)" in notes[1]
    assert len(T.evolution_notes(T.TrainSpec(), 3, active=False, translation=False)) == 1


@pytest.mark.parametrize("arch", ["rnn", "lstm"])
def test_a_recurrent_runs_teacher_forcing_claim_is_measured(arch, monkeypatch):
    """An RNN's ✓ was a 0.0 nobody computed (#27: no ✓ the page did not compute): now each prefix runs alone. A model
    that read the future would give another number, and the claim fails."""
    run = T.Run(T.TrainSpec(steps=10, arch=arch))
    tf = T.teacher_forcing_check(run, "the cat sat on the mat")
    assert tf.check.ok and tf.check.claim.startswith("Each row equals running its prefix alone")
    real = type(run.model).forward

    def peeking(self, ids, *a, **k):  # every position also reads the sequence's last token: the future leaks in
        out = real(self, ids, *a, **k)
        out.logits = out.logits + out.logits[:, -1:].detach()
        return out

    monkeypatch.setattr(type(run.model), "forward", peeking)
    bad = T.teacher_forcing_check(run, "the cat sat on the mat")
    assert not bad.check.ok and bad.check.claim.startswith("One-pass predictions differ")
