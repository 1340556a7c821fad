"""A bound widget keeps its place in the page whatever the student types (found by CI on the Explorer).

Streamlit's frontend draws an element by its place in the page (its delta path). If a note appears or goes above a
widget bound to the link (`bind="query-params"`), the widget gets a new place: the browser mounts a new copy, and
when the old copy is removed after the run it unregisters the binding both copies share. On a slow server the removal
comes after the new copy registered, and from then on the link no longer follows that widget (measured: the
Explorer's "Show step" kept the old link after the default sentence, which has a notice, became one without). So
every notice that comes and goes above a widget is drawn in a slot that is always there (`share.notes`), and this
test checks each page's keyed widgets keep their places across sentences that do and do not show notices, and across
the choices that draw or hide a part above other widgets."""

from __future__ import annotations

import pytest
from conftest import open_app

# Sentences chosen to switch notices on and off: none, capitals (lower-cased note), unknown and odd characters,
# and a paste over the box's limit (the cut notice).
SENTENCES = ["the dog sat on the mat", "My Grandmother Baked 🙂 ﷺ zorblax", "the dog sat " * 200]
# {page: link parameters that open its sentence}
PAGES = {"start": {}, "explorer": {}, "masks": {}, "qkv": {}, "encoder": {}, "encoder_decoder": {}, "generate": {},
         "normalization": {"norm_tab": "The batch dimension"}, "lens": {}, "attribution": {}}


NOT_BOUND = {"plotly_chart", "popover", "dataframe"}  # keyed for their own state, never bound to the link


def _paths(node, path=()) -> dict[str, tuple]:
    """Every keyed widget's place: {key: delta path}."""
    out = {}
    children = getattr(node, "children", None)
    for i, child in (children.items() if isinstance(children, dict) else []):
        key = getattr(child, "key", None)
        if key and not key.startswith("$$") and getattr(child, "type", None) not in NOT_BOUND:
            out[key] = path + (i,)
        out |= _paths(child, path + (i,))
    return out


def _text_keys(at) -> list[str]:
    return [t.key for t in at.text_input if t.key]


@pytest.mark.parametrize("url", PAGES)
def test_keyed_widgets_keep_their_place_whatever_the_sentence(url):
    at = open_app(f"app_pages/{url}.py", query=PAGES[url])
    keys = _text_keys(at)
    assert keys, "the page has a sentence box"
    before = _paths(at.main)
    for sentence in SENTENCES:
        at.text_input(key=keys[0]).set_value(sentence).run(timeout=120)
        assert not at.exception, at.exception
        after = _paths(at.main)
        moved = {k: (before[k], after[k]) for k in before.keys() & after.keys() if before[k] != after[k]}
        assert not moved, f"{sentence[:40]!r}: widgets moved {moved}"
        before = after


# (page, widget kind, key, values in turn): each choice draws or hides something above other link-bound widgets
CHOICES = [
    ("explorer", "radio", "explorer_tokenizer", ["word", "bpe"]),  # the other tokenizer's table
    ("explorer", "toggle", "explorer_avg", [True, False]),  # the head's role note
    ("explorer", "selectbox", "explorer_head", [1, 2, 3, 0]),  # heads with and without a measured role
    ("generate", "radio", "generate_mode", ["step", "run"]),  # step mode's count and buttons
    ("encoder_decoder", "radio", "ed_mode", ["step", "run"]),
]


@pytest.mark.parametrize("page, kind, key, values", CHOICES, ids=[c[2] for c in CHOICES])
def test_keyed_widgets_keep_their_place_whatever_the_choice(page, kind, key, values):
    at = open_app(f"app_pages/{page}.py")
    before = _paths(at.main)
    for value in values:
        getattr(at, kind)(key=key).set_value(value).run(timeout=120)
        assert not at.exception, at.exception
        after = _paths(at.main)
        moved = {k: (before[k], after[k]) for k in before.keys() & after.keys() if before[k] != after[k]}
        assert not moved, f"{key}={value!r}: widgets moved {moved}"
        before = after
