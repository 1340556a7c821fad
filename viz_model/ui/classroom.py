"""Class mode (#28): the instructor leads, students follow the instructor's view, the class answers questions.

Everything shared lives in the class store (`viz_model.runtime.classroom`, a SQLite file every server process
reads); this module keeps only a tab's own part in `st.session_state` (its anonymous id, its class code, what it last
took from the leader). app.py calls `begin` before the sidebar (a follower takes the leader's page and settings
before any widget is drawn), `panel` in the sidebar (the "Class" expander) and `end` after the page (a leader
publishes the view the page has just drawn).

What a view is: the page's URL path and the values of its URL-bound widgets (`share.URL`), read from the session's
own query-parameter bindings, so every page and every setting a link can carry is followed, and nothing else. The
leader's tab republishes every LEAD_POLL_S from a small fragment, because a picker inside a page's fragment reruns
only that fragment, not app.py. A follower polls every FOLLOW_POLL_S in a fragment drawn only while following; when
the leader's view changed it sets the widget keys in session_state and reruns (or switches page).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from typing import Any

import streamlit as st

from viz_model.figures.classroom import answer_histogram
from viz_model.lessons.classroom import Preset, attention_question, attention_row, rope_question
from viz_model.runtime.classroom import (
    CODE_LEN,
    MAX_CHOICES,
    MAX_PROMPT_CHARS,
    ClassError,
    ClassStore,
    ClassView,
    key_matches,
    new_id,
    parse_code,
)
from viz_model.ui import chart, presenter
from viz_model.ui.errors import guard

KEY_ENV = "ATTENTION_LAB_INSTRUCTOR_KEY"
# The class link's ?class=CODE is not a widget's value (joining a class is session state, and the code box is emptied
# once read), so it is read and written through st.query_params by hand; every followed setting uses the widgets'
# own bind="query-params".
LINK_PARAM = "class"
FOLLOW_POLL_S = 1.0     # a follower looks for a new view this often (the bar: within 2 s)
LEAD_POLL_S = 0.5       # the leader's tab republishes its view this often (picker changes inside page fragments)
STATUS_POLL_S = 2.0     # the leader's count and histogram, and an exploring student's question: Plotly at >= 2 s
SEEN_EVERY_S = 3.0      # a student's heartbeat is written at most this often
NOT_FOLLOWED = frozenset({"presenter_mode"})  # the projector's big type is the instructor's, not the students'

# session_state: widget keys (never bound to the URL, so never part of a view) and the tab's own bookkeeping
KEY_BOX, LEAD_KEY, FOLLOW_KEY, CODE_BOX = "class_key", "class_lead", "class_follow", "class_code_box"
_TAB, _CODE, _INSTRUCTOR, _KEY_BAD = "_class_tab", "_class_code", "_class_instructor", "_class_key_bad"
_PAGE, _APPLIED, _PUBLISHED, _ON_OWN = "_class_page", "_class_applied", "_class_published", "_class_on_own"
_GONE, _ERROR, _SEEN_AT, _BEAT_AT = "_class_gone", "_class_error", "_class_seen_at", "_class_beat_at"
_LOST, _DEMOTED, _STUDENT = "_class_lost", "_class_demoted", "_class_student"
_pages: dict[str, Any] = {}  # url path -> st.Page, set by app.py (the same for every session)


@st.cache_resource(show_spinner=False)
def store() -> ClassStore:
    """This server process's connection to the class store (opening it registers the process; see the store)."""
    return ClassStore.open_for_server()


def enabled() -> bool:
    return bool(os.environ.get(KEY_ENV))


def tab_id() -> str:
    return st.session_state.setdefault(_TAB, new_id())


def student_id() -> str:
    """This browser's anonymous id in the class: from Streamlit's XSRF cookie (the token under its per-request mask
    is the same for every tab and reload of one browser), hashed with the store's salt; the tab's random id where
    there is no such cookie."""
    sid = st.session_state.get(_STUDENT)
    if sid is None:
        token = None
        try:
            parts = (st.context.cookies.get("_streamlit_xsrf") or "").split("|")
            if len(parts) == 4 and parts[0] == "2":
                mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
                token = bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)).hex() if mask else None
        except (ValueError, AttributeError):
            token = None
        sid = store().student_id(token) if token else tab_id()
        st.session_state[_STUDENT] = sid
    return sid


