"""Real headless Chromium: the Encoder page renders without console errors; hiding one more word gives the
fill-in chart a second panel; 'bank' gets exactly 0 on 'river' in the causal decoder; the bank tab's head, 'mean of
the heads' too, is in the link."""

import pytest
import torch
from conftest import browser_page, location, open_page, plot_data, screenshot, wait_idle

from viz_model import ASSETS_DIR, checkpoint
from viz_model.tokenizer import load_tokenizer
from viz_model.train import TrainConfig, Trainer, build_model

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'
SHIPPED = ASSETS_DIR / "models" / "encoder-mlm.safetensors"


def tiny_encoder(folder) -> list:
    """A tiny masked-LM encoder (100 seeded steps) as the .safetensors + .json pair the Train page accepts."""
    tok = load_tokenizer("word")
    torch.manual_seed(0)
    model = build_model("tiny", tok, mask="bidirectional", pos_encoding="rope")
    for _ in Trainer(model, tok, TrainConfig(task="mlm", steps=100, batch_size=32, lr=5e-3, warmup_steps=20,
                                             eval_every=0, snapshot_every=0, sample_every=0)):
        pass
    path = folder / "tiny-encoder.safetensors"
    checkpoint.save(model.eval(), tok, path, {"title": "tiny encoder (test)", "bos": True, "task": "mlm"})
    return [str(path), str(checkpoint.json_path(path))]


def open_encoder(page, tmp_path) -> None:
    """The shipped encoder when it is installed; otherwise upload a tiny one on the Train page first (the way a
    class brings its own) and follow the sidebar link, which keeps the session."""
    if SHIPPED.exists():
        open_page(page, "encoder")
        return
    open_page(page, "train", wait_chart=False)
    page.get_by_role("tab", name="Save / load").click()
    wait_idle(page)
    uploader = page.locator('[data-testid="stMain"] [data-testid="stFileUploader"] input[type="file"]')
    uploader.set_input_files(tiny_encoder(tmp_path))  # stMain: the sidebar has a lecture file's uploader too
    page.get_by_text("tiny-encoder.json").wait_for()
    page.get_by_role("button", name="Check and add").click()
    page.get_by_text("valid safetensors").wait_for()
    page.locator('[data-testid="stSidebar"] a[href="encoder"]').click()
    page.get_by_text("is not installed").first.wait_for()  # the page says the shipped encoder is missing
    wait_idle(page)
    page.wait_for_selector(CHART)


def test_hiding_a_second_word_adds_its_fill_ins_and_bank_cannot_see_river_in_the_decoder(page, tmp_path):
    open_encoder(page, tmp_path)
    before = plot_data(page, 0)
    assert [t["name"] for t in before] == ["mask 1"]  # the default blank: "cat"
    page.locator('[data-testid="stButtonGroup"]').get_by_role("button", name="6 mat").click()
    page.wait_for_function(f"""() => {{ const el = document.querySelector('{CHART}');
        return el && el._fullData && el._fullData.length === 2; }}""")
    wait_idle(page)
    after = plot_data(page, 0)
    assert [t["name"] for t in after] == ["mask 1", "mask 2"]
    for t in after:  # top 5 probabilities, most probable first
        assert len(t["x"]) == 5 and t["x"] == sorted(t["x"], reverse=True) and 0 < t["x"][-1] <= t["x"][0] <= 1
    assert page.get_by_text("reads both sides").count() >= 2  # one check per hidden word
    screenshot(page, "encoder_fill_ins")
    page.get_by_role("tab", name="The bank by the river").click()
    page.get_by_text("Causal decoder: “bank” puts exactly 0").wait_for()
    wait_idle(page)
    page.locator(CHART).nth(1).wait_for()
    decoder = plot_data(page, 1)
    assert next(t for t in decoder if t["name"] == "blocked")["x"] == [3, 4, 5, 6]  # by the river <eos>
    screenshot(page, "encoder_bank_river")
    assert page.console.errors() == []


