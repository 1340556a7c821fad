"""AppTest of the Encoder page: masked words get the encoder's own fill-ins, 'bank' cannot see 'river' in the
causal decoder (weight exactly 0), the held-out metrics recompute, and awkward input gives messages."""

import json

import conftest
import pytest
import torch
from conftest import ROOT, assert_clean, texts

from viz_model import ASSETS_DIR, checkpoint
from viz_model.lessons import encoder as lesson
from viz_model.mlm import fill_mask, run_masked_ids
from viz_model.tokenizer import encode, load_tokenizer
from viz_model.train import TrainConfig, Trainer, build_model

SHIPPED = ASSETS_DIR / "models" / "encoder-mlm.safetensors"
PAGE = "app_pages/encoder.py"


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A tiny masked-LM encoder trained for 200 steps (seeded), saved with its held-out metrics like the shipped
    one: the page is tested on it whether or not encoder-mlm is installed."""
    tok = load_tokenizer("word")
    torch.manual_seed(0)
    model = build_model("tiny", tok, mask="bidirectional", pos_encoding="rope")
    trainer = Trainer(model, tok, TrainConfig(task="mlm", steps=200, batch_size=32, lr=5e-3, warmup_steps=20,
                                              eval_every=0, snapshot_every=0, sample_every=0))
    for _ in trainer:
        pass
    model.eval()
    path = tmp_path_factory.mktemp("encoder") / "tiny-encoder.safetensors"
    checkpoint.save(model, tok, path, {"title": "tiny encoder (test)", "bos": True, "task": "mlm",
                                       **lesson.heldout_metrics(model, tok)})
    return checkpoint.load_checkpoint(path)


@pytest.fixture
def page(tiny_encoder):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["user_models"] = {"tiny-encoder": str(tiny_encoder.path)}
    at.session_state["encoder_model"] = "tiny-encoder"  # picked when the shipped encoder is there too
    at.run()
    return at.switch_page(PAGE).run()


def fills_chart(at) -> dict:
    return json.loads(at.get_by_key("encoder_fills").proto.spec)


def test_page_runs_and_says_whether_the_shipped_encoder_is_missing(page):
    assert_clean(page)
    missing = any("encoder-mlm** is not installed" in w for w in texts(page.warning))
    assert missing == (not SHIPPED.exists())
    assert page.get_by_key("encoder_grid") is not None and page.get_by_key("encoder_head_map") is not None


def test_masking_two_words_shows_the_encoders_own_fill_ins_for_each(page, tiny_encoder):
    pills = page.pills[0]
    assert pills.options[:6] == ["1 The", "2 cat", "3 sat", "4 on", "5 the", "6 mat"]
    assert pills.value == [1]  # the default blank: "cat", the noun after "the"
    at = pills.set_value([1, 5]).run()  # hide "cat" and "mat"
    assert_clean(at)
    fig = fills_chart(at)
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert [t["name"] for t in bars] == ["mask 1", "mask 2"]
    expected = fill_mask(tiny_encoder.model, tiny_encoder.tokenizer, "The <mask> sat on the <mask>", top_k=5)
    for bar, fills in zip(bars, expected):
        assert bar["x"] == pytest.approx([p for _, p in fills], rel=1e-4, abs=1e-5)
        ticks = fig["layout"]["yaxis" + ("" if bar is bars[0] else "2")]["ticktext"]
        assert ticks == [t for t, _ in fills]
    table = at.dataframe[0].value
    assert list(table["hidden word"]) == ["cat", "mat"]
    assert list(table["top-1"]) == [f[0][0] for f in expected]
    assert any("reads both sides" in s for s in texts(at.success))
    at = open_tab(open_tab(at, "Why masked LM?"), "Fill in the blanks")
    assert at.pills[0].value == [1, 5]  # the hidden words are still hidden after a look at another tab


def test_a_typed_mask_and_no_mask_at_all(page):
    at = page.text_input(key="encoder_text").set_value("the keys near the dog <mask> ready").run()
    assert_clean(at)
    assert at.pills[0].value == []  # a typed <mask> is the blank: nothing else hidden by default
    assert fills_chart(at)["data"][0]["name"] == "mask 1"
    assert list(at.dataframe[0].value["hidden word"]) == ["— (typed <mask>)"]
    at = at.text_input(key="encoder_text").set_value("the keys near the dog are ready").run()
    at = at.pills[0].set_value([]).run()
    assert_clean(at)
    assert any("Nothing is hidden yet" in s for s in texts(at.info))
    assert len(at.get("plotly_chart")) == 0  # no fill-ins and no heatmaps until something is hidden


def test_the_causal_decoder_gives_river_exactly_zero_weight(page, tiny_encoder):
    at = open_tab(page, "The bank by the river")
    assert_clean(at)
    dec = checkpoint.load_checkpoint(ASSETS_DIR / "models" / "classroom.safetensors")
    measured = lesson.attention_weight(dec.model, dec.tokenizer, "The bank by the river", "bank", "river").weight
    assert float(measured.max()) == 0.0  # the claim itself, measured here
    enc = lesson.attention_weight(tiny_encoder.model, tiny_encoder.tokenizer, "The bank by the river", "bank",
                                  "river").weight
    assert [m.value for m in at.metric][0] == f"{float(enc.max()):.4f}"  # opened on the encoder's strongest head
    decoder_check = next(s for s in texts(at.success) if s.startswith("✓ Causal decoder"))
    assert "puts exactly 0 on “river”" in decoder_check
    assert any(s.startswith("✓ Encoder: “bank” can read “river” in every head") for s in texts(at.success))
    assert [m.value for m in at.metric][1] == "0 (exactly)"
    bars = json.loads(at.get_by_key("encoder_bank_decoder").proto.spec)
    blocked = next(t for t in bars["data"] if t["name"] == "blocked")
    assert blocked["x"] == [3, 4, 5, 6]  # "by the river <eos>" come after "bank" (<bos> is 0)


def link_session(tiny_encoder, query: dict[str, str]):
    """A fresh session opened by a link (its query parameters), with the tiny encoder among this user's models."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["user_models"] = {"tiny-encoder": str(tiny_encoder.path)}
    at.query_params.update(query)
    return at.switch_page(PAGE).run()


