"""The Train page's run spec: every architecture switch reaches the model, and every comparison it offers runs
copies that differ in one thing, each with its own label (the curves are keyed by it)."""

import itertools

import pytest

from viz_model.lessons import train as T
from viz_model.tokenizer import load_tokenizer

VOCAB = load_tokenizer("word").get_vocab_size()


@pytest.mark.parametrize("kind", T.ABLATIONS)
def test_every_comparison_varies_one_thing_and_labels_each_run(kind):
    base = T.TrainSpec(steps=10, every=5)
    specs = T.ablation_specs(base, kind)
    assert len(specs) >= 2 and len({s.label() for s in specs}) == len(specs)
    changed = {f for a, b in itertools.combinations(specs, 2) for f in a.__dataclass_fields__
               if getattr(a, f) != getattr(b, f)}
    assert changed and changed <= {"pos_encoding", "causal", "qkv", "norm_position", "warmup", "norm", "residual"}
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
