"""AppTest of the Sinusoidal and RoPE pages: they run, their live checks pass, the widgets change what is shown."""

import json

import pytest
from conftest import one_line, open_tab, plotly_array

from viz_model import rope

arr = plotly_array


def chart(at, key):
    return json.loads(at.get_by_key(key).proto.spec)


def frame(at, text):
    """The st.dataframe whose index or columns mention `text` (AppTest keeps no key on plain dataframes)."""
    def words(df):
        return " ".join(map(str, [*df.index, *df.columns, *df.index.names, df.columns.name]))

    return next(d.value for d in at.dataframe if text in words(d.value))


SINUS_TABS = ["Curves", "Table & binary analogy", "Shift matrix M_k", "Similarity", "Inside the model"]
ROPE_TABS = ["Worked example", "Pair rotation", "Angles", "Relative scores", "Context extension", "Length test",
             "Where it acts", "Conventions"]


def metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


@pytest.fixture(scope="module")
def sinus(request):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/sinusoidal.py").run()
    return at


@pytest.fixture(scope="module")
def rope_page():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/rope.py").run()
    return at


def test_sinusoidal_page_runs_and_every_check_passes(sinus):
    assert not sinus.exception and not sinus.error
    curves = chart(sinus, "sinusoidal_curves")["data"]
    assert len(arr(curves[0]["y"])) == 128  # the default number of positions
    assert curves[0]["name"].startswith("dim 0 (sin")
    checks = []
    for label in SINUS_TABS:
        open_tab(sinus, "sinusoidal_tab", label)
        assert not sinus.exception and not sinus.error, label
        checks += [s.value for s in sinus.success]
    assert len(checks) >= 2 and all(c.startswith("✓") for c in checks)
    open_tab(sinus, "sinusoidal_tab", "Curves")


def test_only_the_open_tab_runs(sinus):
    open_tab(sinus, "sinusoidal_tab", "Curves")
    assert sinus.get_by_key("sinusoidal_curves") is not None
    with pytest.raises(KeyError):
        sinus.get_by_key("sinusoidal_mk")  # the shift tab's chart is not computed while its tab is closed
    open_tab(sinus, "sinusoidal_tab", "Shift matrix M_k")
    assert sinus.get_by_key("sinusoidal_mk") is not None
    with pytest.raises(KeyError):
        sinus.get_by_key("sinusoidal_curves")


def test_sinusoidal_largest_settings_stay_bounded(sinus):
    open_tab(sinus, "sinusoidal_tab", "Table & binary analogy")
    sinus.slider(key="sinusoidal_d").set_value(1024)
    sinus.slider(key="sinusoidal_npos").set_value(8192).run()
    assert not sinus.exception and not sinus.error
    heat = chart(sinus, "sinusoidal_heatmap")["data"][0]
    assert len(arr(heat["x"])) <= 256 and len(arr(heat["y"])) <= 256  # decimated: the browser never gets 8M cells
    title = one_line(chart(sinus, "sinusoidal_heatmap")["layout"]["title"]["text"])
    assert "(about every 32nd position and about every 4th dimension shown)" in title  # was "every 32th"
    assert all(s.value.startswith("✓") for s in sinus.success)
    open_tab(sinus, "sinusoidal_tab", "Similarity")
    sim = chart(sinus, "sinusoidal_sim")["data"][0]
    assert len(arr(sim["x"])) <= 256 and arr(sim["x"])[-1] == 8191
    assert all(s.value.startswith("✓") for s in sinus.success)


def test_sinusoidal_shift_slider_changes_the_matrix(sinus):
    open_tab(sinus, "sinusoidal_tab", "Shift matrix M_k")
    sinus.slider(key="sinusoidal_d").set_value(8)
    sinus.slider(key="sinusoidal_k").set_value(5).run()
    mk = chart(sinus, "sinusoidal_mk")
    assert "M_5" in mk["layout"]["title"]["text"]
    assert any("M_5·P_t = P_(t+5)" in s.value for s in sinus.success)


def test_rope_page_runs_and_every_check_passes(rope_page):
    at = rope_page
    assert not at.exception and not at.error
    checks, infos = [], []
    for label in ROPE_TABS:
        open_tab(at, "rope_tab", label)
        assert not at.exception and not at.error, label
        checks += [s.value for s in at.success]
        infos += [i.value for i in at.info]
    assert len(checks) >= 5 and all(c.startswith("✓") for c in checks)
    # the lecture note shows the corrected NTK base
    assert any("82,684.6" in i and "500,000" in i for i in infos)


