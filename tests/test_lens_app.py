"""AppTest of the Logit lens page (#40 item 1): the default view on the English model (the map's cells and the rank
curve against a lens run by hand here, the live ✓), a picked position, bad input (empty, long, odd unicode, a model too
large for the budget), and a Hugging Face folder (tiny GPT-2 and Llama)."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean, open_app, plotly_array, spec, texts
from test_lens import SENTENCE, by_hand

from viz_model.checkpoint import load_checkpoint
from viz_model.lessons import lens
from viz_model.model_text import encode_for

PAGE = "app_pages/lens.py"


@pytest.fixture(scope="module")
def english():
    return load_checkpoint(ROOT / "assets" / "models" / "english.safetensors")


def lens_app(model: str = "english"):
    """The page on the English model (the app's default; the suite's default is the classroom model)."""
    app = open_app(timeout=120)
    app.session_state["model_key"] = model
    return app.switch_page(PAGE).run()


@pytest.fixture(scope="module")
def at():
    return lens_app()


def top_map(app) -> dict:
    return next(t for t in spec(app, "lens_map")["data"] if t["name"] == "top token")


def rank_y(app) -> list[float]:
    return plotly_array(spec(app, "lens_rank")["data"][0]["y"], float).tolist()


def test_default_view_maps_each_layers_top_token_and_checks_the_last_layer_live(at, english):
    assert_clean(at)
    ids = encode_for(english, SENTENCE, bos=True).ids  # the page opens on the Explorer's lecture sentence
    ref = by_hand(english.model, ids)  # (rows, T, V), a plain pass with hooks
    hm = top_map(at)
    z = plotly_array(hm["z"], float)
    assert z.shape == (english.model.config.n_layers + 1, len(ids))
    assert abs(z - ref.max(-1).values.numpy()).max() <= 1e-5
    assert int(ref[-1, -1].argmax()) == english.tokenizer.token_to_id("<eos>")  # the sentence ends: "<eos>" next,
    assert plotly_array(hm["text"], object)[-1, -1] == "&lt;eos&gt;"          # written escaped in its cell
    z_final = by_hand(english.model, ids, logits=True)[:, -1]  # the last position's logits, every row
    final = int(z_final[-1].argmax())
    assert rank_y(at) == [float(1 + (row > row[final]).sum()) for row in z_final]
    ok = [s for s in texts(at.success) if "own output distribution" in s]
    assert len(ok) == 1 and ok[0].startswith("✓")
    said = " ".join(texts(at.markdown))
    assert f"(position {len(ids) - 1})" in said and "The embeddings alone" in said
    assert "tuned lens" in said and "nostalgebraist" in said


def test_picking_a_position_redraws_the_rank_curve_for_it(at, english):
    at.selectbox(key="lens_pos").set_value(3).run()
    assert_clean(at)
    ids = encode_for(english, SENTENCE, bos=True).ids
    z = by_hand(english.model, ids, logits=True)[:, 3]
    final = int(z[-1].argmax())
    assert rank_y(at) == [float(1 + (row > row[final]).sum()) for row in z]
    assert any("(position 3)" in m for m in texts(at.markdown))


@pytest.mark.parametrize("text, says", [
    ("", "Type at least one word"),
    (" ".join(["the cat sat on the mat"] * 30), f"this view reads at most {lens.MAX_T}"),
    ("🍕 <b>x</b>\u200b naïve \u202e", None),
])
def test_bad_input_gets_a_clear_message_never_a_traceback(text, says):
    app = lens_app()
    app.text_input(key="lens_text").input(text).run()
    assert_clean(app)
    if says is not None:
        assert any(says in m for m in texts(app.warning) + texts(app.info)), (texts(app.warning), texts(app.info))
    if text and says is None:
        assert all(s.startswith("✓") for s in texts(app.success) if "own output" in s)


def test_a_model_too_large_for_the_lens_budget_says_so(monkeypatch):
    monkeypatch.setattr(lens, "LOGIT_BUDGET", 1000)
    app = lens_app()
    assert not app.exception
    assert any("too large for the logit lens" in w for w in texts(app.warning))


@pytest.fixture(scope="module")
def folders(model_folders):
    from viz_model import hf
    from viz_model.ui import models

    root = next(iter(model_folders.values())).parent
    models._read_folders.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(hf.ENV_VAR, str(root))
        yield model_folders
    models._read_folders.cache_clear()


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_the_page_reads_a_hugging_face_folder(folders, name):
    from viz_model.ui import models

    titles = {e.key: e.title for e in models.available_models(("transformer",))}
    app = open_app(PAGE, timeout=120, query={"model_key": titles[name]})
    app.text_input(key="lens_text").input("the cat sat on the mat").run()
    assert_clean(app)
    ck = load_checkpoint(folders[name])
    ids = encode_for(ck, "the cat sat on the mat", bos=name == "tiny-llama").ids
    z = plotly_array(top_map(app)["z"], float)
    assert z.shape == (ck.model.config.n_layers + 1, len(ids))
    assert abs(z - by_hand(ck.model, ids).max(-1).values.numpy()).max() <= 1e-5
    assert any(s.startswith("✓") and "own output distribution" in s for s in texts(app.success))


def test_the_class_question_hides_the_lens_on_students_screens_until_reveal(class_env):
    from viz_model.lessons import classview as cv
    from viz_model.lessons import presets as P
    from viz_model.runtime.class_mode import ClassStore

    leader = open_app()
    leader.text_input(key="class_key").input("s3cret").run()
    leader.toggle(key="class_lead").set_value(True).run()
    code = leader.session_state["_class_code"]
    leader.switch_page(PAGE).run()
    leader.selectbox(key="class_ask_kind").set_value(P.PRESETS["lens_first_top"].label).run()
    leader.button(key="class_ask").click().run()
    assert ClassStore(class_env).get(code).question.answer["page"] == "logit-lens"
    student = open_app(PAGE, query={"class": code})
    assert student.toggle(key="class_follow").value is True
    for key in ("lens_map", "lens_rank"):
        fig = spec(student, key)
        assert "hidden" in fig["layout"]["title"]["text"]
        assert "hidden" not in spec(leader, key)["layout"]["title"]["text"]
    said = " ".join(texts(student.markdown))
    assert "the model predicts" not in said and "the model predicts" in " ".join(texts(leader.markdown))
    assert cv.HIDDEN_TEXT in " ".join(texts(student.caption) + texts(student.markdown))
    leader.button(key="class_reveal").click().run()
    student.run()
    assert "hidden" not in spec(student, "lens_rank")["layout"]["title"]["text"]
    assert not student.exception and not leader.exception


def test_a_link_opens_the_position_it_names():
    app = open_app(PAGE, timeout=120, query={"model_key": "English (WordNet prose, BPE)", "lens_pos": "2 · trop"})
    assert_clean(app)
    assert app.session_state["model_key"] == "english" and app.selectbox(key="lens_pos").value == 2
    assert any("(position 2)" in m for m in texts(app.markdown))
