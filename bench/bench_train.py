"""Training speed: the Trainer vs a plain loop, and a run inside the live app (UI updating) vs headless.

    .venv/bin/python bench/bench_train.py            # both tables (starts a real server + headless Chromium)
    .venv/bin/python bench/bench_train.py --no-app   # only the Trainer vs reference table

Steps/s is measured between consecutive steps (model set-up excluded) and repeated alternately (A B A B ...) so
that load from other processes on the machine hits both sides alike; the table shows medians. The live and the
headless job both train in a child process (viz_model/runtime/train_process.py), as the app does; with
ATTENTION_LAB_TRAIN_PROCESS=0 both train in a server thread instead (the server's GIL then slows the live run).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz_model.config import ModelConfig  # noqa: E402
from viz_model.data import TaskData  # noqa: E402
from viz_model.lessons.train import TrainSpec  # noqa: E402
from viz_model.model import TinyTransformer  # noqa: E402
from viz_model.runtime.jobs import JobRegistry, worker_threads  # noqa: E402
from viz_model.runtime.train_process import make_events  # noqa: E402
from viz_model.tokenizer import load_tokenizer  # noqa: E402
from viz_model.train import StepEvent, TrainConfig, Trainer  # noqa: E402


def rate(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0])


def reference_loop(preset: str, steps: int, batch: int) -> float:
    """The plainest loop over the same model, batches and optimiser: forward, backward, clip, step."""
    tok = load_tokenizer("word")
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset(preset, vocab_size=tok.get_vocab_size())).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = TaskData("lm", tok, seed=0, batch_size=batch)
    times = []
    for s in range(steps):
        b = data.batch(s)
        loss = model(b.ids, targets=b.targets).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        times.append(time.perf_counter())
    return rate(times)


def trainer_loop(preset: str, steps: int, batch: int) -> float:
    tok = load_tokenizer("word")
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset(preset, vocab_size=tok.get_vocab_size()))
    cfg = TrainConfig(task="lm", steps=steps + 1, batch_size=batch, lr=1e-3, eval_every=0, snapshot_every=0,
                      sample_every=0, device="cpu")
    times = []
    for ev in Trainer(model, tok, cfg).run():
        if isinstance(ev, StepEvent):
            times.append(time.perf_counter())
            if len(times) == steps:
                break
    return rate(times)


def table_trainer(repeats: int) -> None:
    torch.set_num_threads(worker_threads())
    print(f"\nTrainer vs plain reference loop (lm task, {torch.get_num_threads()} torch thread(s), "
          f"median of {repeats} alternating runs)")
    print(f"{'model':<10} {'batch':>5} {'reference steps/s':>18} {'Trainer steps/s':>16} {'ratio':>7}")
    for preset, steps, batch in (("tiny", 150, 16), ("classroom", 40, 32)):
        ref, tr = [], []
        for _ in range(repeats):
            ref.append(reference_loop(preset, steps, batch))
            tr.append(trainer_loop(preset, steps, batch))
        r, t = statistics.median(ref), statistics.median(tr)
        print(f"{preset:<10} {batch:>5} {r:>18.1f} {t:>16.1f} {t / r:>6.2f}x")


# -- the live app ----------------------------------------------------------------------------------------
SPEC = TrainSpec(preset="tiny", task="lm", steps=1000, every=20)  # the page's defaults but 1,000 steps (~7 s)


def headless_job() -> float:
    reg = JobRegistry(slots=1, reap_every_s=3600)
    try:
        job = reg.submit("bench", "bench", SPEC.steps, make_events(SPEC))
        reg.wait(job.id, 600)
        return job.steps_per_second()
    finally:
        reg.shutdown()


def live_job(url: str, browser) -> float:
    """Open the Train page, press Start with the defaults (= SPEC but for the steps typed in), keep the page open
    until it finishes."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(url)  # the root first: (historic: a pages/ folder made Streamlit run v1 MPA)
        page.wait_for_selector('[data-testid="stApp"]')
        page.wait_for_timeout(1500)
        page.goto(f"{url}/train")
        page.wait_for_selector('[data-testid="stButton"] button')
        page.wait_for_timeout(1500)
        steps = page.get_by_label("Steps")
        steps.fill(str(SPEC.steps))
        steps.press("Enter")
        page.wait_for_timeout(1500)
        page.locator('[data-testid="stButton"] button', has_text="Start").first.click()
        page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stAlert"]')]
            .some(a => a.innerText.includes('steps/s)'))""", timeout=600_000)
        text = next(t for t in page.locator('[data-testid="stAlert"]').all_inner_texts() if "steps/s)" in t)
        page.locator('[data-testid="stButton"] button', has_text="Reset").first.click()
        page.wait_for_timeout(500)
        return float(re.search(r"\(([\d.]+) steps/s\)", text).group(1))
    finally:
        page.close()


def table_app(repeats: int, pin: bool = False) -> None:
    """pin: server on core 0, this process and its Chromium on core 1, so the browser's drawing does not
    compete with the server (in class, the browsers run on the students' laptops)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import CHROMIUM_FLAGS, _free_port, chromium_path
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = dict(os.environ, ATTENTION_LAB_MAX_TRAINING="2")
    server = subprocess.Popen([*(["taskset", "-c", "0"] if pin else []), sys.executable, "-m", "streamlit", "run",
                               str(ROOT / "app.py"), "--server.headless",
                               "true", "--server.port", str(port), "--server.fileWatcherType", "none",
                               "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(180):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        head, live = [], []
        if pin:
            os.sched_setaffinity(0, {1})  # inherited by Chromium and the headless job's thread
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
            for _ in range(repeats):
                head.append(headless_job())
                live.append(live_job(url, browser))
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    h, v = statistics.median(head), statistics.median(live)
    where = " — server pinned to core 0, browser to core 1" if pin else " — server, browser and job share both cores"
    print(f"\nA run inside the live app (page open, progress 1 s, curves 3 s, attention 5 s){where}; vs headless job "
          f"({SPEC.preset}, {SPEC.task}, {SPEC.steps} steps, snapshots every {SPEC.every}; median of {repeats})")
    print(f"{'headless steps/s':>17} {'live app steps/s':>17} {'ratio':>7}   runs (headless | live)")
    print(f"{h:>17.1f} {v:>17.1f} {v / h:>6.2f}x   {[round(x, 1) for x in head]} | {[round(x, 1) for x in live]}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-app", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pin", action="store_true", help="server on core 0, browser on core 1")
    ap.add_argument("--steps", type=int, default=SPEC.steps, help="steps of the live and headless runs")
    args = ap.parse_args()
    SPEC = replace(SPEC, steps=args.steps)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    table_trainer(args.repeats)
    if not args.no_app:
        table_app(args.repeats, pin=args.pin)
