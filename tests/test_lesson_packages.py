"""#41 item 4: lessons that read like their lecture. A lesson over 450 lines is a package of the same dotted name, one
module per sub-topic of its lecture, each opening with its idea in two lines; #41 item 2 inside them."""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "viz_model" / "lessons"
SPLIT = ("cost", "encoder", "encoder_decoder", "normalization", "presets", "qkv", "recurrence", "sinks")  # (add yours)
MAX_LINES = 450


def modules(lesson: str) -> list[Path]:
    return sorted((LESSONS / lesson).glob("*.py"))


def sources(lesson: str) -> list[Path]:
    """The lesson's files: its package's modules, or its one module."""
    return modules(lesson) or [LESSONS / f"{lesson}.py"]


@pytest.mark.parametrize("lesson", SPLIT)
def test_the_lesson_is_a_package_of_short_modules_each_opening_with_its_idea(lesson):
    files = modules(lesson)
    assert len(files) >= 3, f"lessons/{lesson} is not split into a package"
    for path in files:
        lines = path.read_text().splitlines()
        assert len(lines) <= MAX_LINES, f"{path.relative_to(ROOT)}: {len(lines)} lines"
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc, f"{path.relative_to(ROOT)} opens with no docstring"
        assert 1 <= len(doc.split("\n\n")[0].splitlines()) <= 2, f"{path.relative_to(ROOT)}: its idea in two lines"


@pytest.mark.parametrize("lesson", SPLIT)
def test_the_package_keeps_every_name_the_old_module_had(lesson):
    """Other modules import `viz_model.lessons.<lesson>` as before: its __all__ names what each sub-module defines
    publicly (and the private names tests read), and each resolves."""
    import importlib

    pkg = importlib.import_module(f"viz_model.lessons.{lesson}")
    for path in modules(lesson):
        if path.stem == "__init__":
            continue
        tree = ast.parse(path.read_text())
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        public = {n for n in defined if not n.startswith("_")}
        assert public <= set(pkg.__all__), f"{path.stem}: not re-exported {sorted(public - set(pkg.__all__))}"
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None


@pytest.mark.parametrize("lesson", SPLIT)
def test_no_causal_triangle_is_built_by_hand(lesson):
    """#41 item 2: masks.causal_mask is the one causal mask."""
    for path in sources(lesson):
        hits = re.findall(r"\b(?:np|numpy|torch)\.(?:triu|tril)\(|\.tril\(|\.triu\(", path.read_text())
        assert not hits, f"{path.relative_to(ROOT)} builds a triangle by hand: {hits}"


@pytest.mark.parametrize("lesson", SPLIT)
def test_every_lru_cache_says_why(lesson):
    """#41 item 2: in lessons an lru_cache memoises a pure function of immutable arguments, and says so."""
    for path in sources(lesson):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "lru_cache" in line and line.lstrip().startswith("@"):
                comment = " ".join(lines[max(0, i - 3): i])
                assert "pure function" in comment, f"{path.relative_to(ROOT)}:{i + 1}: an lru_cache without its why"


def test_the_english_examples_are_read_again_when_the_sample_changes(tmp_path, monkeypatch):
    """english_examples is kept per version of the held-out sample's file (path, mtime, size), not once per process:
    a rebuilt sample shows its own sentences."""
    from viz_model import english
    from viz_model.lessons import encoder

    sample = tmp_path / "english_heldout.json"
    first = "the quick dog ran across the long field at night"
    second = "a small bird sang over the old stone wall today"
    sample.write_text(json.dumps({"wordnet": [first]}))
    monkeypatch.setattr(english, "HELDOUT_PATH", sample)
    assert encoder.english_examples(1)[0].split()[-1] == "night"
    sample.write_text(json.dumps({"wordnet": [second, first]}))  # another size: a new version of the file
    assert encoder.english_examples(1)[0].split()[-1] == "today"


@pytest.mark.parametrize("lesson", SPLIT)
def test_every_name_the_other_layers_read_from_the_lesson_exists(lesson):
    """Pages, ui, the handout, benches and scripts read `lesson.NAME` (import ... as lesson, or by name): each name
    is there (the handout read ed_lesson.N_PAD, which only ui had: its padded view raised AttributeError)."""
    import importlib

    pkg = importlib.import_module(f"viz_model.lessons.{lesson}")
    aliased = re.compile(rf"from viz_model\.lessons import {lesson}(?: as (\w+))?\n")
    by_name = re.compile(rf"from viz_model\.lessons\.{lesson} import (?:\(([^)]*)\)|([^\n]*))")
    missing = []
    for path in [*ROOT.glob("viz_model/**/*.py"), *ROOT.glob("app_pages/*.py"), *ROOT.glob("bench/*.py"),
                 *ROOT.glob("scripts/*.py")]:
        if LESSONS / lesson in path.parents:
            continue
        text = path.read_text()
        for m in aliased.finditer(text):
            alias = m.group(1) or lesson
            missing += [f"{path.name}: {alias}.{a}" for a in set(re.findall(rf"\b{alias}\.(\w+)", text))
                        if not hasattr(pkg, a)]
        for m in by_name.finditer(text):
            names = re.findall(r"\w+", re.sub(r"#.*", "", m.group(1) or m.group(2)))
            missing += [f"{path.name}: {a}" for a in names if not hasattr(pkg, a)]
    assert not missing
