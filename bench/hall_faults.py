#!/usr/bin/env python3
"""Faults in a lecture hall (#42, item 3): a class on deploy/lecture_hall.py (2 replicas, HAProxy, Redis) survives
a replica killed and Redis stopped, measured with protocol clients (bench/loadclient.py) that act as browsers do:
each fires the timers the server announces and reads the runs it pushes, keeps its HAProxy cookie, and reconnects
after 0.5 s when its websocket drops, on the URL it had (so ?class=CODE comes back with it).

Scenarios, in this order, on one hall (Redis started here, so the bench can freeze and restart it):
  (b1) Redis frozen (SIGSTOP) for --down s, then SIGCONT: the class's keys are still there. Per follower: time from
       the freeze to the class's paused sentence, and from SIGCONT to following the leader again.
  (b2) Redis killed, --down s later restarted on its port, empty (no persistence): time to the "was lost" sentence.
  (a)  A fresh class; the replica the leader is on is SIGKILLed mid-class. Its followers reconnect through HAProxy
       to the other replica; each one's recovery is the time from the kill to its first run that shows the leader's
       current view (the leader comes back too: key and Lead again take the class back). Goal: within 10 s.
A warm-up class with no fault runs first (not reported). In every scenario OTHERS students not in the class move
Layer/Head (their errors are counted), and every run's tracebacks (st.exception) and error boxes count as errors.

Run:  .venv/bin/python bench/hall_faults.py                       # K = 20 followers, --down 8 s
      .venv/bin/python bench/hall_faults.py --k 40 --down 10
Results: bench/results/hall_faults.{md,json}. Every process started here is stopped in `finally`; every loop is
bounded in time; traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from class_follow import FOLLOW_TICK_S, LEADER_TICK_S, TimedSession, chart_title  # noqa: E402
from class_load import RESULTS, free_port, pct, table  # noqa: E402
from loadclient import ProtocolSession, fetch_cookie, ws_url  # noqa: E402

from viz_model.lessons.classview import PAUSED_TEXT  # noqa: E402

KEY = "bench-hall-faults-key"
CHANGE_EVERY_S = 4.0
RECONNECT_S = 0.5      # a browser's websocket reconnects after about this long
RECOVER_BAR_S = 10.0
OTHERS = 3
WARM_S = 30.0          # a first class with no fault: cold replicas' first runs are not what a fault costs
LOST = "was lost while the class server was away"


@dataclass
class Event:
    t: float
    kind: str                  # run, down, up
    title: tuple | None = None
    alerts: tuple = ()
    errors: tuple = ()


@dataclass
class Tab:
    name: str
    query: str = ""
    cookie: str | None = None
    first_cookie: str | None = None
    s: TimedSession | None = None
    events: list[Event] = field(default_factory=list)


class Session(TimedSession):
    """A protocol client that also keeps each run's info/warning lines (the class's sentences)."""

    @staticmethod
    def _read_delta(fm, res, widgets) -> None:
        ProtocolSession._read_delta(fm, res, widgets)
        if fm.delta.WhichOneof("type") == "new_element" and fm.delta.new_element.WhichOneof("type") == "alert":
            res.__dict__.setdefault("alerts", []).append(fm.delta.new_element.alert.body)


async def dial(front: str, tab: Tab) -> None:
    """Connect as a browser (re)loading its URL: its cookie (the first GET sets it), its query, a first run."""
    if tab.cookie is None:
        tab.cookie = tab.first_cookie = await asyncio.to_thread(fetch_cookie, front)
    s = Session(front, sticky=True, timeout=60)
    s.query_string = tab.query
    s.ws = await websockets.connect(ws_url(front), subprotocols=["streamlit"], max_size=None, ping_interval=None,
                                    open_timeout=15, additional_headers={"Cookie": tab.cookie} if tab.cookie else None)
    renewed = [c.split(";", 1)[0] for c in s.ws.response.headers.get_all("Set-Cookie")]
    if renewed:  # HAProxy sent this tab to another replica: the browser keeps the new cookie
        tab.cookie = "; ".join(renewed)
    s._wrap()
    tab.s = s
    note(tab, await s.rerun(), "up")


def note(tab: Tab, res, kind: str = "run") -> None:
    tab.events.append(Event(time.monotonic(), kind, chart_title(res), tuple(res.__dict__.get("alerts", ())),
                            tuple(res.exceptions + res.errors)))
    if "class=" in tab.s.query_string:
        tab.query = tab.s.query_string


async def keep(front: str, tab: Tab, t_end: float, tick_s: float, act=None) -> None:
    """The tab's life until t_end: its timer fired every tick_s, `act` (the leader's moves) between; a dropped
    websocket is reconnected after RECONNECT_S, as a browser does."""
    rng = random.Random(tab.name)
    next_tick = time.monotonic() + rng.uniform(0, tick_s)
    while time.monotonic() < t_end:
        try:
            if tab.s is None:
                await dial(front, tab)
            if act is not None:
                await act(tab)
            frag = tab.s.timers.get(tick_s)
            if frag:
                note(tab, await tab.s.rerun(fragment_id=frag))
            next_tick += tick_s
            while (wait := next_tick - time.monotonic()) > 0:  # the runs the server pushes meanwhile (class_push)
                if (res := await tab.s.pushed_run(wait)) is None:
                    break
                note(tab, res)
        except Exception:  # noqa: BLE001 - a dropped connection (any kind): reconnect as a browser does
            tab.events.append(Event(time.monotonic(), "down"))
            with contextlib.suppress(Exception):
                await tab.s.close()
            tab.s = None
            await asyncio.sleep(RECONNECT_S)
            continue
    with contextlib.suppress(Exception):
        await tab.s.close()


class Leader:
    """The instructor's tab: leads, moves Layer/Head every CHANGE_EVERY_S; after a reconnect, key and Lead again."""

    def __init__(self):
        self.tab = Tab("leader")
        self.changes: list[tuple[float, tuple[int, int]]] = []
        self.leading_since: list[float] = []
        self.code = ""
        self._next, self._i = 0.0, 0

    async def act(self, tab: Tab) -> None:
        s = tab.s
        if s.widgets.get("class_lead") is None or not self.leading_since or tab.events[-1].kind == "up":
            if "class_key" in s.widgets:
                note(tab, await s.set("class_key", KEY))
            note(tab, await s.set("class_lead", True))
            self.code = self.code or s.query_string.split("class=")[1][:4]
            self.leading_since.append(time.monotonic())
            view = self.changes[-1][1] if self.changes else (0, 0)
            for key, v in zip(("start_layer", "start_head"), view):  # the view the class last saw, led again
                note(tab, await s.set(key, v))
        if time.monotonic() >= self._next:
            layers = len(s.widgets["start_layer"].proto.options)
            heads = len(s.widgets["start_head"].proto.options)
            self._i += 1
            view = (self._i % layers, (self._i // layers) % heads)
            self.changes.append((time.monotonic(), view))
            note(tab, await s.set("start_layer", view[0]))
            note(tab, await s.set("start_head", view[1]))
            self._next = time.monotonic() + CHANGE_EVERY_S

    def view_at(self, t: float) -> tuple[int, int] | None:
        shown = [v for at, v in self.changes if at <= t]
        return shown[-1] if shown else None


async def other(front: str, tab: Tab, t_end: float) -> None:
    rng = random.Random(tab.name)
    while time.monotonic() < t_end:
        try:
            if tab.s is None:
                await dial(front, tab)
            await asyncio.sleep(rng.uniform(2, 4))
            note(tab, await tab.s.set(rng.choice(["start_layer", "start_head"]), 1 - (tab.s.runs % 2)))
        except Exception:  # noqa: BLE001
            tab.events.append(Event(time.monotonic(), "down"))
            tab.s = None
            await asyncio.sleep(RECONNECT_S)
    with contextlib.suppress(Exception):
        await tab.s.close()


async def class_run(front: str, k: int, seconds: float, fault, settle: float = 14.0):
    """A class of k followers and OTHERS students for `seconds`; `fault(leader, followers)` runs `settle` s in
    (after every follower joined) and returns the fault's times."""
    leader = Leader()
    t_end = time.monotonic() + seconds
    tasks = [asyncio.create_task(keep(front, leader.tab, t_end, LEADER_TICK_S, leader.act))]
    while not leader.code:
        await asyncio.sleep(0.1)
        if time.monotonic() > t_end - seconds + 60:
            raise RuntimeError("the leader did not get a class code within 60 s")
    followers = [Tab(f"f{i}", query=f"class={leader.code}") for i in range(k)]
    others = [Tab(f"o{i}") for i in range(OTHERS)]
    tasks += [asyncio.create_task(keep(front, f, t_end, FOLLOW_TICK_S)) for f in followers]
    tasks += [asyncio.create_task(other(front, o, t_end)) for o in others]
    await asyncio.sleep(settle)
    times = await fault(leader, followers)
    await asyncio.gather(*tasks)
    return leader, followers, others, times


def dump(tabs, t0: float) -> None:
    """HALL_FAULTS_DUMP=file: each tab's events, in seconds from the fault (to read what a number hides)."""
    if os.environ.get("HALL_FAULTS_DUMP"):
        Path(os.environ["HALL_FAULTS_DUMP"]).write_text(json.dumps({t.name: [
            (round(ev.t - t0, 2), ev.kind, ev.title, [a[:40] for a in ev.alerts], [e[:60] for e in ev.errors])
            for ev in t.events] for t in tabs}, indent=0))


def errors(tabs) -> list[str]:
    return [e for t in tabs for ev in t.events for e in ev.errors]


def samples(tabs) -> list[str]:
    """Up to 5 distinct error texts (what the table counts), cut to 200 characters."""
    return sorted({e[:200] for e in errors(tabs)})[:5]


def first(tab: Tab, after: float, ok) -> float | None:
    return next((ev.t - after for ev in tab.events if ev.t > after and ok(ev)), None)


def stats(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None]
    return "—" if not xs else f"{pct(xs, 50):.1f} / {pct(xs, 95):.1f} / {max(xs):.1f}"


def following(leader: Leader):
    return lambda ev: ev.kind in ("run", "up") and ev.title is not None and \
        ev.title in (leader.view_at(ev.t), leader.view_at(ev.t - 2.0)) and PAUSED_TEXT not in ev.alerts


async def scenario_freeze(front: str, redis_pid: int, k: int, down: float) -> dict:
    async def fault(leader, followers):
        t0 = time.monotonic()
        os.kill(redis_pid, signal.SIGSTOP)
        await asyncio.sleep(down)
        os.kill(redis_pid, signal.SIGCONT)
        return {"stop": t0, "back": time.monotonic()}

    leader, followers, others, t = await class_run(front, k, 14 + down + 20, fault)
    dump(followers, t["stop"])
    paused = [first(f, t["stop"], lambda ev: PAUSED_TEXT in ev.alerts) for f in followers]
    resumed = [first(f, t["back"], following(leader)) for f in followers]
    return {"scenario": f"Redis frozen {down:.0f} s (SIGSTOP), then SIGCONT", "k": k,
            "paused": sum(p is not None for p in paused), "to_paused_s": stats(paused),
            "resumed": sum(r is not None and r <= RECOVER_BAR_S for r in resumed), "to_resume_s": stats(resumed),
            "errors": len(errors([leader.tab, *followers])), "others_errors": len(errors(others)),
            "others_runs": sum(ev.kind == "run" for o in others for ev in o.events),
            "error_samples": samples([leader.tab, *followers, *others])}


async def scenario_restart(front: str, redis: RedisProc, k: int, down: float) -> dict:
    async def fault(leader, followers):
        t0 = time.monotonic()
        redis.stop()
        await asyncio.sleep(down)
        await asyncio.to_thread(redis.start)
        return {"stop": t0, "back": time.monotonic()}

    leader, followers, others, t = await class_run(front, k, 14 + down + 15, fault)
    paused = [first(f, t["stop"], lambda ev: PAUSED_TEXT in ev.alerts) for f in followers]
    lost = [first(f, t["back"], lambda ev: any(LOST in a for a in ev.alerts)) for f in followers]
    return {"scenario": f"Redis stopped {down:.0f} s, restarted empty", "k": k,
            "paused": sum(p is not None for p in paused), "to_paused_s": stats(paused),
            "lost_told": sum(x is not None for x in lost), "to_lost_s": stats(lost),
            "errors": len(errors([leader.tab, *followers])), "others_errors": len(errors(others)),
            "others_runs": sum(ev.kind == "run" for o in others for ev in o.events),
            "error_samples": samples([leader.tab, *followers, *others])}


async def scenario_kill(front: str, pids: dict, k: int) -> dict:
    async def fault(leader, followers):
        victim = leader.tab.cookie.split("ATTENTION_LAB_SERVER=")[1].split(";")[0]  # app1 -> replica1
        t0 = time.monotonic()
        os.killpg(pids[victim.replace("app", "replica")], signal.SIGKILL)
        return {"kill": t0, "victim": victim}

    leader, followers, others, t = await class_run(front, k, 14 + 25, fault)
    dump([leader.tab, *followers], t["kill"])
    moved = [f for f in followers if t["victim"] in (f.first_cookie or "")]
    stayed = [f for f in followers if f not in moved]
    back = [first(f, t["kill"], lambda ev, f=f: following(leader)(ev) and any(
        e.kind == "up" and t["kill"] < e.t <= ev.t for e in f.events)) for f in moved]
    lead_back = [s - t["kill"] for s in leader.leading_since if s > t["kill"]]
    after = [at for at, _ in leader.changes if at > t["kill"]]
    kept = [first(f, after[0], following(leader)) for f in stayed] if after else []
    return {"scenario": f"replica {t['victim']} killed (the leader's)", "k": k, "moved": len(moved),
            "back_within_10s": sum(b is not None and b <= RECOVER_BAR_S for b in back),
            "recovery_s": stats(back), "never_back": sum(b is None for b in back),
            "leader_back_s": f"{lead_back[0]:.1f}" if lead_back else "—",
            "stayed_following": f"{sum(x is not None for x in kept)} of {len(stayed)}",
            "errors": len(errors([leader.tab, *followers])), "others_errors": len(errors(others)),
            "others_runs": sum(ev.kind == "run" for o in others for ev in o.events),
            "error_samples": samples([leader.tab, *followers, *others])}


class RedisProc:
    def __init__(self, port: int, run_dir: Path):
        self.port, self.run_dir, self.p = port, run_dir, None

    def start(self) -> None:
        import redis

        self.p = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", str(self.run_dir)], stdout=subprocess.DEVNULL,
                                  start_new_session=True)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        deadline = time.monotonic() + 20
        while True:  # until it answers, bounded
            with contextlib.suppress(redis.exceptions.ConnectionError):
                if client.ping():
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.p is not None and self.p.poll() is None:
            self.p.terminate()
            self.p.wait(10)


def render(rows: list[dict], args) -> str:
    head = ["scenario", "K", "followers hit", "told within", "recovered ≤ 10 s", "recovery p50 / p95 / max s",
            "leader back s", "errors (class)", "others: errors / runs"]
    out = []
    for r in rows:
        if "moved" in r:
            out.append([r["scenario"], r["k"], f"{r['moved']} moved replica", "—",
                        f"{r['back_within_10s']} of {r['moved']} (never: {r['never_back']}); on the other replica "
                        f"{r['stayed_following']} kept following", r["recovery_s"], r["leader_back_s"], r["errors"],
                        f"{r['others_errors']} / {r['others_runs']}"])
        elif "resumed" in r:
            out.append([r["scenario"], r["k"], f"{r['paused']} paused", r["to_paused_s"],
                        f"{r['resumed']} of {r['k']} resumed", r["to_resume_s"], "—", r["errors"],
                        f"{r['others_errors']} / {r['others_runs']}"])
        else:
            out.append([r["scenario"], r["k"], f"{r['paused']} paused", r["to_paused_s"],
                        f"{r['lost_told']} of {r['k']} told lost", r["to_lost_s"], "—", r["errors"],
                        f"{r['others_errors']} / {r['others_runs']}"])
    return "\n".join([f"# Faults in a lecture hall (#42, item 3): K = {args.k} followers, 2 replicas, Redis down "
                      f"{args.down:.0f} s", "", "Times in seconds (p50 / p95 / max over the followers hit) from the "
                      "fault (or from Redis's return, for resume and lost); errors are tracebacks and error boxes "
                      "in any client's run.", "", table(head, out), ""])


async def main_async(args, info: dict, redis: RedisProc) -> list[dict]:
    async def nothing(leader, followers):
        return {}

    print("== warm-up (a class with no fault: both replicas load the model and draw the page once)", flush=True)
    await asyncio.wait_for(class_run(info["front"], args.k, WARM_S, nothing), 300)
    rows = []
    for name, run in (("freeze", lambda: scenario_freeze(info["front"], redis.p.pid, args.k, args.down)),
                      ("restart", lambda: scenario_restart(info["front"], redis, args.k, args.down)),
                      ("kill", lambda: scenario_kill(info["front"], info["pids"], args.k))):
        if name in args.only:
            print(f"== {name}", flush=True)
            rows.append(await asyncio.wait_for(run(), 300))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--down", type=float, default=8.0, help="seconds Redis is down")
    ap.add_argument("--only", default="freeze,restart,kill")
    ap.add_argument("--out", default="hall_faults")
    args = ap.parse_args(argv)
    run_dir = Path(tempfile.mkdtemp(prefix="hall-faults-"))
    redis = RedisProc(free_port(), run_dir)
    hall = None
    try:
        redis.start()
        ready = run_dir / "ready.json"
        ports = [free_port(), free_port()]
        hall = subprocess.Popen([sys.executable, str(ROOT / "deploy" / "lecture_hall.py"), "--replicas", "2",
                                 "--app-ports", ",".join(map(str, ports)), "--redis-url",
                                 f"redis://127.0.0.1:{redis.port}/0", "--bind", f"127.0.0.1:{free_port()}",
                                 "--run-dir", str(run_dir), "--ready-file", str(ready)], cwd=ROOT,
                                env={**os.environ, "ATTENTION_LAB_INSTRUCTOR_KEY": KEY}, start_new_session=True,
                                stdout=open(run_dir / "hall.log", "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 240
        while not (ready.exists() and ready.read_text()):  # the hall is healthy, bounded
            if hall.poll() is not None or time.monotonic() > deadline:
                print((run_dir / "hall.log").read_text(), file=sys.stderr)
                return 1
            time.sleep(0.5)
        info = json.loads(ready.read_text())
        rows = asyncio.run(main_async(args, info, redis))
    finally:
        if hall is not None and hall.poll() is None:
            hall.send_signal(signal.SIGTERM)
            try:
                hall.wait(40)
            except subprocess.TimeoutExpired:
                os.killpg(hall.pid, signal.SIGKILL)
        redis.stop()
    md = render(rows, args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.md").write_text(md)
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"k": args.k, "down_s": args.down, "rows": rows}, indent=1))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
