"""Shared fixtures: seeded torch, AppTest factory, and a real `streamlit run` server + headless Chromium."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
# The app lists models/ when ATTENTION_LAB_MODEL_DIRS is unset: point that at a folder that never exists, so models
# downloaded with `make models` never enter the suite (the servers started here inherit it).
os.environ["ATTENTION_LAB_MODELS_HOME"] = str(ARTIFACTS / "no-models-here")
# The app opens on the English model; most of the suite's expectations were written on the classroom model (word
# tokens, its heads), so the suite's servers and AppTests start on it. Tests of the English model name it
# (tests/test_english*.py, tests/test_browser_english.py), and test_english_is_the_shipped_default checks the default.
os.environ.setdefault("ATTENTION_LAB_DEFAULT_MODEL", "classroom")
A11Y_NOTES: list[str] = []  # the moderate and minor axe findings (tests/test_browser_accessibility.py)


WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... under `pytest -n` (pytest-xdist); "" alone


def pytest_collection_modifyitems(items):
    """The browser tests first, in their files' order (a stable sort): they are the long ones, so under `pytest -n`
    the workers end together on short tests instead of one worker finishing a long browser file alone."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is None)


def pytest_sessionstart(session):
    if not WORKER:  # the run itself (alone, or xdist's controller): no notes left from an earlier run
        for old in ARTIFACTS.glob("axe-notes-*.txt"):
            old.unlink()


def pytest_sessionfinish(session):
    """Each process writes the axe notes it gathered; the run's summary (below) reads them all."""
    if A11Y_NOTES:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / f"axe-notes-{WORKER or 'main'}.txt").write_text("\n".join(A11Y_NOTES) + "\n")


def pytest_terminal_summary(terminalreporter):
    """List what the accessibility audit found but does not fail on, at the end of the run and in a file (under
    `pytest -n` each worker gathers its own: their files are read here, in the process that reports)."""
    notes = [line for f in sorted(ARTIFACTS.glob("axe-notes-*.txt")) for line in f.read_text().splitlines()]
    if notes:
        terminalreporter.section(f"axe-core: {len(notes)} moderate or minor findings (not failing)")
        for line in notes:
            terminalreporter.write_line(line)
        (ARTIFACTS / "axe.txt").write_text("\n".join(notes) + "\n")


# Reduced motion (a user's setting the app must work with) skips Streamlit's and the charts' cosmetic animations:
# the renderer's CPU over three pages' audits fell from 53 to 46 s, and the suite's browser tests are CPU-bound.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--force-prefers-reduced-motion", "--disable-smooth-scrolling"]
# Opening a page by URL makes Streamlit probe <page>/_stcore/health and host-config first: two harmless 404s.
IGNORED_CONSOLE = ("/_stcore/health", "/_stcore/host-config")


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """As app.py does: tiny tensors on a shared 2-core machine run far faster on one torch thread.
    ATTENTION_LAB_TORCH_THREADS=2, which app.py reads too, runs the suite and its apps on two instead, to show that no
    test depends on the thread count (a reduction split over two threads adds in another order: #38)."""
    before = torch.get_num_threads()
    torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", "1")))
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def tok():
    """The shipped word tokenizer (the classroom models' vocabulary)."""
    from viz_model.tokenizer import load_tokenizer

    return load_tokenizer("word")


def named(fig: dict, name: str) -> dict:
    """The trace called `name` of a figure's JSON spec."""
    return next(t for t in fig["data"] if t.get("name") == name)


def plotly_array(v, dtype=None) -> np.ndarray:
    """A trace array from a figure's JSON: Plotly stores numpy arrays as {"dtype", "bdata"(, "shape")} (base64);
    a plain list is returned as an array (dtype=float turns None into NaN)."""
    if isinstance(v, dict) and "bdata" in v:
        flat = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return flat.reshape([int(n) for n in str(v.get("shape", len(flat))).split(",")])
    return np.asarray(v, dtype=dtype)


@pytest.fixture
def app_test():
    """AppTest of app.py opened on a page: `at = app_test("app_pages/masks.py")`."""
    return open_app


def open_app(page: str | None = None, timeout: float = 90, query: dict | None = None):
    """app.py run once in AppTest (opened with the link's `query` parameters), then switched to `page` (a
    module-scoped fixture can call this directly)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def run_folder(tmp_path_factory) -> Path:
    """A folder this whole run shares: under `pytest -n`, the workers' common parent of their temp folders (each
    worker's own base temp is popen-gwN inside it); alone, this process's base temp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if WORKER else base


