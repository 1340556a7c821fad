"""#39 (item 5): a lecture written back as its Markdown, the instructor's lecture folders, a student's uploaded file,
and recorded views as a lecture (viz_model.lecture_files, core)."""

from __future__ import annotations

import os

import pytest

from viz_model import lecture_files as lf
from viz_model.lectures import LECTURES_DIR, MAX_BYTES, LectureError, builtin_lectures, load_lecture

ONE = "# {title}\n\n## A step\nview: /masks?masks_layer=1\n\nSome words.\n"
BAD = "# Bad\n\n## A step\nview: /masks\n\n## Another\nview: /nowhere\n"  # line 7: an unknown page
MIXED = """\
---
audience: anyone
---

# From a heading

An intro with a [link](/masks).

## Ranges and a question

view: /cost?cost_cpu_T=64&cost_cpu_T=2048&model_key=classroom
look at: the two ends

ask: Which grows faster? | time | *memory | neither
why: The score matrix is T by T.

```
view: fenced, so narrative
```

## A preset

view: /?start_text=I+like+cats&start_bos=false
ask: preset start_row
"""


@pytest.mark.parametrize("name", list(builtin_lectures()))
def test_a_built_in_lecture_written_out_reads_back_the_same(name):
    lec = builtin_lectures()[name]
    text = lf.dump_lecture(lec)
    again = load_lecture(text)
    assert lf.without_lines(again) == lf.without_lines(lec)
    assert lf.dump_lecture(again) == text  # and writing it again gives the same file
    assert len(again.steps) == len(lec.steps) >= 2


def test_a_heading_title_ranges_questions_and_presets_read_back_the_same():
    lec = load_lecture(MIXED)
    again = load_lecture(lf.dump_lecture(lec))
    assert lf.without_lines(again) == lf.without_lines(lec)
    assert again.meta == {"audience": "anyone"} and again.title == "From a heading"  # still a heading, not meta
    assert again.steps[0].params["cost_cpu_T"] == ["64", "2048"]
    assert again.steps[0].question.correct == (1,) and again.steps[0].question.why == "The score matrix is T by T."
    assert again.steps[1].question.preset == "start_row" and again.steps[1].page == "start"
    assert "view: fenced, so narrative" in again.steps[0].text


def test_recorded_views_become_a_lecture_whose_file_reads_back_the_same():
    steps = [("The heads", "Look at head 2.\n\nwhy: this line is a note, not a directive\n## nor a step",
              "/explorer?explorer_layer=1&explorer_head=2"),
             ("", "", "http://localhost:8501/masks?masks_kind=Causal+%28decoder%29")]
    lec = lf.recorded_lecture("Week 3", steps)
    assert lec.title == "Week 3" and [s.title for s in lec.steps] == ["The heads", "Step 2"]
    assert [s.page for s in lec.steps] == ["explorer", "masks"]
    assert lec.steps[0].params == {"explorer_layer": "1", "explorer_head": "2"}
    assert lec.steps[1].params == {"masks_kind": "Causal (decoder)"}
    assert lec.steps[0].question is None  # the typed "why:" stayed narrative (escaped), as did "## nor a step"
    assert "why\\: this line is a note" in lec.steps[0].text and "\\## nor a step" in lec.steps[0].text
    assert lf.without_lines(load_lecture(lf.dump_lecture(lec))) == lf.without_lines(lec)


def test_a_recorded_step_with_html_or_a_bad_view_is_named_by_its_number():
    with pytest.raises(LectureError) as err:
        lf.recorded_lecture("T", [("Fine", "", "/masks"), ("Bold", "<b>hi</b>", "/masks"),
                                  ("Lost", "", "/nowhere?x=1")])
    said = lf.messages(err.value)
    assert any(m.startswith("step 2: raw HTML") for m in said), said
    assert any(m.startswith("step 3: unknown page") for m in said), said
    assert not any(m.startswith("step 1") for m in said)
    with pytest.raises(LectureError, match="no steps yet"):
        lf.recorded_lecture("T", [])


def test_a_view_link_keeps_the_pages_settings_and_drops_the_lectures_place_and_a_class_code():
    query = {"explorer_layer": "1", "model_key": "classroom", "lecture": "attention", "step": "3", "class": "ABCD",
             "masks_kind": "Padding"}
    assert lf.view_link("explorer", query) == "/explorer?explorer_layer=1&model_key=classroom"
    assert lf.view_link("home", {"start_text": "a b"}) == "/start?start_text=a+b"
    assert lf.view_link("cost", {"cost_cpu_T": ["64", "2048"]}) == "/cost?cost_cpu_T=64&cost_cpu_T=2048"
    with pytest.raises(ValueError):
        lf.view_link("nowhere", {})


# -- the instructor's folders --------------------------------------------------------------------------------------


def test_no_folders_when_the_variable_is_unset_or_empty():
    assert lf.lecture_dirs({}) == [] and lf.lecture_dirs({lf.ENV_VAR: " "}) == []
    assert lf.folder_lectures([]) == ({}, [])