def test_the_mean_of_the_heads_is_in_the_link_and_a_link_opens_on_it(page, tiny_encoder):
    """#26 finding 2: 'mean of the heads' was not kept by a link: reopened, the bank tab showed the best head."""
    at = open_tab(page, "The bank by the river")
    at = at.selectbox(key="encoder_bank_head").select("mean").run()
    assert_clean(at)
    assert at.query_params.get("encoder_bank_head") == "mean of the heads", dict(at.query_params)
    chosen = (json.loads(at.get_by_key("encoder_bank_encoder").proto.spec)["data"], [m.value for m in at.metric])
    link = dict(at.query_params)
    again = link_session(tiny_encoder, link)
    assert_clean(again)
    assert again.selectbox(key="encoder_bank_head").value == "mean"
    assert again.query_params.get("encoder_bank_head") == "mean of the heads"  # the reopened link stays the same
    assert (json.loads(again.get_by_key("encoder_bank_encoder").proto.spec)["data"],
            [m.value for m in again.metric]) == chosen
    assert "mean of the heads" in again.metric[0].label
    best = link_session(tiny_encoder, {"encoder_tab": "The bank by the river", "encoder_bank_head": "0"})
    assert best.selectbox(key="encoder_bank_head").value == 0  # a linked head wins over the best-head default


def test_the_bank_tab_reads_the_sentence_as_the_fill_in_tab_does(page, tiny_encoder):
    """#26 finding 10: the bank tab ran <bos> ... river without the <eos> the page says the encoder reads."""
    fill = page.get_by_key("encoder_grid")
    fill_tokens = json.loads(fill.proto.spec)["data"][0]["x"]
    assert fill_tokens[0] == "0 &lt;bos&gt;" and fill_tokens[-1].endswith("&lt;eos&gt;")
    at = open_tab(page, "The bank by the river")
    for tag in ("encoder", "decoder"):
        bars = json.loads(at.get_by_key(f"encoder_bank_{tag}").proto.spec)
        ticks = bars["layout"]["xaxis"]["ticktext"]
        assert ticks[0].endswith("&lt;bos&gt;") and ticks[-1].endswith("&lt;eos&gt;"), ticks
    look = lesson.attention_weight(tiny_encoder.model, tiny_encoder.tokenizer, "The bank by the river", "bank",
                                   "river")
    assert look.tokens == ["<bos>", "the", "bank", "by", "the", "river", "<eos>"]


