"""Real headless Chromium against `streamlit run`: the Encoder–decoder page renders its three attention kinds,
"Next token" adds one decoder query to the cross-attention chart, and the alignment tab draws the known alignment."""

import re

import pytest
from conftest import browser_page, location, open_page, screenshot, wait_idle
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = pytest.mark.browser

NEXT = 'button:has-text("Next word")'
# The three attention charts' heatmaps, in order (encoder, decoder, cross: a chart each, #42's phone columns): name
# and (rows, columns) of z (not the grey mask layers, nor the see-through layers that print the numbers,
# figures.export.readable_numbers); null until all three are drawn.
PANELS = """() => { const charts = ['encoder', 'decoder', 'cross'].map(k =>
                          document.querySelector(`.st-key-ed_three_${k} .js-plotly-plot`));
                        if (charts.some(c => !c || !c._fullData)) return null;
                        return charts.map(c => c._fullData.find(t => t.type === 'heatmap' && !t.name.endsWith(' mask')
                                                                  && !t.name.endsWith(' · numbers')))
                                     .map(t => t && ({name: t.name, rows: t.z.length, cols: t.z[0].length})); }"""


def cross_rows(page) -> int | None:
    panels = page.evaluate(PANELS)
    return panels[2]["rows"] if panels and panels[2] else None


def settled(page) -> None:
    wait_idle(page)
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")


def test_next_token_adds_a_query_row_to_the_cross_attention_without_console_errors(page):
    open_page(page, "encoder-decoder?ed_text=the+old+king+thanked+the+children+when+they+giggled&ed_mode=step")
    page.wait_for_function(PANELS)
    panels = page.evaluate(PANELS)
    assert [p["name"].split(":")[0] for p in panels] == ["encoder self", "decoder self", "cross"]
    t_src = 10  # nine words and <eos>
    assert [(p["rows"], p["cols"]) for p in panels] == [(t_src, t_src), (2, 2), (2, t_src)]  # <bos> + the first word
    for n in (3, 4):
        page.locator(NEXT).click()
        page.wait_for_function(f"() => {{ const p = ({PANELS})();"
                               f"          return p && p[2].rows === {n} && p[1].cols === {n}; }}")
        settled(page)
    assert cross_rows(page) == 4
    text = page.locator('[data-testid="stMain"]').inner_text()
    # the reference beside it (derived from the grammar by hand in tests/test_encoder_decoder.py)
    assert "ethay ingkay oldway ethay ildchay ka ankedthay enwhay eythay iggledgay" in text
    assert "equal this one pass over the whole output" in text
    screenshot(page, "encoder_decoder_steps")
    assert page.console.errors() == []


def test_the_alignment_tab_draws_the_known_alignment(page):
    open_page(page, "encoder-decoder?ed_text=the+old+king+thanked+the+children+when+they+giggled&ed_mode=run"
                    "&ed_tab=Alignment")
    page.wait_for_function("""() => [...document.querySelectorAll('.js-plotly-plot')]
                              .some(el => el._fullData && el._fullData.some(t => t.name === 'known alignment'))""")
    settled(page)
    marks = page.evaluate("""() => { const el = [...document.querySelectorAll('.js-plotly-plot')].find(
                              e => e._fullData.some(t => t.name === 'known alignment'));
                              return Array.from(el._fullData.find(t => t.name === 'known alignment').x); }""")
    assert marks == [0, 2, 1, 4, 5, 5, 3, 6, 7, 8]  # the alignment derived by hand in tests/test_encoder_decoder.py
    assert "becomes two words" in page.locator('[data-testid="stMain"]').inner_text()
    screenshot(page, "encoder_decoder_alignment")
    assert page.console.errors() == []


def test_picking_the_guided_translator_labels_its_taught_head(page):
    open_page(page, "encoder-decoder?ed_text=the+old+king+thanked+the+children+when+they+giggled&ed_mode=run"
                    "&ed_tab=Alignment")
    settled(page)
    box = page.locator('[data-testid="stMain"] input[aria-label="Encoder-decoder model"]').first
    box.click()
    page.get_by_role("option", name="Encoder-decoder, one head guided to align", exact=True).click()
    page.wait_for_function("""() => [...document.querySelectorAll('.js-plotly-plot')].some(el => el._fullData &&
                              el._fullData.some(t => t.type === 'heatmap' && t.text && t.text[1] &&
                                                     String(t.text[1][0]).endsWith('guided')))""")
    settled(page)
    # a new model starts from its own best head (the guided one), not the head picked among the first model's
    page.get_by_text("Cross-attention, layer 1, head 0").first.wait_for()
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "was guided toward the known alignment" in text and "The best head that was not" in text
    assert "ed_model=Encoder-decoder%2C+one+head+guided" in page.evaluate("location.href")  # part of the link
    screenshot(page, "encoder_decoder_guided")
    assert page.console.errors() == []


def choose_layer(page, layer: int) -> None:
    """Open the Decoder layer picker (again, if a rerun closed its list under the click) and pick `layer`."""
    box = page.locator('[data-testid="stMain"] input[aria-label="Decoder layer"]').first
    option = page.get_by_role("option", name=str(layer), exact=True)
    for _ in range(3):
        box.click()
        try:
            option.wait_for(timeout=10_000)
            break
        except PlaywrightTimeout:
            settled(page)
    option.click()


@pytest.mark.parametrize("model", [None, "Encoder-decoder, one head guided to align"])
def test_a_chosen_alignment_layer_is_in_the_link_and_the_link_opens_on_it(page, browser, server_url, model):
    """#26 finding 3: layer 0 was not in the link (only the head was): reopened, layer 0 became layer 1."""
    link = "encoder-decoder?ed_text=the+little+bird+by+the+window+sang+again&ed_mode=run&ed_tab=Alignment"
    open_page(page, link + (f"&ed_model={model.replace(' ', '+')}" if model else ""))
    page.get_by_text("Cross-attention, layer 1, head").first.wait_for()  # opened on the best head (layer 1)
    settled(page)
    choose_layer(page, 0)
    page.get_by_text("Cross-attention, layer 0, head").first.wait_for()
    settled(page)
    page.wait_for_function("() => location.href.includes('ed_align_layer=0')")
    url = location(page)
    head = re.search(r"layer 0, head (\d+)", page.get_by_text("Cross-attention, layer 0, head").first.text_content())[1]
    with browser_page(browser, server_url) as fresh:
        fresh.goto(url)
        fresh.get_by_text(f"Cross-attention, layer 0, head {head}").first.wait_for()
        settled(fresh)
        assert "ed_align_layer=0" in location(fresh)  # the reopened link stays the same
        assert fresh.console.errors() == []
    assert page.console.errors() == []