def leading() -> bool:
    ss = st.session_state
    return bool(ss.get(_INSTRUCTOR) and ss.get(LEAD_KEY) and ss.get(_CODE) and not ss.get(_DEMOTED))


def _jsonable(value: Any) -> Any:
    """A widget value as JSON keeps it (tuples become lists); None for a value JSON cannot carry."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


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
        if key in NOT_FOLLOWED or key not in st.session_state:
            continue
        value = _jsonable(st.session_state[key])
        if value is not None:
            out[key] = value
    return out


# -- joining and leaving ---------------------------------------------------------------------------------------
def _join(code: str, follow: bool) -> None:
    st.session_state[_CODE] = code
    st.session_state[FOLLOW_KEY] = follow
    st.session_state.pop(_APPLIED, None)
    st.session_state.pop(_ON_OWN, None)
    st.session_state.pop(_GONE, None)


def _leave(gone: str | None = None) -> None:
    for key in (_CODE, _APPLIED, _ON_OWN, _PUBLISHED):
        st.session_state.pop(key, None)
    st.session_state[FOLLOW_KEY] = False
    st.session_state[LEAD_KEY] = False
    if gone:
        st.session_state[_GONE] = gone
    if LINK_PARAM in st.query_params:
        del st.query_params[LINK_PARAM]


def _typed_code() -> None:
    """on_change of the student's "Class code" box."""
    raw = st.session_state.get(CODE_BOX, "")
    code = parse_code(raw)
    if code is None:
        st.session_state[_ERROR] = f"A class code is {CODE_LEN} letters, such as the one on the projector."
    elif store().get(code) is None:
        st.session_state[_ERROR] = f"There is no class {code} on this server (ended, expired, or the server restarted)."
    else:
        _join(code, follow=True)
    st.session_state[CODE_BOX] = ""


def _check_key() -> None:
    """on_change of the password box: compared in constant time, then cleared (the key stays nowhere)."""
    typed = st.session_state.get(KEY_BOX) or ""
    st.session_state[KEY_BOX] = ""
    if key_matches(typed, os.environ.get(KEY_ENV)):
        st.session_state[_INSTRUCTOR] = True
    else:
        st.session_state[_KEY_BAD] = True


def _lead_changed() -> None:
    """on_change of "Lead the class": take over the class this tab is in (a new tab of the instructor, after the
    old one closed or the link was reopened), else start a new one; off: the class stays, led by nobody."""
    code = st.session_state.get(_CODE)
    try:
        if st.session_state.get(LEAD_KEY):
            if code is None or not store().lead(code, tab_id()):
                code = store().create(tab_id())
            st.session_state[_CODE] = code
            st.session_state[FOLLOW_KEY] = False
            for key in (_PUBLISHED, _GONE, _DEMOTED):
                st.session_state.pop(key, None)
        elif code:
            store().stop_leading(code, tab_id())
    except ClassError as e:
        st.session_state[LEAD_KEY] = False
        st.session_state[_ERROR] = str(e)


def _catch_up() -> None:
    st.session_state[FOLLOW_KEY] = True
    st.session_state.pop(_APPLIED, None)
    st.session_state.pop(_ON_OWN, None)


def _follow_changed() -> None:
    if st.session_state.get(FOLLOW_KEY):
        _catch_up()
    else:
        st.session_state[_ON_OWN] = True


# -- following ---------------------------------------------------------------------------------------------------
def _moved(applied: dict) -> bool:
    """The student changed the page or a followed setting since the leader's view was applied."""
    if applied["page"] != st.session_state.get(_PAGE):
        return True
    return any(key in st.session_state and _jsonable(st.session_state[key]) != value
               for key, value in applied["values"].items())


def _apply(values: dict[str, Any]) -> list[str]:
    """Set the leader's values in session_state; the keys that changed."""
    changed = []
    for key, value in values.items():
        if key in st.session_state and _jsonable(st.session_state[key]) == value:
            continue
        current = st.session_state.get(key)
        st.session_state[key] = tuple(value) if isinstance(current, tuple) and isinstance(value, list) else value
        changed.append(key)
    return changed


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
    now = time.time()
    if now - st.session_state.get(_SEEN_AT, 0.0) < SEEN_EVERY_S:
        return True
    st.session_state[_SEEN_AT] = now
    return store().seen(code, student_id(), bool(st.session_state.get(FOLLOW_KEY)))


