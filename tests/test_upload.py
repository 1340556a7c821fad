"""Uploaded checkpoints are validated, never unpickled: garbage, a pickle, wrong shapes and oversized files are each
refused with a sentence; a real checkpoint (zip or pair) round-trips."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import pytest
import torch

from viz_model import checkpoint
from viz_model.lessons import train as T
from viz_model.runtime import runs as R


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    run = T.Run(T.TrainSpec(preset="tiny", steps=10))
    path = R.save_run(run, "good", "owner", tmp_path_factory.mktemp("runs"))
    return path, path.read_bytes(), checkpoint.json_path(path).read_bytes(), run


def pair(weights: bytes, doc: bytes) -> list[tuple[str, bytes]]:
    return [("model.safetensors", weights), ("model.json", doc)]


def test_a_downloaded_zip_uploads_back_to_the_same_weights(saved, tmp_path):
    path, _, _, run = saved
    ckpt = R.import_upload([("good.zip", R.checkpoint_zip(path))], tmp_path)
    assert ckpt.path.parent == tmp_path and ckpt.path.exists()
    assert torch.equal(ckpt.model.tok_emb.weight, run.model.tok_emb.weight.cpu())
    again = R.import_upload(pair(*saved[1:3]), tmp_path / "pair")
    assert again.model.num_params() == run.model.num_params()


def test_garbage_is_refused(saved, tmp_path):
    _, _, doc, _ = saved
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        R.import_upload(pair(b"hello, I am not a model" * 10, doc), tmp_path)
    with pytest.raises(ValueError, match="not a valid zip"):
        R.import_upload([("x.zip", b"PK\x03\x04 broken")], tmp_path)
    with pytest.raises(ValueError, match="one .safetensors file and its .json"):
        R.import_upload([("notes.txt", b"hi")], tmp_path)
    assert not any(tmp_path.rglob("*.safetensors"))  # nothing refused is kept


def test_a_pickle_is_refused_without_being_unpickled(saved, tmp_path):
    _, _, doc, run = saved

    class Boom:
        def __reduce__(self):  # would run if anything unpickled the upload
            return (exec, ("raise SystemExit('unpickled!')",))

    for blob in (pickle.dumps(Boom()), _torch_save(run.model.state_dict())):
        with pytest.raises(ValueError, match="pickle"):
            R.import_upload(pair(blob, doc), tmp_path)


def _torch_save(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_weights_of_the_wrong_shape_are_refused(saved, tmp_path):
    _, weights, doc, _ = saved
    d = json.loads(doc)
    d["config"]["d_model"] = 64  # the JSON now describes a wider model than the weights hold
    d["config"]["d_ff"] = 128
    with pytest.raises(ValueError, match="shape"):
        R.import_upload(pair(weights, json.dumps(d).encode()), tmp_path)
    d = json.loads(doc)
    d["config"]["n_heads"] = 3  # an impossible config: 32 is not divisible by 3
    with pytest.raises(ValueError, match="divisible"):
        R.import_upload(pair(weights, json.dumps(d).encode()), tmp_path)


def test_an_oversized_upload_is_refused_before_it_is_read(saved, tmp_path):
    _, _, doc, _ = saved
    big = b"\0" * (R.MAX_UPLOAD_BYTES + 1)
    with pytest.raises(ValueError, match="larger than 32 MB"):
        R.import_upload(pair(big, doc), tmp_path)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:  # tiny zip, huge when unpacked
        z.writestr("m.safetensors", big)
        z.writestr("m.json", doc)
    assert len(bomb.getvalue()) < R.MAX_UPLOAD_BYTES
    with pytest.raises(ValueError, match="too large"):
        R.import_upload([("bomb.zip", bomb.getvalue())], tmp_path)
