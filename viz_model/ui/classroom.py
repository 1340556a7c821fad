"""Class mode (#28): the instructor leads, students follow the instructor's view, the class answers questions.

Everything shared lives in the class store (`viz_model.runtime.classroom`, a SQLite file every server process
reads); a tab keeps only its own part in `st.session_state` (its anonymous id, its class code, what it last took from
the leader), run by `runtime.classroom.Tab` (joining, leaving, following, publishing: no Streamlit there). This
module draws the widgets and does what only Streamlit can (reruns, page switches, the URL-bound widgets' values).
app.py calls `begin` before the sidebar (a follower takes the leader's page and settings before any widget is drawn),
`panel` in the sidebar (the "Class" expander) and `end` after the page (a leader publishes the view just drawn).

What a view is: the page's URL path and the values of its URL-bound widgets (`share.URL`), read from the session's
own query-parameter bindings, so every page and every setting a link can carry is followed, and nothing else. The
leader's tab republishes every LEAD_POLL_S from a small fragment, because a picker inside a page's fragment reruns
only that fragment, not app.py. A follower polls every FOLLOW_POLL_S in a fragment drawn only while following; when
the leader's view changed it sets the widget keys in session_state and reruns (or switches page).
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any

import streamlit as st

from viz_model.figures.classroom import answer_histogram
from viz_model.lessons import classroom as lesson
from viz_model.model_text import md_text
from viz_model.runtime import classroom as rt
from viz_model.ui import chart, presenter
from viz_model.ui.errors import guard

FOLLOW_POLL_S = 1.0     # a follower looks for a new view this often (the bar: within 2 s)
LEAD_POLL_S = 0.5       # the leader's tab republishes its view this often (picker changes inside page fragments)
STATUS_POLL_S = 2.0     # the leader's count and histogram, and an exploring student's question: Plotly at >= 2 s
_pages: dict[str, Any] = {}  # url path -> st.Page, set by app.py (the same for every session)


@st.cache_resource(show_spinner=False)
def store() -> rt.ClassStore:
    """This server process's connection to the class store (opening it registers the process; see the store)."""
    return rt.ClassStore.open_for_server()


def enabled() -> bool:
    return bool(os.environ.get(rt.KEY_ENV))


def tab() -> rt.Tab:
    """This tab's side of the class: its session_state and the class store."""
    return rt.Tab(st.session_state, store)


def tab_id() -> str:
    return tab().id


def student_id() -> str:
    """This browser's anonymous id in the class, from Streamlit's XSRF cookie (see rt.Tab.student_id)."""
    try:
        cookie = st.context.cookies.get("_streamlit_xsrf")
    except AttributeError:
        cookie = None
    return tab().student_id(cookie)


def leading() -> bool:
    return tab().leading()


