"""#39 (item 5) in the app: record views as a lecture (add, reorder, download the Markdown, try it), open a lecture
file for this tab, and the instructor's folder lectures (ATTENTION_LAB_LECTURE_DIRS) beside the built-in ones."""

from __future__ import annotations

import pytest
from conftest import open_app, texts
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from viz_model import lecture_files as lf
from viz_model.lectures import builtin_lectures, load_lecture

BAD = "# Bad\n\n## A step\nview: /masks\n\n## Another\nview: /nowhere\n"  # line 7: an unknown page
GOOD = "# Week three\n\n## One head\nview: /explorer?explorer_head=3\n\nHead 3 alone.\n\n## Masks\nview: /masks\n"


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """What each download button was given, by file name: the bytes the browser would save (Streamlit's own media
    storage, recorded as it stores them)."""
    got: dict[str, bytes] = {}
    store = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        if filename:
            got[filename] = path_or_data if isinstance(path_or_data, bytes) else str(path_or_data).encode()
        return store(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    return got


def _press(at, key: str):
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception, texts(at.exception)
    return at


def _opened(at):
    """The "Record a lecture" expander open, as a click on it does: it is lazy, its widgets exist only while open."""
    if "lecture_rec_title" not in {w.key for w in at.sidebar.text_input}:
        at.session_state["lecture_rec_open"] = True
        at.run()
    return at


def _record(at, title: str):
    _opened(at).sidebar.text_input(key="lecture_rec_title").set_value(title)
    return _press(at, "lecture_rec_add")


def _lecture_buttons(at) -> dict[str, str]:
    return {b.key.removeprefix("lecture_open_"): b.label for b in at.sidebar.button
            if (b.key or "").startswith("lecture_open_")}


def test_two_recorded_views_reordered_download_as_a_lecture_in_the_new_order(downloads):
    at = open_app("app_pages/explorer.py")
    at.selectbox(key="explorer_layer").set_value(1).run()
    at.selectbox(key="explorer_head").set_value(2).run()
    _record(at, "Head 2 of layer 1")
    at.switch_page("app_pages/masks.py").run()
    at.selectbox(key="masks_head").set_value(3).run()
    note = "Row t sees only keys up to t.\n\nwhy: typed, not a why"
    _opened(at).sidebar.text_area(key="lecture_rec_note").set_value(note)
    _record(at, "")  # no title typed: the page's title
    assert [s["view"] for s in at.session_state["_lecture_rec_steps"]] == [
        "/explorer?explorer_layer=1&explorer_head=2", "/masks?masks_head=3"]
    _press(at, "lecture_rec_down_1")  # the Explorer's step goes below the Masks one
    at.sidebar.text_input(key="lecture_rec_name").set_value("Masks, then heads").run()
    lec = load_lecture(downloads["Masks-then-heads.md"])
    assert lec.title == "Masks, then heads"
    assert [(s.title, s.page) for s in lec.steps] == [("Masks", "masks"), ("Head 2 of layer 1", "explorer")]
    assert lec.steps[0].params == {"masks_head": "3"}
    assert lec.steps[1].params == {"explorer_layer": "1", "explorer_head": "2"}
    assert lec.steps[0].text == "Row t sees only keys up to t.\n\nwhy\\: typed, not a why" and not lec.steps[0].question


def test_removing_and_editing_a_step_change_the_download(downloads):
    at = open_app("app_pages/masks.py")
    _record(at, "First")
    _record(at, "Second")
    _press(at, "lecture_rec_del_1")
    at.sidebar.text_input(key="lecture_rec_title_2").set_value("Second, renamed").run()
    lec = load_lecture(downloads[f"{lf.slug(lf.DEFAULT_TITLE)}.md"])
    assert [s.title for s in lec.steps] == ["Second, renamed"]


def test_try_it_opens_the_recording_at_step_one_in_this_tab():
    at = open_app("app_pages/explorer.py")
    at.selectbox(key="explorer_head").set_value(3).run()
    _record(at, "Look at head 3")
    at.switch_page("app_pages/masks.py").run()
    _press(at, "lecture_rec_try")
    assert at.query_params["lecture"] == "my-My-lecture" and at.query_params["step"] == "1"
    assert any(c.value == "My lecture · step 1 of 1" for c in at.caption)
    assert any(m.value == "#### Look at head 3" for m in at.markdown)
    assert at.selectbox(key="explorer_head").value == 3  # the step's page, with its setting
    assert _lecture_buttons(at)["my-My-lecture"] == "My lecture"


def test_a_bad_file_is_refused_with_its_lines_and_nothing_is_lost():
    at = open_app("app_pages/masks.py")
    _record(at, "Kept")
    _opened(at).sidebar.file_uploader(key="lecture_upload").set_value(("bad.md", BAD.encode(), "text/markdown")).run()
    assert not at.exception
    said = "\n".join(texts(at.sidebar.error)).replace("\\", "")  # typed text is shown escaped (md_text)
    assert "bad.md is not a lecture" in said and "line 7: unknown page “/nowhere”" in said
    assert [s["title"] for s in at.session_state["_lecture_rec_steps"]] == ["Kept"]  # the recording is still there
    assert set(_lecture_buttons(at)) == set(builtin_lectures())  # nothing was added
    at.sidebar.file_uploader(key="lecture_upload").set_value(("Week 3.md", GOOD.encode(), "text/markdown")).run()
    assert any("Opened “Week three” (2 steps)" in s for s in texts(at.sidebar.success))
    assert _lecture_buttons(at)["my-Week-3"] == "Week three"
    _press(at, "lecture_open_my-Week-3")
    assert at.query_params["lecture"] == "my-Week-3" and any(c.value == "Week three · step 1 of 2" for c in at.caption)
    assert at.selectbox(key="explorer_head").value == 3  # its first step's page, with its setting


def test_a_folder_lecture_from_the_environment_is_listed_and_opens(tmp_path, monkeypatch):
    (tmp_path / "week-1.md").write_text(GOOD.replace("Week three", "Our week one"))
    (tmp_path / "broken.md").write_text(BAD)
    monkeypatch.setenv(lf.ENV_VAR, str(tmp_path))
    at = open_app("app_pages/masks.py")
    assert _lecture_buttons(at)["week-1"] == "Our week one"
    assert any(e.label.startswith("1 lecture file(s) in the instructor's folders not offered")
               for e in at.sidebar.expander)
    shown = [c.value.replace("\\", "") for c in at.sidebar.caption]  # typed text is shown escaped (md_text)
    assert any(c.startswith("broken.md: line 7: unknown page") for c in shown), shown
    _press(at, "lecture_open_week-1")
    assert at.query_params["lecture"] == "week-1" and any(c.value == "Our week one · step 1 of 2" for c in at.caption)
    again = open_app(query={"lecture": "week-1", "step": "2"})  # a link to it opens in another session too
    assert any(c.value == "Our week one · step 2 of 2" for c in again.caption)


def test_a_link_to_another_tabs_own_lecture_says_why_it_does_not_open():
    at = open_app(query={"lecture": "my-Week-3", "step": "1"})
    assert not at.exception
    said = " ".join(texts(at.warning))
    assert "another browser session" in said and "Open a lecture file" in said


def test_in_class_mode_only_the_leader_sees_the_folder_files_not_offered(tmp_path, monkeypatch):
    """The instructor's folder lecture files that do not parse were listed, with their names and lines, in every
    student's sidebar. In class mode (an instructor key at launch) only the tab that leads the class sees them."""
    (tmp_path / "week-1.md").write_text(GOOD.replace("Week three", "Our week one"))
    (tmp_path / "broken.md").write_text(BAD)
    monkeypatch.setenv(lf.ENV_VAR, str(tmp_path))
    monkeypatch.setenv("ATTENTION_LAB_INSTRUCTOR_KEY", "s3cret")
    monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", str(tmp_path / "class.sqlite"))
    from viz_model.ui import class_mode

    class_mode.store.clear()
    not_offered = "1 lecture file(s) in the instructor's folders not offered"
    student = open_app("app_pages/masks.py")
    assert _lecture_buttons(student)["week-1"] == "Our week one"  # the good file is offered to everyone
    assert not any(e.label.startswith(not_offered) for e in student.sidebar.expander)
    student.text_input(key="class_key").input("s3cret").run()
    student.toggle(key="class_lead").set_value(True).run()
    assert any(e.label.startswith(not_offered) for e in student.sidebar.expander)  # now the leader
    class_mode.store.clear()