def _follow_step(view: ClassView, in_fragment: bool) -> None:
    """One look at the leader's view: give up following if the student moved, else take a new view."""
    if not st.session_state.get(FOLLOW_KEY):
        return
    applied = st.session_state.get(_APPLIED)
    if applied is not None and _moved(applied):
        st.session_state[FOLLOW_KEY] = False
        st.session_state[_ON_OWN] = True
        if in_fragment:
            st.rerun()
        return
    if view.page is None or not view.leader_active(time.time()):
        return  # nothing published yet, or the leader's tab is gone: stay where you are
    if applied is not None and applied["version"] == view.version:
        return
    changed = _apply(view.values)
    target = view.page if view.page in _pages else ""
    st.session_state[_APPLIED] = {"page": target, "values": view.values, "version": view.version}
    if target != st.session_state.get(_PAGE):
        # with query_params: a plain switch_page clears the URL and refuses while widgets are bound to it
        st.switch_page(_pages[target], query_params={**view.query, LINK_PARAM: view.code})
    elif changed and in_fragment:
        _rerun_views(changed)


def begin(page_url: str, pages: dict[str, Any]) -> None:
    """app.py, before the sidebar: note the page; join a class from the link; a follower takes the leader's view
    (values set before any widget is drawn, or a page switch)."""
    _pages.update(pages)
    st.session_state[_PAGE] = page_url if page_url in pages else ""
    if not enabled():
        return
    try:
        _begin()
    except sqlite3.Error as e:  # the page still runs; the expander says why the class is not reachable
        st.session_state[_ERROR] = f"The class store cannot be read just now ({e}); your page is not affected."


def _begin() -> None:
    if st.session_state.pop(_DEMOTED, False):  # another tab took the class over: this one is a student now
        st.session_state[LEAD_KEY] = False
        st.session_state[FOLLOW_KEY] = False
    raw = st.query_params.get(LINK_PARAM)
    linked = parse_code(raw)
    if raw and linked is None:
        st.session_state[_ERROR] = f"The link's class code {raw[:12]!r} is not a class code."
        del st.query_params[LINK_PARAM]
    elif linked and linked != st.session_state.get(_CODE):
        if store().get(linked) is None:
            _leave(gone=linked)
            return
        _join(linked, follow=True)
    code = st.session_state.get(_CODE)
    if not code:
        return
    view = store().get(code)
    if view is None:
        _leave(gone=code)
        return
    if st.query_params.get(LINK_PARAM) != code:
        st.query_params[LINK_PARAM] = code  # kept in the URL: a reload (or a restarted server) finds the class
    if not leading():
        _student_seen(code)
        _follow_step(view, in_fragment=False)


def end() -> None:
    """app.py, after the page: the leader publishes the view just drawn."""
    if enabled() and leading():
        try:
            _publish(force=False)
        except sqlite3.Error as e:
            st.session_state[_ERROR] = f"The class store cannot be written just now ({e})."


def _publish(force: bool) -> None:
    code = st.session_state[_CODE]
    page, values = st.session_state.get(_PAGE, ""), bound_values()
    query = {k: v for k, v in st.query_params.to_dict().items() if k != LINK_PARAM and k not in NOT_FOLLOWED}
    text = json.dumps([page, values, query], sort_keys=True)
    now = time.time()
    if not force and text == st.session_state.get(_PUBLISHED) and now - st.session_state.get(_BEAT_AT, 0) < 2.0:
        return
    try:
        version = store().publish(code, tab_id(), page, values, query)
    except ClassError as e:
        st.session_state[_ERROR] = str(e)
        return
    if version is None:  # another tab took the class over, or it is gone (the toggle is set off on the next run)
        st.session_state[_DEMOTED] = True
        st.session_state[_LOST] = code
        return
    st.session_state[_PUBLISHED], st.session_state[_BEAT_AT] = text, now


