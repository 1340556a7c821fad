"""Classroom load bench: can one small server (or two behind HAProxy) hold a class of 10–60 students?

Starts the real server (`streamlit run app.py --server.headless true --server.fileWatcherType none
--browser.gatherUsageStats false`, on its own port, 127.0.0.1 only) and drives K students through a scripted
lesson (LESSON below: type a sentence, move layer/head, switch the mask, open the RoPE page, generate...):
  - 1 real headless Chromium page (Playwright, /usr/bin/chromium) measures what a student sees: input ->
    updated chart, end to end;
  - K-1 protocol-level clients (bench/loadclient.py) speak Streamlit's websocket protocol, so the server does
    the same work as for real tabs while the clients cost almost nothing (20 Chromium contexts take 8.7 GB).

Scenarios, all measured in one run:
  1. Saturation: max reruns/s of each page vs a bare page (bench/bare_app.py) sending the same bytes per rerun
     in the same number of charts.
  2. Realistic class: every student acts every 3-8 s (seeded), K = 10, 30, 60, one server process.
  3. The same class on two server processes behind HAProxy (deploy/haproxy.cfg, sticky cookie, websockets).
  4. The class at K=30 while two training runs go on (Train page).
Results: printed tables and bench/results/class_load.{md,json}.

Run:  .venv/bin/python bench/class_load.py                 # full run, about 10 minutes
      .venv/bin/python bench/class_load.py --quick         # 2-3 minute smoke run
      options: --k 10,30,60 --duration 40 --pages start,rope --replicas 2 --no-browser --seed 0

Extending the lesson when a page lands: add Step(...) rows to LESSON using the widget keys from pages/<page>.py
(`key="..."`). Steps whose page or widget does not exist are skipped, and the skip is printed with the keys the
page does have. SATURATION_ACTION picks which step of each page the saturation test repeats.

Every server and haproxy started here runs in its own process group and is killed in `finally`; every loop is
bounded in time and count; traffic goes only to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from loadclient import SUCCESS, LoadClientError, ProtocolSession  # noqa: E402

RESULTS = HERE / "results"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SENTENCES = ["The cat sat on the mat", "the dog chased the cat", "a bird sat on the tree",
             "the cat saw the dog and the bird", "the mat was red", "she read the book because it was long"]
MAX_ACTIONS_PER_STUDENT = 500     # hard bound on every loop, on top of the time bound
THINK_S = (3.0, 8.0)
FIRST_LOAD = "first page load"


@dataclass(frozen=True)
class Step:
    page: str                 # url path of the page (pages/<page>.py)
    action: str               # "open" | "set" | "click"
    key: str = ""             # widget key (from the page file)
    values: object = None     # literal, list (pick one at random) or "random"
    label: str = ""
    needs: tuple[str, str] | None = None   # (tabs key, tab label) that must be open for this widget to exist

    @property
    def name(self) -> str:
        return self.label or (f"open {self.page}" if self.action == "open" else f"{self.page}: {self.key}")


# The lesson every student loops over. Keys come from the page files; pages that do not exist yet are skipped.
LESSON = [
    Step("start", "open"),
    Step("start", "set", "start_text", SENTENCES, "type a sentence"),
    Step("start", "set", "start_layer", "random", "move the layer"),
    Step("start", "set", "start_head", "random", "move the head"),
    Step("explorer", "open"),
    Step("explorer", "set", "explorer_text", SENTENCES, "explorer: type a sentence"),
    Step("explorer", "set", "explorer_layer", "random", "explorer: layer"),
    Step("explorer", "set", "explorer_head", "random", "explorer: head"),
    Step("explorer", "set", "explorer_mask", "random", "explorer: switch the mask"),
    Step("explorer", "set", "explorer_tab", ["Query focus", "How sharp is each row?", "Pipeline"],
         "explorer: open a tab"),
    Step("masks", "open"),
    Step("masks", "set", "masks_kind", "random", "masks: switch the mask"),
    Step("masks", "set", "masks_head", "random", "masks: head"),
    Step("sinusoidal", "open"),
    Step("sinusoidal", "set", "sinusoidal_tab", "Shift matrix M_k", "sinusoidal: open a tab"),
    Step("sinusoidal", "set", "sinusoidal_k", list(range(1, 12)), "sinusoidal: shift k",
         needs=("sinusoidal_tab", "Shift matrix M_k")),
    Step("rope", "open"),
    Step("rope", "set", "rope_tab", "Pair rotation", "rope: open a tab"),
    Step("rope", "set", "rope_t", list(range(0, 20)), "rope: query position", needs=("rope_tab", "Pair rotation")),
    Step("rope", "set", "rope_pair", "random", "rope: pair", needs=("rope_tab", "Pair rotation")),
    Step("generate", "open"),
    Step("generate", "set", "generate_text", ["the cat", "the dog sat", "a bird"], "generate: type a prompt"),
    Step("generate", "click", "generate_next", None, "generate: next token"),
    Step("generate", "click", "generate_next", None, "generate: next token"),
    Step("qkv", "open"),
    Step("qkv", "set", "qkv_query", "random", "qkv: query token"),
    Step("qkv", "set", "qkv_layer", "random", "qkv: layer"),
    Step("encoder", "open"),
    Step("encoder", "set", "encoder_topk", list(range(1, 11)), "encoder: top k"),
    Step("encoder", "set", "encoder_layer", "random", "encoder: layer"),
    Step("encoder-decoder", "open"),
    Step("encoder-decoder", "set", "ed_text", ["the little dog slept under the old table", "The cat sat on the mat",
                                               "the keys near the dog are on the table"], "ed: a sentence"),
    Step("encoder-decoder", "click", "ed_next", None, "encoder-decoder: next word"),
    Step("recurrence", "open"),
    Step("recurrence", "set", "recurrence_tab", "2 · Gradient by distance", "rnn: open a tab"),
    Step("recurrence", "set", "recurrence_distance", list(range(4, 61)), "rnn: distance",
         needs=("recurrence_tab", "2 · Gradient by distance")),
    Step("normalization", "open"),
    Step("normalization", "set", "norm_seed", list(range(0, 100)), "normalization: seed"),
    Step("cost", "open"),
    Step("cost", "set", "cost_kv_layers", list(range(1, 97)), "cost: layers"),
]
# What the saturation test repeats back to back on each page (first matching `set` step of that page).
SATURATION_ACTION = {"start": "start_layer", "explorer": "explorer_layer", "masks": "masks_kind",
                     "sinusoidal": "sinusoidal_k", "rope": "rope_t", "generate": "generate_text",
                     "qkv": "qkv_query", "encoder": "encoder_topk", "encoder-decoder": "ed_text",
                     "recurrence": "recurrence_distance", "normalization": "norm_seed",
                     "cost": "cost_kv_layers", "train": None}
SATURATION_BAR = 0.8   # a page should rerun at least this fast relative to the matched bare page
TRAIN_START = Step("train", "click", "train_start", None, "start training")
TRAIN_STOP = Step("train", "click", "train_stop", None, "stop training")
NAV_LINKS = "[data-testid=stSidebar] a[data-testid=stPageLink-NavLink]"   # the sidebar's lesson links
ARRIVE = ""   # the query string every student arrives with (--model-dir: ?model_key=<the folder's picker label>)


# ---------------------------------------------------------------------------------------------------------
# servers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_env() -> dict:
    env = dict(os.environ)
    if not (ROOT / "assets" / "tokenizers" / "word.json").exists() and "ATTENTION_LAB_ASSETS" not in env:
        env["ATTENTION_LAB_ASSETS"] = "/tmp/tmpassets"     # until the shipped tokenizers land (see preamble)
    return env


class Procs:
    """Every process this bench starts, each in its own process group; kill_all() in a finally."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []
        self.logdir = Path(tempfile.mkdtemp(prefix="class_load_"))

    def start(self, name: str, cmd: list[str], env=None) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "w")
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        p.log_path = log.name
        self.procs.append(p)
        return p

    def stop(self, p: subprocess.Popen) -> None:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                with _quiet():
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        if p in self.procs:
            self.procs.remove(p)

    def kill_all(self) -> None:
        for p in list(self.procs):
            self.stop(p)


