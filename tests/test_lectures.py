"""Lectures (#39, deliverable 1): the Markdown format, its line-numbered errors, and the built-in lectures' views."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import open_app, texts

from viz_model import lectures
from viz_model.lectures import LectureError, builtin_lectures, load_lecture

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
---
title: Two views of attention
audience: anyone
model: classroom
---

An intro paragraph with a [link to the masks](/masks).

## Every word looks at every word

view: /explorer?explorer_text=the+cat+sat+on+the+mat&explorer_layer=1&explorer_head=2
look at: the row of "sat"

Each row is one token's weights.

```
view: this fenced line is narrative, not a directive
```

- a list item
- another, with `<pad>` in backticks

ask: Which word does "sat" weigh most? | the | *cat | mat | *on
why: Verbs look back at their subject.

## The causal mask
view: http://localhost:8501/masks?masks_kind=Causal+%28decoder%29&model_key=classroom
ask: preset attention_row

A causal mask blocks later keys.

## Start again

view: /?start_text=I+like+cats&start_bos=false
"""


def test_a_good_lecture_reads_back_its_steps_pages_settings_and_questions():
    lec = load_lecture(GOOD)
    assert (lec.title, lec.audience, lec.model) == ("Two views of attention", "anyone", "classroom")
    assert lec.intro == "An intro paragraph with a [link to the masks](/masks)."
    assert [s.title for s in lec.steps] == ["Every word looks at every word", "The causal mask", "Start again"]
    assert [s.page for s in lec.steps] == ["explorer", "masks", "start"]
    assert [s.line for s in lec.steps] == [9, 26, 32]
    first, mask, start = lec.steps
    # the front matter's model is applied: a view that names no model_key opens on the lecture's model
    assert first.params == {"explorer_text": "the cat sat on the mat", "explorer_layer": "1", "explorer_head": "2",
                            "model_key": "classroom"}
    assert first.look == 'the row of "sat"'
    q = first.question
    assert (q.line, q.prompt, q.choices, q.correct) == (23, 'Which word does "sat" weigh most?',
                                                        ("the", "cat", "mat", "on"), (1, 3))
    assert q.why == "Verbs look back at their subject." and q.preset is None
    # The narrative is the Markdown as written: the fence's "view:" line and the list stay, directives go
    assert first.text.startswith("Each row is one token's weights.\n\n```\nview: this fenced line")
    assert "- another, with `<pad>` in backticks" in first.text
    assert "ask:" not in first.text and "look at:" not in first.text
    assert mask.params == {"masks_kind": "Causal (decoder)", "model_key": "classroom"}
    assert (mask.question.preset, mask.question.line, mask.question.choices) == ("attention_row", 28, ())
    assert mask.text == "A causal mask blocks later keys." and mask.look is None
    assert start.params == {"start_text": "I like cats", "start_bos": "false", "model_key": "classroom"}
    assert start.question is None and all(s.chart is None and s.numbers == () for s in lec.steps)


def test_a_steps_url_is_a_share_link_that_loads_the_same_view():
    lec = load_lecture(GOOD)
    assert lec.steps[0].url == ("/explorer?explorer_text=the+cat+sat+on+the+mat&explorer_layer=1&explorer_head=2"
                                "&model_key=classroom")
    again = load_lecture("# T\n\n## S\n\nview: " + lec.steps[1].url + "\n")
    assert (again.steps[0].page, again.steps[0].params) == ("masks", lec.steps[1].params)


def test_a_range_setting_keeps_both_ends_in_order():
    step = load_lecture("# T\n## S\nview: /cost?cost_cpu_T=64&cost_cpu_T=2048\n").steps[0]
    assert step.params == {"cost_cpu_T": ["64", "2048"]}
    assert step.url == "/cost?cost_cpu_T=64&cost_cpu_T=2048"


def test_a_lecture_reads_the_same_from_a_path_bytes_and_text(tmp_path):
    path = tmp_path / "two.md"
    path.write_text(GOOD, encoding="utf-8")
    assert load_lecture(path) == load_lecture(str(path)) == load_lecture(GOOD.encode()) == load_lecture(GOOD)
    crlf = load_lecture(GOOD.replace("\n", "\r\n").encode())
    assert [s.line for s in crlf.steps] == [9, 26, 32] and crlf.steps[0].text == load_lecture(GOOD).steps[0].text


