"""Scaling parameters the RoPE page can be given: every impossible value is a ValueError with a sentence, never a
ZeroDivisionError or a silently zeroed attention; one bad method's parameters hide no other method."""

import pytest
import torch

from viz_model import rope
from viz_model.lessons import rope as rl

YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}
LLAMA3 = {"type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}


@pytest.mark.parametrize("scaling, name", [
    ({**YARN, "beta_fast": 0}, "beta_fast"),
    ({**YARN, "beta_slow": 0}, "beta_slow"),
    ({**YARN, "beta_fast": -1.0}, "beta_fast"),
    ({**LLAMA3, "low_freq_factor": 0}, "low_freq_factor"),
    ({**YARN, "attention_factor": 0}, "attention_factor"),
])
def test_zero_parameters_are_refused_with_a_sentence_not_a_division_by_zero(scaling, name):
    with pytest.raises(ValueError, match=rf"'{name}' must be > 0"):
        rope.inv_freq(64, 10000.0, scaling)


def test_a_factor_below_one_is_not_told_to_be_a_whole_number():
    with pytest.raises(ValueError) as err:
        rope.validate_scaling({"type": "linear", "factor": 0.5})
    assert str(err.value) == "'factor' must be >= 1, got 0.5."


def test_original_length_must_still_be_a_whole_number():
    with pytest.raises(ValueError, match="'original_max_position_embeddings' must be a whole number >= 1"):
        rope.validate_scaling({**YARN, "original_max_position_embeddings": 512.5})


def test_positive_attention_factor_scales_cos_and_sin():
    freqs, att = rope.inv_freq(64, 10000.0, {**YARN, "attention_factor": 0.5})
    cos, sin = rope.rope_cos_sin(torch.arange(4), freqs, att)
    assert att == 0.5 and torch.allclose(cos[0], torch.full_like(cos[0], 0.5))


def test_one_bad_method_hides_no_other_method():
    extra = {"beta_fast": 0.0, "beta_slow": 1.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    table = rl.scaling_table(64, 10000.0, 512, 4096, extra)
    problems = rl.scaling_problems(512, 4096, extra)
    assert set(problems) == {"yarn"} and "beta_fast" in problems["yarn"]
    assert set(table) == set(rope.ROPE_INIT_FUNCTIONS) - {"yarn"}