# -- the sidebar ---------------------------------------------------------------------------------------------
def panel() -> None:
    """The "Class" expander in the sidebar."""
    code = st.session_state.get(_CODE)
    with st.sidebar, st.expander("Class", expanded=bool(code or st.session_state.get(_GONE))):
        if not enabled():
            st.caption(f"Class features are off. To lead a class, launch the server with {KEY_ENV}=<a key you "
                       "choose> set; students then follow your view with a class code.")
            return
        gone = st.session_state.pop(_GONE, None)
        if gone:
            st.warning(f"Class {gone} is no longer running (the server restarted, or the class ended or expired). "
                       "Your view stays as it is; ask for the new class code.")
        lost = st.session_state.pop(_LOST, None)
        if lost:
            st.info(f"Another tab with the instructor key leads class {lost} now.")
        err = st.session_state.pop(_ERROR, None)
        if err:
            st.error(err)
        if st.session_state.get(_INSTRUCTOR):
            st.toggle("Lead the class", key=LEAD_KEY, on_change=_lead_changed,
                      help="Your page and settings become the class's view; students with the code follow it.")
        code = st.session_state.get(_CODE)
        if leading():
            _leader_panel(code)
        elif code:
            _student_panel(code)
        else:
            st.text_input("Class code", key=CODE_BOX, on_change=_typed_code, max_chars=12,
                          placeholder="ABCD", help="The code on the projector: follow the instructor's view.")
        if not st.session_state.get(_INSTRUCTOR):  # last: a student rarely needs it
            st.text_input("Instructor key", type="password", key=KEY_BOX, on_change=_check_key,
                          help="Only for the instructor: the key the server was launched with.")
            if st.session_state.pop(_KEY_BAD, False):
                st.error("That is not the instructor key.")


def _leader_panel(code: str) -> None:
    # large for the back row in presenter mode; a heading, not HTML (no text here is ever rendered as HTML)
    (st.header if presenter.presenter_on() else st.subheader)(f"Class code: {code}", anchor=False)
    base = (getattr(st.context, "url", None) or "").split("?")[0].rstrip("/")
    if st.session_state.get(_PAGE):  # on /rope: the app's root is one level up
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
            _publish(force=False)


@st.fragment(run_every=STATUS_POLL_S)
def _leader_status(code: str) -> None:
    with guard("the class"):
        _leader_status_body(code)


def _leader_status_body(code: str) -> None:
    view = store().get(code)
    if view is None:
        return
    following, present = store().counts(code)
    st.caption(f"**{following}** student{' follows' if following == 1 else 's follow'}"
               + (f" · {present - following} exploring on their own" if present > following else ""))
    q = view.question
    if q is None:
        return
    counts = store().tally(code, q.qid)
    st.markdown(f"**Question {q.qid}:** {chart.literal(q.prompt)}")
    fig = answer_histogram(q.choices, counts, q.answer.get("correct") if q.revealed else None)
    chart.show(fig, key="class_histogram", name=f"class_{code}_q{q.qid}", exports=False)
    if q.revealed:
        st.caption(chart.literal(_model_answer_text(q.choices, q.answer)))
        if st.button("Close the question", key="class_close"):
            store().close_question(code, tab_id())
            st.rerun(scope="fragment")
    elif st.button("Reveal", key="class_reveal", type="primary",
                   help="Show the class's answers beside the model's own answer, on every student's screen."):
        store().reveal(code, tab_id(), q.qid)
        st.rerun(scope="fragment")


def _model_answer_text(choices, answer: dict) -> str:
    correct = answer.get("correct") or []
    if not correct:
        return "No model answer for a free question: discuss it."
    names = ", ".join(f"“{choices[i]}”" for i in correct)
    return f"The model's own answer: {names}. {answer.get('why', '')}"


# -- asking ----------------------------------------------------------------------------------------------------
FREE = "Free question"


def _presets_here() -> dict[str, Any]:
    """Preset questions about the page the leader shows: label -> a function computing the Preset live."""
    page = st.session_state.get(_PAGE, "")
    out: dict[str, Any] = {}
    if page == "":
        out["Which word does this head attend to most? (Start)"] = _start_preset
    if page == "rope":
        out["Which RoPE method keeps every angle in range? (Context extension)"] = _rope_preset
    return out


def _start_preset() -> Preset:
    from viz_model.ui.models import is_folder_model
    from viz_model.ui.sidebar import current_model
    from viz_model.ui.widgets import FOLDER_VIEW_TOKENS, encode_text, uses_bos

    ckpt = current_model()
    cfg = ckpt.model.config
    text = st.session_state.get("start_text", "The cat sat on the mat")
    bos = bool(st.session_state.get("start_bos", uses_bos(ckpt)))
    limit = min(cfg.max_len, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt) else cfg.max_len
    enc = encode_text(ckpt, text, max_len=limit, bos=bos, notice=False)
    if len(enc.ids) < 2:
        raise ClassError("Type a sentence of at least two tokens on the Start page first.")
    layer = min(int(st.session_state.get("start_layer", 0)), cfg.n_layers - 1)
    head = min(int(st.session_state.get("start_head", 0)), cfg.n_heads - 1)
    return attention_question(enc.tokens, attention_row(ckpt.model, enc.ids, layer, head), layer, head)