class _quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], ProcessLookupError | OSError)


def start_streamlit(procs: Procs, app: str = "app.py", name: str = "server") -> tuple[str, subprocess.Popen]:
    port = free_port()
    counter = procs.logdir / f"{name}-{port}.loads"
    env = app_env() | {"CLASSROOM_LOAD_COUNTER": str(counter)}
    cmd = [sys.executable, str(HERE / "_counted_streamlit.py"), "run", app, "--server.headless", "true",
           "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
           "--server.port", str(port), "--server.address", "127.0.0.1"]
    p = procs.start(f"{name}-{port}", cmd, env)
    p.counter = counter
    url = f"http://127.0.0.1:{port}"
    wait_health(url, p)
    return url, p


def wait_health(url: str, p: subprocess.Popen | None = None, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if p is not None and p.poll() is not None:
            raise RuntimeError(f"{p.args[:3]} exited; see {p.log_path}")
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not become healthy in {timeout:.0f} s")


def haproxy_config(front: int, ports: list[int]) -> str:
    """deploy/haproxy.cfg with this run's ports: the shipped file is exactly what is measured."""
    cfg = (ROOT / "deploy" / "haproxy.cfg").read_text()
    cfg = re.sub(r"^(\s*bind\s+)\S+", rf"\g<1>127.0.0.1:{front}", cfg, flags=re.M)
    for i, port in enumerate(ports, 1):
        cfg = re.sub(rf"^(\s*server\s+app{i}\s+)\S+", rf"\g<1>127.0.0.1:{port}", cfg, flags=re.M)
    return cfg


def start_haproxy(procs: Procs, ports: list[int]) -> tuple[str, subprocess.Popen]:
    exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(exe).exists():
        raise RuntimeError("haproxy is not installed: apt-get install -y haproxy")
    front = free_port()
    path = procs.logdir / "haproxy.cfg"
    path.write_text(haproxy_config(front, ports))
    p = procs.start("haproxy", [exe, "-f", str(path), "-db"])
    url = f"http://127.0.0.1:{front}"
    wait_health(url, p, 20)
    return url, p


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def model_loads(p: subprocess.Popen) -> dict[str, int]:
    """TinyTransformers built in this server so far, by who built them. `weights` = loaded by
    viz_model/ui/models.py or checkpoint.py (the shared cached models); the rest are per-request copies."""
    try:
        lines = Path(p.counter).read_text().splitlines()
    except OSError:
        lines = []
    out: dict[str, int] = {"weights": 0}
    for line in lines:
        if line.startswith(("models.py", "checkpoint.py")):
            out["weights"] += 1
        else:
            out[line] = out.get(line, 0) + 1
    return out


# ---------------------------------------------------------------------------------------------------------
# statistics
def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))]


