"""Lectures (#39, deliverable 1): the Markdown format, its line-numbered errors, and the built-in lectures' views."""

from __future__ import annotations

from pathlib import Path

import pytest

from viz_model import lectures
from viz_model.lectures import LectureError, builtin_lectures, load_lecture
from viz_model.pages import PAGES

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
    # the model, charts and computed numbers (#39 items 2 and 4)
    "an unknown model in the front matter": ("---\ntitle: T\nmodel: gpt-9\n---\n## S\nview: /explorer\n", 3,
                                             ["no model “gpt-9”", "classroom", "english"]),
    "an unknown model in a view": ("# T\n## S\nview: /explorer?model_key=gpt-9\n", 3, ["no model “gpt-9”"]),
    "a chart key with spaces": (STEP + "chart: the big heatmap\n", 5, ["`chart:`", "key", "'the big heatmap'"]),
    "a chart in a step with no view": ("# T\n## S\nchart: explorer_grid\n\nWords only.\n", 3,
                                       ["`chart:`", "no `view:`"]),
    "two charts in one step": (STEP + "chart: explorer_grid\nchart: explorer_head_map\n", 6, ["second `chart:`"]),
    "an unknown placeholder": (STEP + "\nThis model has {{layer}} layers.\n", 6, ["unknown placeholder", "{{layer}}",
                                                                                 "layers"]),
    "a fact given arguments": (STEP + "\nIt has {{heads layer=1}} heads.\n", 6, ["{{heads}}", "no arguments"]),
    "a placeholder left open": (STEP + "\nIt has {{layers heads.\n", 6, ["{{", "}}", "same line"]),
    "an attention number without its key": (STEP + '\n{{attention layer=1 head=0 query="it" text="a b"}}\n', 6,
                                            ["{{attention}}", "key="]),
    "an attention number with no sentence": (STEP + '\n{{attention layer=1 head=0 query="it" key="a"}}\n', 6,
                                             ["text=", "sets no sentence"]),
    "an attention head that is not a number": (
        "# T\n## S\nview: /explorer?explorer_text=a+b\n\n{{attention layer=1 head=two query=a key=b}}\n", 5,
        ["head must be a number", "'two'"]),
    "an attention layer the lecture's model does not have": (
        "---\ntitle: T\nmodel: classroom\n---\n## S\nview: /explorer?explorer_text=a+b\n\n"
        "{{attention layer=7 head=0 query=a key=b}}\n", 8, ["“classroom” has layers 0 to 1", "not 7"]),
    "an unknown argument": (
        "# T\n## S\nview: /explorer?explorer_text=a+b\n\n{{attention layer=0 head=0 query=a key=b row=2}}\n", 5,
        ["{{attention}} takes", "not “row”"]),
    "a placeholder in a question": (STEP + "ask: Is it {{layers}}? | *yes | no\n", 5, ["`ask:`", "placeholder"]),
    "an unquoted value with a space": (
        "# T\n## S\nview: /explorer\n\n{{attention layer=0 head=0 query=a key=b text=a b}}\n", 5,
        ["name=value", "double quotes"]),
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
    """(URL path, page file) of the app's pages (viz_model.pages, the table app.py draws)."""
    return [(p.url, p.file) for p in PAGES]


def test_the_page_table_is_the_apps_pages():
    assert list(lectures.PAGE_PARAMS) == [url for url, _ in _app_pages()]
    assert all((ROOT / file).exists() for _, file in _app_pages())
    prefixes = [p for ps in lectures.PAGE_PARAMS.values() for p in ps]
    assert len(prefixes) == len(set(prefixes)) and not set(lectures.PAGE_ALIASES) & set(lectures.PAGE_PARAMS)
    assert lectures.PAGE_ALIASES["rnn-vs-transformer"] == "recurrence"  # #27's old link, from the row's old_urls


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
        assert all((s.page is None or s.page in lectures.PAGE_PARAMS) and s.text for s in lec.steps), name
    questions = [s.question for s in built["attention"].steps if s.question]
    assert 1 <= len(questions) <= 3 and all(q.correct and q.why for q in questions)


# Every step of every built-in lecture opening in AppTest: tests/test_lecture_steps.py.


# -- computed numbers, the lecture's model, charts and narrative-only steps (#39, items 1, 2 and 4) --------------

