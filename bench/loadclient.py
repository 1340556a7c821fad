"""A protocol-level Streamlit client: one simulated student without a browser.

It speaks the same websocket protocol as Streamlit's frontend (ws://host:port/_stcore/stream, binary protobufs
from the `streamlit.proto` package), so the server does exactly the work a real tab causes — script run,
Plotly/Arrow serialisation, websocket writes — while the client itself costs a few MB and almost no CPU.

What the frontend does, and what this client copies (Streamlit 1.67 sources named):
- Connect with subprotocol "streamlit" (web/server/starlette/starlette_websocket.py `_parse_subprotocols`).
- Every run is asked for with BackMsg.rerun_script = ClientState(query_string, widget_states, page_script_hash,
  page_name, cached_message_hashes) (runtime/app_session.py `request_rerun`). The first run names the page by
  its URL path (page_name); a page switch sends the target page's page_script_hash from the Navigation message.
- The server answers with new_session, navigation, page_info_changed (the URL query string, echoed back on the
  next rerun like the browser's address bar), deltas (delta_path in metadata) and finally script_finished.
- Widget states are keyed by element id. A keyed widget's id ends in "-<key>" (elements/lib/utils.py,
  runtime/state/common.py `user_key_from_element_id`), and is re-read from every run's deltas.
- Message cache: a big new_element delta whose hash the client lists in cached_message_hashes is replaced by a
  ForwardMsg with only ref_hash (runtime/scriptrunner_utils/script_run_context.py). Like the browser, we keep
  cacheable messages by hash, advertise them, and resolve references (cache=False turns this off).

    s = ProtocolSession("http://127.0.0.1:8501")
    await s.connect("start")             # first run of /start
    await s.set("start_layer", 1)         # change a widget -> RunResult (seconds, status, exceptions, ...)
    await s.open("rope")                  # switch page like a sidebar click
    await s.close()
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

FINISHED = ForwardMsg.ScriptFinishedStatus.Name
SUCCESS = ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY")
WIDGET_KINDS = {"selectbox", "radio", "slider", "text_input", "text_area", "checkbox", "number_input", "button",
                "button_group", "multiselect", "color_picker", "data_editor"}


class LoadClientError(RuntimeError):
    """The server did not answer a rerun as the protocol says (timeout, closed socket, compile error)."""


@dataclass
class Widget:
    key: str
    kind: str        # the Element oneof name: selectbox, slider, text_input, ...
    id: str          # element id, the WidgetState id
    proto: Any       # the element's sub-message (options, min, max, step, ...)
    fragment_id: str = ""   # set when the widget lives in an st.fragment: changing it reruns only that fragment


@dataclass
class RunResult:
    seconds: float                         # BackMsg sent -> script_finished received
    status: str                            # FINISHED_SUCCESSFULLY, ...
    n_msgs: int
    n_bytes: int                           # bytes received for this run
    n_refs: int                            # deltas answered from the message cache
    exceptions: list[str] = field(default_factory=list)   # st.exception elements (tracebacks)
    errors: list[str] = field(default_factory=list)       # st.error alerts except "✗ ..." claims (guard errors)
    charts: list[dict] = field(default_factory=list)      # decoded Plotly specs drawn in this run

    @property
    def ok(self) -> bool:
        return self.status in SUCCESS and not self.exceptions and not self.errors


def ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://", 1).rstrip("/") + "/_stcore/stream"


def fetch_cookie(base_url: str, timeout: float = 10) -> str | None:
    """GET the health endpoint like the browser's first request; return the Cookie header a proxy set, if any
    (HAProxy's sticky-session cookie, so this client's websocket goes to the same backend as its page load)."""
    with urllib.request.urlopen(base_url.rstrip("/") + "/_stcore/health", timeout=timeout) as r:
        cookies = r.headers.get_all("Set-Cookie") or []
    return "; ".join(c.split(";", 1)[0] for c in cookies) or None


class ProtocolSession:
    def __init__(self, base_url: str, *, cache: bool = True, timeout: float = 120, sticky: bool = False):
        self.base_url, self.cache, self.timeout, self.sticky = base_url, cache, timeout, sticky
        self.ws = None
        self.widgets: dict[str, Widget] = {}      # user key -> widget, from the latest run
        self.pages: dict[str, str] = {}           # url path -> page_script_hash (from Navigation)
        self.page_hash = ""                       # the page shown now
        self.query_string = ""
        self.states: dict[str, WidgetState] = {}  # user key -> the value this "browser" holds
        self._cache: dict[str, ForwardMsg] = {}   # hash -> cacheable ForwardMsg
        self.runs = 0
        self.default_page = ""

    # -- connection -------------------------------------------------------------------------------------
    async def connect(self, page: str = "") -> RunResult:
        headers = {}
        if self.sticky:
            cookie = await asyncio.to_thread(fetch_cookie, self.base_url)
            if cookie:
                headers["Cookie"] = cookie
        self.ws = await websockets.connect(ws_url(self.base_url), subprotocols=["streamlit"], max_size=None,
                                           ping_interval=None, open_timeout=self.timeout,
                                           additional_headers=headers or None)
        return await self.rerun(page_name=page)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    # -- actions ----------------------------------------------------------------------------------------
    async def open(self, url_path: str) -> RunResult:
        """Switch page as the sidebar link does: the target's page_script_hash, no widget states."""
        if url_path == self.default_page and url_path not in self.pages:
            url_path = ""
        if url_path not in self.pages:
            raise LoadClientError(f"no page {url_path!r}; the server lists {sorted(self.pages)}")
        self.states.clear()
        self.query_string = ""
        return await self.rerun(page_hash=self.pages[url_path])

    async def set(self, key: str, value: Any, rng: random.Random | None = None) -> RunResult:
        """Give widget `key` a value and rerun. value may be a literal, a list (pick one at random) or
        "random" (any option / any step of the range), like a student fiddling with it."""
        w = self.widgets.get(key)
        if w is None:
            raise LoadClientError(f"no widget with key {key!r} on this page; have {sorted(self.widgets)}")
        self.states[key] = widget_state(w, value, rng or random.Random())
        return await self.rerun(fragment_id=w.fragment_id)

    async def click(self, key: str) -> RunResult:
        w = self.widgets.get(key)
        if w is None:
            raise LoadClientError(f"no button with key {key!r}")
        st_ = WidgetState(id=w.id, trigger_value=True)
        return await self.rerun(extra=[st_], fragment_id=w.fragment_id)

    # -- the protocol -----------------------------------------------------------------------------------
    def _back_msg(self, page_hash: str | None, page_name: str, extra: list[WidgetState], fragment_id: str) -> bytes:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.fragment_id = fragment_id
        cs.query_string = self.query_string
        cs.page_script_hash = self.page_hash if page_hash is None else page_hash
        cs.page_name = page_name
        for key, state in self.states.items():
            w = self.widgets.get(key)
            if w is not None:           # re-point at the id of this run (ids change when widget params do)
                state.id = w.id
                cs.widget_states.widgets.append(state)
        cs.widget_states.widgets.extend(extra)
        if self.cache:
            cs.cached_message_hashes.extend(self._cache)
        cs.context_info.timezone = "UTC"
        cs.context_info.locale = "en-US"
        return msg.SerializeToString()

    async def rerun(self, *, page_hash: str | None = None, page_name: str = "",
                    extra: list[WidgetState] | None = None, fragment_id: str = "") -> RunResult:
        """One run: a full rerun, or only the fragment `fragment_id` (what the browser does for a widget that
        lives inside an st.fragment)."""
        if self.ws is None:
            raise LoadClientError("not connected")
        t0 = time.perf_counter()
        await self.ws.send(self._back_msg(page_hash, page_name, extra or [], fragment_id))
        return await self._read_run(t0, t0 + self.timeout)

    async def pushed_run(self, timeout: float) -> RunResult | None:
        """A run the server started with no message from us (runtime.class_push reruns a student's class fragment
        when the class moves, and that run may switch the page), read to its end; None when none starts within
        `timeout` s. Its `seconds` count from its first message."""
        if self.ws is None:
            raise LoadClientError("not connected")
        end = time.perf_counter() + timeout
        while True:  # messages between runs (a status, a URL echo) are not a run's start
            try:
                first = await asyncio.wait_for(self.ws.recv(), max(0.0, end - time.perf_counter()))
            except TimeoutError:
                return None
            except websockets.ConnectionClosed as e:
                raise LoadClientError(f"websocket closed: {e}") from e
            fm = ForwardMsg()
            fm.ParseFromString(first)
            if fm.WhichOneof("type") == "new_session":
                break
            if fm.WhichOneof("type") == "page_info_changed":
                self.query_string = fm.page_info_changed.query_string
        t0 = time.perf_counter()
        return await self._read_run(t0, t0 + self.timeout, first=first)

    async def _read_run(self, t0: float, deadline: float, first: bytes | None = None) -> RunResult:
        res = RunResult(0.0, "", 0, 0, 0)
        widgets: dict[str, Widget] = {}
        started = False
        while True:
            try:
                left = max(0.1, deadline - time.perf_counter())
                raw, first = first or await asyncio.wait_for(self.ws.recv(), left), None
            except TimeoutError as e:
                raise LoadClientError(f"no script_finished within {self.timeout:.0f} s") from e
            except websockets.ConnectionClosed as e:
                raise LoadClientError(f"websocket closed: {e}") from e
            res.n_msgs += 1
            res.n_bytes += len(raw)
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "ref_hash":
                cached = self._cache.get(fm.ref_hash)
                if cached is None:
                    raise LoadClientError(f"server referenced a message we never cached: {fm.ref_hash}")
                res.n_refs += 1
                meta = fm.metadata
                fm = ForwardMsg()
                fm.CopyFrom(cached)
                fm.metadata.CopyFrom(meta)
                kind = "delta"
            elif self.cache and fm.metadata.cacheable and fm.hash:
                self._cache[fm.hash] = fm
            if kind == "new_session":
                started = True
                self.page_hash = fm.new_session.page_script_hash
            elif kind == "navigation":
                for p in fm.navigation.app_pages:
                    self.pages[p.url_pathname] = p.page_script_hash
                    if p.is_default:
                        self.default_page = p.url_pathname or self.default_page
                if fm.navigation.page_script_hash:
                    self.page_hash = fm.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query_string = fm.page_info_changed.query_string
            elif kind == "delta":
                self._read_delta(fm, res, widgets)
            elif kind == "script_finished" and started:
                status = FINISHED(fm.script_finished)
                if status == "FINISHED_EARLY_FOR_RERUN":
                    continue          # a newer run replaced it; keep waiting for that one
                res.status = status
                break
        res.seconds = time.perf_counter() - t0
        self.runs += 1
        if res.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY":  # only the fragment's elements were sent
            self.widgets = {**self.widgets, **widgets}
        else:
            self.widgets = widgets
            self.states = {k: v for k, v in self.states.items() if k in widgets}
        if res.status == "FINISHED_WITH_COMPILE_ERROR":
            raise LoadClientError("the script did not compile")
        return res

    @staticmethod
    def _read_delta(fm: ForwardMsg, res: RunResult, widgets: dict[str, Widget]) -> None:
        if fm.delta.WhichOneof("type") == "add_block":
            # st.tabs(key=..., on_change="rerun") is a widget too: its state is the open tab's label
            tabs = fm.delta.add_block.tab_container if fm.delta.add_block.HasField("tab_container") else None
            if tabs is not None and tabs.id.startswith("$$ID"):
                key = tabs.id.split("-", maxsplit=2)[-1]
                widgets[key] = Widget(key, "tabs", tabs.id, tabs, fm.delta.fragment_id)
            return
        if fm.delta.WhichOneof("type") != "new_element":
            return
        el = fm.delta.new_element
        kind = el.WhichOneof("type")
        if kind == "exception":
            res.exceptions.append(f"{el.exception.type}: {el.exception.message}")
        elif kind == "alert" and el.alert.format == Alert.ERROR and not el.alert.body.startswith("✗"):
            res.errors.append(el.alert.body)   # a "✗ claim" is page content (a shown failure), not an error
        elif kind == "plotly_chart":
            try:
                res.charts.append(json.loads(el.plotly_chart.spec))
            except ValueError:
                res.charts.append({})
        if kind in WIDGET_KINDS:
            sub = getattr(el, kind)
            key = sub.id.split("-", maxsplit=2)[-1] if sub.id.startswith("$$ID") else None
            if key and key != "None":
                widgets[key] = Widget(key, kind, sub.id, sub, fm.delta.fragment_id)


