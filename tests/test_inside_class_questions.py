"""#40's class questions on the new views hide their answers on the students' screens until Reveal (#39's rule).

The attribution, sinks and branches presets were asked with their answers in plain view: a student saw the occlusion
column, the caches' perplexities or the framed branch column before committing. Each page's row in
lessons.classview.ANSWERS (lost once to a concurrent edit) is what hides them; this test asks each page's question as a
leader and looks at a following student's page and at the leader's own.
"""

from __future__ import annotations

import pytest
from conftest import open_app, spec, texts

from viz_model.lessons import classview as cv
from viz_model.lessons import presets as P
from viz_model.runtime.class_mode import ClassStore

# (page file, URL path, preset, charts that hold the answer, a tab to open first)
CASES = [
    ("app_pages/attribution.py", "attribution", "attribution_occlusion", ("attribution_methods",), None),
    ("app_pages/sinks.py", "sinks", "sinks_stream_best", ("sinks_stream_chart",), None),
    ("app_pages/generate.py", "generate", "generate_branch", ("generate_branch_grid",), "Branches"),
    # the head roles' table named the previous-token head in plain view; the table of P[p] held the asked vector's row
    ("app_pages/explorer.py", "explorer", "explorer_previous", ("explorer_head_map",), None),
    ("app_pages/sinusoidal.py", "sinusoidal", "sinusoidal_position", ("sinusoidal_heatmap",), "Table & binary analogy"),
]
# tables that state the answer, by a column of theirs (AppTest gives a dataframe no key): the caches' perplexities,
# the head roles
TABLES = {"sinks": "window alone", "explorer": "previous-token"}


def has_table(at, url: str) -> bool:
    return any(TABLES[url] in d.value.columns for d in at.dataframe)


@pytest.mark.parametrize(("file", "url", "preset", "charts", "tab"), CASES, ids=[c[1] for c in CASES])
def test_a_class_question_hides_its_answer_on_a_students_screen_until_reveal(class_env, file, url, preset, charts,
                                                                           tab):
    leader = open_app(timeout=300)
    leader.text_input(key="class_key").input("s3cret").run()
    leader.toggle(key="class_lead").set_value(True).run()
    code = leader.session_state["_class_code"]
    leader.switch_page(file).run()
    if tab:
        leader.session_state[f"{url}_tab"] = tab
        leader.run()
    leader.selectbox(key="class_ask_kind").set_value(P.PRESETS[preset].label).run()
    leader.button(key="class_ask").click().run()
    assert not leader.exception
    assert ClassStore(class_env).get(code).question.answer["page"] == url
    student = open_app(file, query={"class": code}, timeout=300)
    assert not student.exception and student.toggle(key="class_follow").value is True
    for key in charts:
        assert "hidden" in spec(student, key)["layout"]["title"]["text"], key
        assert "hidden" not in (spec(leader, key)["layout"].get("title") or {}).get("text", ""), key
    assert cv.HIDDEN_TEXT in " ".join(texts(student.caption) + texts(student.markdown))
    if url in TABLES:  # a table of the answer's numbers waits too (the caches' perplexities, the head roles)
        assert not has_table(student, url)
        assert has_table(leader, url)
    leader.button(key="class_reveal").click().run()
    student.run()
    for key in charts:
        assert "hidden" not in (spec(student, key)["layout"].get("title") or {}).get("text", ""), key
    if url in TABLES:  # after Reveal the student sees what the leader sees
        assert has_table(student, url)
    assert not student.exception and not leader.exception
