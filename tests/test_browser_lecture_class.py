"""#39 (item 4) an instructor presents a lecture to a class, in real browsers on a server started with the instructor
key: the leader opens a lecture from the sidebar (inside its session, so it keeps the lead) and steps with the arrow
keys; a follower's page, settings (its link: every URL-bound value) and lecture panel ("step n of N", the step's
title, read-only) track each step. Then the leader reloads, types the key, and has the same class back, and the
follower, still following, takes the leader's next step.

Every wait is for a condition. How long the follower took after each key is printed against the issue's 2 s bar, not
asserted (as in test_browser_class_follow.py: on a busy 2-core machine a browser drawing a page can take longer; a
follower that never arrives fails); bench/lecture_follow.py measures the lag with 60 followers."""

from __future__ import annotations

import re
import time

import pytest
from conftest import screenshot, settled, wait_idle
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect
from test_browser_class import KEY, lead, open_class, sidebar, tab, toggle
from test_browser_class_follow import class_url  # noqa: F401 (the module's server with the instructor key)

from viz_model.lectures import builtin_lectures

pytestmark = pytest.mark.browser
LECTURE = builtin_lectures()["attention"]
N = len(LECTURE.steps)
FOLLOW_BAR_S = 2.0
CATCH_UP_MS = 30_000  # a late follower still arrives (a busy machine), or never does (the bug)

# The tab is at the lecture's step n on `path`, its link's parameters are `query` (the class code aside), and its panel
# says where it is. `query` is the leader's: the follower must hold every setting the leader's link carries.
_AT = """([n, total, title, path, query]) => {
    const main = document.querySelector('[data-testid="stMain"]')?.innerText || '';
    const q = new URLSearchParams(location.search); q.delete('class');
    const want = new URLSearchParams(query); want.delete('class');
    q.sort(); want.sort();
    return main.includes(`step ${n} of ${total}`) && main.includes(title) && q.toString() === want.toString()
        && location.pathname.replace(/^\\/+|\\/+$/g, '') === path
        && !document.querySelector('[data-stale="true"]');
}"""


def _path(n: int) -> str:
    page = LECTURE.steps[n - 1].page
    return "" if page in (None, "start") else page


def _wait_at(pg, n: int, query: str, timeout_ms: float) -> float | None:
    t0 = time.perf_counter()
    try:
        pg.wait_for_function(_AT, arg=[n, N, LECTURE.steps[n - 1].title, _path(n), query], timeout=timeout_ms,
                             polling=50)
    except PlaywrightTimeout:
        return None
    return time.perf_counter() - t0


def _leader_at(leader, n: int) -> str:
    """The leader's own tab reached step n (its panel, its page): its link's query."""
    leader.wait_for_function("n => new URLSearchParams(location.search).get('step') === String(n)", arg=n,
                             timeout=CATCH_UP_MS)
    wait_idle(leader)
    expect(leader.locator('[data-testid="stMain"]')).to_contain_text(f"step {n} of {N}")
    return leader.evaluate("location.search")


def _next(leader, follower, n: int, key: str = "ArrowRight") -> tuple[float, float]:
    """The leader presses the right arrow (Next) or the left (Back). The seconds until the follower shows step n as
    the leader does: from the key, and from the leader's own page drawn (the class-follow tests' measure). Within
    FOLLOW_BAR_S of the leader's page, or later (a busy machine), or never (the bug: asserted)."""
    t0 = time.perf_counter()
    leader.keyboard.press(key)
    query = _leader_at(leader, n)
    t1 = time.perf_counter()
    lag = _wait_at(follower, n, query, FOLLOW_BAR_S * 1000) or _wait_at(follower, n, query, CATCH_UP_MS)
    assert lag is not None, f"the follower never reached step {n}: {follower.evaluate('location.href')}"
    return time.perf_counter() - t0, time.perf_counter() - t1


def _open_lecture(leader) -> str:
    sidebar(leader).locator(".st-key-lecture_open_attention button").click()
    return _leader_at(leader, 1)


def _read_only(follower) -> None:
    main = follower.locator('[data-testid="stMain"]')
    expect(main).to_contain_text("You follow the instructor")
    assert main.locator(".st-key-lecture_next").count() == 0 and main.locator(".st-key-lecture_back").count() == 0


def test_a_leader_steps_and_the_followers_page_settings_and_narrative_track_each_step(browser, class_url):  # noqa: F811
    with tab(browser, class_url) as leader:
        code = lead(leader)
        query = _open_lecture(leader)
        with tab(browser, class_url, f"?class={code}") as follower:
            assert _wait_at(follower, 1, query, CATCH_UP_MS) is not None
            _read_only(follower)
            lags = []
            # Explorer (layer 1, head 2) -> Q, K and V -> Explorer (Pipeline, unscaled) -> back to Q, K and V
            for n, key in ((2, "ArrowRight"), (3, "ArrowRight"), (2, "ArrowLeft")):
                settled(leader)
                leader.locator('[data-testid="stMain"] h4').first.click()  # the page has the focus, not a box
                lags.append(_next(leader, follower, n, key))
                screenshot(follower, f"lecture_class_follower_{len(lags)}")
            screenshot(leader, "lecture_class_leader")
            print("follower on the step (s) after the leader's key / after the leader's own page: "
                  + ", ".join(f"{a:.2f} / {b:.2f}" for a, b in lags)
                  + f"; {sum(b <= FOLLOW_BAR_S for _, b in lags)}/{len(lags)} within {FOLLOW_BAR_S:.0f} s")
            _read_only(follower)
            expect(toggle(follower, "Follow the instructor")).to_be_checked()
            for pg in (leader, follower):
                assert pg.console.errors() == []


def test_a_leader_reloads_and_takes_the_class_back_with_the_key(browser, class_url):  # noqa: F811
    with tab(browser, class_url) as leader:
        code = lead(leader)
        _open_lecture(leader)
        with tab(browser, class_url, f"?class={code}") as follower:
            expect(toggle(follower, "Follow the instructor")).to_be_checked()
            leader.reload()
            leader.wait_for_selector('[data-testid="stApp"]')
            settled(leader)
            assert lead(leader) == code  # the key alone: "Lead the class" comes back on, the same code
            expect(toggle(leader, "Lead the class")).to_be_checked()
            open_class(leader)
            expect(sidebar(leader).get_by_text(re.compile(rf"Class code: {code}"))).to_be_visible()
            expect(sidebar(leader).get_by_text(re.compile(r"\*?\*?1\*?\*? student follows|1 student follows")))\
                .to_be_visible(timeout=CATCH_UP_MS)
            leader.locator('[data-testid="stMain"] h4').first.click()
            _next(leader, follower, 2)
            expect(toggle(follower, "Follow the instructor")).to_be_checked()
            screenshot(leader, "lecture_class_leader_after_reload")
            assert KEY not in leader.evaluate("location.href")