HANDOUT_NOW = "2026-12-05T09:30:00+00:00"  # the date every handout in the suite is stamped with


@pytest.fixture(scope="session")
def handout_files(tmp_path_factory) -> dict[str, Path]:
    """Every built-in lecture's handout, on its lecture's model, written to a file once per run: the first worker to
    ask builds them under a file lock, the others wait for it and read the files (a build takes 20-30 s of CPU, and
    tests/test_handout.py and tests/test_browser_handout.py both read them)."""
    import datetime as dt
    import fcntl

    from viz_model.handout.build import build_handout, shipped_loader
    from viz_model.handout.views import Models
    from viz_model.lectures import builtin_lectures

    folder = run_folder(tmp_path_factory) / "handouts"
    folder.mkdir(exist_ok=True)
    lectures = builtin_lectures()
    files = {name: folder / f"{name}.html" for name in lectures}
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held while building: a second worker waits here, then finds the files
        if not (folder / ".done").exists():
            load = shipped_loader()
            for name, lec in lectures.items():
                key = lec.model or "classroom"
                text = build_handout(lec, Models(key, load(key), load), lecture_name=name,
                                     now=dt.datetime.fromisoformat(HANDOUT_NOW))
                files[name].write_text(text, encoding="utf-8")
            (folder / ".done").touch()
    return files


@pytest.fixture(scope="module")
def classroom():
    """The shipped classroom checkpoint, loaded once per test module."""
    from viz_model.checkpoint import load_checkpoint

    return load_checkpoint(ROOT / "assets" / "models" / "classroom.safetensors")


@pytest.fixture(scope="module")
def english_model():
    """The shipped English checkpoint, loaded once per test module."""
    from viz_model.checkpoint import load_checkpoint

    return load_checkpoint(ROOT / "assets" / "models" / "english.safetensors")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_path() -> str:
    for p in (os.environ.get("CHROMIUM_PATH"), "/usr/bin/chromium", "/usr/bin/chromium-browser",
              shutil.which("chromium") or ""):
        if p and Path(p).exists():
            return p
    raise RuntimeError("No Chromium found: run `make browser-deps` or set CHROMIUM_PATH.")


