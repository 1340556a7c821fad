"""The Start page's numbers for any model (lessons.start): its card, a head's recorded role, the row-sum check; on
the shipped English model, with a case each that must fail."""

from __future__ import annotations

import numpy as np
import pytest

from viz_model.lessons import common
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


def test_a_role_says_what_it_was_measured_on_and_what_the_head_does_on_this_sentence(english_model):
    """#43 (3): "previous-token (score 0.96)" was captioned "measured on held-out text", but 0.96 is on repeated random
    tokens (0.55 on English text); and the induction head L1 H2 rests on <bos> in a sentence where nothing repeats,
    which nothing said. The live numbers are recomputed here from the head's weights."""
    from viz_model.lessons.common import layer_attention

    meta = english_model.metadata
    ids = [english_model.tokenizer.token_to_id("<bos>"),
           *encode(english_model.tokenizer, "my grandmother baked bread while the storm raged").ids]
    probs, _ = layer_attention(english_model.model, ids, 1)
    head = probs[2]  # (T, T): the induction head of the issue
    on_first = float(head[1:, 0].mean())
    b = common.head_behaviour(head, ids)
    assert b["induction"] is None and b["first-token"] == pytest.approx(on_first, abs=1e-5)
    line = lesson.role_line(meta, 1, 2, b, folder=False, first_token="the start token `<bos>`")
    assert "measured on repeated random tokens" in line and "held-out text" not in line
    assert "**induction**" in line and "nothing repeats here" in line
    assert f"{on_first:.2f} of its weight on the start token `<bos>`" in line
    # a sentence that repeats: the share on the token after the earlier copy, computed here
    rep = [*ids, *ids[1:4]]  # "my grandmother baked" again
    probs, _ = layer_attention(english_model.model, rep, 1)
    b = common.head_behaviour(probs[2], rep)
    T, n = len(ids), 3
    want = float(np.mean([probs[2][T + i, 2 + i] for i in range(n)]))  # query T+i repeats token 1+i: key 2+i
    assert b["induction"] == pytest.approx(want, abs=1e-5)
    assert f"{b['induction']:.2f} of its weight goes to the token after an earlier copy" in \
        lesson.role_line(meta, 1, 2, b)
    # the word-level models' roles were measured on their task's held-out sentences
    assert common.roles_measured_on({"head_roles": []}, folder=False) == "on held-out sentences of its training task"
    assert "repeated random tokens" in common.roles_measured_on({}, folder=True)


def test_head_behaviour_reads_the_role_scores_off_a_weight_matrix():
    T = 5
    prev = np.eye(T, k=-1)
    prev[0, 0] = 1.0  # (T, T): every query on the token before
    b = common.head_behaviour(prev, [1, 2, 3, 4, 5])
    assert (b["previous-token"], b["first-token"], b["self"], b["induction"]) == (1.0, 0.25, 0.0, None)
    assert common.head_behaviour(np.ones((1, 1)), [7])["previous-token"] is None


def test_start_model_card_reads_the_config(english_model):
    card = lesson.model_card(english_model.model, english_model.metadata, "cpu", folder=False)
    cfg = english_model.model.config
    assert card["parameters"] == f"{english_model.model.num_params():,}" and card["layers"] == str(cfg.n_layers)
    assert card["attention"] == "causal (decoder)" and "K/V heads" not in card
    folder = lesson.model_card(english_model.model, {"name": "m", "memory_bytes": 1536}, "cpu", folder=True)
    assert folder["memory"] == "1.5 KB" and folder["K/V heads"].startswith(str(cfg.kv_heads))
