"""The sidebar lists only models its pages can run: a recurrent or encoder-decoder checkpoint in the models folder
is left to its own lesson page instead of breaking the Explorer."""

import json

from viz_model import checkpoint
from viz_model.ui import models


def test_the_sidebar_kinds_filter_leaves_other_model_kinds_out(tmp_path, monkeypatch):
    for name, kind in (("dec", None), ("rec", "rnn"), ("mt", "seq2seq")):
        doc = {"format": checkpoint.FORMAT, "version": checkpoint.VERSION, "metadata": {"title": name},
               **({"kind": kind} if kind else {})}
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
        (tmp_path / f"{name}.safetensors").write_bytes(b"")
    monkeypatch.setattr(models, "MODELS_DIR", tmp_path)
    every = {e.key: e.kind for e in models.available_models()}
    assert every == {"dec": "transformer", "rec": "rnn", "mt": "seq2seq", models.RANDOM_MODEL: "transformer"}
    assert [e.key for e in models.available_models(("transformer",))] == ["dec", models.RANDOM_MODEL]
