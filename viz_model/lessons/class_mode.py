"""Ask the class (#28): what a question's reveal says (the model's own answer, the tally).

The preset questions themselves, one function per page from what the view shows to (prompt, choices, answer), are
the registry in lessons.presets; answer is {"correct": [choice indices], "why": a sentence built from the measured
numbers}. Nothing here knows Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence

# The preset questions moved to one registry, lessons.presets (#39: one on every page); their names stay here.
from viz_model.lessons.presets import (  # noqa: F401
    MAX_TOKEN_CHOICES,
    ROPE_EXTRA_KEYS,
    Preset,
    attention_question,
    attention_row,
    rope_preset,
    rope_question,
    start_question,
)


def model_answer_text(choices: Sequence[str], answer: dict) -> str:
    """The sentence shown once a question is revealed: the model's own answer and why (the measured numbers)."""
    correct = answer.get("correct") or []
    if not correct:
        return "No model answer for a free question: discuss it."
    names = ", ".join(f"“{choices[i]}”" for i in correct)
    whose = "The lecture's answer" if answer.get("source") == "lecture" else "The model's own answer"
    return f"{whose}: {names}. {answer.get('why', '')}"


def tally_lines(choices: Sequence[str], counts: Sequence[int], answer: dict) -> list[tuple[bool, str, int]]:
    """One (the model picks it, choice, answers) per choice, in the question's order: the revealed tally."""
    correct = set(answer.get("correct") or [])
    return [(i in correct, c, int(n)) for i, (c, n) in enumerate(zip(choices, counts))]