NUMBERS = """\
---
title: Numbers
model: classroom
---

## Heads and weights

view: /explorer?explorer_text=The+cat+sat+on+the+mat&explorer_layer=1
look: "sat" gives {{attention layer=1 head=2 query="sat" key="cat"}} to "cat"
chart: explorer_head_map

This model has {{layers}} layers of {{ heads }} heads, {{params}} parameters and {{vocab}} words.
And {{attention layer=0 head=1 query=it key=trophy text="The trophy didn't fit because it was big"}} here.

## Only words

No view here: the app cannot show this. Still {{d_model}} wide, d_k {{d_k}}, {{d_ff}} inside, {{context}} long.

## Another model

view: /explorer?model_key=English+%28WordNet+prose%2C+BPE%29
"""


def test_placeholders_chart_and_model_are_read_into_the_steps():
    lec = load_lecture(NUMBERS)
    first, words, other = lec.steps
    assert first.params["model_key"] == "classroom" and first.chart == "explorer_head_map"
    assert [(n.name, n.line) for n in first.numbers] == [
        ("attention", 9), ("layers", 12), ("heads", 12), ("params", 12), ("vocab", 12), ("attention", 13)]
    look, *_, trophy = first.numbers
    assert dict(look.args) == {"layer": "1", "head": "2", "query": "sat", "key": "cat",
                               "text": "The cat sat on the mat"}  # text= left out: the view's sentence
    assert look.source == '{{attention layer=1 head=2 query="sat" key="cat"}}'
    assert dict(trophy.args)["text"] == "The trophy didn't fit because it was big" and trophy.arg("query") == "it"
    assert first.numbers[2].source == "{{ heads }}" and "{{ heads }}" in first.text  # the text keeps the source
    # a narrative-only step: no page, no params (not even the lecture's model), no link
    assert (words.page, words.params, words.url, words.chart) == (None, {}, "", None)
    assert [n.name for n in words.numbers] == ["d_model", "d_k", "d_ff", "context"]
    # a view that names its model by the picker's label (a link copied from the browser) keeps it
    assert other.params == {"model_key": "English (WordNet prose, BPE)"} and other.numbers == ()


def test_a_lecture_without_a_model_leaves_the_views_alone():
    lec = load_lecture("# T\n## S\nview: /explorer?explorer_layer=1\n")
    assert lec.model is None and lec.steps[0].params == {"explorer_layer": "1"}


def test_the_models_a_lecture_may_name_are_the_sidebars():
    from viz_model.ui import models

    offered = {e.key: e.title for e in models.available_models(("transformer",))}
    assert set(lectures.model_names()) == set(offered)  # no model folders in the suite (conftest)
    assert lectures.RANDOM_MODEL == models.RANDOM_MODEL and offered[models.RANDOM_MODEL] == lectures.RANDOM_TITLE
    assert all(lectures.model_name(title) == key for key, title in offered.items())
    assert lectures.model_name("no-such-model") is None
    shapes = lectures.model_names()
    for key in ("classroom", "english"):
        cfg = models.load_model(key, "cpu").model.config
        assert shapes[key] == (cfg.n_layers, cfg.n_heads)


