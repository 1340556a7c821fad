"""What the class sees while presenting (#39, item 4), in real browsers on one server started with an instructor key:
a class question hides the heatmap's numbers on a follower's screen until Reveal (the leader sees them all along); the
leader's sentence goes with them to the next page; the join line names the server's network address (the server
listens on 127.0.0.1, as on an instructor's laptop) with its QR code; a student opening a lecture step is scrolled to
the step's chart, once. Every wait is for a condition."""

from __future__ import annotations

import pytest
from conftest import ARTIFACTS, browser_page, settled, streamlit_server, wait_idle
from playwright.sync_api import expect
from test_browser_class import KEY, lead, sidebar, tab, toggle

from viz_model.lessons import classview as cv

pytestmark = pytest.mark.browser
FOLLOW_TIMEOUT = 30_000  # a condition's upper bound on a busy 2-core machine

# The heatmap's traces as the browser holds them: hidden = every trace a flat heatmap with no hover
HEATMAP_JS = """(key) => { const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    if (!plot || !plot.data) return null;
    const hidden = plot.data.length > 0 && plot.data.every(t => t.type === 'heatmap' && t.hoverinfo === 'skip');
    const title = (plot.layout && plot.layout.title && plot.layout.title.text) || '';
    return {hidden, title, traces: plot.data.length}; }"""


@pytest.fixture(scope="module")
def class_url(tmp_path_factory):
    db = tmp_path_factory.mktemp("classview") / "class.sqlite"
    with streamlit_server("streamlit_classview.log", env={"ATTENTION_LAB_INSTRUCTOR_KEY": KEY,
                                                          "ATTENTION_LAB_CLASS_DB": str(db)}) as url:
        yield url


def heatmap(page, key: str) -> dict | None:
    return page.evaluate(HEATMAP_JS, key)


def wait_heatmap(page, key: str, hidden: bool) -> None:
    page.wait_for_function(f"([key, hidden]) => {{ const h = ({HEATMAP_JS})(key); return h && h.hidden === hidden; }}",
                           arg=[key, hidden], timeout=FOLLOW_TIMEOUT)


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_a_question_hides_the_followers_heatmap_until_reveal_and_the_join_line_names_the_network(browser, class_url):
    with tab(browser, class_url) as leader:
        code = lead(leader)
        lan = cv.lan_ip()
        port = class_url.rsplit(":", 1)[1]
        join = sidebar(leader).locator('[data-testid="stMarkdownContainer"]').filter(has_text="Students open")
        if lan is not None:  # the server listens on 127.0.0.1 and the leader opened it there: the link names the LAN
            expect(join).to_contain_text(f"http://{lan}:{port}/?class={code}")
        expect(sidebar(leader).locator('[data-testid="stImage"] img')).to_have_count(1)
        # it drew (an inline image: nothing left for the browser to fetch), a square the width the page set
        leader.wait_for_function("""() => { const i = document.querySelector(
            '[data-testid="stSidebar"] [data-testid="stImage"] img'); return i && i.complete && i.naturalWidth > 0
            && i.src.startsWith('data:image/png;base64,') && Math.abs(i.naturalWidth - i.naturalHeight) < 1; }""")
        shot(leader, "classview_leader_join")
        with tab(browser, class_url, f"?class={code}") as follower:
            expect(toggle(follower, "Follow the instructor")).to_be_checked()
            wait_heatmap(follower, "start_heatmap", hidden=False)
            sidebar(leader).get_by_role("button", name="Ask", exact=True).click()  # the Start page's preset
            wait_heatmap(follower, "start_heatmap", hidden=True)  # the follower's tick takes the question
            expect(follower.get_by_text(cv.HIDDEN_TEXT).first).to_be_visible()
            assert "hidden" in heatmap(follower, "start_heatmap")["title"]
            shot(follower, "classview_follower_hidden")
            wait_idle(leader)
            assert heatmap(leader, "start_heatmap")["hidden"] is False  # the leader sees the numbers all along
            reveal = sidebar(leader).get_by_role("button", name="Reveal", exact=True)
            reveal.wait_for(timeout=FOLLOW_TIMEOUT)
            reveal.click()
            wait_heatmap(follower, "start_heatmap", hidden=False)
            expect(follower.get_by_text(cv.HIDDEN_TEXT)).to_have_count(0)
            expect(toggle(follower, "Follow the instructor")).to_be_checked()
            for pg in (leader, follower):
                assert pg.console.errors() == []