def _rope_preset() -> Preset:
    from viz_model.ui.sidebar import current_model

    cfg = current_model().model.config
    default_len = cfg.max_len if cfg.pos_encoding == "rope" else 4096
    ss = st.session_state
    L = int(ss.get("rope_ext_L", min(default_len, 131072)))
    Lp = int(ss.get("rope_ext_Lp", min(8 * default_len, 1048576)))
    extra = {k: float(ss[key]) for k, key in (("beta_fast", "rope_ext_bf"), ("beta_slow", "rope_ext_bs"),
                                               ("low_freq_factor", "rope_ext_lo"), ("high_freq_factor", "rope_ext_hi"))
             if key in ss}
    try:
        return rope_question(int(ss.get("rope_ext_dk", 128)), float(ss.get("rope_ext_base", 10000.0)), L, Lp, extra)
    except ValueError as e:
        raise ClassError(str(e)) from e


def _ask_form(code: str) -> None:
    presets = _presets_here()
    kind = st.selectbox("Ask the class", [*presets, FREE], key="class_ask_kind",
                        help="A prediction about the view on screen; the model's own answer is computed live.")
    prompt, choices = "", []
    if kind == FREE:
        prompt = st.text_input("Question", key="class_ask_prompt", max_chars=MAX_PROMPT_CHARS)
        lines = st.text_area("Choices, one per line", key="class_ask_choices", height=100)
        choices = [c for c in (lines or "").splitlines() if c.strip()][:MAX_CHOICES]
    st.button("Ask", key="class_ask", on_click=_ask, args=(code, presets.get(kind), prompt, choices),
              help="Replaces the open question. Students answer once, anonymously.")


def _ask(code: str, preset_fn, prompt: str, choices: list[str]) -> None:
    """on_click of Ask: the preset's question and the model's own answer, computed now on the view on screen."""
    try:
        preset = preset_fn() if preset_fn is not None else Preset("free", prompt, choices, {})
        store().ask(code, tab_id(), preset.kind, preset.prompt, preset.choices, preset.answer)
    except ClassError as e:
        st.session_state[_ERROR] = str(e)


# -- students ----------------------------------------------------------------------------------------------------
def _student_panel(code: str) -> None:
    st.markdown(f"**Class {code}**")
    st.toggle("Follow the instructor", key=FOLLOW_KEY, on_change=_follow_changed,
              help="Your page and settings move with the instructor's. Changing a setting yourself stops it.")
    if not st.session_state.get(FOLLOW_KEY):
        st.caption("You are exploring on your own ·")
        st.button("Catch up", key="class_catch_up", on_click=_catch_up, type="primary",
                  help="Follow the instructor again: their page and settings now.")
        _student_poll_slow(code)
    else:
        _student_poll(code)
    st.button("Leave the class", key="class_leave", on_click=_leave)


def _student_body(code: str, in_fragment: bool = True) -> None:
    view = store().get(code)
    if view is None:
        _leave(gone=code)
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


def _question(code: str, view: ClassView) -> None:
    q = view.question
    if q is None:
        return
    st.markdown(f"**Question {q.qid}:** {chart.literal(q.prompt)}")
    if q.revealed:
        counts = store().tally(code, q.qid)
        correct = set(q.answer.get("correct") or [])
        st.markdown("  \n".join(f"{'✓ ' if i in correct else ''}{chart.literal(c)} — {n}"
                                for i, (c, n) in enumerate(zip(q.choices, counts))))
        st.caption(chart.literal(_model_answer_text(q.choices, q.answer)))
        return
    if store().has_answered(code, q.qid, student_id()):
        st.caption("Your answer is in (anonymous). Wait for the reveal.")
        return
    pick = st.radio("Your answer", list(range(len(q.choices))), index=None, key=f"class_pick_{q.qid}",
                    format_func=lambda i: chart.literal(q.choices[i]))  # a typed choice shows as typed
    if st.button("Answer", key=f"class_answer_{q.qid}", disabled=pick is None):
        store().answer(code, q.qid, student_id(), int(pick))
        st.rerun(scope="fragment")