def test_why_mlm_opens_the_train_pages_causal_mask_comparison(page):
    """#26 finding 9: the link opened Train on its first tab; the button opens Compare setups → causal mask."""
    at = open_tab(page, "Why masked LM?")
    assert_clean(at)
    button = at.button(key="encoder_to_train")
    assert "Compare setups → causal mask" in button.label
    at = button.click().run()
    assert_clean(at)
    assert at.session_state["train_tab"] == "Compare setups"
    vary = next(r for r in at.radio if r.label == "Vary")  # drawn only inside the Compare setups tab
    assert vary.value == "mask"


def test_held_out_metrics_recorded_and_recomputed_live_agree(page, tiny_encoder):
    at = open_tab(page, "Held-out metrics")
    assert_clean(at)
    table = at.dataframe[0].value
    meta = tiny_encoder.metadata
    assert table["recorded when trained"][0] == f"{100 * meta['agreement_number_top1']:.1f} %"
    assert set(table["recomputed now"]) == {"press the button"}
    at = at.button(key="encoder_recompute").click().run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["recomputed now"]) == list(table["recorded when trained"])
    assert any("equal the ones recorded" in s for s in texts(at.success))


@pytest.mark.parametrize("text, message", [
    ("", "Type at least one word"),
    ("   ", "Type at least one word"),
    ("cat " * 200, "only the first"),
])
def test_empty_and_huge_text_give_a_message(page, text, message):
    at = page.text_input(key="encoder_text").set_value(text).run()
    assert_clean(at)
    assert any(message in s for s in texts(at.warning) + texts(at.info)), (texts(at.warning), texts(at.info))


def test_unknown_words_become_unk_and_html_shows_as_typed(page):
    at = page.text_input(key="encoder_text").set_value("the zebra sat on the <b>mat</b>").run()
    assert_clean(at)
    options = at.pills[0].options
    assert "2 <unk> (zebra)" in [o.replace("\\", "") for o in options]
    assert r"6 \<unk\> \(\<\)" in options  # Markdown-escaped: the pill shows "<unk> (<)" as typed
    assert any("`zebra`" in c for c in texts(at.caption))  # the notice names the unknown word
    at = at.pills[0].set_value([1]).run()  # hide the unknown word: it cannot be ranked
    assert_clean(at)
    assert list(at.dataframe[0].value["its rank"]) == ["not in the vocabulary"]
    at = at.pills[0].set_value([0]).run()
    assert_clean(at)
    labels = json.loads(at.get_by_key("encoder_grid").proto.spec)["data"][0]["x"]
    assert labels[:3] == ["0 &lt;bos&gt;", "1 &lt;mask&gt;", "2 &lt;unk&gt;"]  # escaped: Plotly shows them as typed
    assert labels[6:9] == ["6 &lt;unk&gt;", "7 b", "8 &lt;unk&gt;"]  # "<b>": "<" and ">" are not in the vocabulary


def open_tab(at, label: str):
    return conftest.open_tab(at, "encoder_tab", label)


# -- #43 item 4: the page opens on the English encoder ---------------------------------------------------------
ENGLISH = ASSETS_DIR / "models" / "english-encoder.safetensors"
STUDENT = "My grandmother baked <mask> while the storm knocked out the <mask>"


@pytest.fixture(scope="module")
def english_encoder():
    assert ENGLISH.exists(), "the English encoder is tracked in assets/models"
    return checkpoint.load_checkpoint(ENGLISH)


@pytest.fixture
def default_page(english_encoder):
    """The page as a student opens it: no model of theirs, nothing picked."""
    return conftest.open_app(PAGE, timeout=120)


