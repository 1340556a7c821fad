"""Hostile and odd input on every page: a clear message, nothing lost, never a traceback."""

import ast
from pathlib import Path

import pytest
from conftest import ROOT

HOSTILE = [
    "",
    "   \n\t ",
    "x " * 5000,                                   # 10,000 characters
    "😀🎉 👩‍👩‍👧 cats",                              # emoji, ZWJ sequences
    "مرحبا بالعالم hello",                         # right-to-left text
    "e\u0301 n\u0303 combining",                   # combining marks
    "zero\u200bwidth\u200d and \u202eRTL override",  # zero-width and bidi control characters
    "ctrl\x00\x07\x1b[31m chars",                  # control characters
    "<script>alert(1)</script>",
    "<b>x</b> &amp; <pad> <PAD> <eos>",
]


def _pages() -> list[str]:
    tree = ast.parse((ROOT / "app.py").read_text())
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PAGES")
    return [file for _, file, *_ in ast.literal_eval(node) if Path(ROOT / file).exists()]


@pytest.mark.parametrize("page_file", _pages())
def test_every_text_box_survives_hostile_input(app_test, page_file):
    at = app_test(None if page_file.endswith("start.py") else page_file)
    assert not at.exception, page_file
    boxes = [("text_input", w.key) for w in at.text_input if w.key] + [("text_area", w.key) for w in at.text_area
                                                                         if w.key]
    for kind, key in boxes:
        for text in HOSTILE:
            widget = getattr(at, kind)(key=key)
            widget.set_value(text[: widget.max_chars] if widget.max_chars else text).run()
            assert not at.exception, (page_file, key, text[:30])
            assert not any("Traceback" in e.value for e in at.error), (page_file, key)


@pytest.mark.parametrize("query", [{"layer": "-1"}, {"head": "9999"}, {"model": "../../etc/passwd"},
                                   {"presenter": "maybe"}, {"text": "<script>alert(1)</script>"}, {"k": "NaN"}])
def test_garbage_query_parameters_fall_back_to_defaults(query):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params.update(query)
    at.run()
    assert not at.exception
    assert not at.error
