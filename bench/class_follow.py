"""Class-follow bench (#28): how far behind the instructor are the students who follow, and what does following
cost the students who do not?

Reuses bench/class_load.py's machinery (servers in their own process groups, deploy/haproxy.cfg with this run's
ports, percentiles) and bench/loadclient.py's protocol-level clients. One class per scenario:
  - the leader: a protocol client that enters the instructor key, leads, and every CHANGE_EVERY_S moves the Start
    page's Layer or Head (a fragment rerun, as the picker does); its tab's own publish timer (the 0.5 s fragment
    the server announces with an auto_rerun message) is fired like the browser's timer;
  - K followers arriving by /?class=CODE: protocol clients that fire their announced follow timer (1 s) like the
    browser does; a follower's lag is the time from the leader's change being sent to the end of the follower's
    run whose attention chart carries the new "Layer l · head h" title;
  - one real headless Chromium follower (Playwright, /usr/bin/chromium): lag to its drawn chart's new title;
  - OTHERS students not in the class, moving Layer/Head on the Start page every 3-8 s: their input -> finished
    run latency, beside the same students on the same server with no class running (the baseline).
Scenarios: K = 60 on one process; K = 200 on two processes behind HAProxy (the class store is the one SQLite file
both processes open). Results: bench/results/class_follow.{md,json} (--out names others).
#42: `--store redis` runs a scenario on the Redis class store instead (a redis-server started here, no persistence;
each replica gets its own SQLite file, so only Redis joins them), as a lecture hall on several machines would:
      .venv/bin/python bench/class_follow.py --k 200,200 --replicas 1,2 --store sqlite,redis --out class_follow_hall

Run:  .venv/bin/python bench/class_follow.py                      # both scenarios, --duration 35 s each
      .venv/bin/python bench/class_follow.py --k 60 --replicas 1 --duration 20
Every process started here is killed in `finally`; every loop is bounded in time; traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from class_load import (  # noqa: E402
    CHROMIUM_FLAGS,
    RESULTS,
    Procs,
    _quiet,
    free_port,
    ms,
    pct,
    start_haproxy,
    start_streamlit,
    table,
)
from loadclient import LoadClientError, ProtocolSession  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

KEY = "bench-instructor-key"
CHANGE_EVERY_S = 5.0
OTHERS = 5
THINK_S = (3.0, 8.0)
LEADER_TICK_S, FOLLOW_TICK_S = 0.5, 1.0   # ui/class_mode.py's LEAD_POLL_S and FOLLOW_POLL_S (read from auto_rerun)
# With pushes (runtime.class_push) a follower's fragment announces no timer: the server runs it when the class moves.
# `follow_runs` takes what the server pushes, and fires a timer where one is announced, as the browser does.
SHARED_DB = ""   # the SQLite class store every process of a sqlite scenario opens (set in main)
TITLE = re.compile(r"Layer (\d+) · head (\d+)", re.I)


class TimedSession(ProtocolSession):
    """A protocol client that also reads the server's auto_rerun messages (an st.fragment(run_every=...)): the
    fragment to fire for each interval, latest announcement wins, as the browser's timers do."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.timers: dict[float, str] = {}

    def _wrap(self) -> None:
        ws, timers = self.ws, self.timers
        recv = ws.recv

        async def peek(*a, **kw):
            raw = await recv(*a, **kw)
            if isinstance(raw, bytes) and len(raw) < 400:  # auto_rerun messages are tiny; skip the charts
                fm = ForwardMsg()
                with _quiet():
                    fm.ParseFromString(raw)
                    if fm.WhichOneof("type") == "auto_rerun":
                        timers[round(fm.auto_rerun.interval, 3)] = fm.auto_rerun.fragment_id
            return raw

        ws.recv = peek

    async def rerun(self, *, fragment_id: str = "", **kw):
        """A full run announces the timers of every fragment it draws: a browser drops the ones it no longer draws
        (a follower that stopped following has the slow status timer only); a fragment's id can change too."""
        if not fragment_id:
            self.timers.clear()
        return await super().rerun(fragment_id=fragment_id, **kw)