@dataclass
class Stats:
    lat: list[float] = field(default_factory=list)
    by_step: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)

    def add(self, step: str, seconds: float) -> None:
        self.lat.append(seconds)
        self.by_step.setdefault(step, []).append(seconds)

    def summary(self) -> dict:
        """Headline numbers are interactions (input -> updated page); first page loads are reported apart."""
        act = [x for n, v in self.by_step.items() if n != FIRST_LOAD for x in v]
        load = self.by_step.get(FIRST_LOAD, [])
        return {"n": len(act), "p50": pct(act, 50), "p95": pct(act, 95), "max": max(act, default=float("nan")),
                "load_p50": pct(load, 50), "load_p95": pct(load, 95), "n_load": len(load),
                "errors": len(self.errors), "error_examples": sorted(set(self.errors))[:5]}


# ---------------------------------------------------------------------------------------------------------
# students
async def do_step(s: ProtocolSession, step: Step, rng: random.Random, stats: Stats, *, record=True) -> None:
    """One lesson step by a protocol client: skipped (and noted) when its page or widget doesn't exist."""
    try:
        if step.action == "open":
            if step.page not in s.pages and not (step.page == "start" and "" in s.pages):
                stats.skipped.add(f"{step.name}: no page {step.page!r} yet")
                return
            res = await s.open(step.page if step.page in s.pages else "")
        else:
            if not await _on_page(s, step, rng, stats):
                return
            if step.key not in s.widgets:
                stats.skipped.add(f"{step.name}: no widget key {step.key!r} on {step.page}; it has "
                                  f"{sorted(k for k in s.widgets if k.startswith(step.page))}")
                return
            res = await (s.click(step.key) if step.action == "click" else s.set(step.key, step.values, rng))
    except LoadClientError as e:
        stats.errors.append(f"{step.name}: {e}")
        return
    if record:
        stats.add(step.name, res.seconds)
    for x in res.exceptions + res.errors:
        stats.errors.append(f"{step.name}: {x[:160]}")
    if res.status not in SUCCESS:
        stats.errors.append(f"{step.name}: {res.status}")


async def _on_page(s: ProtocolSession, step: Step, rng, stats) -> bool:
    """Make sure the session shows step.page (a student who joined late opens it first)."""
    target = s.pages.get(step.page) or (s.pages.get("") if step.page == "start" else None)
    if target is None:
        stats.skipped.add(f"{step.name}: no page {step.page!r} yet")
        return False
    if s.page_hash != target:
        await do_step(s, Step(step.page, "open"), rng, stats)
    if step.needs and step.key not in s.widgets and step.needs[0] in s.widgets:   # open its tab first
        await do_step(s, Step(step.page, "set", *step.needs, f"{step.page}: open a tab"), rng, stats)
    return True


async def protocol_student(i: int, url: str, lesson: list[Step], seed: int, t_end: float, stats: Stats,
                           sticky: bool) -> None:
    rng = random.Random(seed * 1000 + i)
    await asyncio.sleep(rng.uniform(0, THINK_S[1]))          # students arrive over the first few seconds
    s = ProtocolSession(url, sticky=sticky, timeout=120)
    s.query_string = ARRIVE
    try:
        res = await s.connect("start")
        stats.add(FIRST_LOAD, res.seconds)
        idx = rng.randrange(len(lesson))                       # not all in lockstep
        for _ in range(MAX_ACTIONS_PER_STUDENT):
            await asyncio.sleep(rng.uniform(*THINK_S))
            if time.monotonic() >= t_end:
                break
            await do_step(s, lesson[idx % len(lesson)], rng, stats)
            idx += 1
    except (LoadClientError, OSError) as e:
        stats.errors.append(f"student {i}: {e}")
    finally:
        await s.close()


