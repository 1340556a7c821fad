"""Real headless Chromium on a second server started with ATTENTION_LAB_MODEL_DIRS (the session server has none):
the Explorer opened on a model folder by link (?model_key=tiny-llama · llama · …) draws its paged grid with every
head's K/V head named, a page switch changes the grid's data, no console errors; the sidebar picker shows the
folders' sizes."""

from __future__ import annotations

from urllib.parse import quote_plus, unquote_plus

import pytest
from conftest import (
    _folder_bpe,
    _folder_weights,
    _write_folder,
    browser_page,
    location,
    plot_data,
    screenshot,
    streamlit_server,
    wait_idle,
)

from viz_model import hf
from viz_model.ui import models

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'


@pytest.fixture(scope="module")
def wide_folder(tmp_path_factory):
    """GPT-2 small's grid shape (12 layers x 12 heads) at d_model 48: the readability case."""
    tok = _folder_bpe([], True, ["<|endoftext|>"])
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": tok.get_vocab_size(),
           "n_embd": 48, "n_layer": 12, "n_head": 12, "n_positions": 64}
    folder = tmp_path_factory.mktemp("wide") / "wide-gpt2"
    return _write_folder(folder, cfg, _folder_weights(cfg, 3), tok, {"eos_token": "<|endoftext|>"})


@pytest.fixture(scope="module")
def folder_server(model_folders, wide_folder):
    """A second Streamlit server whose instructor's model folders are the tiny GPT-2 / Llama of conftest and a
    12 x 12 GPT-2 (ATTENTION_LAB_MODEL_DIRS is read at launch)."""
    root = f"{next(iter(model_folders.values())).parent}:{wide_folder}"
    with streamlit_server("streamlit_real_models.log", {hf.ENV_VAR: root}) as url:
        yield url


@pytest.fixture(scope="module")
def model_param(model_folders, wide_folder):
    """?model_key=... for a folder: a link names a model by its picker label (Streamlit's URL value of a selectbox),
    as the server started above lists it."""
    root = f"{next(iter(model_folders.values())).parent}:{wide_folder}"
    models._read_folders.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(hf.ENV_VAR, root)
        titles = {e.key: e.title for e in models.available_models()}
    models._read_folders.cache_clear()
    return lambda name: "model_key=" + quote_plus(titles[name])


@pytest.fixture
def real_page(browser, folder_server):
    """conftest's `page`, on the folder server."""
    with browser_page(browser, folder_server) as pg:
        yield pg


def _names(page) -> list[str]:
    """The grid's tiles, row by row (one tiled heatmap since #42 item 6: its layout's meta names them)."""
    return page.locator(CHART).first.evaluate("el => el._fullLayout.meta.tiles")


def _has_tile(name: str) -> str:
    return f"""() => {{ const el = document.querySelector('{CHART}');
        return el && el._fullLayout && el._fullLayout.meta && el._fullLayout.meta.tiles.includes('{name}'); }}"""


def test_explorer_on_a_model_folder_by_link_pages_its_grid(real_page, model_param):
    page = real_page
    page.goto(f"{page.base_url}/explorer?{model_param('tiny-llama')}")
    page.wait_for_selector("text=All heads at a glance")
    wait_idle(page)
    page.wait_for_selector(CHART)
    page.wait_for_function(_has_tile("L3H3"))
    grid = plot_data(page, 0)
    assert _names(page) == [f"L{lyr}H{h}" for lyr in range(4) for h in range(4)]
    assert [t["name"] for t in grid] == ["masked", "attention", "titles"]
    notes = page.locator(CHART).first.evaluate("el => el._fullData.find(t => t.name === 'titles').text")
    assert notes[2] == "L0·H2<br><sub>K/V 1</sub>"
    assert "model_key=tiny-llama" in unquote_plus(location(page))
    screenshot(page, "real_models_explorer_llama")
    before = grid[1]["z"]
    page.get_by_text("layers 4–5", exact=True).click()
    page.wait_for_function(_has_tile("L5H3"))
    wait_idle(page)
    after = plot_data(page, 0)
    assert _names(page) == [f"L{lyr}H{h}" for lyr in (4, 5) for h in range(4)] and after[1]["z"] != before
    link = location(page)
    assert "explorer_grid_layers=layers 4–5" in unquote_plus(link)
    screenshot(page, "real_models_explorer_llama_layers_4_5")
    assert page.console.errors() == []
    # #26: the link reopens the page of layers it showed, in a fresh browser
    with browser_page(page.context.browser, page.base_url) as fresh:
        fresh.goto(link)
        fresh.wait_for_selector("text=All heads at a glance")
        fresh.wait_for_function(_has_tile("L4H0"))
        wait_idle(fresh)
        assert _names(fresh) == [f"L{lyr}H{h}" for lyr in (4, 5) for h in range(4)]
        assert "explorer_grid_layers=layers 4–5" in unquote_plus(location(fresh))
        assert fresh.console.errors() == []


def test_start_page_lists_the_folders_and_describes_the_model(real_page, model_folders, model_param):
    page = real_page
    page.goto(f"{page.base_url}/?{model_param('tiny-gpt2')}")
    page.wait_for_selector("text=Where to next")
    wait_idle(page)
    page.wait_for_selector(CHART)
    size = hf.human_bytes((model_folders["tiny-gpt2"] / "model.safetensors").stat().st_size)
    assert f"{size} of weights" in page.locator('[data-testid="stSidebar"]').inner_text()
    model = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first
    model.scroll_into_view_if_needed()  # a click that scrolls the sidebar first closes the menu it opens
    model.click()
    page.locator('[role="option"]').first.wait_for()
    options = page.locator('[role="option"]').all_inner_texts()
    assert any(o.startswith("tiny-llama · llama · ") and o.endswith(" KB") for o in options)
    assert "broken-bert · unavailable" in options
    page.keyboard.press("Escape")
    assert page.get_by_text("Where to next").count() == 1
    card = page.locator('[data-testid="stDataFrame"]').first
    card.wait_for()
    screenshot(page, "real_models_start_gpt2")
    assert page.console.errors() == []


def test_a_12_by_12_grid_stays_readable_in_pages_of_four_layers(real_page, model_param):
    page = real_page
    page.goto(f"{page.base_url}/explorer?{model_param('wide-gpt2')}")
    page.wait_for_selector("text=All heads at a glance")
    wait_idle(page)
    page.get_by_role("button", name="Measure head roles").click()
    page.wait_for_function(f"""() => {{ const el = document.querySelector('{CHART}');
        const t = el && el._fullData && el._fullData.find(t => t.name === 'titles');
        return t && t.text.some(s => s.includes('<sub>')); }}""")
    wait_idle(page)
    assert _names(page) == [f"L{lyr}H{h}" for lyr in range(4) for h in range(12)]
    assert page.get_by_text("layers 8–11", exact=True).count() == 1
    box = page.locator(CHART).first.bounding_box()
    assert box["width"] / 12 > 60  # each head's panel is wider than 60 px at a 1400 px window
    screenshot(page, "real_models_explorer_12x12")
    assert page.console.errors() == []
