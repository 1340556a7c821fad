"""#41 item 1: one table per kind. A RoPE scaling, a model kind and an ablation are each one row, and everything the
app does with a kind it reaches through its row: a row added here (and only here) is validated, built, saved, read
from a Hugging Face config, offered and labelled, with no other edit. Each consumer of a kind reads its table."""

import ast
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from viz_model import checkpoint, hf, rope
from viz_model.config import ModelConfig
from viz_model.lessons import rope as rope_lesson
from viz_model.lessons import train as T
from viz_model.model import TinyTransformer
from viz_model.tokenizer import build_word_tokenizer, load_tokenizer
from viz_model.train import build_model

ROOT = Path(__file__).resolve().parent.parent


def _halved(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """A test scaling: every θ_i divided by the factor and by the current length / 8 (so it depends on length)."""
    by_length = max(seq_len or 8, 8) / 8
    return rope.default_inv_freq(d_k, base) / (scaling["factor"] * by_length), 0.5


@pytest.fixture
def halved(monkeypatch):
    row = rope.Scaling("halved", "halved (a test row)", _halved, {"factor": rope.FACTOR}, by_length=True,
                       hf_name="halved_hf")
    monkeypatch.setitem(rope.SCALINGS, "halved", row)
    return row


def test_a_rope_scaling_row_is_validated_run_read_from_hf_and_offered_by_the_lesson(halved):
    assert rope.validate_scaling({"rope_type": "halved", "factor": 2}) == {"type": "halved", "factor": 2.0}
    with pytest.raises(ValueError, match="'factor' must be >= 1"):  # its Param's range
        rope.validate_scaling({"type": "halved", "factor": 0.5})
    with pytest.raises(ValueError, match="does not take beta_fast"):
        rope.validate_scaling({"type": "halved", "factor": 2, "beta_fast": 3})
    freqs, att = rope.inv_freq(16, 10000.0, {"type": "halved", "factor": 2}, seq_len=32)
    assert torch.allclose(freqs, rope.default_inv_freq(16) / 8) and att == 0.5
    theta, scaling = hf.rope_from_hf({"rope_scaling": {"rope_type": "halved_hf", "factor": 4.0},
                                      "max_position_embeddings": 64, "rope_theta": 500.0})
    assert (theta, scaling) == (500.0, {"type": "halved", "factor": 4.0})
    table = rope_lesson.scaling_table(16, 10000.0, 64, 128)  # the panel: every row whose parameters are valid
    ratio, att = table["halved"]
    assert att == 0.5 and ratio == pytest.approx([1 / (2 * 16)] * 8)
    assert rope.scaling_labels()["halved"] == "halved (a test row)"
    assert rope_lesson.scaling_for("halved", 2.0, 64) == {"type": "halved", "factor": 2.0}


def test_a_by_length_row_makes_the_model_recompute_its_angles(halved):
    cfg = ModelConfig.preset("tiny", vocab_size=30, max_len=64, rope_scaling={"type": "halved", "factor": 1})
    model = TinyTransformer(cfg)
    cos, _ = model.rope_cos_sin(torch.arange(16))  # recomputed at length 16, not read from the 64-row table
    theta = rope.default_inv_freq(cfg.d_k) / 2
    assert torch.allclose(cos.double(), 0.5 * torch.cos(torch.arange(16.0)[:, None].double() * theta), atol=1e-5)


def test_rope_consumers_read_the_table_and_never_its_private_parts():
    sources = {p: p.read_text() for p in [ROOT / "viz_model/model.py", ROOT / "viz_model/hf.py",
                                          ROOT / "viz_model/ui/rope.py",
                                          *(ROOT / "viz_model/lessons/rope").glob("*.py")]}
    for path, text in sources.items():
        private = {n.attr for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Attribute)
                   and isinstance(n.value, ast.Name) and n.value.id == "rope" and n.attr.startswith("_")}
        assert not private, f"{path.name} reads {private}"
        assert '== "dynamic"' not in text and '"yarn", "llama3"' not in text, path.name  # per-type facts: the rows'
    assert rope.ROPE_INIT_FUNCTIONS == {k: s.init for k, s in rope.SCALINGS.items()}  # views of the one table
    assert rope.ROPE_SCALING_LABELS == rope.scaling_labels()
    assert set(rope.panel_params()) == set(rope_lesson.SCALING_PARAMS) == {"beta_fast", "beta_slow",
                                                                           "low_freq_factor", "high_freq_factor"}


