"""The Start page's numbers for any model (lessons.start): its card, a head's recorded role, the row-sum check; on
the shipped English model, with a case each that must fail."""

from __future__ import annotations

from viz_model.lessons import start as lesson
from viz_model.tokenizer import encode


def test_start_row_sum_check_and_role_on_a_head_of_the_shipped_model(english_model):
    from viz_model.lessons.common import layer_attention

    ids = encode(english_model.tokenizer, "the cat sat on the mat").ids
    probs, allowed = layer_attention(english_model.model, ids, 0)
    good = lesson.row_sum_check(probs[0], causal=True)
    assert good.ok and "blocked by the causal mask" in good.claim
    assert not lesson.row_sum_check(probs[0] * 1.01, causal=False).ok
    role = english_model.metadata["head_roles"][0]
    line = lesson.role_line(english_model.metadata, role["layer"], role["head"])
    assert f"**{role['role']}** (score {role['score']:.2f})" in line
    assert lesson.role_line({}, 0, 0) is None


def test_start_model_card_reads_the_config(english_model):
    card = lesson.model_card(english_model.model, english_model.metadata, "cpu", folder=False)
    cfg = english_model.model.config
    assert card["parameters"] == f"{english_model.model.num_params():,}" and card["layers"] == str(cfg.n_layers)
    assert card["attention"] == "causal (decoder)" and "K/V heads" not in card
    folder = lesson.model_card(english_model.model, {"name": "m", "memory_bytes": 1536}, "cpu", folder=True)
    assert folder["memory"] == "1.5 KB" and folder["K/V heads"].startswith(str(cfg.kv_heads))