def test_folders_are_read_in_order_with_each_bad_file_named_by_its_line(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "week-1.md").write_text(ONE.format(title="Week one"))
    (a / "broken.md").write_text(BAD)
    (a / "huge.md").write_bytes(b"# T\n" + b"x" * (MAX_BYTES * 5))
    (a / "binary.md").write_bytes(b"# T\n\x00\x01\x02")
    (a / "notes.txt").write_text(BAD)  # not a .md file: not read
    (b / "Week 2 (draft).md").write_text(ONE.format(title="Week two"))
    (b / "week-1.md").write_text(ONE.format(title="Another week one"))  # the name a's file has
    (b / "attention.md").write_text(ONE.format(title="Our own attention"))  # a built-in lecture's name
    (b / "my-own.md").write_text(ONE.format(title="Mine"))  # the prefix kept for sessions' lectures
    spec = os.pathsep.join([str(a), str(b), str(a), str(tmp_path / "missing")])
    folders = lf.lecture_dirs({lf.ENV_VAR: spec})
    assert folders == [a, b, tmp_path / "missing"]  # each once
    found, problems = lf.folder_lectures(folders, taken=builtin_lectures())
    assert list(found) == ["week-1", "Week-2-draft"]
    assert found["week-1"].title == "Week one" and found["Week-2-draft"].title == "Week two"
    said = {p.path.name: str(p) for p in problems}
    assert said["broken.md"].startswith("line 7: unknown page")
    assert "over 200 kB" in said["huge.md"] and "NUL byte" in said["binary.md"]
    assert "week-1.md" in said and str(a / "week-1.md") in said["week-1.md"]
    assert "built-in lecture" in said["attention.md"] and "kept for lectures" in said["my-own.md"]
    assert "not a folder" in said["missing"] and "notes.txt" not in said


def test_a_folder_of_too_many_files_is_read_up_to_its_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(lf, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"l{i}.md").write_text(ONE.format(title=f"L{i}"))
    found, problems = lf.folder_lectures([tmp_path])
    assert list(found) == ["l0", "l1", "l2"] and "only the first 3" in str(problems[0])


def test_the_stamp_changes_when_a_lecture_file_changes(tmp_path):
    (tmp_path / "a.md").write_text(ONE.format(title="A"))
    before = lf.stamp([tmp_path])
    (tmp_path / "a.md").write_text(ONE.format(title="A longer title"))
    assert lf.stamp([tmp_path]) != before


# -- a student's own file ------------------------------------------------------------------------------------------


def test_an_uploaded_file_gets_a_session_name_no_lecture_has():
    name, lec = lf.read_upload("Week 3.md", ONE.format(title="Week three").encode(), taken={"attention"})
    assert (name, lec.title) == ("my-Week-3", "Week three")
    name2, _ = lf.read_upload("Week 3.md", ONE.format(title="Again").encode(), taken={"attention", name})
    assert name2 == "my-Week-3-2"


@pytest.mark.parametrize("file_name, data, words", [
    ("bad.md", BAD.encode(), ["line 7", "unknown page"]),
    ("latin.md", "# T\n## S\nview: /masks\ncaf\u00e9\n".encode("latin-1"), ["line 4", "not UTF-8"]),
    ("big.md", b"# T\n" + b"x" * MAX_BYTES, ["over 200 kB"]),
    ("lecture.txt", ONE.format(title="T").encode(), ["not a .md file"]),
], ids=["bad line", "not utf-8", "too large", "not .md"])
def test_an_uploaded_file_that_is_not_a_lecture_says_why(file_name, data, words):
    with pytest.raises(LectureError) as err:
        lf.read_upload(file_name, data, taken=())
    said = "\n".join(lf.messages(err.value))
    assert all(w in said for w in words), said


def test_an_uploaded_files_text_is_never_read_as_a_path():
    path = str(LECTURES_DIR / "attention.md").encode()  # a one-line text naming a lecture on the server
    with pytest.raises(LectureError, match="no steps"):
        lf.read_upload("sneaky.md", path, taken=())


PRESET_LECTURE = "# Week four\n\n## Heads\nview: /explorer\nask: preset explorer_previous\n\n## Masks\nview: /masks\n" \
                 "ask: preset no_such_question\n"


def test_an_uploaded_or_folder_lecture_naming_an_unknown_preset_is_refused_with_its_line(tmp_path):
    """A preset name was only shape-checked: a lecture asking a preset the app does not have was offered, and its step
    failed when a student reached it. Given the app's preset names (the ui passes lessons.presets.PRESETS), the file
    is refused with the line of the unknown name, and a known one passes."""
    from viz_model.lessons.presets import PRESETS

    with pytest.raises(LectureError) as err:
        lf.read_upload("week4.md", PRESET_LECTURE.encode(), (), presets=frozenset(PRESETS))
    assert [(line, msg.split(";")[0]) for line, msg in err.value.errors] == [(9, "unknown preset “no_such_question”")]
    assert "explorer_previous" in err.value.errors[0][1]  # the message lists the names a lecture may ask
    (tmp_path / "week4.md").write_text(PRESET_LECTURE)
    (tmp_path / "week5.md").write_text(PRESET_LECTURE.replace("no_such_question", "masks_visible"))
    found, problems = lf.folder_lectures([tmp_path], presets=frozenset(PRESETS))
    assert list(found) == ["week5"] and [p.path.name for p in problems] == ["week4.md"]
    assert load_lecture(PRESET_LECTURE).steps[1].question.preset == "no_such_question"  # core alone: shape only