def test_rope_shift_keeps_the_score(rope_page):
    at = open_tab(rope_page, "rope_tab", "Pair rotation")
    before = metric(at, "score ⟨R_t q")
    at.slider(key="rope_shift").set_value(777).run()
    assert metric(at, "score ⟨R_t q") == before
    assert any("shifting both positions by 777" in s.value for s in at.success)


def test_rope_extension_readouts_follow_the_method_and_lengths(rope_page):
    at = open_tab(rope_page, "rope_tab", "Context extension")
    at.number_input(key="rope_ext_L").set_value(4096)
    at.number_input(key="rope_ext_Lp").set_value(8 * 4096)
    at.radio(key="rope_ext_method").set_value("yarn").run()
    readouts = frame(at, "NTK-aware")
    text = readouts.to_string()
    assert "82,684.6" in text and "1.2079" in text and "607,779" in text
    ratios = chart(at, "rope_ratios")["data"]
    assert len(ratios) == 6  # one line per registry entry
    assert any("1.2079" in c.value and "1.4591" in c.value for c in at.caption)


def test_rope_target_shorter_than_training_gives_a_message(rope_page):
    at = open_tab(rope_page, "rope_tab", "Context extension")
    at.number_input(key="rope_ext_L").set_value(4096)
    at.number_input(key="rope_ext_Lp").set_value(1024).run()
    assert any("shorter than the training length" in w.value for w in at.warning)
    assert not at.exception


def test_rope_bad_llama3_parameters_give_a_message(rope_page):
    at = open_tab(rope_page, "rope_tab", "Context extension")
    at.number_input(key="rope_ext_Lp").set_value(8 * 4096)
    at.number_input(key="rope_ext_lo").set_value(4.0)
    at.number_input(key="rope_ext_hi").set_value(1.0).run()
    assert any("high_freq_factor > low_freq_factor" in w.value for w in at.warning)
    at.number_input(key="rope_ext_lo").set_value(1.0)
    at.number_input(key="rope_ext_hi").set_value(4.0).run()


def test_rope_zero_beta_names_yarn_and_keeps_every_other_method(rope_page):
    at = open_tab(rope_page, "rope_tab", "Context extension")
    at.number_input(key="rope_ext_bf").set_value(0.0).run()
    assert not at.exception
    assert any("YaRN" in w.value and "'beta_fast' must be > 0" in w.value for w in at.warning)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    ratios = next(f for f in specs if "θ′/θ per pair" in f["layout"]["title"]["text"])
    names = {t["name"] for t in ratios["data"]}
    assert len(names) == len(rope.ROPE_INIT_FUNCTIONS) - 1 and not any("YaRN" in n for n in names)


def test_editing_q_changes_the_rotated_values(rope_page):
    at = open_tab(rope_page, "rope_tab", "Worked example")
    at.session_state["rope_q_editor"] = {"edited_rows": {2: {"q0": 0.0, "q1": 1.0}}, "added_rows": [],
                                         "deleted_rows": []}
    at.run()
    rotated = frame(at, "a′₀")
    # (0, 1) at t = 2 turns by 2 rad: (-sin 2, cos 2)
    assert rotated.iloc[2, 0] == pytest.approx(-0.909297, abs=1e-6)
    assert rotated.iloc[2, 1] == pytest.approx(-0.416147, abs=1e-6)



def test_the_worked_example_draws_each_tokens_pair_turned_by_t_radians(rope_page):
    """#43: RoPE › Pair rotation took 3.2 s to a first view in a browser: opened on the Worked example (tables only),
    the tab drew the page's first Plotly chart, so the click also loaded the chart library. The Worked example now
    draws its own rotation, head 0's pair 0 of every token, so the library loads while its tables are read."""
    import math

    at = open_tab(rope_page, "rope_tab", "Worked example")
    traces = {t["name"]: (arr(t["x"], float)[1], arr(t["y"], float)[1]) for t in chart(at, "rope_worked_fig")["data"]}
    for t, token in enumerate(["I", "like", "cats"]):
        (a, b), (a2, b2) = traces[f"q {t} {token} before rotation"], traces[f"q {t} {token} at t = {t}"]
        turned = math.atan2(b2, a2) - math.atan2(b, a)
        assert math.hypot(a2, b2) == pytest.approx(math.hypot(a, b))  # a rotation keeps the length
        assert math.remainder(turned - t, 2 * math.pi) == pytest.approx(0, abs=1e-9)  # by t·ω₀ = t radians