async def open_session(url: str, query: str = "", sticky: bool = False, page: str = "") -> TimedSession:
    """Connect, wrapping the websocket's recv before the first run (the first run announces the timers)."""
    import websockets
    from loadclient import fetch_cookie, ws_url

    s = TimedSession(url, sticky=sticky, timeout=120)
    s.query_string = query
    headers = {}
    if sticky:
        cookie = await asyncio.to_thread(fetch_cookie, url)
        if cookie:
            headers["Cookie"] = cookie
    s.ws = await websockets.connect(ws_url(url), subprotocols=["streamlit"], max_size=None, ping_interval=None,
                                    open_timeout=120, additional_headers=headers or None)
    s._wrap()
    await s.rerun(page_name=page)
    return s


def chart_title(res) -> tuple[int, int] | None:
    for spec in res.charts:
        title = ((spec.get("layout") or {}).get("title") or {}).get("text") or ""
        m = TITLE.search(title)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


@dataclass
class Change:
    at: float                    # time.monotonic() when the leader's input was sent
    view: tuple[int, int]


@dataclass
class Run:
    changes: list[Change] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    browser_lags: list[float] = field(default_factory=list)
    missed: int = 0
    browser_missed: int = 0
    notes: list[str] = field(default_factory=list)
    other: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    follower_ticks: int = 0
    follower_pushes: int = 0     # runs the server started for a follower (runtime.class_push)


async def leader(url: str, run: Run, t_end: float, code_box: asyncio.Future, sticky: bool) -> None:
    s = await open_session(url, sticky=sticky)
    try:
        await s.set("class_key", KEY)
        await s.set("class_lead", True)
        m = re.search(r"class=([A-Z]{4})", s.query_string)
        if not m:
            raise LoadClientError(f"no class code in the leader's URL: {s.query_string!r}")
        n_layers = len(s.widgets["start_layer"].proto.options)
        n_heads = len(s.widgets["start_head"].proto.options)
        views = [(la, h) for la in range(n_layers) for h in range(n_heads) if (la, h) != (0, 0)]
        random.Random(0).shuffle(views)
        code_box.set_result((m.group(1), (n_layers, n_heads)))
        await asyncio.sleep(8)  # followers arrive before the first change
        next_change, i, view = time.monotonic(), 0, (0, 0)
        while time.monotonic() < t_end:
            now = time.monotonic()
            if now >= next_change:
                new = views[i % len(views)]
                i += 1
                run.changes.append(Change(time.monotonic(), new))
                if new[0] != view[0]:
                    await s.set("start_layer", new[0])
                if new[1] != view[1]:
                    await s.set("start_head", new[1])
                view = new
                next_change = now + CHANGE_EVERY_S
            frag = s.timers.get(LEADER_TICK_S)
            if frag:
                await s.rerun(fragment_id=frag)
            await asyncio.sleep(max(0.0, LEADER_TICK_S - (time.monotonic() - now)))
    except (LoadClientError, OSError) as e:
        run.errors.append(f"leader: {e}")
    finally:
        await s.close()


async def follower(i: int, url: str, code: str, run: Run, t_end: float, sticky: bool) -> None:
    rng = random.Random(i)
    await asyncio.sleep(rng.uniform(0, 4))
    try:
        s = await open_session(url, f"class={code}", sticky=sticky)
    except (LoadClientError, OSError) as e:
        run.errors.append(f"follower {i}: {e}")
        return
    seen = 0  # index of the next leader change this follower has not reached
    try:
        async for res in follow_runs(s, rng, t_end, run):
            if not res.ok:
                run.errors.append(f"follower {i}: {res.status} {res.exceptions[:1]} {res.errors[:1]}")
            view = chart_title(res)
            done = time.monotonic()
            while seen < len(run.changes) and run.changes[seen].at < done:
                ch = run.changes[seen]
                if view == ch.view:
                    run.lags.append(done - ch.at)
                    seen += 1
                elif seen + 1 < len(run.changes) and run.changes[seen + 1].at < done:
                    run.missed += 1  # overtaken by the next change before this follower showed it
                    seen += 1
                else:
                    break
    except (LoadClientError, OSError) as e:
        run.errors.append(f"follower {i}: {e}")
    finally:
        await s.close()


