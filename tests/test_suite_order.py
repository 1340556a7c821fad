"""The suite's order (conftest.pytest_collection_modifyitems): the tests listed in tests/slow_tests.txt exist, so a
renamed slow test is not silently left to run last."""

from __future__ import annotations

import ast

from conftest import ROOT, pytest_collection_modifyitems, slow_tests


def _test_names(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_listed_slow_test_is_a_test_of_the_suite():
    slow = slow_tests()
    assert len(slow) >= 20
    missing = []
    for node in slow:
        path, _, name = node.partition("::")
        if name.split("[")[0] not in _test_names(ROOT / path) if (ROOT / path).exists() else True:
            missing.append(node)
    assert missing == [], f"tests/slow_tests.txt names tests that are not in the suite: {missing}"


class _Item:
    def __init__(self, nodeid: str, browser: bool):
        self.nodeid, self.browser = nodeid, browser

    def get_closest_marker(self, name: str):
        return object() if name == "browser" and self.browser else None


def test_the_files_with_listed_tests_run_first_their_slowest_first_then_browser_tests_then_the_rest():
    slow = slow_tests()
    assert list(slow.values()) == sorted(slow.values(), reverse=True)  # the file lists them longest first
    longest = next(iter(slow))
    path = longest.split("::")[0]
    items = [_Item("tests/test_core.py::test_a", False), _Item("tests/test_browser_x.py::test_b", True),
             _Item(f"{path}::test_not_listed", True), _Item("tests/test_core.py::test_c", False),
             _Item(longest, True)]
    pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == [longest, f"{path}::test_not_listed", "tests/test_browser_x.py::test_b",
                                         "tests/test_core.py::test_a", "tests/test_core.py::test_c"]