def test_the_title_may_come_from_a_heading_instead_of_front_matter():
    lec = load_lecture("# From the heading\n\n## One\nview: /rope?rope_tab=Angles\n")
    assert lec.title == "From the heading" and lec.meta == {} and lec.steps[0].params == {"rope_tab": "Angles"}


def test_only_lower_case_keywords_at_a_paragraphs_top_level_are_directives():
    text = "# T\n## S\nview: /masks\n\nWhy: a capitalised keyword is prose.\n\n> view: quoted, so prose\n"
    step = load_lecture(text).steps[0]
    assert step.text == "Why: a capitalised keyword is prose.\n\n> view: quoted, so prose" and step.question is None


# -- the malformed lecture suite: each bad file, the line its message names, and the message's words ------------

STEP = "# T\n\n## S\nview: /explorer\n"  # lines 1-4: a valid head to put one bad line after
BAD = {
    "a step with neither a view nor a narrative": ("# T\n\n## First\nview: /explorer\n\n## Second\n\n", 6,
                                                   ["no `view:` line", "no narrative", "Second"]),
    "an unknown page": ("# T\n## S\n\nview: /attention?x=1\n", 4, ["unknown page", "/attention", "explorer"]),
    "another page's setting": ("# T\n## S\nview: /explorer?masks_kind=Padding\n", 3,
                               ["masks_kind", "not a setting of the explorer page", "explorer_"]),
    "a layer that is not a number": (STEP + "\n## L\nview: /masks?masks_layer=one\n", 7,
                                     ["masks_layer", "layer number", "'one'"]),
    "a negative head": ("# T\n## S\nview: /qkv?qkv_head=-1\n", 3, ["qkv_head", "head number", "'-1'"]),
    "a toggle that is neither on nor off": ("# T\n## S\nview: /explorer?explorer_scale=maybe\n", 3,
                                            ["explorer_scale", "true or false"]),
    "a question with no correct choice": (STEP + "ask: Which? | a | b | c\n", 5, ["no correct choice", "*"]),
    "a question with one choice": (STEP + "ask: Which? | *a\n", 5, ["at least two choices"]),
    "a question with two equal choices": (STEP + "ask: Which? | *a | a\n", 5, ["two choices are the same"]),
    "a question with no prompt": (STEP + "ask:  | *a | b\n", 5, ["no prompt"]),
    "a why with no question": (STEP + "\nwhy: because\n", 6, ["`why:`", "`ask:`", "has none"]),
    "an empty why": (STEP + "ask: Q | *a | b\nwhy:\n", 6, ["`why:`", "explanation"]),
    "a why under a preset": (STEP + "ask: preset start_row\nwhy: because\n", 6, ["preset", "from the model"]),
    "a preset with no name": (STEP + "ask: preset\n", 5, ["preset NAME"]),
    "two views in one step": (STEP + "view: /masks\n", 5, ["second `view:` line", "“S”"]),
    "an empty view": ("# T\n## S\nview:\n", 3, ["no link"]),
    "a view that is not a link into the app": ("# T\n## S\nview: file:///etc/passwd\n", 3, ["not a file: address"]),
    "a directive before the first step": ("# T\nview: /explorer\n\n## S\nview: /explorer\n", 2,
                                          ["before the first ## step"]),
    "no steps at all": ("---\ntitle: Empty\n---\n\nJust an intro.\n", 1, ["no steps"]),
    "no title": ("## S\nview: /explorer\n", 1, ["no title"]),
    "a second title": (STEP + "\n# Another title\n", 6, ["only one # title"]),
    "a script block": (STEP + "\nSome text.\n\n<script>alert(1)</script>\n", 8, ["raw HTML", "<script>"]),
    "inline HTML on a paragraph's third line": (STEP + "\nOne line,\ntwo lines,\nthen <img src=x onerror=alert(1)>\n",
                                                8, ["raw HTML", "<img"]),
    "a javascript: link": (STEP + "\n[click me](javascript:alert(1))\n", 6, ["link", "javascript:alert"]),
    "unclosed front matter": ("---\ntitle: T\n\n## S\nview: /explorer\n", 1, ["never closed"]),
    "an unknown front matter key": ("---\ntitle: T\nauthor: me\n---\n## S\nview: /explorer\n", 3,
                                    ["front matter", "title, audience, model"]),
    "an empty look": (STEP + "look:\n", 5, ["`look:`", "caption"]),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_malformed_lecture_names_the_line_of_its_error(name):
    text, line, words = BAD[name]
    with pytest.raises(ValueError) as err:
        load_lecture(text)
    message = str(err.value)
    assert message.startswith(f"line {line}: "), message
    assert all(w in message for w in words), (words, message)
    assert err.value.errors[0][0] == line and len(err.value.errors) == 1  # one bad line, one message


@pytest.mark.parametrize("data, line, words", [
    (b"# T\n## S\nview: /explorer\n\x00\x01\x02", 4, ["NUL byte", "binary"]),
    ("# T\n## S\nview: /explorer\ncaf\u00e9\n".encode("latin-1"), 4, ["not UTF-8"]),
    (b"# T\n\n\x1b[31mred\n", 3, ["control character"]),
    (b"# T\n" + b"x" * lectures.MAX_BYTES, 1, ["over 200 kB"]),
], ids=["binary", "latin-1", "terminal escape", "too large"])
def test_a_file_that_is_not_a_markdown_text_is_refused_before_parsing(data, line, words):
    with pytest.raises(ValueError) as err:
        load_lecture(data)
    assert str(err.value).startswith(f"line {line}: ") and all(w in str(err.value) for w in words), str(err.value)


def test_a_huge_file_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "huge.md"
    path.write_bytes(b"# T\n" + b"a" * (50 * lectures.MAX_BYTES))
    with pytest.raises(ValueError, match="over 200 kB"):
        load_lecture(path)


def test_every_error_of_a_file_is_listed_with_its_line():
    text = "# T\n## A\nview: /nowhere\n## B\nview: /explorer?explorer_layer=x\nask: Q | a | b\n## C\n"
    with pytest.raises(LectureError) as err:
        load_lecture(text)
    assert [n for n, _ in err.value.errors] == [3, 5, 6, 7]
    assert str(err.value).splitlines()[0].startswith("line 3: unknown page")


# -- the page table and the built-in lectures ---------------------------------------------------------------------


def _app_pages() -> list[tuple[str, str]]:
    """(URL path, page file) of app.py's PAGES, read without running app.py."""
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES")
    return [(url, file) for _, file, _, _, url in ast.literal_eval(pages)]


def test_the_page_table_is_app_pys_pages():
    assert list(lectures.PAGE_PARAMS) == [url for url, _ in _app_pages()]


def test_every_page_prefix_and_on_off_setting_is_a_widget_key_in_the_app():
    source = "\n".join(p.read_text() for d in ("app_pages", "viz_model/ui") for p in (ROOT / d).glob("*.py"))
    for page, prefixes in lectures.PAGE_PARAMS.items():  # key="explorer_scale", layer_head("explorer", ...)
        assert any(f'"{p}' in source or f'"{p[:-1]}"' in source for p in prefixes), page
    for name in lectures.BOOLEAN_PARAMS:  # the Cost page's keys are f"{where.prefix}_backward"
        assert f'"{name}"' in source or ('"cost_cpu"' in source and 'key=f"{p}_backward"' in source), name


def test_the_built_in_lectures_load_and_each_step_shows_a_page():
    built = builtin_lectures()
    assert "attention" in built
    for name, lec in built.items():
        assert lec.title and 6 <= len(lec.steps) <= 40, name
        assert all(s.page in lectures.PAGE_PARAMS and s.text for s in lec.steps), name
    questions = [s.question for s in built["attention"].steps if s.question]
    assert 1 <= len(questions) <= 3 and all(q.correct and q.why for q in questions)


@pytest.fixture(scope="module")
def attention_steps():
    return builtin_lectures()["attention"].steps


@pytest.mark.slow
@pytest.mark.parametrize("n", range(len(builtin_lectures()["attention"].steps)))
def test_every_step_of_the_attention_lecture_opens_its_page_with_its_settings(attention_steps, n):
    step = attention_steps[n]
    files = dict(_app_pages())
    at = open_app(files[step.page], timeout=180, query=step.params)
    assert not at.exception, (step.title, texts(at.exception))
    # A link value the page could not take is dropped with a toast: none may be
    assert not [t for t in texts(at.toast) if "not valid here" in t], (step.title, texts(at.toast))
    for name, value in step.params.items():  # and each number, switch, sentence and tab is the one linked
        assert name in at.session_state, (step.title, name)  # the page drew the widget the link set
        held = at.session_state[name]
        if isinstance(held, bool):
            assert str(held).lower() == value.lower(), name
        elif isinstance(held, int):
            assert held == int(value), name
        elif name.endswith(("_text", "_tab")):
            assert held == value, name