@contextlib.contextmanager
def streamlit_server(log_name: str = "streamlit.log", env: dict | None = None):
    """A real `streamlit run app.py` on a free port, yielding its URL once /_stcore/health answers; stopped after."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = _free_port()
    if WORKER:  # each xdist worker's servers log to files of their own
        log_name = log_name.replace(".log", f"-{WORKER}.log")
    log = open(ARTIFACTS / log_name, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)  # polling the server's health endpoint until it answers (a condition, bounded)
    else:
        proc.terminate()
        raise RuntimeError(f"streamlit did not start; see test-artifacts/{log_name}")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def server_url():
    """One real Streamlit server for the whole browser test session."""
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)  # a condition, not a time: a busy 2-core CI machine may need long for it

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


class ConsoleLog(list):
    def errors(self) -> list[str]:
        return [m for m in self if not any(s in m for s in IGNORED_CONSOLE)]


@contextlib.contextmanager
def browser_page(browser, base_url: str, **context):
    """A fresh browser page on base_url (in a context of its own: `context`, Playwright's new_context options, a
    1400 x 1000 window unless they say otherwise); `page.console` collects console errors and page errors."""
    ctx = browser.new_context(**({"viewport": {"width": 1400, "height": 1000}} | context))
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.console = ConsoleLog()
    pg.on("console", lambda m: m.type == "error" and pg.console.append(f"{m.text} @ {m.location.get('url', '')}"))
    pg.on("pageerror", lambda e: pg.console.append(f"pageerror: {e}"))
    pg.base_url = base_url
    try:
        yield pg
    finally:
        ctx.close()


class ReusedPage:
    """The plain browser tests' page, kept from test to test in this process: each test opens its URL afresh, which
    starts a Streamlit session of its own (a reload keeps no session state), but in the same renderer process, whose
    compiled JavaScript is kept: a page load takes 2.7 s of wall time where a fresh context's took 4.5 s (Masks,
    measured alone; ten tests of test_browser_state.py 92 s against 109 s). Between tests: about:blank (the last
    test's session closes), the usual window size, an empty console log; a page that cannot be reset is replaced."""

    VIEWPORT = {"width": 1400, "height": 1000}

    def __init__(self, browser, base_url: str, context: dict | None = None):
        """`context`: the browser context's options (conftest.browser_page), a laptop's window unless given."""
        self.browser, self.base_url, self._cm, self.pg = browser, base_url, None, None
        self.context = context or {"viewport": self.VIEWPORT}

    def get(self):
        if self.pg is None or self.pg.is_closed():
            self.close()
            self._cm = browser_page(self.browser, self.base_url, **self.context)
            self.pg = self._cm.__enter__()
        self.pg.console.clear()
        return self.pg

    def reset(self) -> None:
        try:
            self.pg.goto("about:blank")
            self.pg.set_viewport_size(dict(self.context["viewport"]))
            self.pg.console.clear()
        except Exception:  # a crashed or closed page: the next test gets a new one
            self.close()

    def close(self) -> None:
        if self._cm is not None:
            with contextlib.suppress(Exception):
                self._cm.__exit__(None, None, None)
        self._cm = self.pg = None


@pytest.fixture(scope="session")
def _reused_page(browser, server_url):
    holder = ReusedPage(browser, server_url)
    yield holder
    holder.close()


@pytest.fixture
def page(_reused_page):
    """A browser page on the session server, at its first URL's start (see ReusedPage)."""
    yield _reused_page.get()
    _reused_page.reset()


def open_page(page, path: str = "", wait_chart: bool = True):
    """Open /path and wait until the script has finished (and a Plotly chart is drawn)."""
    page.goto(f"{page.base_url}/{path}")
    page.wait_for_selector('[data-testid="stApp"]')
    wait_idle(page)
    if wait_chart:
        page.wait_for_selector('[data-testid="stPlotlyChart"] .js-plotly-plot')
    return page


def location(page) -> str:
    """The page's address as the browser has it now (Playwright's `page.url` follows the page's history updates
    through events, and can trail a history.replaceState that Streamlit's URL binding has just made)."""
    return page.evaluate("location.href")


def wait_idle(page, timeout: float = 60_000):
    """Wait until Streamlit reports it is not running the script: the app's script state (the frontend's own
    data-test-script-state), no element left stale from the previous run, and no "Running" in the status widget."""
    page.wait_for_function(
        """() => { const app = document.querySelector('[data-testid="stApp"]');
                   const state = app && app.getAttribute('data-test-script-state');
                   if (state === 'running' || state === 'rerunRequested') return false;
                   if (document.querySelector('[data-stale="true"]')) return false;
                   const s = document.querySelector('[data-testid="stStatusWidget"]');
                   return !s || !s.innerText.match(/Running|Connecting/); }""", timeout=timeout)
    page.wait_for_timeout(300)


def settled(page) -> None:
    """Wait until the page stops changing: the script has finished (wait_idle), then no DOM mutation for 0.4 s. The
    frontend keeps applying a finished run's elements after its script state says so, and axe reads a half-drawn
    sidebar as a scrollable region with nothing to focus (measured on the Explorer: for the first seconds of a first
    load the script state reads idle while the sidebar holds one focusable element of its 21)."""
    page.wait_for_function("""() => {
        const side = document.querySelector('[data-testid="stSidebar"]');
        const links = side && side.querySelectorAll('[data-testid="stPageLink-NavLink"]').length >= 13;
        const following = side && side.innerText.includes('You follow the instructor, who picks the page');
        return (links || following)  // a follower's sidebar has the note in place of the links (ui.sidebar)
            && [...side.querySelectorAll('label')].some(l => l.innerText.includes('Presenter')); }""")
    wait_idle(page)
    page.evaluate("""() => new Promise(resolve => {
        const done = () => { observer.disconnect(); resolve(true); };
        let quiet = setTimeout(done, 400);
        const observer = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(done, 400); });
        observer.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
    })""")


def screenshot(page, name: str) -> Path:
    """Whole-page PNG in test-artifacts/ (Streamlit scrolls an inner container, so grow the viewport)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]') ||
                                        document.querySelector('section.main');
                                      return m ? m.scrollHeight : document.body.scrollHeight; }""")
    page.set_viewport_size({"width": size["width"], "height": min(max(height, size["height"]), 12000)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path


def plot_data(page, index: int = 0, name: str | None = None) -> dict:
    """The decoded traces of the index-th Plotly chart (Plotly's _fullData: typed arrays decoded)."""
    return page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').nth(index).evaluate(
        """(el, name) => { const ts = el._fullData.map(t => ({name: t.name, type: t.type,
               z: t.z ? Array.from(t.z, r => Array.from(r)) : null, x: t.x ? Array.from(t.x) : null,
               y: t.y ? Array.from(t.y) : null, hovertext: t.hovertext, text: t.text}));
           return name ? ts.find(t => t.name === name) : ts; }""", name)


# -- tiny Hugging Face model folders (no transformers, no download) --------------------------------------------
FOLDER_TEXT = ["the cat sat on the mat", "the dog ate the bone because it was hungry", "she gave him the book",
               "send the report before the slides", "a bank by the river", "i like cats and dogs, not rats"] * 3


def _folder_weights(config: dict, seed: int, edit=None) -> dict:
    """Random tensors under the Hugging Face names viz_model.hf reads for this config.json (its own weight plan):
    norms at 1 / 0, every other tensor N(0, 0.2²). `edit(state)` may change them (e.g. make one token win)."""
    from viz_model import hf

    cfg = hf.hf_config(config)
    prefix = "transformer." if config["model_type"] == "gpt2" else "model."
    plan = hf.weight_plan(cfg, config["model_type"], {prefix})
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for src in plan.values():
        for name, shape in zip(src.names, src.shapes):
            norm = any(k in name for k in ("ln_", "layernorm", "norm.weight"))
            if norm:
                state[name] = torch.ones(shape) if name.endswith("weight") else torch.zeros(shape)
            else:
                state[name] = torch.randn(shape, generator=gen) * 0.2
    if edit is not None:
        edit(state)
    return {k: v.contiguous() for k, v in state.items()}


def _folder_bpe(specials: list[str], byte_level: bool, extra: list[str] = ()):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if byte_level:  # GPT-2 / Llama 3: 'Ġthe'
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:  # SentencePiece-style (Llama 2, Mistral): '▁the'
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        alphabet = []
    size = 150 + len(alphabet)  # byte-level starts from 256 single bytes: merges come on top
    tok.train_from_iterator(FOLDER_TEXT, trainers.BpeTrainer(vocab_size=size, special_tokens=specials,
                                                             initial_alphabet=alphabet, show_progress=False))
    if extra:
        tok.add_special_tokens(list(extra))
    return tok


def _write_folder(folder: Path, config: dict, state: dict, tok, tokenizer_config: dict) -> Path:
    import json

    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder


def build_model_folders(root: Path) -> dict[str, Path]:
    """Three folders under root, written with safetensors + tokenizers only:
    tiny-gpt2   GPT-2 layout (2 layers x 4 heads, learned positions, tied head, byte-level BPE, <|endoftext|> the
                last id and its only special token). Its final LayerNorm has weight 0 and bias = 3 x its end token's
                embedding, whose row is 4x the others: every logit is 3 wte_j . wte_eos, largest for the end token,
                so greedy generation writes <|endoftext|> at once.
    tiny-llama  Llama layout: 6 layers x 4 query heads, 2 K/V heads (GQA), RMSNorm, SwiGLU, untied head,
                rope_theta 500000 with Llama 3 scaling (factor 8 over 16 positions), SentencePiece-style BPE whose
                post-processor puts <s> first; 8 spare embedding rows (the pad is one of them).
    broken-bert a config naming an architecture the app does not read: listed with its problem, refused."""
    import json

    from tokenizers import processors

    gpt_tok = _folder_bpe([], True, ["<|endoftext|>"])
    eot = gpt_tok.token_to_id("<|endoftext|>")
    gpt = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": gpt_tok.get_vocab_size(),
           "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "activation_function": "gelu_new",
           "layer_norm_epsilon": 1e-5, "bos_token_id": eot, "eos_token_id": eot}

    def ends_at_once(state):
        wte = state["transformer.wte.weight"]
        wte[eot] *= 4.0
        state["transformer.ln_f.weight"] = torch.zeros_like(state["transformer.ln_f.weight"])
        state["transformer.ln_f.bias"] = 3.0 * wte[eot].clone()
        assert int((wte @ state["transformer.ln_f.bias"]).argmax()) == eot

    _write_folder(root / "tiny-gpt2", gpt, _folder_weights(gpt, 1, ends_at_once), gpt_tok,
                  {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                   "model_max_length": 64, "tokenizer_class": "GPT2Tokenizer"})

    ll_tok = _folder_bpe(["<s>", "</s>", "<unk>"], False)
    ll_tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    llama = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": ll_tok.get_vocab_size() + 8,
             "hidden_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 64, "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "hidden_act": "silu",
             "rope_theta": 500000.0, "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 1,
             "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                              "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}
    _write_folder(root / "tiny-llama", llama, _folder_weights(llama, 2), ll_tok,
                  {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"})

    from safetensors.torch import save_file

    broken = root / "broken-bert"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 32}))
    save_file({"embeddings.word_embeddings.weight": torch.zeros(4, 32)}, str(broken / "model.safetensors"))
    return {p.name: p for p in (root / "tiny-gpt2", root / "tiny-llama", broken)}


