"""AppTest of the Start page: model card, tokenization preview, attention heatmap, awkward input."""

import json


def heatmap_rows(at):
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return next(t for t in spec["data"] if t.get("name") == "attention")


def test_start_page_shows_model_card_tokens_and_heatmap(app_test):
    at = app_test()
    assert not at.exception
    assert at.title[0].value == "Attention Lab"
    assert len(at.dataframe) >= 2  # tokens + model card
    tokens = at.dataframe[0].value
    assert list(tokens.iloc[0, 1:]) == ["<bos>", "The", "cat", "sat", "on", "the", "mat"]  # shipped models use <bos>
    assert "row sums to 1" in at.success[0].value
    at.toggle(key="start_bos").set_value(False).run()
    assert list(at.dataframe[0].value.iloc[0, 1:]) == ["The", "cat", "sat", "on", "the", "mat"]


def _in_order(at) -> list:
    """Every element of the main area, in the order the page draws them."""
    def walk(node) -> list:
        return [x for kid in getattr(node, "children", {}).values() for x in (kid, *walk(kid))]  # pre-order
    return walk(at.main)


def test_the_first_screen_is_a_sentence_and_its_attention_and_the_model_card_comes_after(app_test):
    """#43 (1): Start opened on the model card and four build checks; the sentence box and its heatmap were about
    1,000 px down. Now the sentence, its tokens and the heatmap come first, then where to go next, then the model."""
    at = app_test()
    kinds = [(type(e).__name__, getattr(e, "key", None), getattr(e, "value", None)) for e in _in_order(at)]
    where = {what: next(i for i, k in enumerate(kinds) if test(k)) for what, test in {
        "sentence": lambda k: k[1] == "start_text", "heatmap": lambda k: k[1] == "start_heatmap",
        "next": lambda k: k[0] == "Subheader" and k[2] == "Where to next",
        "card": lambda k: k[0] == "Header" and k[2] == "The model"}.items()}
    assert where["sentence"] < where["heatmap"] < where["next"] < where["card"], where
    assert len(at.get("page_link")) >= 3


def test_layer_and_head_pickers_change_the_heatmap(app_test):
    at = app_test()
    first = heatmap_rows(at)
    at.selectbox(key="start_head").set_value(1).run()
    assert heatmap_rows(at)["z"] != first["z"]


def test_awkward_input_never_raises(app_test):
    at = app_test()
    for text in ["", "   ", "😀 🎉", "<script>alert(1)</script> <b>x</b>", "word " * 1000, "a\u200bb\u202e c"]:
        at.text_input(key="start_text").set_value(text).run()
        assert not at.exception, text
        assert not at.error, text
    at.text_input(key="start_text").set_value("").run()
    assert "Type at least one word" in at.warning[0].value
    at.text_input(key="start_text").set_value("word " * 1000).run()
    assert any("only the first" in i.value for i in at.info)


def test_row_sum_check_is_computed_not_printed(app_test, monkeypatch):
    """#27: the ✓ is a verdict on the measured error; rows that do not sum to 1 get ✗ (old code printed ✓ always)."""
    import viz_model.ui.start as start

    real = start.attention_of

    def off_by_a_percent(ckpt, ids, layer):
        probs, allowed = real(ckpt, ids, layer)
        return probs * 1.01, allowed

    monkeypatch.setattr(start, "attention_of", off_by_a_percent)
    at = app_test()
    assert not at.exception
    assert not any("row sums to 1" in s.value for s in at.success)
    assert any("✗ Every row sums to 1" in e.value and "tolerance 1e-05" in e.value for e in at.error)