class Wide(TinyTransformer):
    kind = "wide"  # a test model class: a transformer saved under a kind of its own


def test_a_model_kind_row_builds_saves_and_loads_through_the_one_factory(monkeypatch, tmp_path):
    row = checkpoint.ModelKind("wide", "wide transformer (a test row)", "wide", ModelConfig, Wide)
    monkeypatch.setitem(checkpoint.MODEL_KINDS, "wide", row)
    tok = load_tokenizer("word")
    model = build_model("tiny", tok, "wide", d_model=48)  # core train's recipes build through the row
    assert type(model) is Wide and model.config.d_model == 48
    small = build_word_tokenizer(["the cat sat"])
    path = checkpoint.save(checkpoint.build_model("wide", ModelConfig.preset("tiny", vocab_size=20)), small,
                           tmp_path / "w.safetensors")
    assert checkpoint.read_metadata(path)["kind"] == "wide"
    assert type(checkpoint.load_checkpoint(path).model) is Wide
    monkeypatch.delitem(checkpoint.MODEL_KINDS, "wide")
    with pytest.raises(ValueError, match="kind 'wide'"):
        checkpoint.load_checkpoint(path)


def test_model_kind_consumers_read_the_rows():
    assert T.ARCHS == tuple(k for k, r in checkpoint.MODEL_KINDS.items() if r.on_train_form)
    assert T.ARCH_LABELS == {k: checkpoint.MODEL_KINDS[k].label for k in T.ARCHS}
    assert [T.TrainSpec(arch=a).recurrent for a in T.ARCHS] == [checkpoint.MODEL_KINDS[a].recurrent for a in T.ARCHS]
    for path in ["viz_model/train.py", "viz_model/lessons/train.py", "viz_model/ui/train.py", "app_pages/train.py"]:
        text = (ROOT / path).read_text()
        literals = [n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)
                    and n.value in ("rnn", "lstm", "transformer", "seq2seq")]
        allowed = 2 if path == "viz_model/train.py" else 0  # the kinds are checkpoint.MODEL_KINDS' rows; core train's
        assert len(literals) <= allowed, f"{path}: {literals}"  # two: the recipes of the shipped RNN and LSTM


def test_an_ablation_row_is_offered_and_keyed_by_name(monkeypatch):
    row = T.Ablation("seed", "seed (a test row)", lambda s: [replace(s, seed=k) for k in (0, 1)])
    monkeypatch.setitem(T.ABLATIONS, "seed", row)
    specs = T.ablation_specs(T.TrainSpec(), "seed")
    assert [s.seed for s in specs] == [0, 1]
    with pytest.raises(ValueError, match="varies a part of a transformer"):
        T.ablation_specs(T.TrainSpec(arch="rnn"), "seed")
    with pytest.raises(ValueError, match="unknown ablation 'seed \\(a test row\\)'"):
        T.ablation_specs(T.TrainSpec(), "seed (a test row)")  # the label is not the key


def test_the_rope_against_alibi_row_from_40_trains_the_two_relative_methods():
    specs = T.ablation_specs(T.TrainSpec(steps=10, every=5), "rope_alibi")
    assert [s.pos_encoding for s in specs] == ["rope", "alibi"]
    assert T.ABLATIONS["rope_alibi"].label == "RoPE vs ALiBi"
    vocab = load_tokenizer("word").get_vocab_size()
    for s in specs:
        cfg, n_params = T.validate(s, vocab)
        assert cfg.pos_encoding == s.pos_encoding and n_params > 0
    assert math.isfinite(next(e["loss"] for e in T.Run(specs[1]).events() if e["kind"] == "step"))
