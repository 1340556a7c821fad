"""Class mode (#28): the instructor leads, students follow the instructor's view, the class answers questions.

Everything shared lives in the class store (`viz_model.runtime.class_mode`, a SQLite file every server process
reads); a tab keeps only its own part in `st.session_state`, run by `runtime.class_mode.Tab` (joining, leaving,
following, publishing: no Streamlit there). This module draws the widgets and does what only Streamlit can (reruns,
page switches, the URL-bound widgets' values). app.py calls `begin` before the sidebar (a follower takes the leader's
page and settings before any widget is drawn; a student's banner above the page: the question, the notices), `panel`
in the sidebar (the "Class" expander: the controls) and `end` after the page (a leader publishes the view just drawn).

What a view is: the page's URL path and the values of its URL-bound widgets (`share.URL`), read from the session's
own query-parameter bindings, so every page and every setting a link can carry is followed, and nothing else. The
leader's tab republishes every LEAD_POLL_S from a small fragment, because a picker inside a page's fragment reruns
only that fragment, not app.py. A student's banner fragment takes what its tab does not hold of the leader's latest
view (rt.Tab.follow_step: the browser's echoes, page switches, a page cut short) when the server pushes a change
(runtime.class_push: this process's watcher reruns it; it has no timer); where Streamlit's sessions cannot be reached
for a push (AppTest), it ticks every FOLLOW_POLL_S.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import streamlit as st
from streamlit.commands.execution_control import _force_yield_point
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

from viz_model.figures.class_mode import answer_histogram
from viz_model.lectures import PAGE_PARAMS
from viz_model.lessons import class_mode as lesson
from viz_model.lessons import class_summary as summary
from viz_model.lessons.classview import PAUSED_TEXT, hidden_answers, leader_notice
from viz_model.model_text import md_text
from viz_model.runtime import class_mode as rt
from viz_model.runtime import class_push, class_store
from viz_model.ui import chart, join, presenter, share
from viz_model.ui.errors import guard
from viz_model.ui.widgets import HIDDEN_KEYS

FOLLOW_POLL_S = 1.0     # with no push, a follower looks for a new view this often (the bar: within 2 s)
LEAD_POLL_S = 0.5       # the leader's tab republishes its view this often (picker changes inside page fragments)
STATUS_POLL_S = 2.0     # the leader's count and histogram, and an exploring student's question: Plotly at >= 2 s
_pages: dict[str, Any] = {}  # url path -> st.Page, set by app.py (the same for every session)


@st.cache_resource(show_spinner=False)
def store() -> rt.ClassStoreAPI:
    """This server process's connection to the class store: the SQLite file, or Redis where ATTENTION_LAB_CLASS_STORE
    names it (#42; runtime.class_store chooses)."""
    return class_store.open_for_server()


@contextlib.contextmanager
def reachable(say: bool = True) -> Iterator[None]:
    """The one place a run catches a class store it cannot reach (#42: Redis down or too slow, a locked SQLite file):
    the page runs on, a tab in a class is paused (rt.Tab.unreachable; the next store call that answers resumes it, or
    finds the class lost) and `say`s so in one sentence. No traceback, no log line. Callbacks: rt._told."""
    try:
        yield
    except sqlite3.Error as e:
        tab().unreachable(e)
        if say and st.session_state.get(rt.CODE):
            st.info(PAUSED_TEXT)


def enabled() -> bool:
    return bool(os.environ.get(rt.KEY_ENV))


def tab() -> rt.Tab:
    """This tab's side of the class: its session_state and the class store."""
    return rt.Tab(st.session_state, store)


def tab_id() -> str:
    return tab().id


def student_id() -> str:
    """This browser's anonymous id in the class, from Streamlit's XSRF cookie (see rt.Tab.student_id)."""
    return tab().student_id((getattr(st.context, "cookies", None) or {}).get("_streamlit_xsrf"))


def leading() -> bool:
    return tab().leading()


def bound_values() -> dict[str, Any]:
    """This session's URL-bound widget values ({key: value}): the widgets Streamlit binds to the query string (its
    own registry, default values included), else the keys in the URL."""
    try:
        with get_script_run_ctx().session_state.query_params() as qp:
            keys = list(qp._bindings_by_param)
    except AttributeError:  # another Streamlit: the URL's keys (values that differ from the default)
        keys = list(st.query_params)
    return rt.followed_values(keys, st.session_state)


def answers_hidden(page: str, view: rt.ClassView | None) -> tuple[str, ...]:
    """The elements of `page` this tab draws hidden (widgets.answer_hidden reads them): a student's, while the class
    question asked on that page is open and not revealed (lessons.classview.hidden_answers). `view`: the class's."""
    if view is None or not st.session_state.get(rt.CODE):
        return ()
    return hidden_answers(page, leading=leading(), question=view.question, leader_page=view.page)


# -- pushed to: runtime.class_push ------------------------------------------------------------------------------
def _session_info(session_id: str) -> Any:
    """Streamlit's record of a connected session (None once its tab is gone). Streamlit has no API to rerun another
    session; its own runOnSave calls AppSession.request_rerun too, which is what a push does."""
    from streamlit.runtime import Runtime

    return Runtime.instance()._session_mgr.get_active_session_info(session_id)


PUSH_ENV = "ATTENTION_LAB_CLASS_PUSH"  # "0": the students' tabs poll for the class's moves instead (see pusher)


@st.cache_resource(show_spinner=False)
def pusher() -> class_push.Pusher | None:
    """This server process's watcher, else None where ATTENTION_LAB_CLASS_PUSH=0 or where Streamlit's sessions cannot
    be reached (AppTest; another Streamlit): the students' fragments then poll, every FOLLOW_POLL_S."""
    if os.environ.get(PUSH_ENV) == "0":
        return None
    try:
        _session_info("")
    except (RuntimeError, AttributeError, ImportError):
        return None
    push = class_push.Pusher(class_store.open_store, lambda sid, fragment: _poke(sid, fragment, push.retry),
                             alive=lambda sid: _session_info(sid) is not None, busy=_busy)
    return push


def _busy(session_id: str) -> bool:
    """A run of that session is under way (its ScriptRunner lives until the run, and any rerun it asked, ends)."""
    return (info := _session_info(session_id)) is not None and info.session._scriptrunner is not None


def _poke(session_id: str, fragment: str, retry: Callable[[str], None]) -> bool:
    """Rerun one session's class fragment as a browser's timer would (no widget changed), on the event loop where
    Streamlit handles a browser's rerun (`_rerun_idle`). False when the session is gone."""
    if (info := _session_info(session_id)) is None:
        return False
    info.session._event_loop.call_soon_threadsafe(_rerun_idle, info.session, fragment, retry)
    return True


def _rerun_idle(session: Any, fragment: str, retry: Callable[[str], None]) -> None:
    """On Streamlit's event loop: rerun `fragment` at the page and URL the session's last run ended on (its own client
    state, as runOnSave reruns it), if no run is under way; else `retry`: the watcher pokes it after that run (a rerun
    asked now would run after it, at a page that run may be leaving: runtime.class_push.Pusher._drain). No
    cached_message_hashes: the browser may have dropped some by now ("Cached ForwardMsg MISS")."""
    if session._scriptrunner is not None:
        retry(session.id)
        return
    tick = ClientState()
    tick.CopyFrom(session._client_state)
    tick.fragment_id, tick.is_auto_rerun = fragment, True
    tick.ClearField("widget_states")
    tick.ClearField("cached_message_hashes")
    session.request_rerun(tick)


def _register(code: str, pulse: tuple, following: bool) -> None:
    """From the class fragment's run, which drew `pulse` (class_push.DOWN: it said the class is paused): the watcher
    pokes this session when the class's pulse is another (a student exploring on their own only when its question
    or the leader's line changes)."""
    ctx, fragment = get_script_run_ctx(), ThreadState.get().fragment_id
    if (push := pusher()) is None or ctx is None or not fragment:
        return
    push.register(ctx.session_id, code, student_id(), fragment, pulse, watch_view=following)


def _poll_s(unpushed: float) -> float | None:
    """A student's class fragment's timer: none where the server pushes (a browser's timer fires on its own clock,
    and a tick sent while a pushed page switch is on its way would carry the old page and URL back)."""
    return unpushed if pusher() is None else None


# -- following ---------------------------------------------------------------------------------------------------
FRESH_PAGE_S = 4.0  # a tick this soon after the tab's page changed ends in a full run (see _page_fresh)
PAGE_SINCE = "class_page_since"  # session state: (the page this tab's runs draw, since when: time.monotonic)


def _page_fresh(now: float) -> bool:
    """Whether this tab's page changed less than FRESH_PAGE_S ago. A busy browser takes a page switch and the runs
    after it at once, its current page not yet updated: a fragment run's message looks like another page's, the page
    is cleared, and the page fragment's next delta lands past its end, a white page ('Bad delta path index 15').
    A full run redraws every element in order (tests/test_browser_class_follow.py, the busy browser)."""
    page = get_script_run_ctx().page_script_hash
    seen, since = st.session_state.get(PAGE_SINCE) or ("", now)
    if seen != page:
        st.session_state[PAGE_SINCE] = (page, now)
        return True
    return now - since < FRESH_PAGE_S


def _rerun_views(keys: list[str]) -> None:
    """From a follow tick only: rerun what shows these settings, their one page fragment (the Layer and Head pickers
    of a view) as the browser does when the student moves them, else the whole page (a follower's full rerun costs
    several times a view's: bench/class_follow.py). Streamlit's internals, the way st.rerun asks; any surprise falls
    back to a full rerun. Never from a full run: a fragment-scoped rerun would cut its page short (a blank page)."""
    try:
        ctx = get_script_run_ctx()
        state = ctx.session_state._state
        fragments = {getattr(state._new_widget_state.widget_metadata.get(state._key_id_mapper.get_id_from_key(k, "")),
                             "fragment_id", None) for k in keys}
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


def _follow_step(view: rt.ClassView, tick: bool, fresh: bool = False) -> None:
    """One look at the leader's view (rt.Tab.follow_step), then what it asks. In a full run (begin, before any widget
    is drawn) the values it sets are the ones the widgets take: nothing to rerun."""
    step = tab().follow_step(view, _pages, time.time(), tick=tick, query=st.query_params)  # query: the lecture place
    if step.failed:  # never a blank or outdated page that looks followed
        st.warning(rt.not_taken_text(step.failed))
        st.button("Catch up", key="class_retry", on_click=tab().catch_up, type="primary")
    elif step.page is not None:
        if step.place:
            _forget(step.page)
        # with query_params: a plain switch_page clears the URL and refuses while widgets are bound to it
        st.switch_page(_pages[step.page], query_params=_unbind({**view.query, rt.LINK_PARAM: view.code}))
    elif tick and (step.stopped or step.redraw or step.full):
        st.rerun()
    elif tick and step.changed:
        if fresh:  # no fragment run just after a page switch (_page_fresh)
            st.rerun()
        _rerun_views(list(step.changed))


def _forget(page: str) -> None:
    """A new lecture step opens its page afresh, as the leader's did (ui.lecture.go): the follower's own settings of
    that page go (a value the browser still holds, a tab kept open), and the widgets take the leader's link's."""
    prefixes = PAGE_PARAMS.get(page or "start", ())
    for kept in (st.session_state, st.session_state.get(share._TAB_KEPT) or {}):
        for key in [k for k in kept if isinstance(k, str) and k.startswith(prefixes)]:
            del kept[key]


def _unbind(query: dict[str, Any]) -> dict[str, Any]:
    """Streamlit refuses a page switch that sets a parameter still bound to a widget of the run before (a new step
    on the same page): those bindings go first; each widget binds again when it is drawn."""
    with get_script_run_ctx().session_state.query_params() as qp:
        for name in query:
            if (binding := qp.get_binding_for_param(name)) is not None:
                qp.unbind_widget(binding.widget_id)
    return query


def begin(page_url: str, pages: dict[str, Any]) -> None:
    """app.py, before the sidebar: note the page; join a class from the link; a follower takes the leader's view
    (values set before any widget is drawn, or a page switch); a student's class banner above the page."""
    _pages.update(pages)
    if not enabled():
        return
    with reachable(say=False):  # the banner below says it
        tab().keep_lead()  # before anything reads it: a page switch from a lecture's button dropped the toggle's value
        tab().started(page_url if page_url in pages else "")
        student_id()  # this browser's anonymous id, before a callback needs it (a leader's browser is no student)
        view = tab().enter(st.query_params)
        st.session_state[HIDDEN_KEYS] = answers_hidden(st.session_state.get(rt.PAGE, ""), view)
        if view is not None:
            _student_seen(view.code)
            _follow_step(view, tick=False)
    with guard("the class"):
        _banner()


def end() -> None:
    """app.py, after the page: it drew to the end unless a rerun cut it short; a leader publishes the view drawn."""
    if enabled() and not isinstance(sys.exc_info()[1], RerunException):
        tab().drew()
    if enabled() and leading():
        with reachable(say=False):
            _publish()


def _publish() -> None:
    tab().publish(bound_values(), st.query_params.to_dict(), time.time())


# -- the sidebar ---------------------------------------------------------------------------------------------
def panel() -> None:
    """The "Class" expander in the sidebar."""
    code = st.session_state.get(rt.CODE)
    with st.sidebar, st.expander("Class", expanded=bool(code)):
        if not enabled():
            st.caption(f"Class features are off. To lead a class, launch the server with {rt.KEY_ENV}=<a key you "
                       "choose> set; students then follow your view with a class code.")
            return
        if lost := st.session_state.pop(rt.LOST, None):
            st.info(f"Another tab with the instructor key leads class {lost} now.")
        if err := st.session_state.pop(rt.ERROR, None):
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
            # the client's address, shared by its sessions' key tries (behind HAProxy: the proxy's; runtime.key_limit)
            st.text_input("Instructor key", type="password", key=rt.KEY_BOX, on_change=tab().check_key,
                          args=(st.context.ip_address,), help="Only for the instructor: the key the server was "
                          "launched with.")
            if bad := st.session_state.pop(rt.KEY_BAD, None):
                st.error(bad)


def _leader_panel(code: str) -> None:
    # large for the back row in presenter mode; a heading, not HTML (no text here is ever rendered as HTML)
    (st.header if presenter.presenter_on() else st.subheader)(f"Class code: {code}", anchor=False)
    join.line(code)  # #39: an address students can open, and its QR code
    _leader_publish()
    _leader_status(code)
    _ask_form(code)
    _summary(code, "class_summary_side", expanded=None)  # a popover: no expander inside the Class expander


@st.fragment(run_every=LEAD_POLL_S)
def _leader_publish() -> None:
    """Republish the view (a picker inside a page's fragment does not rerun app.py) and keep the heartbeat. Refused
    (another tab leads, or the class was lost with its store): the next full run tells it (rt.Tab.enter)."""
    with guard("the class"), reachable(say=False):
        if leading():
            _publish()
    if st.session_state.get(rt.DEMOTED) and not st.session_state.get(rt.LOST):  # lost: say so now
        st.rerun()


@st.fragment(run_every=STATUS_POLL_S)
def _leader_status(code: str) -> None:
    with guard("the class"), reachable():
        _leader_status_body(code)


def _leader_status_body(code: str) -> None:
    view = tab().view(code)
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


def _presets_here() -> dict[str, Any]:
    """Preset questions about the page the leader shows (the registry, lessons.presets): label -> a function
    computing the Preset live on the view."""
    from functools import partial

    from viz_model.ui import presets

    labels = presets.labels_here(st.session_state.get(rt.PAGE, ""))
    return {label: partial(presets.preset_by_name, name) for label, name in labels.items()}


def _ask_form(code: str) -> None:
    presets = _presets_here()
    kind = st.selectbox("Ask the class", [*presets, FREE], key="class_ask_kind",
                        help="A prediction about the view on screen; the model's own answer is computed live.")
    prompt, choices = "", []
    if kind == FREE:
        # no max_chars: Streamlit's box drops a paste over it entirely (an empty box, no word); the count says it
        prompt = st.text_input("Question", key="class_ask_prompt")
        lines = st.text_area("Choices, one per line", key="class_ask_choices", height=100)
        choices = [c for c in (lines or "").splitlines() if c.strip()]
        for note in rt.question_notes(prompt or "", choices):
            st.warning(note)
        st.caption(rt.question_count(prompt or "", choices))
    st.button("Ask", key="class_ask", on_click=_ask, args=(code, presets.get(kind), prompt, choices),
              help="Replaces the open question. Students answer once, anonymously.")


def _ask(code: str, preset_fn, prompt: str, choices: list[str]) -> None:
    """on_click of Ask: the preset's question and the model's own answer, computed now on the view on screen."""
    try:
        preset = preset_fn() if preset_fn is not None else lesson.Preset("free", prompt, choices, {})
        choices = preset.choices if preset_fn is None else [rt.fit_choice(c) for c in preset.choices]
        answer = {**preset.answer, "page": st.session_state.get(rt.PAGE, "")}  # #39: its answers hidden there
        store().ask(code, tab_id(), preset.kind, preset.prompt, choices, answer)
    except ValueError as e:  # a ClassError, or a preset the view cannot ask
        st.session_state[rt.ERROR] = str(e)
    except sqlite3.Error as e:  # the class store cannot be reached (a Redis that is down): paused, no traceback
        tab().unreachable(e)


# -- a lecture, presented (#39, item 4) ---------------------------------------------------------------------------
def following() -> bool:
    """This tab is a student who follows the instructor: the instructor picks its page and settings."""
    return bool(enabled() and st.session_state.get(rt.CODE) and not leading() and st.session_state.get(rt.FOLLOW_KEY))


def in_lecture() -> dict[str, Any]:
    """app.py hands this to ui.lecture.panel: a follower's panel is read-only (the class moves the steps), a leader's
    has the class tools below Back / Next (ui.lecture and this module are independent lessons: app.py joins them)."""
    return {"following": following(), "leader_tools": _lecture_tools if enabled() and leading() else None}


def _lecture_tools(name: str, lec: Any, n: int) -> None:
    """Below a leader's Back / Next: the step's question as a class poll in one click, and the class summary (open on
    the last step)."""
    code, step = st.session_state.get(rt.CODE), lec.steps[n - 1]
    if step.question is not None:
        st.button("Ask the class this question", key="lecture_ask_class", icon=":material/how_to_vote:",
                  on_click=_ask, args=(code, partial(_step_question, step), "", []),
                  help="Opens it as the class's question: the histogram and Reveal are in the sidebar's Class box.")
    _summary(code, "class_summary_lecture", expanded=n == len(lec.steps), title=lec.title)


def _step_question(step: Any) -> Any:
    """A step's question as a poll: a preset computed now on the view on screen, or the written one with its answer."""
    q = step.question
    if q.preset:
        return _preset(q.preset, step.params)
    return lesson.Preset("lecture", q.prompt, list(q.choices), {"correct": list(q.correct), "why": q.why or "",
                                                                 "source": "lecture"})


def _preset(name: str, view: dict) -> Any:
    from viz_model.ui import presets  # the one call that finds a preset question by its name

    return presets.preset_by_name(name, view)


def _summary(code: str, key: str, expanded: bool | None, title: str = "") -> None:
    """The class summary: each question asked, its counts, the share correct, the model's answer; MD and CSV. In an
    expander (open when `expanded`), or a popover (`expanded` None)."""
    box = (st.popover(summary.SUMMARY_TITLE, icon=":material/summarize:") if expanded is None else
           st.expander(summary.SUMMARY_TITLE, expanded=expanded, icon=":material/summarize:"))
    with box, reachable(say=False):
        asked = store().asked(code)
        if not asked:
            return st.caption(summary.NO_QUESTIONS)
        st.caption(summary.SUMMARY_HELP)
        st.dataframe(summary.summary_rows(asked), hide_index=True, key=f"{key}_table")
        when = f"Class {code}, {time.strftime('%Y-%m-%d %H:%M %Z')}"
        row, stem = st.container(horizontal=True), f"class-{code}-summary"
        row.download_button("Markdown", summary.summary_markdown(asked, title or f"class {code}", when), f"{stem}.md",
                            "text/markdown", key=f"{key}_md", on_click="ignore", icon=":material/download:")
        row.download_button("CSV", summary.summary_csv(asked), f"{stem}.csv", "text/csv", key=f"{key}_csv",
                            on_click="ignore", icon=":material/download:")


# -- students: the banner above the page (a phone's first screen; the sidebar keeps the controls) ----------------
def _banner() -> None:
    """Above the page, for a student: the open question and its answer, the instructor-away notice, following's state
    and Catch up (or why a class link did not work). Streamlit's own elements, one column: the same at 390 px."""
    if gone := st.session_state.pop(rt.GONE, None):
        st.warning(gone)
    code = st.session_state.get(rt.CODE)
    if not code or leading():
        return
    with st.container(border=True, key="class_banner"):
        if st.session_state.get(rt.FOLLOW_KEY):
            _student_poll(code)
        else:
            st.caption(f"Class {code} · you are exploring on your own.")
            st.button("Catch up", key="class_banner_catch_up", on_click=tab().catch_up, type="primary",
                      help="Follow the instructor again: their page and settings now.")
            _student_poll_slow(code)


def _student_panel(code: str) -> None:
    st.markdown(f"**Class {code}**")
    st.toggle("Follow the instructor", key=rt.FOLLOW_KEY, on_change=tab().follow_changed,
              help="Your page and settings move with the instructor's. Changing a setting yourself stops it.")
    if not st.session_state.get(rt.FOLLOW_KEY):
        st.caption("You are exploring on your own: Catch up is above the page.")
    st.button("Leave the class", key="class_leave", on_click=tab().leave, args=(st.query_params,))


def _student_body(code: str) -> None:
    view = tab().view(code)
    if view is None:
        tab().leave(st.query_params, gone=code)
        st.rerun()
    following = bool(st.session_state.get(rt.FOLLOW_KEY))
    tick, fresh = bool(get_script_run_ctx().fragment_ids_this_run), _page_fresh(time.monotonic())
    _register(code, view.pulse(time.time()), following)
    if not _student_seen(code):
        st.caption("The class is full.")
    if notice := leader_notice(view.leader, view.leader_seen, time.time()):
        st.info(notice)  # reconnecting (a flaky connection, a reload) or away; the page stays live either way
    elif following:
        st.caption(f"Class {code} · you follow the instructor.")
    if following and tick:  # a tick (a full run took the view in begin)
        _follow_step(view, tick=True, fresh=fresh)
    if answers_hidden(st.session_state.get(rt.PAGE, ""), view) != st.session_state.get(HIDDEN_KEYS, ()):
        st.rerun()  # a question opened or was revealed: the page draws its answers hidden, or shown again
    _question(code, view)
    if tick and fresh:  # a fragment run just after a page switch ends in a full one (_page_fresh)
        st.rerun()


def _student_tick(code: str) -> None:
    with guard("the class"), reachable():
        _student_body(code)
    if st.session_state.get(rt.PAUSED):  # it said so: poked again until a run finds the store (class_push._due)
        _register(code, class_push.DOWN, bool(st.session_state.get(rt.FOLLOW_KEY)))


def _student_poll(code: str) -> None:  # one fragment id for each: its function's name and place (Streamlit's rule)
    st.fragment(_student_tick, run_every=_poll_s(FOLLOW_POLL_S))(code)


def _student_poll_slow(code: str) -> None:  # an exploring student: no view to follow, the question still comes
    st.fragment(_student_tick, run_every=_poll_s(STATUS_POLL_S))(code)


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
        st.success("Your answer is in (anonymous). Wait for the reveal.")
        return
    pick = st.radio("Your answer", list(range(len(q.choices))), index=None, key=f"class_pick_{q.qid}",
                    format_func=lambda i: md_text(q.choices[i]))  # a typed choice shows as typed
    if st.button("Answer", key=f"class_answer_{q.qid}", disabled=pick is None, type="primary"):
        store().answer(code, q.qid, student_id(), int(pick))
        st.rerun(scope="fragment")
