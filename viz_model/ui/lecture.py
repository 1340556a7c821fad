"""A student steps through a lecture alone (#39): the URL carries ?lecture=NAME&step=N, so every step is a link and a
reload keeps the place. app.py draws the panel above every page: the step's narrative, Back / Next, the step's view
again, and its question. Opening a step takes its page with its settings (the step's `params` are the page's share
link: the bound widgets take them from the URL, as they do when a link is opened)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from viz_model import checkpoint
from viz_model.lectures import PAGE_PARAMS, Lecture, Step, builtin_lectures, model_name
from viz_model.lessons import encoder_decoder as ed_lesson
from viz_model.lessons import lecture_numbers as numbers
from viz_model.runtime.class_mode import FOLLOWING_TEXT
from viz_model.ui import handout, lecture_record, share
from viz_model.ui.cache import cached, model_id
from viz_model.ui.errors import guard
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY, current_model
from viz_model.ui.widgets import scroll_to_chart

LECTURE, STEP = "lecture", "step"  # the URL parameters of a lecture's place
_AT = "_lecture_at"  # (name, step) whose view this session last opened
HOME = {"start": ""}  # the lectures name the Start page "start"; as the default page its url_path is ""
_pages: dict[str, Any] = {}  # url_path -> st.Page, given by app.py


def lectures() -> dict[str, Lecture]:
    """The built-in lectures, read once per server, read-only (tests/test_lectures.py checks that each parses), then
    the instructor's folder lectures and this tab's own (#39, 5: ui.lecture_record)."""
    built = cached("lectures", (), builtin_lectures)
    return {**built, **lecture_record.offered(built)}


def sidebar_links(pages: dict[str, Any], instructor: bool = True) -> None:
    """ "Lectures" atop the sidebar (`pages`: app.py's, by url_path); buttons: a link would be marked the open page.
    instructor: this tab may see the folder lecture files that are not offered (no class mode, or leading one)."""
    _pages.update(pages)
    st.markdown("**Lectures**")
    for name, lec in lectures().items():
        if st.button(lec.title, key=f"lecture_open_{name}", icon=":material/school:", type="tertiary"):
            go(name, lec, 1)
    lecture_record.sidebar(pages, cached("lectures", (), builtin_lectures), instructor)  # #39, 5: "Record a lecture"


def start_link() -> None:
    """The Start page's way in (#39, 7): one line beside exploring on one's own."""
    for name, lec in list(lectures().items())[:1]:
        st.page_link(_page("start"), label=f"Take the guided lecture: {lec.title} ({len(lec.steps)} steps), or "
                     "explore any page from the sidebar", icon=":material/school:", query_params={LECTURE: name})


def _page(page: str) -> Any:
    return _pages.get(HOME.get(page, page), "app_pages/start.py")


def place() -> tuple[str, Lecture, int] | str | None:
    """Where the URL is in a lecture: (name, lecture, step from 1), a sentence saying why it is not a place (an
    unknown name, a step out of range), or None when no lecture is open."""
    name, raw = st.query_params.get(LECTURE), st.query_params.get(STEP) or "1"
    if name is None or (lec := lectures().get(name)) is None:
        return name and (lecture_record.elsewhere(name)  # another tab's own lecture (#39, 5)
                         or f"There is no lecture “{name[:40]}”; the lectures are: {', '.join(lectures()) or 'none'}.")
    n = int(raw) if raw.isdigit() else 0
    if not 1 <= n <= len(lec.steps):
        return f"“{lec.title}” has steps 1 to {len(lec.steps)}; there is no step {raw[:10]!r}."
    return name, lec, n


def go(name: str, lec: Lecture, n: int) -> None:
    """Open step n: its page, with its settings. A setting the student changed on that page is forgotten first
    (share.URL keeps it per session, and a kept value would win over the link's)."""
    step = lec.steps[n - 1]
    if step.page is None:  # a narrative-only step: the student stays on the page they are on
        st.session_state[_AT] = (name, n)
        st.query_params.update({LECTURE: name, STEP: str(n)})
        st.rerun()
    prefixes = PAGE_PARAMS[step.page]
    kept_tabs = st.session_state.get(share._TAB_KEPT) or {}  # share.tabs reopens a kept tab the link does not name
    for kept in (st.session_state, kept_tabs):
        keys = [k for k in kept if isinstance(k, str) and (k.startswith(prefixes) or k in step.params)]
        defaults = _drawn_defaults([k for k in keys if k not in step.params]) if kept is st.session_state else {}
        for key in keys:
            if key in defaults:
                kept[key] = defaults[key]
            else:
                del kept[key]
    st.session_state[_AT] = (name, n)
    st.switch_page(_page(step.page), query_params=_unbind({**_linked(step.params), LECTURE: name, STEP: str(n)}))


def _linked(params: dict[str, Any]) -> dict[str, Any]:
    """A step's params as its link carries them: the sidebar's model by its picker's label (a selectbox's URL value;
    the lecture names it by its key, "english")."""
    titles = {e.key: e.title for e in available_models()}
    model = params.get("model_key")
    return {**params, "model_key": titles[model]} if model in titles else params


def _drawn_defaults(keys: list[str]) -> dict[str, Any]:
    """{key: its widget's default} for the link-bound widgets of the run before (a step after a step on the same
    page). Forgetting such a value is not enough: the browser keeps the widget's old value and sends it back with a
    later rerun (the step's view would drift back to the student's setting, and a chart would disagree with its
    control). A value set in st.session_state is one Streamlit sends to the browser. The default is the widget's own
    (its deserializer of no value, as Streamlit computes it); Streamlit's internals: any surprise forgets as before."""
    try:
        ctx = get_script_run_ctx()
        state = ctx.session_state._state
        with ctx.session_state.query_params() as qp:
            bound = set(qp._bindings_by_param)
        metadata = state._new_widget_state.widget_metadata
        found = {k: metadata.get(state._key_id_mapper.get_id_from_key(k, "")) for k in keys if k in bound}
        return {k: meta.deserializer(None) for k, meta in found.items() if meta is not None}
    except (AttributeError, KeyError, TypeError, ValueError):
        return {}


def _unbind(names: dict[str, Any]) -> dict[str, Any]:
    """Streamlit refuses a page switch that sets a parameter still bound to a widget of the run before (a step after
    a step on the same page): those bindings are dropped first; each widget binds again when it is drawn."""
    with get_script_run_ctx().session_state.query_params() as qp:
        for name in names:
            binding = qp.get_binding_for_param(name)
            if binding is not None:
                qp.unbind_widget(binding.widget_id)
    return names


def leave() -> None:
    """on_click of "Leave": the place leaves the URL, by hand (buttons hold it, so no bind="query-params" can)."""
    for name in [n for n in (LECTURE, STEP) if n in st.query_params]:
        del st.query_params[name]


def panel(page_url: str, first_run: bool, following: bool = False, leader_tools: Callable | None = None) -> None:
    """Above the page, in a slot that is always there (share.in_slot: the page's bound widgets keep their place with
    or without a lecture). A step opened from elsewhere takes its page and settings; a session's first run on the
    step's own page keeps the URL's settings (a reload after exploring). In class mode (app.py passes
    ui.class_mode.in_lecture()): a follower's panel is read-only, the class takes the leader's place and view; a
    leader's has `leader_tools` (ask the class, the class summary) in place of the student's own question."""
    with st.container(), guard("the lecture"):
        where = place()
        if not where:  # no lecture open (or an empty ?lecture=)
            return
        if isinstance(where, str):
            st.warning(where)
            return st.button("Leave the lecture", key="lecture_leave", on_click=leave)
        name, lec, n = where
        if any(s.page == "encoder-decoder" for s in lec.steps[n - 1:]):
            _warm_translator()  # its training replay, before the class gets there
        page = lec.steps[n - 1].page
        on_page = page is None or HOME.get(page, page) == page_url
        if not following and (not on_page or (st.session_state.get(_AT) != (name, n) and not first_run)):
            go(name, lec, n)
        st.session_state[_AT] = (name, n)
        scroll_to_chart(getattr(lec.steps[n - 1], "chart", None), (name, n))  # #39: the step's chart, once a step
        with st.container(border=True):
            _narrative(lec, n)
            if following:
                return st.caption(FOLLOWING_TEXT)
            _buttons(name, lec, n)
            handout.button(name, lec)  # #39 (8): the lecture as one offline HTML file
            (leader_tools or _question_of)(name, lec, n)


_WARMING = threading.Event()  # set once this process has started replaying the shipped translator's draws


def _warm_translator() -> None:
    """A lecture that will visit the Encoder-decoder page replays the shipped translator's training draws now, in a
    thread (about 5 s on 2 cores, once per process; lessons.encoder_decoder.warm_membership): that step then opens at
    once instead of under the replay's spinner (bench/lecture_present.py: 5.0 s, the one step over the 1 s bar)."""
    if _WARMING.is_set():
        return
    _WARMING.set()
    entry = next((e for e in available_models((checkpoint.SEQ2SEQ,)) if e.key == ed_lesson.TRANSLATOR and e.path), None)
    if entry is not None:
        threading.Thread(target=_warm, args=(entry.path,), name="warm-translator", daemon=True).start()


def _warm(path: str) -> None:
    try:
        ed_lesson.warm_membership(checkpoint.read_metadata(path)["metadata"])
    except (OSError, ValueError):  # an unreadable file: the page says so when it opens, and replays then
        pass


def _question_of(name: str, lec: Lecture, n: int) -> None:
    _question(name, n)


def _narrative(lec: Lecture, n: int) -> None:
    step = lec.steps[n - 1]
    values, notes = _numbers(lec, step)
    st.caption(f"{lec.title} · step {n} of {len(lec.steps)}")
    st.markdown(f"#### {step.title}")
    st.markdown(numbers.fill(step.text, values))  # the core refuses raw HTML in a lecture file
    if step.look:
        st.caption(f"Look at: {numbers.fill(step.look, values)}")
    for note in notes:
        st.caption(note)


def _numbers(lec: Lecture, step: Step) -> tuple[dict[str, str], list[str]]:
    """The step's {{placeholders}} computed on its model (its view's model_key: the lecture's), once per server."""
    if not step.numbers:
        return {}, []
    named = step.params.get("model_key") or lec.model  # a key, or a picker's label from a copied link
    key = named and (model_name(named) or named)
    ckpt = load_model(key, st.session_state.get(DEVICE_KEY, "auto")) if key else current_model()
    return cached("lecture_numbers", (model_id(ckpt), step.numbers), lambda: numbers.step_values(ckpt, step.numbers),
                  model_pass=True)


def _buttons(name: str, lec: Lecture, n: int) -> None:
    row = st.container(horizontal=True)  # one row that wraps on a phone, not four stacked full-width buttons
    # the arrow keys too (Streamlit's shortcut: not while a text box, select or radio has the focus)
    if row.button("Back", key="lecture_back", disabled=n == 1, icon=":material/arrow_back:", shortcut="Left"):
        go(name, lec, n - 1)
    if row.button("Next", key="lecture_next", disabled=n == len(lec.steps), type="primary",
                  icon=":material/arrow_forward:", shortcut="Right"):
        go(name, lec, n + 1)
    if row.button("Back to this step's view", key="lecture_view", help="This step's own settings again."):
        go(name, lec, n)
    row.button("Leave the lecture", key="lecture_leave", on_click=leave)


def _question(name: str, n: int) -> None:
    """A question asks first: the student picks, presses Check, then sees the answer and why. A page's preset
    (`ask: preset NAME`) is asked on the view on screen and answered by the model live (ui.presets.ask_alone)."""
    step = lectures()[name].steps[n - 1]
    q, key = step.question, f"lecture_q_{name}_{n}"
    if q is None:
        return
    if q.preset:
        from viz_model.ui import presets

        return presets.ask_alone(key, q.preset)  # on the view on screen (a widget not drawn yet: the link's value)
    pick = st.radio(q.prompt, q.choices, index=None, key=key, on_change=st.session_state.pop,
                    args=(f"_{key}_checked", None))  # another pick asks again
    if st.button("Check", key=f"{key}_check", disabled=pick is None):
        st.session_state[f"_{key}_checked"] = True
    if pick is not None and st.session_state.get(f"_{key}_checked"):
        right = q.choices.index(pick) in q.correct
        answer = " or ".join(f"“{q.choices[i]}”" for i in q.correct)
        (st.success if right else st.info)(("Right: " if right else "Not quite: the answer is ") + answer + "."
                                           + (f" {q.why}" if q.why else ""))