async def follow_runs(s: TimedSession, rng: random.Random, t_end: float, run=None):
    """Each run a follower's tab gets until t_end, as a browser gets them: the ones the server pushes
    (runtime.class_push), and, where the server announced a follow timer (no push: 1 s), its tick when it is due and
    no push came first. `run.follower_ticks` counts the ticks sent, `run.follower_pushes` the pushed runs."""
    every = min(s.timers, default=None)
    tick = time.monotonic() + rng.uniform(0, every or 0)
    while time.monotonic() < t_end:
        due = min(tick, t_end) if every else t_end
        res = await s.pushed_run(max(0.0, due - time.monotonic()))
        if res is None:
            if time.monotonic() >= t_end or not every:
                return
            tick = time.monotonic() + every
            res = await s.rerun(fragment_id=s.timers[every])
            if run is not None:
                run.follower_ticks += 1
        elif run is not None:
            run.follower_pushes += 1
        yield res


async def other_student(i: int, url: str, t_end: float, out: list[float], errors: list[str], sticky: bool,
                        dims: tuple[int, int]) -> None:
    rng = random.Random(1000 + i)
    try:
        s = await open_session(url, sticky=sticky)
    except (LoadClientError, OSError) as e:
        errors.append(f"student {i}: {e}")
        return
    try:
        while True:
            await asyncio.sleep(rng.uniform(*THINK_S))
            if time.monotonic() >= t_end:
                break
            key, n = rng.choice([("start_layer", dims[0]), ("start_head", dims[1])])
            res = await s.set(key, rng.randrange(n))
            out.append(res.seconds)
            if not res.ok:
                errors.append(f"student {i}: {res.status} {res.errors[:1]}")
    except (LoadClientError, OSError) as e:
        errors.append(f"student {i}: {e}")
    finally:
        await s.close()


async def browser_follower(url: str, code: str, run: Run, t_end: float) -> None:
    from playwright.async_api import async_playwright

    pw = await async_playwright().start()
    try:
        b = await pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_FLAGS)
        page = await (await b.new_context(viewport={"width": 1400, "height": 1000})).new_page()
        await page.goto(f"{url}/?class={code}")
        await page.wait_for_selector('[data-testid="stMain"] .js-plotly-plot', timeout=90_000)
        done = len(run.changes)  # changes made while the page loaded are not this tab's to measure
        while time.monotonic() < t_end:
            if done >= len(run.changes):
                await asyncio.sleep(0.02)
                continue
            done = len(run.changes)
            ch = run.changes[-1]
            want = f"Layer {ch.view[0]} · head {ch.view[1]}"
            try:
                await page.wait_for_function(
                    """(w) => { const el = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
                                return (el?.layout?.title?.text || '').includes(w); }""",
                    arg=want, timeout=CHANGE_EVERY_S * 1000, polling=20)
                run.browser_lags.append(time.monotonic() - ch.at)
            except Exception as e:  # noqa: BLE001 - a change not shown before the next one
                run.browser_missed += 1
                if run.browser_missed == 1:
                    title = await page.evaluate("() => document.querySelector('[data-testid=\"stMain\"] "
                                                ".js-plotly-plot')?.layout?.title?.text")
                    run.notes.append(f"Chromium: {want!r} not shown in {CHANGE_EVERY_S:.0f} s; its chart read "
                                     f"{title!r} at {page.url} ({str(e).splitlines()[0][:80]})")
        await b.close()
    except Exception as e:  # noqa: BLE001
        run.errors.append(f"browser follower: {e}")
    finally:
        await pw.stop()