@pytest.fixture(scope="session")
def model_folders(tmp_path_factory) -> dict[str, Path]:
    """The three tiny model folders of build_model_folders, in one session-wide temp folder (its parent is what
    ATTENTION_LAB_MODEL_DIRS names)."""
    return build_model_folders(tmp_path_factory.mktemp("model_folders"))


# -- AppTest helpers every page's tests use ---------------------------------------------------------------------
def texts(elements) -> list[str]:
    return [e.value for e in elements]


def one_line(text: str) -> str:
    """A chart's text read as one line: the line breaks that fit a long title to a phone (figures.common.fit_texts
    turns a space into "<br>") read as the spaces they were."""
    return re.sub(r"<br\s*/?>", " ", text or "")


def spec(at, key: str) -> dict:
    """The Plotly figure (data, layout) of the chart with this key, as the browser receives it."""
    import json

    return json.loads(at.get_by_key(key).proto.spec)


def open_tab(at, key: str, label: str):
    """Click a tab (AppTest has no tab clicks: set the tabs' state and the URL's ?key=, as the browser's click does
    for a tab bound to the URL, and rerun)."""
    at.session_state[key] = label
    at.query_params[key] = label
    return at.run()


def assert_clean(at, where=""):
    """No exception and no error box on the page except a measured claim's ✗."""
    assert not at.exception, (where, texts(at.exception))
    assert not [e for e in texts(at.error) if not e.startswith("✗")], (where, texts(at.error))


