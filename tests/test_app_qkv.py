"""AppTest of the Q, K and V page: it opens fast on the lookup, its pickers change what is computed, every tab
renders, the claims are measured rows, bad input is a message, and the Train button opens the ablation."""

import json
import re

import conftest
import numpy as np
import pytest
from conftest import open_app, plotly_array

from viz_model.lessons import qkv as lesson
from viz_model.ui.cache import _built

arr = plotly_array

PAGE = "app_pages/qkv.py"
TABS = ["Database lookup", "Four variants", "Minimal pairs", "Held-out loss", "Claims"]


def chart(at, key):
    return json.loads(at.get_by_key(key).proto.spec)


def clean(at):
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def at():
    return open_app(PAGE, timeout=120)


def test_page_opens_on_the_lookup_without_the_heldout_measurement(monkeypatch):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    def forbidden(*args, **kwargs):
        raise AssertionError("the default tab must not measure the held-out loss")

    monkeypatch.setattr(lesson, "heldout_loss", forbidden)
    _built.clear()  # no summary left in the server-wide cache by an earlier test
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(PAGE).run()
    clean(at)
    assert chart(at, "qkv_lookup_chart")["data"] and chart(at, "qkv_mix_chart")["data"]  # the default tab
    assert any(s.value.startswith("✓ Σ_j p_j v_j recomputed here equals the model's own head output")
               for s in at.success)


def test_lookup_chart_shows_the_models_own_scores_and_follows_the_query(at, classroom):
    open_tab(at, "Database lookup")
    text = at.session_state["qkv_text"]
    layer, head, query = at.session_state["qkv_layer"], at.session_state["qkv_head"], at.session_state["qkv_query"]
    tokens = lesson.encode_sentence(classroom.model, classroom.tokenizer, text)[1]
    assert tokens[query].lower() == "sat"  # the default query is the lecture's word
    before = chart(at, "qkv_lookup_chart")["data"]
    expect = lesson.lookup(classroom.model, classroom.tokenizer, text, layer, head, query)
    np.testing.assert_allclose(arr(before[0]["y"]), expect.scores, atol=1e-5)
    np.testing.assert_allclose(arr(before[1]["y"]), expect.probs, atol=1e-6)
    at.selectbox(key="qkv_query").set_value(2).run()
    clean(at)
    after = chart(at, "qkv_lookup_chart")["data"]
    other = lesson.lookup(classroom.model, classroom.tokenizer, text, layer, head, 2)
    np.testing.assert_allclose(arr(after[0]["y"]), other.scores, atol=1e-5)
    assert np.abs(arr(after[0]["y"]) - arr(before[0]["y"])).max() > 1e-3
    assert arr(after[1]["y"])[3:].sum() == 0  # query 2 may not read later keys: weight exactly 0
    table = at.dataframe[0].value
    assert table["key"].iloc[0] == f"{other.contributors[0].index} · {other.contributors[0].token}"
    assert any(s.value.startswith("✓ Σ_j p_j v_j") for s in at.success)


def test_a_non_separate_sidebar_model_is_named(at):
    at.session_state["model_key"] = "qkv-shared_kv"
    open_tab(at, "Database lookup")
    clean(at)
    assert any("shared K = V" in i.value and "qkv-shared_kv" in i.value for i in at.info)
    at.session_state["model_key"] = "classroom"
    at.run()
    assert not any("shared K = V" in i.value for i in at.info)


def test_every_tab_renders(at):
    charts = {}
    for label in TABS:
        open_tab(at, label)
        clean(at)
        charts[label] = len(at.get("plotly_chart"))
    assert charts["Database lookup"] == 2 and charts["Four variants"] == 2
    assert charts["Minimal pairs"] == 1 and charts["Held-out loss"] == 1 and charts["Claims"] == 0


def test_four_variants_symmetric_scores_and_head_picker(at):
    open_tab(at, "Four variants")
    panels = chart(at, "qkv_panels_chart")["data"]
    assert [p["name"].split(" · ")[0] for p in panels] == [lesson.VARIANT_LABELS[m] for m in lesson.SHIPPED]
    for p in panels:
        s = arr(p["z"]).astype(float)
        asym = np.linalg.norm(s - s.T) / np.linalg.norm(s)
        if p["name"].startswith(("shared Q = K", "raw X")):
            assert asym < 1e-6, p["name"]
        else:
            assert asym > 0.1, p["name"]
    ticks = [s.value for s in at.success]
    assert sum(t.startswith("✓ shared Q = K: ‖S − Sᵀ‖/‖S‖") or t.startswith("✓ raw X") for t in ticks) == 2
    at.selectbox(key="qkv_var_head").set_value(1).run()
    clean(at)
    again = chart(at, "qkv_panels_chart")["data"]
    assert np.abs(arr(again[0]["z"]).astype(float) - arr(panels[0]["z"]).astype(float)).max() > 1e-3