def test_the_page_opens_on_the_english_encoder_and_fills_a_students_sentence(default_page, english_encoder):
    """#43: 'My grandmother baked <mask> while the storm knocked out the <mask>' turned 7 of 10 words into <unk>."""
    at = default_page
    assert_clean(at)
    assert at.selectbox(key="encoder_model").value == "english-encoder"
    at = at.text_input(key="encoder_text").set_value(STUDENT).run()
    assert_clean(at)
    assert not any("never seen" in c for c in texts(at.caption))  # no <unk> notice
    assert not any("unk" in o for o in at.pills[0].options) and at.pills[0].value == []
    table = at.dataframe[0].value
    assert list(table["hidden word"]) == ["— (typed <mask>)"] * 2
    expected = fill_mask(english_encoder.model, english_encoder.tokenizer, STUDENT, top_k=5)
    bars = [t for t in fills_chart(at)["data"] if t["type"] == "bar"]
    assert len(bars) == 2
    for bar, fills in zip(bars, expected):
        assert bar["x"] == pytest.approx([p for _, p in fills], rel=1e-4, abs=1e-5)
        assert sum(t.strip().isalpha() for t, _ in fills) >= 4, fills  # words, not specials or punctuation
    assert list(table["top-1"]) == [f[0][0] for f in expected]


def test_hiding_a_piece_of_a_word_runs_the_sentences_own_tokens(default_page, english_encoder):
    """A byte-level BPE splits 'grandmother': hiding one piece keeps the others as they were read (not the text
    encoded again), and the hidden piece is ranked by its own id."""
    tok = english_encoder.tokenizer
    at = default_page.text_input(key="encoder_text").set_value("my grandmother baked bread").run()
    pieces = encode(tok, "my grandmother baked bread").ids
    assert len(pieces) > 4  # grandmother is more than one token
    at = at.pills[0].set_value([2]).run()  # the second piece of "grandmother"
    assert_clean(at)
    ids = list(pieces)
    ids[2] = tok.token_to_id("<mask>")
    run = run_masked_ids(english_encoder.model, tok, ids, ["x"] * len(ids), top_k=5, trace=False)
    row = at.dataframe[0].value.iloc[0]
    assert row["top-1"] == run.fills[0][0][0]
    p = run.probs[0]
    assert row["its rank"] == f"{int((p > p[pieces[2]]).sum()) + 1} of {len(p)}"


def test_every_tab_runs_on_the_english_encoder(default_page, english_encoder):
    at = open_tab(default_page, "The bank by the river")
    assert_clean(at)
    assert not texts(at.warning)  # the English decoder reads the sentence with the same tokens
    assert any("decoder “english” (causal)" in m for m in texts(at.markdown))  # the English model, same BPE
    assert any(s.startswith("✓ Causal decoder") for s in texts(at.success))
    assert any(s.startswith("✓ Encoder: “bank” can read “river”") for s in texts(at.success))
    at = open_tab(at, "Why masked LM?")
    assert_clean(at)
    at = open_tab(at, "Held-out metrics")
    assert_clean(at)
    meta = english_encoder.metadata
    table = at.dataframe[0].value
    assert list(table["encoder, recorded when trained"][:2]) == [lesson.pct(meta["fill_top1"]),
                                                                  lesson.pct(meta["fill_top5"])]
    assert list(table["unigram baseline"][:2]) == [lesson.pct(meta["unigram_top1"]), lesson.pct(meta["unigram_top5"])]
    assert any("toy encoder's" in c for c in texts(at.caption))  # where the agreement and pronoun numbers went
    assert not any("records no held-out" in s for s in texts(at.info))  # it records its own
    at = at.button(key="encoder_recompute").click().run()
    assert_clean(at)
    assert [s[:2] for s in texts(at.success)] == ["✓ ", "✓ "]  # beats the unigram; recomputed = recorded


def test_the_toy_encoder_is_named_by_its_vocabulary_and_keeps_its_lessons(default_page):
    toy = checkpoint.load_checkpoint(SHIPPED)
    picker = default_page.selectbox(key="encoder_model")
    n = toy.tokenizer.get_vocab_size()
    assert f"Toy encoder ({n}-word vocabulary): agreement and pronoun lessons" in picker.options
    at = picker.select(lesson.SHIPPED).run()
    assert_clean(at)
    assert "agreement:" in " ".join(b.label for b in at.button)  # its held-out agreement and pronoun sentences
    at = open_tab(at, "Held-out metrics")
    assert at.dataframe[0].value["recorded when trained"][0] == f"{100 * toy.metadata['agreement_number_top1']:.1f} %"
