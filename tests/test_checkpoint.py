"""Checkpoints are safetensors + JSON: a round trip is exact, and anything foreign is refused clearly."""

import json
import pickle

import pytest
import torch

from viz_model import ModelConfig, TinyTransformer, checkpoint
from viz_model.tokenizer import build_word_tokenizer


@pytest.fixture
def saved(tmp_path):
    cfg = ModelConfig.preset("tiny", vocab_size=40, pos_encoding="learned")
    model = TinyTransformer(cfg).eval()
    tok = build_word_tokenizer(["the cat sat on the mat", "please send the report"])
    path = checkpoint.save(model, tok, tmp_path / "m.safetensors", {"title": "test model", "steps": 3})
    return model, tok, path


def test_round_trip_gives_identical_logits_and_metadata(saved):
    model, tok, path = saved
    ck = checkpoint.load_checkpoint(path)
    x = torch.randint(5, 40, (2, 9))
    assert torch.equal(model(x).logits, ck.model(x).logits)
    assert ck.metadata == {"title": "test model", "steps": 3}
    assert ck.tokenizer.encode("the cat").ids == tok.encode("the cat").ids
    assert ck.model.head.weight is ck.model.tok_emb.weight  # weight tying survives the round trip


def test_files_are_safetensors_and_json_not_pickles(saved):
    _, _, path = saved
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    assert json.loads(path.read_bytes()[8: 8 + header_len])["__metadata__"]["format"] == checkpoint.FORMAT
    assert json.loads(path.with_suffix(".json").read_text())["config"]["pos_encoding"] == "learned"


def _expect_refusal(path, match):
    with pytest.raises(ValueError, match=match):
        checkpoint.load_checkpoint(path)


def test_garbage_weights_are_rejected(saved):
    _, _, path = saved
    path.write_bytes(b"\x00" * 7 + b"not a checkpoint")
    _expect_refusal(path, "not a (valid )?safetensors")


def test_a_pickle_is_refused_without_unpickling(saved, tmp_path):
    _, _, path = saved
    path.write_bytes(pickle.dumps({"w": [1, 2, 3]}))
    _expect_refusal(path, "pickle")


def test_wrong_shapes_are_rejected(saved, tmp_path):
    _, tok, path = saved
    other = TinyTransformer(ModelConfig.preset("tiny", vocab_size=40, d_model=64, pos_encoding="learned"))
    other_path = checkpoint.save(other, tok, tmp_path / "other.safetensors")
    # pair the big weights with the small config: shapes cannot fit
    path.write_bytes(other_path.read_bytes())
    doc = json.loads(path.with_suffix(".json").read_text())
    doc.pop("weights_sha256")
    path.with_suffix(".json").write_text(json.dumps(doc))
    _expect_refusal(path, "shape")


def test_foreign_or_broken_json_is_rejected(saved):
    _, _, path = saved
    js = path.with_suffix(".json")
    doc = json.loads(js.read_text())
    js.write_text("{not json")
    _expect_refusal(path, "not valid JSON")
    js.write_text(json.dumps({**doc, "format": "something-else"}))
    _expect_refusal(path, "not an Attention Lab")
    js.write_text(json.dumps({**doc, "config": {**doc["config"], "d_model": 33}}))
    _expect_refusal(path, "divisible")
    js.write_text(json.dumps({**doc, "config": {**doc["config"], "wings": 2}}))
    _expect_refusal(path, "unknown config field")
    js.unlink()
    _expect_refusal(path, "missing")


def test_nan_weights_are_rejected(saved, tmp_path):
    model, tok, _ = saved
    with torch.no_grad():
        model.blocks[0].mlp[0].weight[0, 0] = float("nan")
    path = checkpoint.save(model, tok, tmp_path / "nan.safetensors")
    _expect_refusal(path, "NaN")


def test_a_failed_save_leaves_the_previous_checkpoint_intact(saved, monkeypatch):
    model, tok, path = saved
    before = path.read_bytes(), path.with_suffix(".json").read_text()

    def explode(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint, "save_file", explode)
    with pytest.raises(OSError):
        checkpoint.save(model, tok, path, {"title": "new"})
    assert (path.read_bytes(), path.with_suffix(".json").read_text()) == before
    assert not list(path.parent.glob("*.tmp"))
    checkpoint.load_checkpoint(path)  # still loads


def test_a_safetensors_header_whose_length_starts_with_0x80_is_not_mistaken_for_a_pickle(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "w.safetensors"
    for pad in range(400):  # grow the header until its length's low byte is 0x80 (a pickle's first byte)
        save_file({"w": torch.zeros(2)}, str(path), metadata={"pad": "x" * pad})
        if path.read_bytes()[0] == 0x80:
            break
    assert path.read_bytes()[0] == 0x80
    assert set(checkpoint._read_weights(path)) == {"w"}
