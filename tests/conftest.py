"""Shared fixtures: seeded torch, AppTest factory, and a real `streamlit run` server + headless Chromium."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Opening a page by URL makes Streamlit probe <page>/_stcore/health and host-config first: two harmless 404s.
IGNORED_CONSOLE = ("/_stcore/health", "/_stcore/host-config")


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """As app.py does: tiny tensors on a shared 2-core machine run far faster on one torch thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def app_test():
    """AppTest of app.py opened on a page: `at = app_test("app_pages/masks.py")`."""
    from streamlit.testing.v1 import AppTest

    def make(page: str | None = None, timeout: float = 90):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        at.run()
        if page:
            at.switch_page(page).run()
        return at

    return make


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


@pytest.fixture(scope="session")
def server_url():
    """One real Streamlit server for the whole browser test session."""
    port = _free_port()
    log = open(ARTIFACTS.joinpath("streamlit.log") if ARTIFACTS.mkdir(exist_ok=True) is None else os.devnull, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.terminate()
        raise RuntimeError("streamlit did not start; see test-artifacts/streamlit.log")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


class ConsoleLog(list):
    def errors(self) -> list[str]:
        return [m for m in self if not any(s in m for s in IGNORED_CONSOLE)]


@pytest.fixture
def page(browser, server_url):
    """A fresh browser page; `page.console` collects console errors and page errors."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.console = ConsoleLog()
    pg.on("console", lambda m: m.type == "error" and pg.console.append(f"{m.text} @ {m.location.get('url', '')}"))
    pg.on("pageerror", lambda e: pg.console.append(f"pageerror: {e}"))
    pg.base_url = server_url
    yield pg
    ctx.close()


def open_page(page, path: str = "", wait_chart: bool = True):
    """Open /path and wait until the script has finished (and a Plotly chart is drawn)."""
    page.goto(f"{page.base_url}/{path}")
    page.wait_for_selector('[data-testid="stApp"]')
    wait_idle(page)
    if wait_chart:
        page.wait_for_selector('[data-testid="stPlotlyChart"] .js-plotly-plot')
    return page


def wait_idle(page, timeout: float = 60_000):
    """Wait until Streamlit reports it is not running the script."""
    page.wait_for_function(
        """() => { const s = document.querySelector('[data-testid="stStatusWidget"]');
                   return !s || !s.innerText.match(/Running|Connecting/); }""", timeout=timeout)
    page.wait_for_timeout(300)


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
