"""Real headless Chromium against `streamlit run`: the Start page draws its heatmap with no console errors."""

import pytest
from conftest import open_page, plot_data, screenshot, wait_idle

pytestmark = pytest.mark.browser


def test_start_page_renders_heatmap_without_console_errors(page):
    open_page(page, "")
    plot = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
    # "<bos> The cat sat on the mat": the duplicate "the" stays a distinct row
    assert len(plot_data(page, 0, "attention")["z"]) == 7
    ticks = plot.evaluate("el => el.layout.yaxis.ticktext")
    assert ticks[0] == "0 &lt;bos&gt;" and ticks[1].endswith("The") and ticks[5].endswith("the")
    assert "row sums to 1" in page.locator('[data-testid="stAlert"]').last.inner_text()
    screenshot(page, "start")
    assert page.console.errors() == []


def test_typing_a_sentence_changes_the_heatmap(page):
    open_page(page, "")
    box = page.get_by_label("Type a sentence")
    page.get_by_text("Start with").click()  # <bos> off: exactly the typed tokens
    wait_idle(page)
    box.fill("send report <PAD> <PAD>")
    box.press("Enter")
    wait_idle(page)
    # typed text is literal: "<PAD>" is the three pieces '<', 'PAD', '>', not the padding token, and the page says so
    page.wait_for_function("""() => { const p = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
        return p && p._fullData.find(t => t.name === 'attention').z.length === 8; }""")
    ticks = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.evaluate(
        "el => el.layout.yaxis.ticktext")
    assert ticks[2:5] == ["2 &lt;", "3 PAD", "4 &gt;"]  # escaped for Plotly, so '<' shows literally
    assert "<PAD> typed in the text is read as plain text, not as the padding token" in " ".join(
        page.locator('[data-testid="stAlert"]').all_inner_texts())
    screenshot(page, "start_pad")
    assert page.console.errors() == []


@pytest.mark.parametrize("path", ["start", "start?start_text=the+dog+ran"])
def test_old_start_links_open_the_start_page(page, path):
    """#26 finding 1: /start answered "Page not found" over the page; it must open Start, with the link's text."""
    open_page(page, path)
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator("h1").first.inner_text() == "Attention Lab"
    if "start_text" in path:
        assert page.get_by_label("Type a sentence").input_value() == "the dog ran"
        assert len(plot_data(page, 0, "attention")["z"]) == 4  # <bos> the dog ran
    assert page.console.errors() == []


def test_figure_titles_are_bold_once_and_in_the_figures_own_colours(page):
    """#26 finding 14: Streamlit's chart theme wrapped each title in <b> twice (<b><b>…</b></b>) and restyled the
    figure in the browser. Charts are drawn with theme=None: the title is the figure's own text, bold by its font
    weight, and the tick labels keep the template's colour (what tests of the figure colours check)."""
    from viz_model.figures.common import TEXT_COLOR

    open_page(page, "")
    plot = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
    plot_data(page, 0, "attention")  # drawn
    title = plot.evaluate("""el => ({text: el.layout.title.text, svg: el.querySelector('.gtitle').innerHTML,
        weight: getComputedStyle(el.querySelector('.gtitle')).fontWeight,
        tick: getComputedStyle(el.querySelector('.ytick text')).fill})""")
    assert title["text"] and "<b>" not in title["text"] and "bold" not in title["svg"]  # no markup adds bold
    assert title["weight"] in ("700", "bold")
    rgb = tuple(int(TEXT_COLOR[i:i + 2], 16) for i in (1, 3, 5))
    assert title["tick"].replace(" ", "") == f"rgb({rgb[0]},{rgb[1]},{rgb[2]})"
