"""Where a student's wait goes on the Explorer: the server, or the browser drawing the page. One server, one headless
Chromium tab per model (the classroom model and bench/gpt2_small.py's GPT-2 small, each opened by its ?model_key=),
no other load. Each round types a sentence of `--words` words on one model, then on the other (the rounds alternate
models, so both see the same machine), and times, from Enter:
  finished: the script_finished message handled by the page (the server's run, the messages on the wire, and the
            browser applying every delta before it: a tab busy drawing handles the message late);
  drawn:    the new charts drawn (the measure of bench/class_load.py's browser student).
The first pass over the sentences runs the model (new to the server's caches); the second finds every pass and
figure cached, so its time is the page's own cost in the browser plus a cached rerun.
Run: .venv/bin/python bench/browser_split.py [--words 32] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import class_load as cl  # noqa: E402
import gpt2_small  # noqa: E402

CLASSROOM = "Classroom model (RoPE, 186 words)"


async def student(url: str, arrive: str) -> cl.BrowserStudent:
    cl.ARRIVE = arrive
    b = cl.BrowserStudent(url, 0)
    await b.start()
    await b.load("")
    await b.step(cl.Step("explorer", "open"))
    return b


async def type_sentence(b: cl.BrowserStudent, text: str) -> tuple[float, float]:
    pg = b.page
    box = pg.locator(".st-key-explorer_text").locator("textarea, input").first
    await box.fill(text)
    before = await pg.evaluate(b.MARK_JS)
    t0 = time.perf_counter()
    await box.press("Enter")
    await pg.wait_for_function(b.FINISHED_JS, arg=before)
    t1 = time.perf_counter()
    await pg.wait_for_function(b.CHART_JS, timeout=10000)
    await pg.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
    return t1 - t0, time.perf_counter() - t0


async def main_async(args) -> str:
    label = cl.use_model_dir(str(gpt2_small.ensure()))   # the server lists the folder; students pick by label
    arrive_gpt2 = cl.ARRIVE
    cl.arrive_on(CLASSROOM)
    arrive_cls = cl.ARRIVE
    sentences = [" ".join(s.split()[i % len(s.split())] for i in range(args.words)) for s in cl.SENTENCES]
    procs = cl.Procs()
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        url, _ = cl.start_streamlit(procs, "app.py", "split")
        students = {"classroom": await student(url, arrive_cls), "gpt2-small": await student(url, arrive_gpt2)}
        for state in ("new", "cached")[: args.rounds]:
            for text in sentences:
                for name, b in students.items():
                    rows.setdefault((name, state), []).append(await type_sentence(b, text))
        for b in students.values():
            await b.close()
    finally:
        procs.kill_all()
    med = statistics.median
    lines = [f"Explorer, type a sentence of {args.words} words, one Chromium tab per model on one server, no other "
             f"student; median (max) of {len(sentences)} sentences. GPT-2 small is “{label}”.", "",
             "| model | server caches | finished ms | drawn ms |", "|---|---|---|---|"]
    for (name, state), v in rows.items():
        lines.append(f"| {name} | {state} | {1000 * med(f for f, _ in v):.0f} ({1000 * max(f for f, _ in v):.0f}) | "
                     f"{1000 * med(d for _, d in v):.0f} ({1000 * max(d for _, d in v):.0f}) |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    print(asyncio.run(main_async(ap.parse_args())))


if __name__ == "__main__":
    main()