def test_the_numbers_are_the_models_own(classroom):
    """lessons.lecture_numbers on the shipped classroom model, against the model read here another way: facts from its
    config and its parameters, the weight from a pass that traces every layer with the words' positions found by hand
    (the lesson traces one layer and matches the words itself)."""
    import torch

    from viz_model.lessons import lecture_numbers as N

    lec = load_lecture(NUMBERS)
    values, notes = N.step_values(classroom, lec.steps[0].numbers + lec.steps[1].numbers)
    cfg, model = classroom.model.config, classroom.model
    assert notes == []
    assert values["{{layers}}"] == str(cfg.n_layers) and values["{{ heads }}"] == str(cfg.n_heads)
    assert values["{{params}}"] == f"{sum(p.numel() for p in model.parameters()):,}"
    assert values["{{vocab}}"] == f"{classroom.tokenizer.get_vocab_size():,}"
    assert values["{{d_k}}"] == str(cfg.d_model // cfg.n_heads) and values["{{context}}"] == str(cfg.max_len)
    ids = classroom.tokenizer.encode("The cat sat on the mat").ids
    ids = [classroom.tokenizer.token_to_id("<bos>"), *ids]
    words = [classroom.tokenizer.id_to_token(i).lower() for i in ids]
    with torch.no_grad():
        probs = model.eval()(torch.tensor([ids]), trace=True).trace.layers[1].probs[0, 2]
    weight = float(probs[words.index("sat"), words.index("cat")])
    assert values['{{attention layer=1 head=2 query="sat" key="cat"}}'] == f"{weight:.2f}"
    filled = N.fill(lec.steps[0].text, values)
    assert "{{" not in filled and f"{cfg.n_layers} layers of {cfg.n_heads} heads" in filled


def test_a_word_split_into_pieces_is_read_whole(english_model):
    """On a BPE model a word may be several tokens: the key's weight is the sum over its pieces, the query is its last
    piece; a word the text does not have is a sentence, not a crash."""
    import torch

    from viz_model.lessons import lecture_numbers as N
    from viz_model.model_text import encode_for

    text = "The trophy did not fit in the suitcase because it was too big"
    enc = encode_for(english_model, text, bos=True)
    span = N.word_span(enc.tokens, "trophy")
    assert span is not None and len(span) >= 2, enc.tokens  # " trop" + "hy"
    it = N.word_span(enc.tokens, "it")
    with torch.no_grad():
        probs = english_model.model.eval()(torch.tensor([enc.ids]), trace=True).trace.layers[2].probs[0, 1]
    want = float(probs[it[-1], list(span)].sum())
    assert abs(N.attention_weight(english_model, 2, 1, "it", "trophy", text) - want) < 1e-5
    assert N.word_span(enc.tokens, "troph") is None and N.word_span(enc.tokens, "IT") == it
    with pytest.raises(ValueError, match="not a word"):
        N.attention_weight(english_model, 0, 0, "it", "elephant", text)
    with pytest.raises(ValueError, match="layers 0 to 3"):
        N.attention_weight(english_model, 9, 0, "it", "trophy", text)
    number = lectures.Number("{{attention}}", "attention", (("layer", "9"), ("head", "0"), ("query", "it"),
                                                               ("key", "x"), ("text", text)))
    values, notes = N.step_values(english_model, [number])
    assert values == {"{{attention}}": N.UNKNOWN} and "cannot be computed" in notes[0]


MODEL_WORDS = r"\b(this|our|the lecture's|this lecture's) model\b|\bthe model (of|in) this lecture\b"


def test_no_sentence_of_a_built_in_lecture_types_a_number_about_the_model():
    """A sentence that names the model ("this model", "the model in this lecture") and states a number uses a
    placeholder for it: digits beside those words outside a {{placeholder}} fail."""
    import re

    for name, lec in builtin_lectures().items():
        for step in lec.steps:
            for sentence in re.split(r"(?<=[.!?])\s+", step.text.replace("\n", " ")):
                plain = re.sub(r"\{\{.*?\}\}|`[^`]*`", "", sentence)
                if re.search(MODEL_WORDS, plain, re.I):
                    assert not re.search(r"\d", plain), (name, step.title, sentence)


def test_every_preset_a_built_in_lecture_asks_exists():
    from viz_model.lessons import presets
    for name, lec in builtin_lectures().items():
        for step in lec.steps:
            if step.question is not None and step.question.preset:
                row = presets.PRESETS.get(step.question.preset)
                assert row is not None, (name, step.title, step.question.preset)
                assert row.page == step.page, (name, step.title)  # asked on its own page


def test_each_built_in_lecture_follows_its_course_text():
    built = builtin_lectures()
    assert {"attention", "llm-basics", "ece57000"} <= set(built)
    for name in ("llm-basics", "ece57000"):
        lec = built[name]
        written = [s.question for s in lec.steps if s.question and not s.question.preset]
        assert len(written) >= 3 and all(q.why for q in written), name
        assert sum(bool(s.numbers) for s in lec.steps) >= 3, name
        assert all(s.params.get("model_key") == lec.model for s in lec.steps if s.page), name
    assert [s.page for s in built["llm-basics"].steps][:2] == ["recurrence", "explorer"]  # the notes open on RNNs
    assert built["ece57000"].steps[-1].params.get("generate_tab") == "Teacher forcing vs free running"  # and end


def test_the_readmes_example_lecture_loads_as_it_says():
    """README › Teaching with Attention Lab › Writing a lecture: its complete example is a lecture that loads, with
    the three kinds of step it describes (a view with a written question and a chart, a preset, narrative only)."""
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Writing a lecture"):readme.index("### Recording a lecture")]
    (example,) = re.findall(r"```markdown\n(.*?)```", section, re.S)
    lec = load_lecture(example)
    assert lec.title == "Three looks at attention" and len(lec.steps) == 3
    first, second, third = lec.steps
    assert first.page == "explorer" and first.chart == "explorer_head_map"
    assert first.params["model_key"] == "classroom" and first.question.correct == (1,)
    assert second.page == "masks" and second.question.preset == "masks_visible"
    assert third.page is None and third.question is None