def test_minimal_pairs_picker_changes_the_cosines(at):
    open_tab(at, "Minimal pairs")
    first = chart(at, "qkv_pairs_chart")["data"]
    assert [t["name"] for t in first] == ["attention output, layer 0", "attention output, layer 1",
                                          "final hidden state"]
    assert first[0]["x"][0] == lesson.VARIANT_LABELS["separate"]
    options = at.selectbox(key="qkv_pair").options
    at.selectbox(key="qkv_pair").set_value(options[1]).run()
    clean(at)
    second = chart(at, "qkv_pairs_chart")["data"]
    assert np.abs(arr(second[0]["y"]) - arr(first[0]["y"])).max() > 1e-3
    at.selectbox(key="qkv_pair").set_value(options[-1]).run()  # type your own: one that is not a minimal pair
    at.text_input(key="qkv_pair_b").input("the big dog sat").run()
    assert not at.exception
    assert any("differs in exactly one" in w.value for w in at.warning)


def test_claims_tab_shows_measured_rows(at):
    open_tab(at, "Claims")
    clean(at)
    ticks = [s.value for s in at.success]
    assert any(t.startswith("✓ Raw-embedding attention XXᵀ") for t in ticks)
    assert any(t.startswith("✓ One matrix for Q and K") for t in ticks)
    crosses = [w.value for w in at.warning if w.value.startswith("✗")]
    held, total = map(int, re.search(r"\*\*(\d+) of (\d+)\*\* claims hold",
                                     " ".join(m.value for m in at.markdown)).groups())
    assert held == len(ticks) and total == len(ticks) + len(crosses) == 9
    measured = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("**Measured:**")]  # unescaped
    assert len(measured) == total and "largest ‖S − Sᵀ‖/‖S‖" in measured[0]
    asym = float(re.search(r"sentence: ([0-9.e+-]+)", measured[0]).group(1))
    assert asym <= lesson.SYMMETRY_TOL


def walk(node):
    """Every element of the page in the order it is drawn."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def claim_boxes(at) -> list[dict]:
    """Each claim's box: its mark (✓/✗), sentence, measurement (unescaped) and tolerance."""
    boxes = []
    for el in walk(at.main):
        value = str(getattr(el, "value", ""))
        if el.type in ("success", "warning") and value[:2] in ("✓ ", "✗ "):
            boxes.append({"mark": value[0], "claim": value[2:], "measured": "", "tol": ""})
        elif boxes and el.type == "markdown" and value.startswith("**Measured:**"):
            boxes[-1]["measured"] = value.replace("\\", "")
        elif boxes and el.type == "caption" and value.startswith("Holds when:"):
            boxes[-1]["tol"] = value
    return boxes


def num(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1))


def _losses(m: str) -> dict[str, float]:
    return {v: num(re.escape(lesson.VARIANT_LABELS[v]) + r" ([0-9.]+)", m) for v in lesson.SHIPPED}


# Each claim's verdict recomputed from the numbers its own box prints (the sentence's first words name it).
VERDICTS = {
    "Raw-embedding attention": lambda m: num(r"sentence: ([0-9.e+-]+)", m) <= lesson.SYMMETRY_TOL,
    "One matrix for Q and K": lambda m: num(r"sentence: ([0-9.e+-]+)", m) <= lesson.SYMMETRY_TOL,
    "Separate W_Q and W_K break": lambda m: num(r"of separate: ([0-9.]+)", m) >= lesson.ASYMMETRY_MIN,
    "With Q = K a token's best match": lambda m: (
        num(r"shared Q = K ([0-9.]+)", m) - num(r"separate ([0-9.]+)", m) >= lesson.SELF_MARGIN - 1e-3
        and num(r"row max in (\d+)%", m) / 100 > lesson.MOST_ROWS),
    "K reused as V blurs": lambda m: num(r"K = V ([0-9.]+)", m) - num(r"separate ([0-9.]+)", m)
    > lesson.COSINE_MARGIN,
    "With K = V, 'the cat sat'": lambda m: num(r"K = V ([0-9.]+)", m) >= lesson.NEARLY_SAME,
    "Separate Q, K and V are worth": lambda m: min(_losses(m).items(), key=lambda kv: kv[1])[0] == "separate",
    "Reformer": lambda m: num(r"separate: ([+-][0-9.]+)", m) <= lesson.LOSS_TOL,
    "Without projections": lambda m: max(_losses(m).items(), key=lambda kv: kv[1])[0] == "none",
}