async def scenario(urls: list[str], k: int, duration: float, browser: bool, sticky: bool) -> dict:
    front = urls[0]
    # warm: every backend has loaded the model and drawn the Start page once
    for u in urls[1:] or urls:
        s = await open_session(u)
        await s.close()
    # baseline: the same students, no class
    base, base_err = [], []
    t_end = time.monotonic() + duration / 2
    dims = (2, 4)
    probe = await open_session(front, sticky=sticky)
    dims = (len(probe.widgets["start_layer"].proto.options), len(probe.widgets["start_head"].proto.options))
    await probe.close()
    await asyncio.gather(*(other_student(i, front, t_end, base, base_err, sticky, dims) for i in range(OTHERS)))
    run = Run()
    t_end = time.monotonic() + duration + 8
    code_box: asyncio.Future = asyncio.get_running_loop().create_future()
    lead_task = asyncio.create_task(leader(front, run, t_end, code_box, sticky))
    code, dims = await asyncio.wait_for(code_box, 120)
    tasks = [asyncio.create_task(follower(i, front, code, run, t_end, sticky)) for i in range(k)]
    tasks += [asyncio.create_task(other_student(i, front, t_end, run.other, run.errors, sticky, dims))
              for i in range(OTHERS)]
    if browser:
        tasks.append(asyncio.create_task(browser_follower(front, code, run, t_end)))
    await asyncio.wait_for(asyncio.gather(lead_task, *tasks, return_exceptions=True), duration + 180)
    return {"k": k, "processes": max(1, len(urls) - 1), "changes": len(run.changes),
            "lag_n": len(run.lags), "lag_p50": pct(run.lags, 50), "lag_p95": pct(run.lags, 95),
            "lag_max": max(run.lags, default=float("nan")),
            "browser_n": len(run.browser_lags), "browser_p50": pct(run.browser_lags, 50),
            "browser_p95": pct(run.browser_lags, 95), "browser_missed": run.browser_missed,
            "missed": run.missed, "ticks": run.follower_ticks, "pushes": run.follower_pushes,
            "other_n": len(run.other), "other_p50": pct(run.other, 50), "other_p95": pct(run.other, 95),
            "base_n": len(base), "base_p50": pct(base, 50), "base_p95": pct(base, 95),
            "notes": run.notes, "errors": len(run.errors) + len(base_err),
            "error_examples": sorted(set(run.errors + base_err))[:5]}


def render(res: dict) -> str:
    rows = [[f"{r['k']}", f"{r['processes']}", r.get("store", "sqlite"), f"{r['changes']}",
             f"{ms(r['lag_p50'])} / {ms(r['lag_p95'])} (n={r['lag_n']})",
             f"{ms(r['browser_p50'])} / {ms(r['browser_p95'])} (n={r['browser_n']}, missed {r['browser_missed']})",
             f"{r['missed']} of {r['changes'] * r['k']}",
             f"{ms(r['other_p50'])} / {ms(r['other_p95'])} (n={r['other_n']})",
             f"{ms(r['base_p50'])} / {ms(r['base_p95'])} (n={r['base_n']})", f"{r['errors']}"]
            for r in res["scenarios"]]
    head = ["followers K", "server processes", "class store", "leader changes", "follower lag p50 / p95 ms (protocol)",
            "follower lag p50 / p95 ms (Chromium)", "follower changes missed (protocol)", "other students p50 / p95 ms",
            "same students, no class, p50 / p95 ms", "errors"]
    out = [f"# Class follow bench ({res['when']}, {res['cpus']} CPUs, load average {res['loadavg']:.1f} at start, "
           f"{res['duration']:.0f} s a scenario)", "",
           f"The leader moves Layer or Head on the Start page every {CHANGE_EVERY_S:.0f} s; a follower's lag is the "
           "time from the leader's input to the follower's chart showing the new layer and head (protocol clients: "
           "the end of the run that sent it; Chromium: the drawn chart's title). Other students are not in the "
           f"class ({OTHERS} of them, moving Layer/Head every 3-8 s); the last column is the same students on the "
           "same server just before the class started.", "", table(head, rows), ""]
    for r in res["scenarios"]:
        for note in r.get("notes", []):
            out.append(f"Note at K={r['k']}: {note}")
        if r["error_examples"]:
            out.append(f"Errors at K={r['k']}: " + "; ".join(r["error_examples"]))
    return "\n".join(out) + "\n"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", default="60,200", help="followers per scenario, comma separated")
    ap.add_argument("--replicas", default="1,2", help="server processes per scenario (2: behind HAProxy)")
    ap.add_argument("--duration", type=float, default=35.0, help="seconds of leader changes per scenario")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--store", default="", help="class store per scenario, comma separated: sqlite (one file every "
                                                "process opens) or redis (a redis-server started here); default sqlite")
    ap.add_argument("--out", default="class_follow", help="results file name in bench/results (.md, .json)")
    a = ap.parse_args(argv)
    a.k = [int(x) for x in a.k.split(",")]
    a.replicas = [int(x) for x in a.replicas.split(",")]
    a.store = a.store.split(",") if a.store else ["sqlite"] * len(a.k)
    if len(a.replicas) != len(a.k) or len(a.store) != len(a.k) or set(a.store) - {"sqlite", "redis"}:
        ap.error("--k, --replicas and --store (sqlite or redis) name one scenario each")
    return a