def bank_view(page) -> tuple[str, str, list]:
    """The bank tab's head picker as shown, the encoder chart's title and its bars."""
    head = page.locator('[data-testid="stSelectbox"]').filter(has_text="Head").locator("input").input_value()
    title = page.locator(CHART).first.evaluate("el => el.layout.title.text")
    return head, title, plot_data(page, 0, "attention")["y"]


def test_the_mean_of_the_heads_goes_in_the_link_and_the_link_opens_on_it(page, browser):
    """#26 finding 2: chosen, 'mean of the heads' was not written to the link; reopened, the link showed head 2.
    A fresh session opened by the link has only the shipped models: encoder-mlm is tracked in assets/models."""
    assert SHIPPED.exists()
    open_page(page, "encoder")
    page.get_by_role("tab", name="The bank by the river").click()
    page.get_by_text("Causal decoder: “bank” puts exactly 0").wait_for()
    wait_idle(page)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Head").click()
    page.get_by_role("option", name="mean of the heads", exact=True).click()
    page.wait_for_function(f"""() => {{ const el = document.querySelector('{CHART}');
        return el && el.layout && el.layout.title.text.includes('mean of the heads'); }}""")
    wait_idle(page)
    chosen = bank_view(page)
    assert chosen[0] == "mean of the heads"
    link = location(page)
    assert "encoder_bank_head=mean" in link, link
    with browser_page(browser, page.base_url) as fresh:  # a new session, opened by the link
        fresh.goto(link)
        fresh.get_by_text("Causal decoder: “bank” puts exactly 0").wait_for()
        wait_idle(fresh)
        fresh.locator(CHART).first.wait_for()
        assert bank_view(fresh) == chosen
        assert "encoder_bank_head=mean" in location(fresh)
        assert fresh.console.errors() == []
    assert page.console.errors() == []


def test_why_masked_lm_opens_the_train_pages_causal_mask_comparison(page):
    """#26 finding 9: the link opened Train on its first tab; it must open Compare setups with 'causal mask'."""
    open_page(page, "encoder?encoder_tab=Why+masked+LM%3F", wait_chart=False)
    page.get_by_role("button", name="See it on the Train page: Compare setups → causal mask").click()
    page.wait_for_function("() => location.pathname.endsWith('/train')")
    page.get_by_role("tab", name="Compare setups", selected=True).wait_for()
    vary = page.locator('[data-testid="stRadio"]').filter(has_text="Vary")
    vary.get_by_role("radio", name="causal mask", checked=True).wait_for()
    assert page.console.errors() == []


def test_a_students_sentence_gets_fill_ins_on_the_default_english_encoder(page):
    """#43: the Encoder page opened on a 293-word encoder that read "My grandmother baked <mask> while the storm
    knocked out the <mask>" as 7 <unk>; the default is now the English encoder, and both blanks get word fill-ins."""
    open_page(page, "encoder")
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Encoder").first
    assert picker.locator("input").input_value().startswith("English encoder")
    box = page.get_by_label("Sentence", exact=True)
    box.fill("My grandmother baked <mask> while the storm knocked out the <mask>")
    box.press("Enter")
    page.wait_for_function(f"""() => {{ const el = document.querySelector('{CHART}');
        return el && el._fullData && el._fullData.length === 2; }}""")  # one panel per typed <mask>
    wait_idle(page)
    pills = page.locator('[data-testid="stButtonGroup"]').inner_text()
    assert "unk" not in pills and "grand" in pills  # read as BPE pieces, none of them <unk>
    assert page.get_by_text("never seen").count() == 0
    fills = plot_data(page, 0)
    assert [t["name"] for t in fills] == ["mask 1", "mask 2"]
    words = page.locator(CHART).first.evaluate(
        "el => [el.layout.yaxis.ticktext, el.layout.yaxis2.ticktext]")
    for ticks in words:  # each blank's top 5: mostly words, none of them a special token
        assert sum(t.strip().isalpha() for t in ticks) >= 4 and not any("&lt;" in t for t in ticks), ticks
    screenshot(page, "encoder_english_student_sentence")
    assert page.console.errors() == []
