"""Every ✓/✗ on every page and tab agrees with the error and tolerance it states (#26's quality bar).

The walk opens each page of app.py, then each of its tabs, and reads every success/error box that starts with ✓ or
✗. A box that states its measurement as "max error E, tolerance T", "max error E (tolerance T)" or "E (≤ T)" must
carry ✓ exactly when E ≤ T; a ✓ must sit in a success box and a ✗ in an error box."""

import re

import pytest
from conftest import ROOT

from viz_model.pages import page_files

NUMBER = r"([0-9][0-9.]*(?:e[+-]?[0-9]+)?)"
STATED = [re.compile(rf"max error {NUMBER},? \(?tolerance {NUMBER}\)?"), re.compile(rf"{NUMBER} \(≤ {NUMBER}\)")]


def _pages() -> list[str]:
    return page_files()


def stated_checks(text: str) -> list[tuple[float, float]]:
    """The (error, tolerance) pairs a check's sentence states."""
    return [(float(e), float(t)) for pattern in STATED for e, t in pattern.findall(text)]


def test_stated_checks_reads_the_formats_the_pages_print():
    assert stated_checks("✓ Rows sum to 1 (max error 1.2e-07, tolerance 1e-05)") == [(1.2e-07, 1e-05)]
    assert stated_checks("✗ x — failed here: max error 1.0e-02 (tolerance 1e-05)") == [(1e-02, 1e-05)]
    assert stated_checks("largest ‖S − Sᵀ‖/‖S‖ 0.0e+00 (≤ 1e-06)") == [(0.0, 1e-06)]


# The keys of the pages' share.tabs, read from their source: a page with tabs is walked tab by tab.
TAB_KEYS = sorted({k for f in [*ROOT.glob("app_pages/*.py"), *ROOT.glob("viz_model/ui/*.py")]
                   for k in re.findall(r'tabs\((?:[^()]|\([^()]*\))*?key="(\w+_tab)"', f.read_text(), re.S)})


def test_the_walk_finds_the_pages_tabs():
    assert {"explorer_tab", "masks_tab", "qkv_tab", "generate_tab", "train_tab"} <= set(TAB_KEYS)


def _boxes(at) -> list[tuple[str, str]]:
    return [("success", b.value) for b in at.success] + [("error", b.value) for b in at.error]


def _walk(at, page_file: str):
    """Yield (where, kind, text) for every ✓/✗ box of the page's default view and of each of its tabs."""
    yield from ((page_file, k, t) for k, t in _boxes(at))
    labels = [t.label for t in at.tabs]
    key = next((k for k in TAB_KEYS if k in at.session_state and at.session_state[k] in labels), None)
    for label in labels if key else []:
        at.session_state[key] = label
        at.run()
        assert not at.exception, (page_file, label)
        yield from (((page_file, label), k, t) for k, t in _boxes(at))


@pytest.mark.parametrize("page_file", _pages())
def test_every_tick_agrees_with_the_error_and_tolerance_it_states(app_test, page_file):
    at = app_test(None if page_file.endswith("start.py") else page_file, timeout=180)
    assert not at.exception, page_file
    verified = 0
    for where, kind, text in _walk(at, page_file):
        mark = text[:1]
        if mark not in "✓✗":
            continue
        assert (mark == "✓") == (kind == "success"), (where, text)
        for error, tol in stated_checks(text):
            assert (mark == "✓") == (error <= tol), (where, text)
            verified += 1
    if page_file.endswith(("start.py", "explorer.py", "generate.py")):
        assert verified >= 1, page_file  # the row-sum verdicts: the walk reads them, it is not vacuous