class BrowserStudent:
    """One real headless Chromium tab: times input -> script finished -> updated chart, as the student sees it.

    An init script wraps the page's WebSocket and counts ForwardMsgs whose top-level field 6 (script_finished)
    is not FINISHED_EARLY_FOR_RERUN (full runs and st.fragment runs both count), so the wait does not depend on
    the status widget (which a fast run never shows).
    """

    HOOK_JS = """(() => {
      window.__finished = 0; window.__oldPlots = [];
      const Orig = window.WebSocket;
      const varint = (b, i) => { let x = 0, s = 0, c; do { c = b[i++]; x += (c & 127) * 2 ** s; s += 7; }
                                 while (c & 128); return [x, i]; };
      class Hooked extends Orig {
        constructor(...a) {
          super(...a);
          this.addEventListener('message', ev => { try {
            if (!(ev.data instanceof ArrayBuffer)) return;
            const b = new Uint8Array(ev.data); let i = 0, t, n;
            while (i < b.length) {
              [t, i] = varint(b, i); const f = Math.floor(t / 8), w = t % 8;
              if (f === 6 && w === 0) { [n, i] = varint(b, i); if (n !== 2) window.__finished++; break; }
              if (w === 0) [, i] = varint(b, i); else if (w === 2) { [n, i] = varint(b, i); i += n; }
              else if (w === 1) i += 8; else if (w === 5) i += 4; else break;
            } } catch (e) {} });
        }
      }
      window.WebSocket = Hooked;
    })();"""
    MARK_JS = """() => { window.__oldPlots = Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => p.data);
                         return window.__finished; }"""
    FINISHED_JS = "(n) => window.__finished > n"
    CHART_JS = """() => { const ps = Array.from(document.querySelectorAll('.js-plotly-plot'));
        return ps.length > 0 && ps.every(p => p._fullData) && ps.some(p => !window.__oldPlots.includes(p.data)); }"""
    KIND_JS = """(key) => { const c = document.querySelector('.st-key-' + CSS.escape(key)); if (!c) return null;
        if (c.matches('[data-testid=stTabs]')) return 'tabs';
        const has = (id) => c.querySelector('[data-testid=' + id + ']');
        for (const [id, kind] of [['stButtonGroup', 'button_group'], ['stSelectbox', 'selectbox'],
             ['stSlider', 'slider'], ['stRadio', 'radio'], ['stTextInput', 'text'], ['stTextArea', 'text'],
             ['stCheckbox', 'checkbox'], ['stButton', 'button']]) if (has(id)) return kind;
        return 'other'; }"""

    REVEAL_JS = """(key) => { let c = document.querySelector('.st-key-' + CSS.escape(key));
        const own = (root, sel) => Array.from(root.querySelectorAll(sel))
                                        .filter(e => e.closest('[data-testid=stTabs]') === root);
        for (; c; c = c.parentElement) {
          if (c.matches('[data-testid=stExpander] details:not([open])')) c.querySelector('summary').click();
          if (c.matches('[data-testid=stTabPanel]')) {
            const tabs = c.closest('[data-testid=stTabs]');
            const i = own(tabs, '[data-testid=stTabPanel]').indexOf(c);
            own(tabs, '[role=tab]')[i]?.click();
          }
        } }"""

    def __init__(self, url: str, seed: int, timeout_s: float = 60):
        self.url, self.rng, self.timeout_ms = url, random.Random(seed), timeout_s * 1000
        self.pw = self.browser = self.page = None
        self.on_page = "start"

    async def start(self):
        from playwright.async_api import async_playwright

        self.pw = await async_playwright().start()
        exe = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()), None)
        self.browser = await self.pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_FLAGS)
        ctx = await self.browser.new_context(viewport={"width": 1400, "height": 1000})
        await ctx.add_init_script(self.HOOK_JS)
        self.page = await ctx.new_page()
        self.page.set_default_timeout(self.timeout_ms)

    async def close(self):
        with _quiet():
            if self.browser:
                await self.browser.close()
            if self.pw:
                await self.pw.stop()

    async def load(self, path: str = "") -> float:
        """Page load to first chart drawn (first script run finished)."""
        t0 = time.perf_counter()
        await self.page.goto(f"{self.url}/{path}" + (f"?{ARRIVE}" if ARRIVE else ""))
        await self.page.wait_for_function(self.FINISHED_JS, arg=0)
        await self.page.wait_for_function(self.CHART_JS)
        self.on_page = path or "start"
        return time.perf_counter() - t0

    async def step(self, step: Step) -> float | str:
        """Seconds from input to updated chart, or a string saying why the step was skipped."""
        pg = self.page
        if step.action == "open" and self.on_page == step.page:
            return f"already on {step.page}"
        if step.action == "open":
            hrefs = await pg.evaluate(f"() => Array.from(document.querySelectorAll('{NAV_LINKS}'), "
                                      "a => new URL(a.href).pathname)")
            idx = next((i for i, h in enumerate(hrefs) if h.rstrip("/").endswith("/" + step.page)), None)
            if idx is None and step.page == "start" and "/" in hrefs:
                idx = hrefs.index("/")
            if idx is None and step.page == "start" and hrefs:  # the default page's link has an empty href (it
                idx = 0                                          # reads as the current page's URL); listed first
            if idx is None:
                return f"no sidebar link to {step.page!r}"
            before = await pg.evaluate(self.MARK_JS)
            t0 = time.perf_counter()
            await pg.locator(NAV_LINKS).nth(idx).click()
            self.on_page = step.page
        else:
            if self.on_page != step.page:
                r = await self.step(Step(step.page, "open"))
                if isinstance(r, str):
                    return r
            kind = await pg.evaluate(self.KIND_JS, step.key)
            if kind is None and step.needs:       # the widget lives in a tab that runs only when open
                await self.step(Step(step.page, "set", *step.needs, f"{step.page}: open a tab"))
                kind = await pg.evaluate(self.KIND_JS, step.key)
            if kind is None:
                return f"no widget .st-key-{step.key} on {step.page}"
            if not await pg.locator(f".st-key-{step.key}").first.is_visible():
                await pg.evaluate(self.REVEAL_JS, step.key)        # the student opens the expander / tab first
                await pg.wait_for_timeout(1500)
            before = await pg.evaluate(self.MARK_JS)
            t0 = await self._act(pg.locator(f".st-key-{step.key}"), kind, step)
            if t0 is None:
                return f"widget kind {kind} of {step.key} not driven by the browser client"
        await pg.wait_for_function(self.FINISHED_JS, arg=before, timeout=self.timeout_ms)
        t_fin = time.perf_counter()
        try:       # the run is over; now the chart it sent must be drawn (a step may change no chart at all)
            await pg.wait_for_function(self.CHART_JS, timeout=5000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: no chart changed, the run's end counts
            return t_fin - t0
        await pg.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
        return time.perf_counter() - t0

    async def _act(self, box, kind: str, step: Step) -> float | None:
        """Drive the widget; return the time of the committing input (Enter, option click, pointer up), so
        opening a dropdown or typing is not counted as server time; None if this kind is not driven."""
        pg, rng = self.page, self.rng
        if kind == "text":
            field_ = box.locator("textarea, input").first
            cur = await field_.input_value()
            vals = [v for v in (step.values if isinstance(step.values, list) else SENTENCES) if v != cur]
            await field_.fill(rng.choice(vals))
            t0 = time.perf_counter()
            await field_.press("Enter")
        elif kind == "selectbox":
            cur = await box.locator("input").first.input_value()
            opts = pg.locator('[role="option"]')
            for attempt in range(3):          # the list sometimes needs a second click while the page re-renders
                await box.locator("button[aria-haspopup=listbox]").first.click()
                try:
                    await opts.first.wait_for(timeout=5000)
                    break
                except Exception:  # noqa: BLE001 - playwright TimeoutError
                    if attempt == 2:
                        raise
            texts = [t.strip() for t in await opts.all_inner_texts()]
            free = [i for i, t in enumerate(texts) if t != cur]
            if not free:
                await pg.keyboard.press("Escape")
                return None
            t0 = time.perf_counter()
            await opts.nth(rng.choice(free)).click()
        elif kind == "radio":
            inputs = box.locator("input[type=radio]")
            n = await inputs.count()
            free = [i for i in range(n) if not await inputs.nth(i).is_checked()]
            if not free:
                return None
            t0 = time.perf_counter()
            await box.locator("[data-testid=stRadioOption] [data-testid=stMarkdownContainer]").nth(
                rng.choice(free)).click()
        elif kind == "slider":
            # click the track somewhere else than the thumb: a pointer up commits the value, like a student's click
            track = await box.locator("[role=group] > div").first.bounding_box()
            thumb = await box.locator("[role=group] > div > div[style*=left]").first.bounding_box()
            if not track or not thumb:
                return None
            at = thumb["x"] + thumb["width"] / 2
            xs = [track["x"] + track["width"] * f for f in (0.05, 0.15, 0.25, 0.35, 0.5)]
            x = rng.choice([x for x in xs if abs(x - at) > 8] or xs)
            t0 = time.perf_counter()
            await pg.mouse.click(x, track["y"] + track["height"] / 2)
        elif kind == "button_group":
            buttons = box.locator("button")
            n = await buttons.count()
            free = [i for i in range(n) if await buttons.nth(i).get_attribute("aria-checked") != "true"]
            if not free:
                return None
            t0 = time.perf_counter()
            await buttons.nth(rng.choice(free)).click()
        elif kind == "tabs":
            tabs = box.first.locator("[role=tab]")
            labels = [t.strip() for t in await tabs.all_inner_texts()]
            current = await box.first.locator("[role=tab][aria-selected=true]").inner_text()
            wanted = step.values if isinstance(step.values, list) else [step.values]
            free = [lab for lab in wanted if lab in labels and lab != current.strip()]
            if not free:
                return None
            t0 = time.perf_counter()
            await tabs.nth(labels.index(rng.choice(free))).click()
        elif kind in ("button", "checkbox"):
            t0 = time.perf_counter()
            await box.locator("button, label").first.click()
        else:
            return None
        return t0


async def browser_student(url: str, lesson: list[Step], seed: int, t_end: float, stats: Stats) -> None:
    b = BrowserStudent(url, seed)
    try:
        await b.start()
        stats.add(FIRST_LOAD, await b.load(""))
        idx = 0
        for _ in range(MAX_ACTIONS_PER_STUDENT):
            await asyncio.sleep(b.rng.uniform(*THINK_S))
            if time.monotonic() >= t_end:
                break
            step = lesson[idx % len(lesson)]
            idx += 1
            try:
                r = await b.step(step)
            except Exception as e:  # noqa: BLE001 - a timeout or a detached element is a measured error
                stats.errors.append(f"{step.name}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                continue
            if isinstance(r, str):
                if not r.startswith("already on"):
                    stats.skipped.add(f"{step.name}: {r}")
            else:
                stats.add(step.name, r)
    except Exception as e:  # noqa: BLE001
        stats.errors.append(f"browser: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    finally:
        await b.close()


# ---------------------------------------------------------------------------------------------------------
# scenarios
async def warm_up(url: str, lesson: list[Step]) -> Stats:
    """One session through every step once: fills caches (models, cache_data) so the class measures steady
    state, and tells which steps are skipped."""
    stats = Stats()
    s = ProtocolSession(url, timeout=180)
    s.query_string = ARRIVE
    try:
        await s.connect("start")
        rng = random.Random(0)
        for step in lesson:
            await do_step(s, step, rng, stats)
    finally:
        await s.close()
    return stats


async def realistic_class(urls: list[str], servers: list[subprocess.Popen], k: int, duration: float, seed: int,
                          lesson: list[Step], browser: bool, sticky: bool, training: bool = False) -> dict:
    front = urls[0]
    for u in urls[1:] if len(urls) > 1 else urls:
        await warm_up(u, lesson)
    if len(urls) > 1:          # warm both backends through the proxy too (leastconn spreads the warm-ups)
        await asyncio.gather(*(warm_up(front, lesson) for _ in range(2)))
    trainers = []
    train_note = ""
    if training:
        trainers, train_note = await start_training(front, 2)
    base_rss = sum(rss_mb(p.pid) for p in servers)
    base_loads = [model_loads(s) for s in servers]
    peak = base_rss
    t_end = time.monotonic() + duration
    proto, brow = Stats(), Stats()
    tasks = [asyncio.create_task(protocol_student(i, front, lesson, seed, t_end, proto, sticky))
             for i in range(k - 1 if browser else k)]
    if browser:
        tasks.append(asyncio.create_task(browser_student(front, lesson, seed, t_end, brow)))
    while not all(t.done() for t in tasks) and time.monotonic() < t_end + 150:
        peak = max(peak, sum(rss_mb(p.pid) for p in servers))
        await asyncio.sleep(1)
    end_rss = sum(rss_mb(p.pid) for p in servers)    # sessions still open until each student's close()
    for t in tasks:
        if not t.done():
            t.cancel()
            proto.errors.append("student still waiting after the time limit")
    await asyncio.gather(*tasks, return_exceptions=True)
    for t in trainers:
        with _quiet():
            await do_step(t, TRAIN_STOP, random.Random(0), Stats(), record=False)
            await t.close()
    peak = max(peak, end_rss)
    b, p = brow.summary(), proto.summary()
    return {"k": k, "processes": len(servers), "training": training, "train_note": train_note,
            "browser": b, "protocol": p, "rss_base_mb": base_rss, "rss_peak_mb": peak,
            "mb_per_session": (peak - base_rss) / k, "model_loads": [model_loads(s) for s in servers],
            "model_loads_base": base_loads,
            "by_step": {n: {"n": len(v), "p50": pct(v, 50), "p95": pct(v, 95)}
                        for n, v in sorted((proto.by_step | {f"[browser] {a}": c for a, c in brow.by_step.items()})
                                           .items())},
            "skipped": sorted(proto.skipped | brow.skipped),
            "errors": (proto.errors + brow.errors)[:20]}


async def start_training(url: str, n: int) -> tuple[list[ProtocolSession], str]:
    sessions, notes = [], []
    for _ in range(n):
        s = ProtocolSession(url, timeout=120)
        st_ = Stats()
        await s.connect("start")
        if "train" not in s.pages:
            await s.close()
            return sessions, "pending: there is no Train page yet"
        await do_step(s, TRAIN_START, random.Random(0), st_, record=False)
        notes += st_.errors + sorted(st_.skipped)
        sessions.append(s)
    return sessions, "; ".join(notes) or f"{n} training runs started"


async def saturation(app_url: str, bare_url: str, pages: list[str], n_clients: int, seconds: float) -> list[dict]:
    """Reruns/s with n_clients firing back to back, page by page, each next to the bare page sending the same
    number of bytes per rerun in the same number of charts (measured in the same run)."""
    a, b = await bare_bytes(bare_url, 8), await bare_bytes(bare_url, 256)
    per_cell = (b - a) / (256 ** 2 - 8 ** 2)
    rows = []
    for page in pages:
        key = SATURATION_ACTION.get(page)
        step = next((s for s in LESSON if s.page == page and s.key == key), None)
        if step is None and key:
            step = Step(page, "set", key, "random")
        if step is None:
            rows.append({"page": page, "skipped": f"no saturation action for {page}"})
            continue
        measured = await page_bytes(app_url, step)
        if measured is None:
            rows.append({"page": page, "skipped": f"page or widget {step.key} missing"})
            continue
        nbytes, charts = measured
        k = max(charts, 1)
        cells = int(min(1500, max(2, math.sqrt(max(nbytes / k - (a - per_cell * 64), 0) / per_cell))))
        query = f"cells={cells}&charts={k}"
        ours = await hammer(app_url, step, n_clients, seconds)
        bare = await hammer(bare_url, Step("", "set", "bare_seed", "random"), n_clients, seconds, query=query)
        rows.append({"page": page, "bytes_per_rerun": nbytes, "charts": charts, "bare_cells": cells, "bare_charts": k,
                     "bare_bytes": await bare_bytes(bare_url, cells, k), "page_rps": ours["rps"],
                     "bare_rps": bare["rps"], "ratio": ours["rps"] / bare["rps"] if bare["rps"] else float("nan"),
                     "page_p50": ours["p50"], "bare_p50": bare["p50"], "errors": ours["errors"] + bare["errors"]})
    return rows


async def bare_bytes(url: str, cells: int, charts: int = 1) -> int:
    s = ProtocolSession(url, cache=False)
    s.query_string = f"cells={cells}&charts={charts}"
    try:
        await s.connect()
        return (await s.set("bare_seed", 1)).n_bytes
    finally:
        await s.close()


async def page_bytes(url: str, step: Step) -> tuple[int, int] | None:
    """(bytes, charts) the page sends for one `step` (median of three), or None when it has no such widget."""
    s = ProtocolSession(url, cache=False, timeout=180)
    s.query_string = ARRIVE
    stats = Stats()
    try:
        await s.connect("start")
        if not await _on_page(s, step, random.Random(0), stats) or step.key not in s.widgets:
            return None
        runs = [await s.set(step.key, step.values, random.Random(i)) for i in range(3)]
        return int(statistics.median(r.n_bytes for r in runs)), int(statistics.median(len(r.charts) for r in runs))
    finally:
        await s.close()


async def hammer(url: str, step: Step, n: int, seconds: float, query: str = "") -> dict:
    """n clients, each rerunning `step` back to back; reruns completed per second after a 1 s ramp."""
    done: list[tuple[float, float]] = []
    errors = 0

    async def one(i: int):
        nonlocal errors
        s = ProtocolSession(url, timeout=120)
        s.query_string = query or ARRIVE
        rng = random.Random(i)
        try:
            await s.connect("start" if step.page else "")
            if step.page:
                await _on_page(s, step, rng, Stats())
            start = time.monotonic()
            for _ in range(10_000):
                if time.monotonic() - start > seconds:
                    break
                r = await s.set(step.key, step.values, rng)
                done.append((time.monotonic(), r.seconds))
                errors += len(r.exceptions) + len(r.errors)
        except LoadClientError:
            errors += 1
        finally:
            await s.close()

    t0 = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(n)))
    lo = min((t for t, _ in done), default=t0) + 1.0
    win = [d for t, d in done if t >= lo]
    span = max((t for t, _ in done), default=lo) - lo
    return {"rps": len(win) / span if span > 0 else float("nan"), "p50": pct([d for _, d in done], 50),
            "errors": errors}


# ---------------------------------------------------------------------------------------------------------
# report
def ms(x: float) -> str:
    return "—" if x != x else f"{x * 1000:,.0f}"


def table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def render(res: dict) -> str:
    parts = [f"# Classroom load — {res['when']}", "",
             f"Machine: {res['cpus']} CPUs, load average before the run {res['loadavg']}. "
             f"Think time {THINK_S[0]:.0f}–{THINK_S[1]:.0f} s, {res['duration']:.0f} s per class scenario, "
             f"seed {res['seed']}. Browser = 1 headless Chromium tab (input → updated chart); protocol = the other "
             "K−1 students (BackMsg sent → script_finished).", ""]
    if res.get("saturation"):
        parts += ["## Saturation (reruns/s, clients firing back to back)", ""]
        rows = []
        for r in res["saturation"]:
            if "skipped" in r:
                rows.append([r["page"], "skipped: " + r["skipped"], "", "", "", "", ""])
                continue
            rows.append([r["page"], f"{r['bytes_per_rerun']:,} in {r.get('charts', 1)}",
                         f"{r['page_rps']:.1f} (p50 {ms(r['page_p50'])} ms)",
                         f"{r.get('bare_charts', 1)} × {r['bare_cells']}² → {r['bare_bytes']:,} B",
                         f"{r['bare_rps']:.1f} (p50 {ms(r['bare_p50'])} ms)",
                         f"{r['ratio']:.2f} {'✓' if r['ratio'] >= SATURATION_BAR else '✗'}", r["errors"]])
        parts += [table(["page", "bytes/rerun in charts", "page reruns/s", "bare charts", "bare reruns/s",
                         f"ratio (≥ {SATURATION_BAR})", "errors"], rows), ""]
    parts += ["## Realistic class", ""]
    rows = []
    for r in res["classes"]:
        b, p = r["browser"], r["protocol"]
        setup = f"{r['processes']} process{'es' if r['processes'] > 1 else ''}" + (" + 2 training" if r["training"]
                                                                                    else "")
        holds = "✓" if b["p95"] <= 2 and b["errors"] + p["errors"] == 0 else "✗"
        rows.append([setup, r["k"], f"{ms(b['p50'])} / {ms(b['p95'])} (n={b['n']})",
                     f"{ms(b['load_p50'])} / {ms(p['load_p50'])} / {ms(p['load_p95'])}",
                     f"{ms(p['p50'])} / {ms(p['p95'])} (n={p['n']})", b["errors"] + p["errors"],
                     f"{r['rss_base_mb']:.0f} → {r['rss_peak_mb']:.0f}", f"{r['mb_per_session']:.1f}",
                     " + ".join(f"{a['weights']}→{z['weights']}" for a, z in zip(r["model_loads_base"],
                                                                                r["model_loads"])), holds])
    parts += [table(["setup", "K", "browser p50 / p95 ms", "first load ms: browser / protocol p50 / p95",
                     "protocol p50 / p95 ms", "errors", "server RSS MB",
                     "MB/session", "weights loaded (warm → end)", "p95 ≤ 2 s, 0 errors"], rows), ""]
    for label, val in res.get("largest_k", {}).items():
        parts.append(f"- Largest K holding browser p95 ≤ 2 s with zero errors, {label}: **{val}**")
    for r in res["classes"]:
        if r["training"]:
            parts.append(f"- Training scenario: {r['train_note']}")
    if res.get("training_pending"):
        parts.append(f"- Training scenario: {res['training_pending']}")
    parts.append("")
    for r in res["classes"]:
        parts += [f"### Per step, {r['k']} students, {r['processes']} process(es)"
                  f"{', training' if r['training'] else ''} (p50 / p95 ms)", ""]
        parts += [table(["step", "n", "p50", "p95"], [[n, v["n"], ms(v["p50"]), ms(v["p95"])]
                                                      for n, v in r["by_step"].items()]), ""]
        if r["errors"]:
            parts += ["Errors (first 20):", ""] + [f"- {e}" for e in r["errors"]] + [""]
    skipped = sorted({s for r in res["classes"] for s in r["skipped"]})
    if skipped:
        parts += ["## Skipped lesson steps", ""] + [f"- {s}" for s in skipped] + [""]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------------------
async def main_async(args, procs: Procs) -> dict:
    if args.replicas > 1 and not (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()):  # fail now
        raise SystemExit("haproxy is not installed (apt-get install -y haproxy), or pass --replicas 1")
    lesson = [s for s in LESSON if not args.pages or s.page in args.pages]
    res = {"when": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "loadavg": os.getloadavg()[0],
           "duration": args.duration, "seed": args.seed, "saturation": [], "classes": []}
    if not args.no_saturation:
        print("== saturation", flush=True)
        app_url, app_p = start_streamlit(procs, "app.py", "sat-app")
        bare_url, bare_p = start_streamlit(procs, "bench/bare_app.py", "sat-bare")
        await warm_up(app_url, lesson)
        pages = args.pages or list(dict.fromkeys(s.page for s in LESSON))
        res["saturation"] = await saturation(app_url, bare_url, pages, args.sat_clients, args.sat_seconds)
        procs.stop(app_p)
        procs.stop(bare_p)
        print(render(res | {"classes": []}).split("## Realistic")[0], flush=True)
    scenarios = [(1, k, False) for k in args.k]
    if args.replicas > 1:
        scenarios += [(args.replicas, k, False) for k in args.k]
    if not args.no_training:
        scenarios.append((1, args.train_k, True))
    for n_proc, k, training in scenarios:
        print(f"== class: {k} students, {n_proc} process(es){', 2 training runs' if training else ''}", flush=True)
        started = [start_streamlit(procs, "app.py", f"app{i}") for i in range(n_proc)]
        urls, servers = [u for u, _ in started], [p for _, p in started]
        hp = None
        if n_proc > 1:
            front, hp = start_haproxy(procs, [int(u.rsplit(":", 1)[1]) for u in urls])
            urls = [front, *urls]
        try:
            r = await realistic_class(urls, servers, k, args.duration, args.seed, lesson, not args.no_browser,
                                      sticky=n_proc > 1, training=training)
        finally:
            for p in servers + ([hp] if hp else []):
                procs.stop(p)
        if training and r["train_note"].startswith("pending"):
            res["training_pending"] = r["train_note"]
            print("   training scenario:", r["train_note"], flush=True)
            continue
        res["classes"].append(r)
        b, p = r["browser"], r["protocol"]
        print(f"   browser p50 {ms(b['p50'])} p95 {ms(b['p95'])} ms (n={b['n']}), protocol p50 {ms(p['p50'])} "
              f"p95 {ms(p['p95'])} ms (n={p['n']}), errors {b['errors'] + p['errors']}, "
              f"{r['mb_per_session']:.1f} MB/session, models built {r['model_loads']}", flush=True)
    for n_proc in sorted({c["processes"] for c in res["classes"]}):
        ok = [c["k"] for c in res["classes"] if c["processes"] == n_proc and not c["training"]
              and c["browser"]["p95"] <= 2 and c["browser"]["errors"] + c["protocol"]["errors"] == 0]
        res.setdefault("largest_k", {})[f"{n_proc} process(es)"] = max(ok) if ok else "none of the tested K"
    return res


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", default="10,30,60", help="class sizes, comma separated")
    ap.add_argument("--duration", type=float, default=35, help="seconds per class scenario")
    ap.add_argument("--quick", action="store_true", help="smoke run, 2-3 minutes (K=3, short scenarios, start+rope)")
    ap.add_argument("--pages", default="", help="only these pages (comma separated url paths)")
    ap.add_argument("--replicas", type=int, default=2, help="server processes behind HAProxy (<2: skip)")
    ap.add_argument("--sat-clients", type=int, default=6)
    ap.add_argument("--sat-seconds", type=float, default=6)
    ap.add_argument("--train-k", type=int, default=30)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-saturation", action="store_true")
    ap.add_argument("--no-training", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--words", type=int, default=0, help="lengthen every lesson sentence to this many words (32: "
                    "about T = 32 tokens)")
    ap.add_argument("--model-label", default="", help="every student on the model the sidebar lists under this label "
                    "(e.g. 'Classroom model (RoPE, 186 words)')")
    ap.add_argument("--model-dir", default="", help="a Hugging Face model folder (e.g. bench/gpt2_small.py's): the "
                    "server lists it (ATTENTION_LAB_MODEL_DIRS) and every student opens it by ?model_key=")
    ap.add_argument("--out", default=str(RESULTS / "class_load"), help="writes OUT.md and OUT.json")
    a = ap.parse_args(argv)
    a.k = [int(x) for x in a.k.split(",") if x]
    a.pages = [x for x in a.pages.split(",") if x]
    if a.quick:
        a.k, a.duration, a.sat_seconds, a.sat_clients, a.train_k = [3], 20, 3, 3, 3
        a.pages = a.pages or ["start", "rope"]
    return a


def arrive_on(label: str) -> None:
    """Every student opens the app on the model the sidebar lists under this label (?model_key=label)."""
    global ARRIVE
    from urllib.parse import quote_plus

    ARRIVE = "model_key=" + quote_plus(label)


def use_model_dir(folder: str) -> str:
    """Point the servers at one model folder and every student at it; returns its picker label."""
    from viz_model.hf import ENV_VAR
    from viz_model.ui.models import folder_models

    os.environ[ENV_VAR] = str(Path(folder).resolve())   # app_env() hands os.environ to every server
    entry = next((e for e in folder_models() if e.problem is None), None)
    if entry is None:
        raise SystemExit(f"{folder} is not a model folder the app can load")
    arrive_on(entry.title)
    return entry.title


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.model_dir:
        print("every student on", use_model_dir(args.model_dir), flush=True)
    elif args.model_label:
        arrive_on(args.model_label)
    if args.words:   # in place: the lesson's steps and the browser read this list
        SENTENCES[:] = [" ".join(s.split()[i % len(s.split())] for i in range(args.words)) for s in SENTENCES]
    procs = Procs()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # `timeout`/kill still runs the finally below
    t0 = time.time()
    try:
        res = asyncio.run(main_async(args, procs))
    finally:
        procs.kill_all()
    res["wall_s"] = time.time() - t0
    md = render(res)
    print(md)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(md + f"\n\nWhole run: {res['wall_s']:.0f} s. Server logs: {procs.logdir}\n")
    out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str))
    print(f"wrote {out.with_suffix('.md')} and .json ({res['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