def test_each_claims_mark_agrees_with_its_own_numbers(at):
    """A ✓ means the sentence beside it is true of the numbers printed under it, with its tolerance stated: no ✓
    for 'lowest held-out loss' when shared Q = K is lower, none for 'nearly the same' at cosine 0.50."""
    open_tab(at, "Claims")
    clean(at)
    boxes = claim_boxes(at)
    assert len(boxes) == 9
    for box in boxes:
        (check,) = [f for start, f in VERDICTS.items() if box["claim"].startswith(start)]
        assert box["tol"], box["claim"]  # every verdict says when it holds
        assert (box["mark"] == "✓") == check(box["measured"]), (box["claim"], box["measured"])
    loss = next(b for b in boxes if b["claim"].startswith("Separate Q, K and V are worth"))
    if loss["mark"] == "✗":  # the shipped models: shared Q = K is lower, and the page says by how little
        notes = " ".join(i.value for i in at.info)
        assert "run-to-run noise" in notes
    same = next(b for b in boxes if b["claim"].startswith("With K = V, 'the cat sat'"))
    assert f"≥ {lesson.NEARLY_SAME:g}" in same["tol"]
    held = int(re.search(r"\*\*(\d+) of", " ".join(m.value for m in at.markdown)).group(1))
    assert held == sum(b["mark"] == "✓" for b in boxes)


def test_variant_note_names_the_models_as_the_picker_shows_them(at):
    from viz_model.ui.models import available_models

    at.session_state["model_key"] = "classroom"
    open_tab(at, "Database lookup")
    clean(at)
    titles = {e.key: e.title for e in available_models()}
    (note,) = [c.value for c in at.caption if "in the sidebar" in c.value]
    for variant, key in lesson.SHIPPED.items():
        if variant != "separate":
            assert titles[key] in note.replace("\\", "") and f"`{key}`" not in note


def test_panel_titles_and_caption_round_the_asymmetry_alike(at):
    open_tab(at, "Four variants")
    clean(at)
    panels = [p for p in chart(at, "qkv_panels_chart")["data"] if p["type"] == "heatmap"]
    shown = {p["name"].split(" · ")[0]: p["name"].split("asym ")[1] for p in panels}
    caption = next(c.value for c in at.caption if c.value.startswith("With separate W_Q and W_K"))
    for name in (lesson.VARIANT_LABELS["separate"], lesson.VARIANT_LABELS["shared_kv"]):
        value = num(re.escape(name) + r" ([0-9.]+)", caption)
        assert shown[name] == lesson.asym_text(value) == f"{value:.2f}"  # "1.03" in both, never "1" beside "1.03"
    table = at.dataframe[0].value
    assert list(table["‖S − Sᵀ‖ / ‖S‖"]) == [shown[v] for v in table["variant"]]


def test_heldout_tab_matches_metadata_and_opens_the_train_ablation(at):
    open_tab(at, "Held-out loss")
    clean(at)
    bars = chart(at, "qkv_loss_chart")["data"][0]
    assert len(arr(bars["y"])) == 4 and all(1.0 < y < 1.4 for y in arr(bars["y"]))
    assert any(s.value.startswith("✓ Recomputed here, the held-out losses match") for s in at.success)
    at.button(key="qkv_to_train").click().run()
    clean(at)
    assert at.session_state["train_tab"] == "Compare setups"
    vary = next(r for r in at.radio if r.label == "Vary")  # drawn only inside the Compare setups tab
    assert vary.value == "qkv"
    at.switch_page(PAGE).run()  # back, for the tests after this one


def test_bad_input_is_a_message(at):
    open_tab(at, "Database lookup")
    at.text_input(key="qkv_text").input("   ").run()
    assert not at.exception
    assert any("Type at least one word" in w.value for w in at.warning)
    at.text_input(key="qkv_text").input("<b>cat</b> & zebra¿ sat").run()
    clean(at)
    assert chart(at, "qkv_lookup_chart")["data"]
    at.text_input(key="qkv_text").input("The cat sat on the mat").run()


def open_tab(at, label: str):
    return conftest.open_tab(at, "qkv_tab", label)


def test_a_measured_claim_is_drawn_by_show_check_and_qkv_draws_no_mark_of_its_own():
    """#41 (item 2): every ✓/✗ is drawn by ui.widgets.show_check. A lecture's claim measured here (a Fact with its
    measurement) shows its verdict, the numbers, when it holds and the note; one that does not hold is a warning (a
    finding about the claim on this model), not an error of the app. ui/qkv.py writes no mark itself."""
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    def page():
        from viz_model.lessons.common import Fact
        from viz_model.ui.widgets import show_checks

        show_checks([Fact(True, "It holds.", measurement="x = 1", value=1.0, tolerance="x ≥ 1"),
                     Fact(False, "It does not.", measurement="y = 0.5", value=0.5, tolerance="y ≥ 0.9",
                          note="Far from it.")])

    at = AppTest.from_function(page).run()
    assert not at.exception and not at.error
    assert [s.value for s in at.success] == ["✓ It holds."] and [w.value for w in at.warning] == ["✗ It does not."]
    measured = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("**Measured:**")]
    assert measured == ["**Measured:** x = 1", "**Measured:** y = 0.5"]  # unescaped
    assert [c.value for c in at.caption] == ["Holds when: x ≥ 1.", "Holds when: y ≥ 0.9."]
    assert [i.value for i in at.info] == ["Far from it."]
    source = (ROOT / "viz_model/ui/qkv.py").read_text()
    assert "✓" not in source and "✗" not in source

