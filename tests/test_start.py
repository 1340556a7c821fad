"""The Start page's numbers for any model (lessons.start): its card, a head's recorded role, the row-sum check; on
the shipped English model, with a case each that must fail."""

from __future__ import annotations

import pytest

from viz_model import english
from viz_model.checkpoint import load_checkpoint
from viz_model.lessons import start as lesson
from viz_model.tokenizer import encode


@pytest.fixture(scope="module")
def ckpt():
    return load_checkpoint(english.MODEL_PATH)


def test_start_row_sum_check_and_role_on_a_head_of_the_shipped_model(ckpt):
    from viz_model.lessons.common import layer_attention

    ids = encode(ckpt.tokenizer, "the cat sat on the mat").ids
    probs, allowed = layer_attention(ckpt.model, ids, 0)
    good = lesson.row_sum_check(probs[0], causal=True)
    assert good.ok and "blocked by the causal mask" in good.claim
    assert not lesson.row_sum_check(probs[0] * 1.01, causal=False).ok
    role = ckpt.metadata["head_roles"][0]
    line = lesson.role_line(ckpt.metadata, role["layer"], role["head"])
    assert f"**{role['role']}** (score {role['score']:.2f})" in line
    assert lesson.role_line({}, 0, 0) is None


def test_start_model_card_reads_the_config(ckpt):
    card = lesson.model_card(ckpt.model, ckpt.metadata, "cpu", folder=False)
    cfg = ckpt.model.config
    assert card["parameters"] == f"{ckpt.model.num_params():,}" and card["layers"] == str(cfg.n_layers)
    assert card["attention"] == "causal (decoder)" and "K/V heads" not in card
    folder = lesson.model_card(ckpt.model, {"name": "m", "memory_bytes": 1536}, "cpu", folder=True)
    assert folder["memory"] == "1.5 KB" and folder["K/V heads"].startswith(str(cfg.kv_heads))