def test_the_leaders_sentence_goes_with_the_follower_to_the_next_page(browser, class_url):
    sentence = "The bank by the river"
    with tab(browser, class_url) as leader:
        code = lead(leader)
        sidebar(leader).locator('[data-testid="stPageLink-NavLink"]').filter(has_text="Explorer").first.click()
        box = leader.locator('[data-testid="stMain"] .st-key-explorer_text input')
        box.fill(sentence)
        box.press("Enter")
        leader.wait_for_function("(s) => new URLSearchParams(location.search).get('explorer_text') === s", arg=sentence)
        wait_idle(leader)
        with tab(browser, class_url, f"?class={code}") as follower:
            follower.wait_for_function("() => location.pathname.endsWith('/explorer')", timeout=FOLLOW_TIMEOUT)
            sidebar(leader).locator('[data-testid="stPageLink-NavLink"]').filter(has_text="Masks").first.click()
            # the leader's Masks opens on the sentence (no masks_text in the link), and so does the follower's
            expect(leader.locator('[data-testid="stMain"] .st-key-masks_text input')).to_have_value(sentence)
            follower.wait_for_function("() => location.pathname.endsWith('/masks')", timeout=FOLLOW_TIMEOUT)
            expect(follower.locator('[data-testid="stMain"] .st-key-masks_text input')).to_have_value(
                sentence, timeout=FOLLOW_TIMEOUT)
            settled(follower)
            expect(toggle(follower, "Follow the instructor")).to_be_checked()
            for pg in (leader, follower):
                assert pg.console.errors() == []


def _chart_step() -> tuple[str, int, str, str]:
    """A built-in lecture step on the Explorer whose chart is its head map (far below the top of the page)."""
    from viz_model.lectures import builtin_lectures

    for name, lec in builtin_lectures().items():
        for n, step in enumerate(lec.steps, 1):
            if step.page == "explorer" and getattr(step, "chart", None) == "explorer_head_map":
                return name, n, step.page, step.chart
    raise AssertionError("no built-in lecture step points at the Explorer's head map: the scroll test needs one")


IN_VIEW_JS = """(key) => { const el = document.querySelector(`.st-key-${key}`);
    if (!el || !el.querySelector('.js-plotly-plot')) return false;
    const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; }"""


def test_a_student_opening_a_step_is_scrolled_to_its_chart_once(browser, class_url):
    name, n, page_path, chart = _chart_step()
    with browser_page(browser, class_url) as pg:
        pg.goto(f"{class_url}/{page_path}?lecture={name}&step={n}")
        pg.wait_for_function(IN_VIEW_JS, arg=chart, timeout=120_000)  # drawn, then scrolled into view
        shot(pg, "classview_scrolled_to_chart")
        wait_idle(pg)
        # the student scrolls back up and works there: a rerun of the same step does not pull them down again
        pg.mouse.move(700, 400)
        pg.mouse.wheel(0, -100_000)
        pg.wait_for_function(f"(key) => !({IN_VIEW_JS})(key)", arg=chart)
        # "Back to this step's view": a rerun of the same step
        pg.get_by_role("button", name="Back to this step's view", exact=True).first.click()
        wait_idle(pg)
        settled(pg)
        assert not pg.evaluate(IN_VIEW_JS, chart)
        assert pg.locator('[data-testid="stHtml"] script').filter(has_text="st-key-").count() == 0
        assert pg.console.errors() == []
