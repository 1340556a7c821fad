"""Presenting a lecture (#39, item 4): what a step costs the server, and how far behind the leader 60 followers are.

(a) Step cost: one protocol client opens the built-in lecture at step 1 and presses Next through every step and Back
    to the start again; each press's run (the BackMsg sent -> the step page's script_finished: the button's rerun,
    the page switch and the step page's run, on the loopback) beside a plain rerun of the same step page right after
    (the page's own cost, the same settings). The bar: a step costs at most 1 s of server time on the default model.
(b) Follow lag: a protocol leader (instructor key, Lead the class, the lecture from the sidebar) presses Next or Back
    every CHANGE_EVERY_S; K protocol followers arrive by /?class=CODE and wait for the server's push (they fire a
    follow timer only where the server announces one: ATTENTION_LAB_CLASS_PUSH=0, 1 s); a follower's lag is the
    time from the leader's press being sent to the end of the follower's run whose URL holds the new step and whose
    page is the step's page. The bar: p95 at most 2 s with K = 60. Also the servers' CPU per press and per follower.

Reuses bench/class_follow.py (servers in their own process groups, the protocol clients that read the announced
timers, percentiles, tables). Results: bench/results/lecture_present.{md,json}.

Run:  nice -n 10 .venv/bin/python bench/lecture_present.py                # (a), then (b) with K = 60 for 40 s
      nice -n 10 .venv/bin/python bench/lecture_present.py --k 10 --duration 20
Every process started here is killed in `finally`; every loop is bounded in time; traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from class_follow import KEY, LEADER_TICK_S, follow_runs, open_session  # noqa: E402
from class_load import RESULTS, Procs, ms, pct, start_haproxy, start_streamlit, table  # noqa: E402
from loadclient import LoadClientError  # noqa: E402

from viz_model.lectures import builtin_lectures  # noqa: E402

LECTURE = "attention"
STEPS = builtin_lectures()[LECTURE].steps
CHANGE_EVERY_S = 4.0
STEP_BAR_S, FOLLOW_BAR_S = 1.0, 2.0


def _step_of(query: str) -> int | None:
    q = parse_qs(query)
    return int(q["step"][0]) if q.get("lecture") == [LECTURE] and q.get("step", [""])[0].isdigit() else None


def _page_of(n: int) -> str:
    page = STEPS[n - 1].page
    return "" if page in (None, "start") else page


# -- (a) what one step costs the server ------------------------------------------------------------------------------
async def step_cost(url: str, pace: float = 0.0) -> list[dict]:
    """pace: seconds between presses (a lecture's steps last minutes; the server's work a lecture starts in the
    background, the translator's training replay, has that time). 0: press after press."""
    s = await open_session(url, f"lecture={LECTURE}&step=1")
    rows = []
    try:
        await s.rerun()  # step 1 drawn once: its figures are in the server's cache, as after a rehearsal
        order = [*range(2, len(STEPS) + 1), *range(len(STEPS) - 1, 0, -1)]
        for n in order:
            here = _step_of(s.query_string)
            key = "lecture_next" if n > (here or 0) else "lecture_back"
            await asyncio.sleep(pace)
            step = await s.click(key)
            if _step_of(s.query_string) != n:
                raise LoadClientError(f"{key} from step {here} reached {s.query_string!r}, not step {n}")
            plain = await s.rerun()
            rows.append({"step": n, "page": _page_of(n) or "start", "key": key, "step_s": step.seconds,
                         "plain_s": plain.seconds, "ok": step.ok and plain.ok, "first": key == "lecture_next"})
            print(f"   step {n:2d} ({rows[-1]['page']:<15}) {key:<12} {ms(step.seconds):>7} ms, plain rerun "
                  f"{ms(plain.seconds):>7} ms", flush=True)
    finally:
        await s.close()
    return rows


# -- (b) the followers' lag after the leader's Next ------------------------------------------------------------------
STICKY = [False]  # behind HAProxy (--replicas 2): each client keeps its replica by the sticky cookie, as browsers do


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) the server processes have used so far (/proc/PID/stat's utime and stime)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return float("nan")
    return ticks / os.sysconf("SC_CLK_TCK")


async def leader(url: str, presses: list[tuple[float, int]], t_end: float, code_box: asyncio.Future,
                 errors: list[str], cpu_at_first: list[float], cpu) -> None:
    s = await open_session(url, sticky=STICKY[0])
    try:
        await s.set("class_key", KEY)
        if not s.widgets.get("class_lead") or "class=" not in s.query_string:  # a browser that led: back at once
            await s.set("class_lead", True)
        await s.click(f"lecture_open_{LECTURE}")
        code = parse_qs(s.query_string).get("class", [""])[0]
        if _step_of(s.query_string) != 1 or not code:
            raise LoadClientError(f"the leader did not open the lecture in its class: {s.query_string!r}")
        code_box.set_result(code)
        await asyncio.sleep(10)  # followers arrive before the first step
        n, forward, next_press = 1, True, time.monotonic()
        while time.monotonic() < t_end:
            now = time.monotonic()
            if now >= next_press:
                forward = n < len(STEPS) if forward else n == 1
                n += 1 if forward else -1
                if not presses:
                    cpu_at_first.append(cpu())
                presses.append((time.monotonic(), n))
                await s.click("lecture_next" if forward else "lecture_back")
                if _step_of(s.query_string) != n:
                    errors.append(f"leader: pressed to step {n}, URL {s.query_string!r}")
                next_press = now + CHANGE_EVERY_S
            frag = s.timers.get(LEADER_TICK_S)
            if frag:
                await s.rerun(fragment_id=frag)
            await asyncio.sleep(max(0.0, LEADER_TICK_S - (time.monotonic() - now)))
    except (LoadClientError, OSError) as e:
        errors.append(f"leader: {e}")
        if not code_box.done():
            code_box.set_exception(e)
    finally:
        await s.close()


async def follower(i: int, url: str, code: str, presses: list[tuple[float, int]], lags: list[float],
                   missed: list[int], t_end: float, errors: list[str]) -> None:
    rng = random.Random(i)
    await asyncio.sleep(rng.uniform(0, 4))
    try:
        s = await open_session(url, f"class={code}", sticky=STICKY[0])
    except (LoadClientError, OSError) as e:
        errors.append(f"follower {i}: {e}")
        return
    seen = len(presses)  # presses before this follower arrived are not its to measure
    try:
        async for res in follow_runs(s, rng, t_end):
            if not res.ok:
                errors.append(f"follower {i}: {res.status} {res.exceptions[:1]} {res.errors[:1]}")
            done, step = time.monotonic(), _step_of(s.query_string)
            on_page = s.page_hash == s.pages.get(_page_of(step) if step else None, s.page_hash)
            while seen < len(presses) and presses[seen][0] < done:
                at, n = presses[seen]
                if step == n and on_page:
                    lags.append(done - at)
                    seen += 1
                elif seen + 1 < len(presses) and presses[seen + 1][0] < done:
                    missed.append(n)  # overtaken by the next press before this follower showed it
                    seen += 1
                else:
                    break
    except (LoadClientError, OSError) as e:
        errors.append(f"follower {i}: {e}")
    finally:
        await s.close()


async def follow_lag(url: str, k: int, duration: float, cpu=lambda: float("nan")) -> dict:
    """`cpu`: the server processes' CPU seconds so far (the servers' cost of the presses: from the first to the end)."""
    presses: list[tuple[float, int]] = []
    cpu_at_first: list[float] = []
    lags: list[float] = []
    missed: list[int] = []
    errors: list[str] = []
    t_end = time.monotonic() + duration + 10
    code_box: asyncio.Future = asyncio.get_running_loop().create_future()
    lead = asyncio.create_task(leader(url, presses, t_end, code_box, errors, cpu_at_first, cpu))
    code = await asyncio.wait_for(code_box, 180)
    tasks = [asyncio.create_task(follower(i, url, code, presses, lags, missed, t_end, errors)) for i in range(k)]
    await asyncio.wait_for(asyncio.gather(lead, *tasks, return_exceptions=True), duration + 240)
    spent = cpu() - cpu_at_first[0] if cpu_at_first else float("nan")
    return {"k": k, "presses": len(presses), "cpu_s": spent,
            "cpu_ms_per_follower": 1000 * spent / max(1, len(presses)) / max(1, k),
            "lag_n": len(lags), "lag_p50": pct(lags, 50), "lag_p95": pct(lags, 95),
            "lag_max": max(lags, default=float("nan")), "missed": len(missed), "errors": len(errors),
            "error_examples": sorted(set(errors))[:5]}


def render(res: dict) -> str:
    rows = res["steps"]
    step_rows = [[f"{r['step']}", r["page"], r["key"][8:] + (" (first visit)" if r["first"] else ""),
                  ms(r["step_s"]), ms(r["plain_s"]), f"{r['step_s'] / r['plain_s']:.2f}" if r["plain_s"] else "-"]
                 for r in rows]
    lines = []
    for name, part in (("first visits (Next)", [r for r in rows if r["first"]]),
                       ("again (Back)", [r for r in rows if not r["first"]])):
        steps, plains = [r["step_s"] for r in part], [r["plain_s"] for r in part]
        lines.append(f"{name}: steps median {ms(pct(steps, 50))} ms, max {ms(max(steps, default=float('nan')))} ms, "
                     f"{sum(x <= STEP_BAR_S for x in steps)}/{len(steps)} within {STEP_BAR_S * 1000:.0f} ms; plain "
                     f"reruns median {ms(pct(plains, 50))} ms.")
    f = res["follow"]
    out = [f"# Presenting a lecture ({res['when']}, {res['cpus']} CPUs, load average {res['loadavg']:.1f} at "
           "start)", "", "## (a) What a step costs the server", "",
           "Each press of Next or Back in the built-in lecture (the button's rerun, the page switch and the step "
           "page's run, BackMsg -> script_finished on the loopback), beside a plain rerun of the same step page right "
           "after. Next visits each step's view for the first time on this fresh server; Back visits it again. "
           f"Presses {res.get('pace', 0):.0f} s apart (a lecture's pace; the translator's training replay, which a "
           "lecture starts in the background when it opens, has that time).",
           "", table(["step", "page", "button", "step ms", "plain rerun ms", "ratio"], step_rows), "",
           *[f"- {line}" for line in lines],
           "", "## (b) How far behind the leader the followers are", "",
           f"The leader presses Next (Back after the last step) every {CHANGE_EVERY_S:.0f} s; a follower's lag is the "
           "time from the press being sent to the end of its run whose URL and page are the new step's.", "",
           table(["followers K", "processes", "presses", "lag p50 / p95 / max ms", "within the bar",
                  "server CPU per press, per follower", "missed", "errors"],
                 [[f"{f['k']}", f"{res.get('replicas', 1)}", f"{f['presses']}",
                   f"{ms(f['lag_p50'])} / {ms(f['lag_p95'])} / {ms(f['lag_max'])} "
                   f"(n={f['lag_n']})", "yes" if f["lag_p95"] <= FOLLOW_BAR_S else "no",
                   f"{f.get('cpu_s', float('nan')) / max(1, f['presses']):.2f} s, "
                   f"{f.get('cpu_ms_per_follower', float('nan')):.1f} ms", f"{f['missed']}", f"{f['errors']}"]]),
           "", "Server CPU: user + system seconds of the server processes from the first press to the end of the run "
           "(the leader's runs, the followers' page switches, the heartbeats), per press, and that divided by K.", ""]
    if f["error_examples"]:
        out += ["Errors: " + "; ".join(f["error_examples"]), ""]
    return "\n".join(out)


async def main_async(args, procs: Procs) -> dict:
    res = {"when": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "loadavg": os.getloadavg()[0]}
    started = [start_streamlit(procs, "app.py", f"lecture{i}") for i in range(args.replicas)]
    url = started[0][0]
    for u, _ in started:
        warm = await open_session(u)  # the model loaded and Start drawn once on each process
        await warm.close()
    print("== (a) each step's run beside a plain rerun of its page", flush=True)
    res["steps"], res["pace"] = await step_cost(url, args.pace), args.pace
    for u, _ in started[1:]:  # every replica has visited each step once, as a rehearsal does (README)
        await step_cost(u)
    front = url
    if args.replicas > 1:  # the class on several processes sharing the class store, as deploy/ serves one
        front, _ = start_haproxy(procs, [int(u.rsplit(":", 1)[1]) for u, _ in started])
        STICKY[0] = True
    res["replicas"] = args.replicas
    print(f"== (b) {args.k} followers on {args.replicas} process(es), {args.duration:.0f} s", flush=True)
    res["follow"] = await follow_lag(front, args.k, args.duration, lambda: cpu_s([p.pid for _, p in started]))
    f = res["follow"]
    print(f"   lag p50 {ms(f['lag_p50'])} p95 {ms(f['lag_p95'])} ms (n={f['lag_n']}), missed {f['missed']}, errors "
          f"{f['errors']} {f['error_examples'][:2]}; server CPU {f['cpu_ms_per_follower']:.1f} ms a follower a press",
          flush=True)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=60)
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--replicas", type=int, default=1, help="server processes for (b); 2: behind HAProxy")
    ap.add_argument("--pace", type=float, default=CHANGE_EVERY_S,
                    help="(a): seconds between presses, as in (b); 0: press after press")
    args = ap.parse_args(argv)
    os.environ["ATTENTION_LAB_INSTRUCTOR_KEY"] = KEY
    os.environ["ATTENTION_LAB_CLASS_DB"] = str(Path(tempfile.mkdtemp(prefix="lecture_present_")) / "class.sqlite")
    procs = Procs()
    try:
        res = asyncio.run(main_async(args, procs))
    finally:
        procs.kill_all()
    RESULTS.mkdir(exist_ok=True)
    name = "lecture_present" + (f"_{args.replicas}proc" if args.replicas > 1 else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))
    (RESULTS / f"{name}.md").write_text(render(res))
    print(render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