async def main_async(args, procs: Procs) -> dict:
    res = {"when": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "loadavg": os.getloadavg()[0],
           "duration": args.duration, "scenarios": []}
    for k, n_proc, store in zip(args.k, args.replicas, args.store):
        print(f"== {k} followers on {n_proc} process(es), class store {store}", flush=True)
        redis = start_redis(procs) if store == "redis" else None
        started = []
        for i in range(n_proc):
            if redis:  # each replica its own SQLite file (never opened): only Redis joins them
                os.environ["ATTENTION_LAB_CLASS_DB"] = str(procs.logdir / f"class{i}.sqlite")
            started.append(start_streamlit(procs, "app.py", f"class{i}"))
        os.environ.pop("ATTENTION_LAB_CLASS_STORE", None)
        os.environ["ATTENTION_LAB_CLASS_DB"] = SHARED_DB
        urls = [u for u, _ in started]
        hp = None
        if n_proc > 1:
            front, hp = start_haproxy(procs, [int(u.rsplit(":", 1)[1]) for u in urls])
            urls = [front, *urls]
        try:
            r = await scenario(urls, k, args.duration, not args.no_browser, sticky=n_proc > 1)
        finally:
            for _, p in started:
                procs.stop(p)
            if hp:
                procs.stop(hp)
            if redis:
                procs.stop(redis)
        r["store"] = store
        res["scenarios"].append(r)
        print(f"   lag p50 {ms(r['lag_p50'])} p95 {ms(r['lag_p95'])} ms (n={r['lag_n']}), Chromium p50 "
              f"{ms(r['browser_p50'])} p95 {ms(r['browser_p95'])} ms, missed {r['missed']}, others p95 "
              f"{ms(r['other_p95'])} ms (no class: {ms(r['base_p95'])} ms), errors {r['errors']}", flush=True)
    return res


def start_redis(procs: Procs):
    """A redis-server on a free loopback port keeping nothing on disk; ATTENTION_LAB_CLASS_STORE names it for the
    servers started next (start_streamlit passes os.environ)."""
    import shutil
    import socket

    port = free_port()
    p = procs.start("redis", [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                              "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(procs.logdir)])
    deadline = time.monotonic() + 20
    while True:  # until it answers PING (bounded)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError(f"redis-server did not start; see {p.log_path}") from None
            time.sleep(0.1)
    os.environ["ATTENTION_LAB_CLASS_STORE"] = f"redis://127.0.0.1:{port}/0"
    return p


def main(argv=None) -> int:
    global SHARED_DB
    args = parse_args(argv)
    SHARED_DB = str(Path(tempfile.mkdtemp(prefix="class_follow_")) / "class.sqlite")
    os.environ["ATTENTION_LAB_INSTRUCTOR_KEY"] = KEY   # start_streamlit passes os.environ to the servers
    os.environ["ATTENTION_LAB_CLASS_DB"] = SHARED_DB   # one class store for every server process (SQLite)
    procs = Procs()
    try:
        res = asyncio.run(main_async(args, procs))
    finally:
        procs.kill_all()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(res, indent=1, default=str))
    (RESULTS / f"{args.out}.md").write_text(render(res))
    print(render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