@pytest.mark.parametrize("cell, message", [(None, "no empty cells"), (1e12, "between")])
def test_a_bad_q_cell_gives_a_message_and_the_other_tabs_still_work(rope_page, cell, message):
    at = open_tab(rope_page, "rope_tab", "Worked example")
    at.session_state["rope_q_editor"] = {"edited_rows": {1: {"q3": cell}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    assert any(message in w.value for w in at.warning)
    open_tab(at, "rope_tab", "Pair rotation")
    assert any("shifting both positions" in s.value for s in at.success)  # the pair tab still works
    open_tab(at, "rope_tab", "Worked example")
    at.session_state["rope_q_editor"] = {"edited_rows": {}, "added_rows": [], "deleted_rows": []}
    at.run()


def test_length_experiment_runs_and_plots(rope_page):
    at = open_tab(rope_page, "rope_tab", "Length test")
    at.button(key="rope_len_run").click().run()
    assert not at.exception
    fig = chart(at, "rope_len_fig")
    assert fig["data"] and fig["layout"]["xaxis"]["title"]["text"].startswith("context length")
    table = frame(at, "method")
    assert table.shape[1] == 3  # 1x, 2x, 4x
    # every scaled line lies above plain RoPE: the page says why (no fine-tuning after scaling)
    assert any("not fine-tuned after scaling" in c.value for c in at.caption)


@pytest.fixture
def shipped_encodings(tmp_path, monkeypatch):
    """Stand-ins for the shipped enc-sinusoidal / enc-learned models (tiny, untrained) in a temporary folder."""
    import torch

    from viz_model import checkpoint
    from viz_model.config import ModelConfig
    from viz_model.model import TinyTransformer
    from viz_model.tokenizer import load_tokenizer
    from viz_model.ui import models

    tok = load_tokenizer("word")
    for name, enc in (("enc-sinusoidal", "sinusoidal"), ("enc-learned", "learned")):
        torch.manual_seed(0)
        model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=tok.get_vocab_size(), pos_encoding=enc))
        checkpoint.save(model, tok, tmp_path / f"{name}.safetensors", {"title": name})
    monkeypatch.setattr(models, "MODELS_DIR", tmp_path)
    return tmp_path


def test_model_views_read_the_shipped_sinusoidal_and_learned_models(shipped_encodings, app_test):
    at = open_tab(app_test("app_pages/sinusoidal.py"), "sinusoidal_tab", "Inside the model")
    assert not at.exception and not at.error
    assert any("differ by exactly P_2 − P_0" in s.value for s in at.success)
    rows = chart(at, "sinusoidal_same_token")["layout"]["yaxis"]["ticktext"]
    assert rows == ["token embedding", "position 0 encoding", "position 2 encoding", "input at position 0",
                    "input at position 2"]
    learned = chart(at, "sinusoidal_learned_sim")["data"][0]
    assert arr(learned["z"]).shape == (32, 32)  # the tiny preset's table has max_len = 32 rows


def test_length_experiment_says_the_learned_model_cannot_go_past_its_table(shipped_encodings, app_test):
    at = open_tab(app_test("app_pages/rope.py"), "rope_tab", "Length test")
    at.button(key="rope_len_run").click().run()
    assert not at.exception
    notes = " ".join(c.value for c in at.caption)
    assert "enc-learned: a learned table has only 32 rows" in notes
    names = [t["name"] for t in chart(at, "rope_len_fig")["data"]]
    assert "enc-sinusoidal" in names and "enc-learned" in names


def test_a_shared_link_opens_the_same_view_and_bad_values_fall_back():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # a fresh session opened by a link
    at.query_params["sinusoidal_d"] = "8"
    at.query_params["sinusoidal_npos"] = "99999"  # out of range: dropped with a notice, never an error
    at.query_params["sinusoidal_tab"] = "Shift matrix M_k"  # a link can open a tab
    at.switch_page("app_pages/sinusoidal.py").run()
    assert not at.exception
    assert at.slider(key="sinusoidal_d").value == 8
    assert at.slider(key="sinusoidal_npos").value == 128
    assert any("“sinusoidal_npos” is not valid here" in t.value for t in at.toast)
    assert not any("sinusoidal_d”" in t.value for t in at.toast)
    assert at.get_by_key("sinusoidal_mk") is not None and at.session_state["sinusoidal_tab"] == "Shift matrix M_k"