def lead_class(page, key: str) -> str:
    """In class mode: open the sidebar's "Class" box, type the instructor `key`, switch on "Lead the class"; the
    class code on screen. A click that lands while a run redraws the sidebar can be lost: click again, once settled."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    side = page.locator('[data-testid="stSidebar"]')
    box = side.locator('[data-testid="stExpander"]').filter(has=page.locator("summary", has_text="Class"))
    if box.locator("details").get_attribute("open") is None:
        box.locator("summary").click()
    field = side.get_by_role("textbox", name="Instructor key", exact=True)
    field.fill(key)
    field.press("Enter")
    switch = side.get_by_role("switch", name="Lead the class", exact=True)
    switch.wait_for()
    code = side.get_by_text(re.compile(r"Class code: [A-Z]{4}"))
    for _ in range(3):
        if not switch.is_checked():
            switch.click(force=True)
        try:
            code.wait_for(timeout=20_000)
            break
        except PlaywrightTimeout:
            settled(page)
    return code.inner_text().split(":")[1].strip()


@pytest.fixture
def class_env(tmp_path, monkeypatch):
    """The app in class mode on a SQLite class store of this test's own (instructor key "s3cret"): the file's path.
    The class-store tests that run on both stores (Redis too) have a `class_env` of their own over `backend`."""
    db = tmp_path / "class.sqlite"
    monkeypatch.setenv("ATTENTION_LAB_INSTRUCTOR_KEY", "s3cret")
    monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", str(db))
    from viz_model.ui import class_mode

    class_mode.store.clear()
    yield db
    class_mode.store.clear()


def pick_option(page, box, option: str, tries: int = 3) -> None:
    """Open the selectbox `box` (a locator of its input) and click `option`, again from the start when a rerun closed
    its list or kept re-drawing it under the click (each wait bounded; a fragment's timer can redraw the sidebar)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    choice = page.get_by_role("option", name=option, exact=True)
    for attempt in range(tries):
        try:
            box.click()
            choice.wait_for(timeout=10_000)
            choice.click(timeout=10_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
            settled(page)
