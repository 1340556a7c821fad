"""The classroom load bench's protocol client (bench/loadclient.py) still speaks Streamlit's websocket protocol.

One real `streamlit run app.py` server, one ProtocolSession: every rerun ends in script_finished with no exception
delta, a widget change changes what the server draws, the message cache round-trips, and a page switch works.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import ROOT, _free_port

sys.path.insert(0, str(ROOT / "bench"))
from loadclient import ProtocolSession  # noqa: E402


@pytest.fixture(scope="module")
def server():
    env = dict(os.environ)
    if not (ROOT / "assets" / "tokenizers" / "word.json").exists():
        env.setdefault("ATTENTION_LAB_ASSETS", "/tmp/tmpassets")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("streamlit did not start") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _text(res) -> str:
    return json.dumps(res.charts)


def test_protocol_client_reruns_finish_and_widget_changes_reach_the_chart(server):
    async def lesson():
        s = ProtocolSession(server, timeout=60)
        runs = []
        try:
            runs.append(first := await s.connect("start"))
            assert {"start_text", "start_layer", "start_head"} <= set(s.widgets), sorted(s.widgets)
            assert s.widgets["start_layer"].id.endswith("-start_layer")
            assert first.charts and "Layer 0" in _text(first)

            runs.append(layer := await s.set("start_layer", 1))
            assert "Layer 1" in _text(layer) and "Layer 0" not in _text(layer)

            assert "giraffe" not in _text(layer)
            long = "the cat saw a giraffe " + "and the dog sat on the mat " * 4   # > 10 kB figure: cacheable
            runs.append(typed := await s.set("start_text", long))
            assert "giraffe" in _text(typed)            # the typed word is a tick label of the new heatmap

            runs.append(again := await s.rerun())       # same chart again: the server sends only its hash
            assert again.charts == typed.charts
            assert again.n_refs >= 1 and again.n_bytes < typed.n_bytes

            other = next(p for p in s.pages if p not in ("", "start"))
            runs.append(await s.open(other))
            assert s.page_hash == s.pages[other]
        finally:
            await s.close()
        return runs

    # A thread of its own: Playwright's sync API (browser tests in the same session) keeps a loop on this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        runs = pool.submit(lambda: asyncio.run(asyncio.wait_for(lesson(), 120))).result()
    full, part = "FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"
    assert [r.status for r in runs] == [full, part, full, full, full]  # the layer picker reruns its fragment
    assert all(not r.exceptions for r in runs), [r.exceptions for r in runs]
    assert all(r.seconds > 0 and r.n_msgs > 0 for r in runs)


# Pickers that change one view of a page rerun only that view (an st.fragment): the bench's saturation and class
# numbers rest on it (bench/class_load.py). (page, widget key[, value]) on each page's first view.
FRAGMENT_PICKERS = [("start", "start_layer"), ("start", "start_head"), ("explorer", "explorer_layer"),
                    ("explorer", "explorer_head"), ("explorer", "explorer_tab", "Query focus"), ("masks", "masks_kind"),
                    ("qkv", "qkv_query"), ("encoder", "encoder_topk"), ("encoder", "encoder_layer"),
                    ("generate", "generate_layer"), ("encoder-decoder", "ed_three_layer"),
                    ("normalization", "norm_seed"), ("cost", "cost_kv_layers"), ("logit-lens", "lens_pos"),
                    ("attribution", "attribution_head")]


def test_view_pickers_rerun_only_their_fragment_and_send_less_than_the_page(server):
    async def each() -> list[tuple]:
        rows, rng = [], random.Random(0)
        s = ProtocolSession(server, timeout=90, cache=False)
        try:
            await s.connect("start")
            for page, key, *value in FRAGMENT_PICKERS:
                opened = await s.open("" if page == "start" else page)
                assert key in s.widgets, (page, sorted(s.widgets))
                res = await s.set(key, value[0] if value else "random", rng)
                rows.append((page, key, s.widgets[key].fragment_id, res.status, res.n_bytes, opened.n_bytes,
                             res.exceptions + res.errors))
        finally:
            await s.close()
        return rows

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        rows = pool.submit(lambda: asyncio.run(asyncio.wait_for(each(), 300))).result()
    for page, key, fragment, status, n_part, n_page, problems in rows:
        assert fragment and status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY", (page, key, status)
        assert not problems, (page, key, problems)
        assert n_part < n_page, (page, key, n_part, n_page)  # the rest of the page was not sent again
