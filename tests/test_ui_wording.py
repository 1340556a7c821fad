"""Wording a student reads (issue #14's tour): ordinals, pointers to other tabs, model names."""

import json
import re
from pathlib import Path

import pytest

from viz_model.figures.sinusoidal import every_nth
from viz_model.train import RECIPES
from viz_model.ui.masks import QUIZ

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("n, shown, text", [
    (8192, 256, "about every 32nd position"),  # was "every 32th"
    (255 * 2 + 1, 256, "every 2nd position"),
    (255 * 3 + 1, 256, "every 3rd position"),
    (255 * 21 + 1, 256, "every 21st position"),
    (255 * 11 + 1, 256, "every 11th position"),
    (257, 256, "256 of 257 positions"),
    (64, 64, None),
])
def test_every_nth_uses_real_ordinals(n, shown, text):
    assert every_nth(n, shown, "position") == text


def test_quiz_names_the_tab_it_points_to_instead_of_saying_above():
    """The quiz is a tab of its own: "the table above" was in another tab."""
    page = (ROOT / "app_pages" / "masks.py").read_text()
    tabs = set(re.findall(r'"([^"]+)": (?:ui\.\w+|\w+)[,}]', page.split("TABS = {", 1)[1].split("}", 1)[0] + "}"))
    assert "Causal ≠ sequential" in tabs
    for _, _, _, why in QUIZ:
        assert "above" not in why, why
        for named in re.findall(r"tab \*\*(.+?)\*\*", why):
            assert named in tabs, (named, tabs)
    assert sum("tab **" in why for *_, why in QUIZ) == 2


def test_the_model_without_positions_is_named_in_words():
    assert RECIPES["enc-none"]["title"] == "Small model, no position encoding"
    shipped = json.loads((ROOT / "assets" / "models" / "enc-none.json").read_text())
    assert shipped["metadata"]["title"] == "Small model, no position encoding"  # what the model list shows
    titles = [json.loads(p.read_text())["metadata"].get("title", "")
              for p in (ROOT / "assets" / "models").rglob("*.json")]
    assert not any("none positions" in t for t in titles)


def test_no_page_speaks_of_an_issues_bar():
    """#43 (1): "perplexity 55.5 vs a bigram model's 145.6: 0.381 (bar ≤ 0.8)" and "(the bar: at least 95 %)" were our
    issues' wording, on the Start and Encoder–decoder pages; a page states a goal in its own words, or none."""
    jargon = re.compile(r"\(bar [≤≥{]|\bthe bar:")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in [*ROOT.glob("viz_model/**/*.py"), *ROOT.glob("app_pages/*.py")]
             for n, line in enumerate(p.read_text().splitlines(), 1) if jargon.search(line)]
    assert found == []
