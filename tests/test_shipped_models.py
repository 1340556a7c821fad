"""Every shipped checkpoint loads, reproduces its recorded held-out loss, and its head roles recompute."""

import pytest

from viz_model import ASSETS_DIR, heads
from viz_model.checkpoint import load_checkpoint
from viz_model.data import TaskData
from viz_model.train import evaluate

MODELS = ("classroom", "enc-none", "enc-sinusoidal", "enc-learned", "enc-rope", "induction")
KEYS = ("title", "description", "task", "pos_encoding", "steps", "seed", "train_loss", "heldout_loss",
        "next_token_accuracy", "train_seconds", "head_roles")


@pytest.fixture(scope="module", params=MODELS)
def ckpt(request):
    return load_checkpoint(ASSETS_DIR / "models" / f"{request.param}.safetensors")


def test_metadata_is_complete(ckpt):
    meta = ckpt.metadata
    assert all(k in meta for k in KEYS), sorted(set(KEYS) - set(meta))
    assert meta["pos_encoding"] == ckpt.model.config.pos_encoding
    n = ckpt.model.config.n_layers * ckpt.model.config.n_heads
    assert len(meta["head_roles"]) == n


def test_reproduces_recorded_heldout_loss(ckpt):
    meta = ckpt.metadata
    loss, acc = evaluate(ckpt.model, TaskData(meta["task"], ckpt.tokenizer, seed=meta["seed"]))
    assert loss == pytest.approx(meta["heldout_loss"], rel=0.01)
    assert acc == pytest.approx(meta["next_token_accuracy"], abs=0.01)


def test_head_roles_recompute_to_the_metadata(ckpt):
    meta = ckpt.metadata
    fresh = heads.head_roles(ckpt.model, ckpt.tokenizer, meta["task"])
    for got, want in zip(fresh, meta["head_roles"], strict=True):
        assert (got["layer"], got["head"], got["role"]) == (want["layer"], want["head"], want["role"])
        for role in heads.ROLES:
            assert got["scores"][role] == pytest.approx(want["scores"][role], abs=0.02)


def test_classroom_model_has_a_coreference_head_and_a_previous_token_head():
    meta = load_checkpoint(ASSETS_DIR / "models" / "classroom.safetensors").metadata
    assert heads.best_head(meta["head_roles"], "coreference")["scores"]["coreference"] >= 0.8
    assert heads.best_head(meta["head_roles"], "previous-token")["scores"]["previous-token"] >= 0.5


def test_induction_model_continues_repeats_well_above_chance():
    meta = load_checkpoint(ASSETS_DIR / "models" / "induction.safetensors").metadata
    assert meta["next_token_accuracy"] > 0.85  # chance on the second copy is about 1/20
    assert heads.best_head(meta["head_roles"], "induction")["scores"]["induction"] >= 0.3


def test_shipped_models_are_small():
    files = [p for p in (ASSETS_DIR / "models").rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files if not p.name.startswith(("english.", "english-encoder.")))
    # 10.5 MB with the three qkv-* variants (1.3-1.6 MB each, float32 as trained) and the two translators (1 MB each)
    assert total < 12 * 2**20
    # the English model: 5.26 M float32 parameters (21 MB) and its JSON with the 8,192-token BPE (0.5 MB)
    english = sum(p.stat().st_size for p in files if p.name.startswith("english."))
    assert 20 * 2**20 < english < 23 * 2**20
    # the English encoder: 1.84 M float32 parameters (7.4 MB) and its JSON with the same BPE (0.5 MB)
    encoder = sum(p.stat().st_size for p in files if p.name.startswith("english-encoder."))
    assert 0 < encoder < 15 * 2**20
