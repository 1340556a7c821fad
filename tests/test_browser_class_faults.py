"""#42 (item 3) in a real browser: a class on a Redis of its own. Redis is frozen (SIGSTOP) mid-class: the student's
page says in one sentence that the class is paused and stays live (its chart, its pickers); Redis answers again
(SIGCONT): the sentence goes and the student follows the leader again. Every wait is for a condition."""

from __future__ import annotations

import contextlib
import os
import signal

import class_backends
import pytest
from conftest import ARTIFACTS, browser_page, lead_class, screenshot, settled, streamlit_server
from playwright.sync_api import expect

from viz_model.lessons.classview import PAUSED_TEXT

pytestmark = pytest.mark.browser
KEY = "test-instructor-key"
WAIT = 30_000  # a condition's upper bound on a busy 2-core machine


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    """A server with the class store on a redis-server of this module's own (the test freezes it)."""
    if why := class_backends._missing():
        pytest.fail(why, pytrace=False)
    with class_backends.redis_server() as redis_url, streamlit_server(
            "streamlit_class_faults.log", env={"ATTENTION_LAB_INSTRUCTOR_KEY": KEY,
                                               "ATTENTION_LAB_CLASS_STORE": redis_url}) as url:
        yield url, redis_url


@contextlib.contextmanager
def tab(browser, url: str):
    with browser_page(browser, url) as pg:
        pg.goto(url)
        pg.wait_for_selector('[data-testid="stApp"]')
        settled(pg)
        yield pg


def lead(page) -> str:
    return lead_class(page, KEY)


def test_a_frozen_redis_pauses_the_class_in_one_sentence_on_a_live_page_and_it_resumes(browser, hall):
    url, redis_url = hall
    with tab(browser, url) as leader:
        code = lead(leader)
        with tab(browser, f"{url}/?class={code}") as student:
            main = student.locator('[data-testid="stMain"]')
            expect(main.get_by_text(f"Class {code} · you follow the instructor.")).to_be_visible(timeout=WAIT)
            pid = class_backends_pid(redis_url)
            os.kill(pid, signal.SIGSTOP)
            try:
                expect(main.get_by_text(PAUSED_TEXT)).to_be_visible(timeout=WAIT)  # the follow tick says it
                assert main.get_by_text(PAUSED_TEXT).count() == 1  # one sentence
                expect(main.locator(".js-plotly-plot").first).to_be_visible()  # the lesson page is still there
                screenshot(student, "class_faults_paused")
            finally:
                os.kill(pid, signal.SIGCONT)
            expect(main.get_by_text(PAUSED_TEXT)).to_have_count(0, timeout=WAIT)  # resumed by itself
            expect(main.get_by_text(f"Class {code} · you follow the instructor.")).to_be_visible(timeout=WAIT)
            assert not [m for m in student.console.errors() if "Traceback" in m]
            assert not main.get_by_text("Traceback").count()
    assert (ARTIFACTS / "class_faults_paused.png").exists()


def class_backends_pid(url: str) -> int:
    import redis

    with contextlib.closing(redis.Redis.from_url(url)) as client:
        return int(client.info("server")["process_id"])
