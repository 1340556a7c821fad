"""Record a lecture (#39, item 5): "Add this view as a step" while exploring, the steps reordered, edited and
downloaded as the lecture's Markdown, tried at once; a lecture file opened for this session; the instructor's folder
lectures (ATTENTION_LAB_LECTURE_DIRS). The sidebar expander is drawn by `ui.lecture.sidebar_links`, and
`ui.lecture.lectures()` lists `offered(...)` beside the built-in lectures.

Nothing here writes on the server: recorded steps and opened files live in this tab's session_state (an upload is
read from memory, never saved), and no widget takes a path. The reading and writing is core
(`viz_model.lecture_files`)."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from viz_model import lecture_files as lf
from viz_model.lectures import MAX_BYTES, Lecture, LectureError
from viz_model.lessons.presets import PRESETS
from viz_model.model_text import md_text
from viz_model.ui.cache import cached
from viz_model.ui.errors import guard

_STEPS = "_lecture_rec_steps"    # [{"id", "title", "note", "view"}], in order
_MINE = "_lecture_mine"          # {name: Lecture}: this tab's uploaded and tried lectures
_TRIED = "_lecture_rec_tried"    # the name "Try it" last gave the recording
_UPLOAD_SAID = "_lecture_upload_said"  # (ok, sentences) about the last file opened
_UPLOAD = "lecture_upload"
PRESET_NAMES = frozenset(PRESETS)  # an uploaded or folder lecture may ask only these (a core check, by name)
OPEN = "lecture_rec_open"  # the "Record a lecture" expander, open (a widget key: a page switch drops it)
_OPEN_KEPT = "_lecture_rec_open_kept"  # ... so its state is kept here too


# -- the lectures offered beside the built-in ones ----------------------------------------------------------------
def folder_lectures(taken: dict[str, Lecture]) -> tuple[dict[str, Lecture], list[lf.FileProblem]]:
    """The instructor's folder lectures, read once per change of their files for the whole server."""
    folders = lf.lecture_dirs()
    if not folders:
        return {}, []
    key = (tuple(map(str, folders)), lf.stamp(folders), tuple(taken))
    return cached("lecture_folders", key, lambda: lf.folder_lectures(folders, taken, PRESET_NAMES))


def offered(builtin: dict[str, Lecture]) -> dict[str, Lecture]:
    """The folders' lectures, then this session's own (uploaded, or a recording tried), by name."""
    return {**folder_lectures(builtin)[0], **st.session_state.get(_MINE, {})}


def elsewhere(name: str) -> str | None:
    """Why ?lecture=NAME does not open here when NAME is a session's own lecture (another tab's), or None."""
    return lf.ELSEWHERE.format(name=name[:40]) if name.startswith(lf.SESSION_PREFIX) else None


def _names(builtin: dict[str, Lecture]) -> set[str]:
    """Every lecture's name this tab lists: a session lecture takes none of them."""
    return {*builtin, *folder_lectures(builtin)[0], *st.session_state.get(_MINE, {})}


# -- the sidebar ------------------------------------------------------------------------------------------------
def sidebar(pages: dict[str, Any], builtin: dict[str, Lecture], instructor: bool = True) -> None:
    """Under the Lectures list: the folder files not offered (by name and line; to the instructor only: in class mode
    the students do not see the server's files), then the "Record a lecture" expander."""
    with guard("recording a lecture"):
        _sidebar(pages, builtin, instructor)


def _sidebar(pages: dict[str, Any], builtin: dict[str, Lecture], instructor: bool) -> None:
    problems = folder_lectures(builtin)[1] if instructor else []
    if problems:
        with st.expander(f"{len(problems)} lecture file(s) in the instructor's folders not offered"):
            for p in problems:
                st.caption(f"{md_text(p.path.name)}: {md_text(p)}")
    # Lazy (on_change="rerun"): its widgets exist only while it is open. Drawn closed on every page of every session,
    # they were 6 % of a follower's run (py-spy, bench/lecture_present.py), and the file uploader's frontend cost.
    # Its state is kept beside the widget's (which a page switch drops), so it stays open while one records page after
    # page.
    if OPEN not in st.session_state and st.session_state.get(_OPEN_KEPT):  # the page switched: open it again
        st.session_state[OPEN] = True  # (not `expanded=`: a changed argument is a new element, which drops typed text)
    rec = st.expander("Record a lecture", key=OPEN, on_change="rerun", icon=":material/radio_button_checked:")
    st.session_state[_OPEN_KEPT] = bool(rec.open)
    if not rec.open:
        return
    with rec:
        st.caption(lf.SESSION_ONLY)
        _add_view(pages)
        _steps()
        _finish(builtin)
        st.file_uploader("Open a lecture file", type=["md"], key=_UPLOAD, on_change=_opened, args=(builtin,),
                         max_upload_size=1, help="A lecture's Markdown file, for this tab only (at most "
                         f"{MAX_BYTES // 1000} kB). It joins the Lectures list above.")
        ok, said = st.session_state.get(_UPLOAD_SAID, (True, []))
        if said:
            (st.success if ok else st.error)("\n\n".join(said))


def _page_now(pages: dict[str, Any]) -> tuple[str, str] | None:
    """(url path, title) of the page this run shows."""
    now = get_script_run_ctx().page_script_hash
    return next(((url, p.title) for url, p in pages.items() if getattr(p, "_script_hash", None) == now), None)


