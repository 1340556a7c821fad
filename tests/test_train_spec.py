"""The Train page's run spec: every architecture switch reaches the model, and every comparison it offers runs
copies that differ in one thing, each with its own label (the curves are keyed by it)."""

import itertools

import pytest

from viz_model.lessons import train as T
from viz_model.tokenizer import load_tokenizer

VOCAB = load_tokenizer("word").get_vocab_size()


@pytest.mark.parametrize("kind", T.ABLATIONS)
def test_every_comparison_varies_one_thing_and_labels_each_run(kind):
    base = T.TrainSpec(steps=10, every=5, task="recall", seq_len=64)
    specs = T.ablation_specs(base, kind)
    assert len(specs) >= 2 and len({s.label() for s in specs}) == len(specs)
    changed = {f for a, b in itertools.combinations(specs, 2) for f in a.__dataclass_fields__
               if getattr(a, f) != getattr(b, f)}
    assert changed and changed <= {"pos_encoding", "causal", "qkv", "norm_position", "warmup", "norm", "residual",
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
    assert T.TrainSpec(task="mlm", causal=True).model_config(VOCAB).causal is False
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
    specs = T.ablation_specs(T.TrainSpec(task="recall", seq_len=64), "RNN vs LSTM vs transformer")
    assert [s.arch for s in specs] == ["transformer", "rnn", "lstm"]
    with pytest.raises(ValueError, match="varies a part of a transformer"):
        T.ablation_specs(T.TrainSpec(arch="lstm"), "Q, K and V")


def test_only_a_translation_run_can_guide_a_head_and_its_label_says_so():
    spec = T.TrainSpec(task="translate", steps=10, every=5, align_weight=0.05)
    T.validate(spec, VOCAB)
    assert "guided ×0.05" in spec.label() and "guided" not in T.TrainSpec(task="translate").label()
    assert T.Run(spec).trainer.config.align_weight == 0.05
    with pytest.raises(ValueError, match="known alignment"):
        T.validate(T.TrainSpec(task="lm", align_weight=0.05), VOCAB)
    with pytest.raises(ValueError, match="between 0 and 1"):
        T.validate(T.TrainSpec(task="translate", align_weight=2.0), VOCAB)