def _pick(options: list, value: Any, rng: random.Random):
    if isinstance(value, list | tuple):
        value = rng.choice(list(value))
    if value == "random":
        return rng.choice(options)
    return value


def widget_state(w: Widget, value: Any, rng: random.Random) -> WidgetState:
    """The WidgetState the frontend would send for `value` (Streamlit 1.67 value types per widget)."""
    s = WidgetState(id=w.id)
    p = w.proto
    if w.kind in ("selectbox", "radio"):
        opts = list(p.options)
        v = _pick(opts, value, rng)
        v = str(v) if str(v) in opts else (opts[v % len(opts)] if isinstance(v, int) and opts else str(v))
        s.string_value = v
    elif w.kind == "button_group":
        opts = [o.content for o in p.options]
        v = str(_pick(opts, value, rng))
        s.string_array_value.data.append(v if v in opts else opts[int(v) % len(opts)])
    elif w.kind == "multiselect":
        vals = value if isinstance(value, list | tuple) else [value]
        s.string_array_value.data.extend(str(v) for v in vals)
    elif w.kind == "slider" and p.type == p.SELECT_SLIDER:
        opts = list(p.options)
        v = str(_pick(opts, value, rng))
        s.string_array_value.data.append(v if v in opts else opts[0])
    elif w.kind == "slider":
        steps = int(round((p.max - p.min) / p.step)) if p.step else 0
        grid = [p.min + i * p.step for i in range(steps + 1)] if 0 < steps <= 10_000 else [p.min, p.max]
        v = float(_pick(grid, value, rng))
        s.double_array_value.data.append(min(max(v, p.min), p.max))
    elif w.kind == "number_input":
        s.double_value = float(_pick([p.min, p.max], value, rng))
    elif w.kind in ("checkbox",):
        v = _pick([True, False], value, rng)
        s.bool_value = (not bool(w.proto.value)) if v == "toggle" else bool(v)
    elif w.kind in ("text_input", "text_area", "color_picker"):
        s.string_value = str(_pick([], value, rng) if value != "random" else value)
    elif w.kind == "button":
        s.trigger_value = True
    elif w.kind == "tabs":   # the label of the tab to open (the client cannot list the labels: give them)
        s.string_value = str(_pick([], value, rng))
    else:
        raise LoadClientError(f"widget kind {w.kind!r} is not supported by the load client")
    return s