def _add_view(pages: dict[str, Any]) -> None:
    here = _page_now(pages)
    st.text_input("Step title", key="lecture_rec_title", placeholder=here[1] if here else "",
                  max_chars=lf.MAX_TITLE_CHARS)
    st.text_area("Note (Markdown)", key="lecture_rec_note", height=80, max_chars=lf.MAX_NOTE_CHARS,
                 placeholder="What to say about this view")
    full = len(st.session_state.get(_STEPS, [])) >= lf.MAX_STEPS
    st.button("Add this view as a step", key="lecture_rec_add", icon=":material/add:", on_click=_add, args=(here,),
              disabled=here is None or full, help="This page with its current settings, as its share link.")


def _add(here: tuple[str, str]) -> None:
    """on_click: the page's share link now (the URL its bound widgets keep), with the typed title and note."""
    query = {k: st.query_params.get_all(k) for k in st.query_params}
    steps = st.session_state.setdefault(_STEPS, [])
    n = max((s["id"] for s in steps), default=0) + 1
    steps.append({"id": n, "title": st.session_state.get("lecture_rec_title") or here[1],
                  "note": st.session_state.get("lecture_rec_note") or "", "view": lf.view_link(here[0], query)})
    st.session_state["lecture_rec_title"] = st.session_state["lecture_rec_note"] = ""


def _steps() -> None:
    steps = st.session_state.get(_STEPS, [])
    for i, s in enumerate(steps):
        st.markdown(f"**{i + 1}. {md_text(s['title'])}**  \n`{s['view'][:80]}`")
        row = st.container(horizontal=True, gap="small")
        row.button("Up", key=f"lecture_rec_up_{s['id']}", icon=":material/arrow_upward:", disabled=i == 0,
                   on_click=_move, args=(i, i - 1), type="tertiary")
        row.button("Down", key=f"lecture_rec_down_{s['id']}", icon=":material/arrow_downward:",
                   disabled=i == len(steps) - 1, on_click=_move, args=(i, i + 1), type="tertiary")
        row.button("Remove", key=f"lecture_rec_del_{s['id']}", icon=":material/delete:", on_click=steps.pop,
                   args=(i,), type="tertiary")
        with row.popover("Edit", icon=":material/edit:"):
            for field, widget in (("title", st.text_input), ("note", st.text_area)):
                key = f"lecture_rec_{field}_{s['id']}"
                widget(field.capitalize(), s[field], key=key, on_change=_edit, args=(s, field, key))


def _move(i: int, j: int) -> None:
    steps = st.session_state[_STEPS]
    steps[i], steps[j] = steps[j], steps[i]


def _edit(step: dict, field: str, key: str) -> None:
    step[field] = st.session_state[key]


def _finish(builtin: dict[str, Lecture]) -> None:
    """The lecture's title, its file to download, and "Try it" (open it as a lecture in this tab)."""
    steps = st.session_state.get(_STEPS, [])
    if not steps:
        return
    title = st.text_input("Lecture title", lf.DEFAULT_TITLE, key="lecture_rec_name", max_chars=lf.MAX_TITLE_CHARS)
    try:
        lec = lf.recorded_lecture(title, [(s["title"], s["note"], s["view"]) for s in steps])
    except LectureError as err:
        return st.warning("\n\n".join(lf.messages(err)))
    row = st.container(horizontal=True)
    row.download_button("Download (.md)", lf.dump_lecture(lec), file_name=f"{lf.slug(title) or 'lecture'}.md",
                        mime="text/markdown", key="lecture_rec_download", icon=":material/download:",
                        on_click="ignore")
    row.button("Try it", key="lecture_rec_try", icon=":material/play_arrow:", on_click=_try, args=(lec, builtin))


def _try(lec: Lecture, builtin: dict[str, Lecture]) -> None:
    """on_click: the recording as this tab's lecture (in place of the one tried before), opened at step 1 (the
    lecture panel then takes the step's page)."""
    mine = st.session_state.setdefault(_MINE, {})
    mine.pop(st.session_state.get(_TRIED), None)
    name = lf.session_name(lec.title, _names(builtin))
    mine[name] = lec
    st.session_state[_TRIED] = name
    st.query_params["lecture"], st.query_params["step"] = name, "1"


def _opened(builtin: dict[str, Lecture]) -> None:
    """on_change of the file box: parse the file for this tab; a bad one is refused with its lines, nothing lost."""
    f = st.session_state.get(_UPLOAD)
    if f is None:  # the file was taken out of the box: so is what was said about it
        return st.session_state.pop(_UPLOAD_SAID, None)
    try:
        name, lec = lf.read_upload(f.name, f.getvalue(), _names(builtin), PRESET_NAMES)
    except LectureError as err:
        st.session_state[_UPLOAD_SAID] = (False, [f"{md_text(f.name[:60])} is not a lecture:",
                                                 *map(md_text, lf.messages(err))])
        return
    st.session_state.setdefault(_MINE, {})[name] = lec
    st.session_state[_UPLOAD_SAID] = (True, [f"Opened “{md_text(lec.title)}” ({len(lec.steps)} steps) as “{name}”: it "
                                             "is in the Lectures list, for this tab only."])