def bound_values() -> dict[str, Any]:
    """This session's URL-bound widget values ({key: value}): the widgets Streamlit binds to the query string (its
    own registry, default values included), else the keys in the URL."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    try:
        with ctx.session_state.query_params() as qp:
            keys = list(qp._bindings_by_param)
    except AttributeError:  # another Streamlit: the URL's keys (values that differ from the default)
        keys = list(st.query_params)
    out = {}
    for key in keys:
        if key in rt.NOT_FOLLOWED or key not in st.session_state:
            continue
        value = rt.jsonable(st.session_state[key])
        if value is not None:
            out[key] = value
    return out


# -- following ---------------------------------------------------------------------------------------------------
def _rerun_views(keys: list[str]) -> None:
    """Rerun what shows these settings: when they all live in one page fragment (the Layer and Head pickers of a
    view), only that fragment, as the browser does when the student moves the picker; else the whole page. A
    follower's full rerun cost the server several times a view's (measured by bench/class_follow.py), and a class
    follows at once. Streamlit reruns another fragment only from a callback, so this asks the script runner the way
    st.rerun does (its internals; any surprise falls back to a full rerun)."""
    try:
        from streamlit.commands.execution_control import _force_yield_point
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

        ctx = get_script_run_ctx()
        state = ctx.session_state._state
        fragments = set()
        for key in keys:
            meta = state._new_widget_state.widget_metadata.get(state._key_id_mapper.get_id_from_key(key, ""))
            fragments.add(getattr(meta, "fragment_id", None))
        (fragment,) = fragments if len(fragments) == 1 else (None,)
        if not fragment or not ctx.fragment_storage.contains(fragment):
            st.rerun()
        ctx.script_requests.request_rerun(RerunData(
            query_string=ctx.query_string, page_script_hash=ctx.page_script_hash, fragment_id_queue=[fragment],
            is_fragment_scoped_rerun=True, cached_message_hashes=ctx.cached_message_hashes,
            context_info=ctx.context_info))
    except (AttributeError, ImportError, TypeError, ValueError, KeyError):
        st.rerun()
    _force_yield_point()


def _student_seen(code: str) -> bool:
    return tab().seen(code, student_id(), time.time())


def _follow_step(view: rt.ClassView, in_fragment: bool) -> None:
    """One look at the leader's view (rt.Tab.follow_step), then what it asks: a rerun, a page switch, or the views of
    the settings that changed rerun."""
    step = tab().follow_step(view, _pages, time.time())
    if step.stopped and in_fragment:
        st.rerun()
    elif step.page is not None:
        # with query_params: a plain switch_page clears the URL and refuses while widgets are bound to it
        st.switch_page(_pages[step.page], query_params={**view.query, rt.LINK_PARAM: view.code})
    elif step.changed and in_fragment:
        _rerun_views(list(step.changed))


def begin(page_url: str, pages: dict[str, Any]) -> None:
    """app.py, before the sidebar: note the page; join a class from the link; a follower takes the leader's view
    (values set before any widget is drawn, or a page switch)."""
    _pages.update(pages)
    st.session_state[rt.PAGE] = page_url if page_url in pages else ""
    if not enabled():
        return
    try:
        view = tab().enter(st.query_params)
        if view is not None:
            _student_seen(view.code)
            _follow_step(view, in_fragment=False)
    except sqlite3.Error as e:  # the page still runs; the expander says why the class is not reachable
        st.session_state[rt.ERROR] = f"The class store cannot be read just now ({e}); your page is not affected."


def end() -> None:
    """app.py, after the page: the leader publishes the view just drawn."""
    if enabled() and leading():
        try:
            _publish()
        except sqlite3.Error as e:
            st.session_state[rt.ERROR] = f"The class store cannot be written just now ({e})."


def _publish() -> None:
    tab().publish(bound_values(), st.query_params.to_dict(), time.time())


# -- the sidebar ---------------------------------------------------------------------------------------------
def panel() -> None:
    """The "Class" expander in the sidebar."""
    code = st.session_state.get(rt.CODE)
    with st.sidebar, st.expander("Class", expanded=bool(code or st.session_state.get(rt.GONE))):
        if not enabled():
            st.caption(f"Class features are off. To lead a class, launch the server with {rt.KEY_ENV}=<a key you "
                       "choose> set; students then follow your view with a class code.")
            return
        gone = st.session_state.pop(rt.GONE, None)
        if gone:
            st.warning(f"Class {gone} is no longer running (the server restarted, or the class ended or expired). "
                       "Your view stays as it is; ask for the new class code.")
        lost = st.session_state.pop(rt.LOST, None)
        if lost:
            st.info(f"Another tab with the instructor key leads class {lost} now.")
        err = st.session_state.pop(rt.ERROR, None)
        if err:
            st.error(err)
        if st.session_state.get(rt.INSTRUCTOR):
            st.toggle("Lead the class", key=rt.LEAD_KEY, on_change=tab().lead_changed,
                      help="Your page and settings become the class's view; students with the code follow it.")
        code = st.session_state.get(rt.CODE)
        if leading():
            _leader_panel(code)
        elif code:
            _student_panel(code)
        else:
            st.text_input("Class code", key=rt.CODE_BOX, on_change=tab().typed_code, max_chars=12,
                          placeholder="ABCD", help="The code on the projector: follow the instructor's view.")
        if not st.session_state.get(rt.INSTRUCTOR):  # last: a student rarely needs it
            st.text_input("Instructor key", type="password", key=rt.KEY_BOX, on_change=tab().check_key,
                          help="Only for the instructor: the key the server was launched with.")
            if st.session_state.pop(rt.KEY_BAD, False):
                st.error("That is not the instructor key.")


def _leader_panel(code: str) -> None:
    # large for the back row in presenter mode; a heading, not HTML (no text here is ever rendered as HTML)
    (st.header if presenter.presenter_on() else st.subheader)(f"Class code: {code}", anchor=False)
    base = (getattr(st.context, "url", None) or "").split("?")[0].rstrip("/")
    if st.session_state.get(rt.PAGE):  # on /rope: the app's root is one level up
        base = base.rsplit("/", 1)[0]
    st.markdown(f"Students open [{base}/?class={code}](/?class={code}) or type the code.")
    _leader_publish()
    _leader_status(code)
    _ask_form(code)


@st.fragment(run_every=LEAD_POLL_S)
def _leader_publish() -> None:
    """Republish the view (a picker inside a page's fragment does not rerun app.py) and keep the heartbeat."""
    with guard("the class"):
        if leading():
            _publish()


@st.fragment(run_every=STATUS_POLL_S)
def _leader_status(code: str) -> None:
    with guard("the class"):
        _leader_status_body(code)


def _leader_status_body(code: str) -> None:
    view = store().get(code)
    if view is None:
        return
    following, present = store().counts(code)
    st.caption(rt.presence_text(following, present))
    q = view.question
    if q is None:
        return
    counts = store().tally(code, q.qid)
    st.markdown(f"**Question {q.qid}:** {md_text(q.prompt)}")
    fig = answer_histogram(q.choices, counts, q.answer.get("correct") if q.revealed else None)
    chart.show(fig, key="class_histogram", name=f"class_{code}_q{q.qid}", exports=False, toolbar=False)
    if q.revealed:
        st.caption(md_text(lesson.model_answer_text(q.choices, q.answer)))
        if st.button("Close the question", key="class_close"):
            store().close_question(code, tab_id())
            st.rerun(scope="fragment")
    elif st.button("Reveal", key="class_reveal", type="primary",
                   help="Show the class's answers beside the model's own answer, on every student's screen."):
        store().reveal(code, tab_id(), q.qid)
        st.rerun(scope="fragment")


# -- asking ----------------------------------------------------------------------------------------------------
FREE = "Free question"


def _start_preset() -> lesson.Preset:
    from viz_model.model_text import is_folder_model, uses_bos
    from viz_model.ui.sidebar import current_model
    from viz_model.ui.widgets import FOLDER_VIEW_TOKENS, encode_text

    ckpt, ss = current_model(), st.session_state
    limit = min(ckpt.model.config.max_len, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt) else ckpt.model.config.max_len
    enc = encode_text(ckpt, ss.get("start_text", "The cat sat on the mat"), max_len=limit,
                      bos=bool(ss.get("start_bos", uses_bos(ckpt))), notice=False)
    return lesson.start_question(ckpt.model, enc.tokens, enc.ids, int(ss.get("start_layer", 0)),
                                 int(ss.get("start_head", 0)))


def _rope_preset() -> lesson.Preset:
    from viz_model.ui.sidebar import current_model

    return lesson.rope_preset(current_model().model.config, st.session_state)


_PRESETS = {"": _start_preset, "rope": _rope_preset}  # a page's URL path -> its preset question (lesson.PRESET_LABELS)


def _presets_here() -> dict[str, Any]:
    """Preset questions about the page the leader shows: label -> a function computing the Preset live."""
    page = st.session_state.get(rt.PAGE, "")
    return {lesson.PRESET_LABELS[page]: _PRESETS[page]} if page in _PRESETS else {}


def _ask_form(code: str) -> None:
    presets = _presets_here()
    kind = st.selectbox("Ask the class", [*presets, FREE], key="class_ask_kind",
                        help="A prediction about the view on screen; the model's own answer is computed live.")
    prompt, choices = "", []
    if kind == FREE:
        prompt = st.text_input("Question", key="class_ask_prompt", max_chars=rt.MAX_PROMPT_CHARS)
        lines = st.text_area("Choices, one per line", key="class_ask_choices", height=100)
        choices = [c for c in (lines or "").splitlines() if c.strip()][:rt.MAX_CHOICES]
    st.button("Ask", key="class_ask", on_click=_ask, args=(code, presets.get(kind), prompt, choices),
              help="Replaces the open question. Students answer once, anonymously.")


def _ask(code: str, preset_fn, prompt: str, choices: list[str]) -> None:
    """on_click of Ask: the preset's question and the model's own answer, computed now on the view on screen."""
    try:
        preset = preset_fn() if preset_fn is not None else lesson.Preset("free", prompt, choices, {})
        store().ask(code, tab_id(), preset.kind, preset.prompt, preset.choices, preset.answer)
    except ValueError as e:  # a ClassError, or a preset the view cannot ask
        st.session_state[rt.ERROR] = str(e)


# -- students ----------------------------------------------------------------------------------------------------
def _student_panel(code: str) -> None:
    st.markdown(f"**Class {code}**")
    st.toggle("Follow the instructor", key=rt.FOLLOW_KEY, on_change=tab().follow_changed,
              help="Your page and settings move with the instructor's. Changing a setting yourself stops it.")
    if not st.session_state.get(rt.FOLLOW_KEY):
        st.caption("You are exploring on your own ·")
        st.button("Catch up", key="class_catch_up", on_click=tab().catch_up, type="primary",
                  help="Follow the instructor again: their page and settings now.")
        _student_poll_slow(code)
    else:
        _student_poll(code)
    st.button("Leave the class", key="class_leave", on_click=tab().leave, args=(st.query_params,))


def _student_body(code: str, in_fragment: bool = True) -> None:
    view = store().get(code)
    if view is None:
        tab().leave(st.query_params, gone=code)
        st.rerun()
    if not _student_seen(code):
        st.caption("The class is full.")
    if not view.leader_active(time.time()):
        st.info("The instructor's tab is closed or asleep: you stay on this view. Following goes on when they "
                "are back.")
    _follow_step(view, in_fragment=in_fragment)
    _question(code, view)


@st.fragment(run_every=FOLLOW_POLL_S)
def _student_poll(code: str) -> None:
    with guard("the class"):
        _student_body(code)


@st.fragment(run_every=STATUS_POLL_S)
def _student_poll_slow(code: str) -> None:
    """An exploring student: no view to follow, but the class's question still reaches them."""
    with guard("the class"):
        _student_body(code)


def _question(code: str, view: rt.ClassView) -> None:
    q = view.question
    if q is None:
        return
    st.markdown(f"**Question {q.qid}:** {md_text(q.prompt)}")
    if q.revealed:
        counts = store().tally(code, q.qid)
        st.markdown("  \n".join(f"{'✓ ' if ok else ''}{md_text(c)} — {n}"
                                for ok, c, n in lesson.tally_lines(q.choices, counts, q.answer)))
        st.caption(md_text(lesson.model_answer_text(q.choices, q.answer)))
        return
    if store().has_answered(code, q.qid, student_id()):
        st.caption("Your answer is in (anonymous). Wait for the reveal.")
        return
    pick = st.radio("Your answer", list(range(len(q.choices))), index=None, key=f"class_pick_{q.qid}",
                    format_func=lambda i: md_text(q.choices[i]))  # a typed choice shows as typed
    if st.button("Answer", key=f"class_answer_{q.qid}", disabled=pick is None):
        store().answer(code, q.qid, student_id(), int(pick))
        st.rerun(scope="fragment")
