"""AppTest of the Generate page: step mode grows the table one row per click, run mode, strategy widgets."""

import json
import re
from functools import partial

import pytest
from conftest import plotly_array

values = partial(plotly_array, dtype=float)  # NaN where Plotly sent None (a masked hole)

PAGE = "app_pages/generate.py"


def generated_rows(at):
    return at.dataframe[0].value  # one row per generated token: the end token only where the model wrote it


def sentence(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("p(w₁…w_L | c)"))


def chart(at, key):
    return json.loads(at.get_by_key(key).proto.spec)


@pytest.fixture(scope="module")
def stepped():
    """One page run shared by the step-mode tests: the first token at once, then two clicks on Next token."""
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception and at.number_input(key="generate_step_n").value == 1  # the first token at once
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 1  # its row (no end token not yet written)
    for _ in range(2):
        at.button(key="generate_next").click().run()
    return at


def test_three_clicks_give_three_rows_and_a_three_row_attention_map(stepped):
    at = stepped
    assert not at.exception
    rows = generated_rows(at)
    assert len(rows) == 3 and list(rows["position"]) == [4, 5, 6]  # <bos> please send the -> positions 4, 5, 6
    att = next(t for t in chart(at, "generate_attention")["data"] if t["name"] == "attention")
    assert values(att["z"]).shape[0] == 3
    bars = chart(at, "generate_bars")["data"]
    assert len(bars) == 2 and len(values(bars[0]["x"])) >= 10  # before and after filtering, top-10 bars
    assert any("Every row sums to 1" in s.value for s in at.success)
    assert not at.error


def test_sequence_probability_is_the_product_of_the_table_without_an_unwritten_end_token(stepped):
    from viz_model.generate import sci_from_log

    table = stepped.dataframe[0].value
    assert (table["note"] == "").all()  # three tokens in, the text has not ended: no end-token factor
    product, total = table["p(token | prefix)"].prod(), table["log p"].sum()
    assert table["Π p so far"].iloc[-1] == sci_from_log(total) == f"{product:.2e}"
    said = sentence(stepped)
    assert "over **3** factors" in said and "No end token" in said and "not finished" in said
    assert f"Σ log p = **{total:.3f}**" in said and f"and p = **{sci_from_log(total)}**" in said


def test_a_long_hot_run_cut_at_the_length_limit_writes_p_from_the_log_and_claims_no_end_token(app_test):
    """#26: 128 tokens at temperature 3 said 'over 129 factors, including the end token = 0.000e+00': the end
    token was counted though the run stopped at the length limit, and the float product had underflowed."""
    from viz_model.generate import sci_from_log

    at = app_test(PAGE)
    at.radio(key="generate_mode").set_value("run").run()
    at.radio(key="generate_kind").set_value("sampling").run()
    at.slider(key="generate_temperature").set_value(3.0).run()
    at.checkbox(key="generate_stop_eos").set_value(False).run()
    at.slider(key="generate_max_new").set_value(20).run()
    assert not at.exception and not at.error
    assert "Stopped: the requested number of new tokens was reached." in [c.value for c in at.caption]
    table = generated_rows(at)
    n, total = len(table), table["log p"].sum()
    assert n == 20  # every new token is a row, and only those: no end-token row
    said = sentence(at)
    assert "over **20** factors, one per generated token. No end token: the run stopped at the length limit" in said
    assert "the last one the end token" not in said and "including the end token" not in said
    assert f"Σ log p = **{total:.3f}**" in said and f"and p = **{sci_from_log(total)}**" in said
    assert table["Π p so far"].iloc[-1] == sci_from_log(total) != "0"
    assert (table["note"] == "").all()


@pytest.mark.parametrize("tab, claim", [("KV cache", "with and without the cache; largest"),
                                        ("Teacher forcing vs free running", "teacher-forced pass"),
                                        ("Context limit", "model's context")])
def test_each_tab_computes_only_when_open_and_its_live_check_passes(stepped, tab, claim):
    at = stepped
    at.session_state["generate_tab"] = tab
    at.run()
    if tab == "KV cache":  # timed only on its button (#43)
        at.button(key="generate_kv_go").click().run()
    text = " ".join(s.value for s in at.success)
    assert claim in text and not at.error
    others = [c for t, c in [("KV cache", "with and without the cache; largest"), ("Context limit", "model's context")]
              if t != tab]
    assert not any(c in text for c in others)  # closed tabs did not run



def has_chart(at, key: str) -> bool:
    try:
        return at.get_by_key(key) is not None
    except KeyError:
        return False


def test_no_setting_change_times_the_kv_cache_only_its_button_and_the_result_is_kept(app_test, monkeypatch):
    """#43: the KV cache tab (open by default) timed 128 tokens with and without the cache on every new prompt,
    strategy, top-p and seed: 6-7 s each. Now only its button times, and the result is kept for that setting."""
    from viz_model.lessons import generate as lesson

    real, calls = lesson.cache_run, []
    monkeypatch.setattr(lesson, "cache_run", lambda *a, **kw: calls.append(a[1]) or real(*a, **kw))
    at = app_test(PAGE)
    at.text_input(key="generate_text").set_value("the river bank was quiet when").run()  # no other test types it
    at.radio(key="generate_kind").set_value("sampling").run()
    at.checkbox(key="generate_use_p").set_value(True).run()
    at.slider(key="generate_p").set_value(0.75).run()
    at.number_input(key="generate_seed").set_value(7).run()
    assert not at.exception and calls == []  # nothing timed on opening the page or on any setting
    assert not has_chart(at, "generate_latency") and at.button(key="generate_kv_go").label == "Measure on this server"
    assert any("Nothing is measured until you click" in c.value for c in at.caption)
    at.button(key="generate_kv_go").click().run()
    assert not at.exception and len(calls) == 1 and has_chart(at, "generate_latency")
    assert any("with and without the cache; largest" in s.value for s in at.success)
    assert at.button(key="generate_kv_go").label == "Measure again"
    at.number_input(key="generate_seed").set_value(8).run()  # another setting: not measured yet, not timed
    assert len(calls) == 1 and not has_chart(at, "generate_latency")
    at.number_input(key="generate_seed").set_value(7).run()  # back: the kept result, not timed again
    assert len(calls) == 1 and has_chart(at, "generate_latency")



def test_a_new_seed_under_greedy_decoding_runs_nothing_again_and_keeps_the_revealed_steps(app_test, monkeypatch):
    """#43: greedy decoding never draws, yet each seed was a run of its own (and the step count went back to 1)."""
    from viz_model.lessons import generate as lesson

    real, runs = lesson.step_views, []
    monkeypatch.setattr(lesson, "step_views", lambda *a, **kw: runs.append(a[1]) or real(*a, **kw))
    at = app_test(PAGE)
    at.checkbox(key="generate_stop_eos").set_value(False).run()  # 12 tokens to step through, whatever they are
    at.text_input(key="generate_text").set_value("the quiet river bank at night").run()  # no other test types it
    at.button(key="generate_next").click().run()
    assert len(generated_rows(at)) == 2
    done, shown = len(runs), at.code[0].value
    at.number_input(key="generate_seed").set_value(5).run()
    assert not at.exception and len(runs) == done  # the same run, from the cache
    assert len(generated_rows(at)) == 2 and at.code[0].value == shown
    at.radio(key="generate_kind").set_value("sampling").run()  # sampling draws: seed 5 is a run of its own
    assert len(runs) == done + 1


def test_compare_tab_scores_samples_at_several_temperatures(stepped):
    at = stepped
    at.session_state["generate_tab"] = "Compare strategies"
    at.run()
    samples, summary = at.dataframe[1].value, at.dataframe[2].value
    assert list(summary["strategy"]) == ["greedy", "T=0.5", "T=1", "T=1.5"]
    assert summary["distinct-2"].between(0, 1).all() and (summary["avg log p"] <= 0).all()
    assert len(samples) == 1 + 3 * 3 and "text" in samples
    d2 = summary.set_index("strategy")["distinct-2"]
    assert d2["greedy"] <= 1 / 3 + 1e-9 and d2["greedy"] < d2["T=1.5"]  # the same text 3 times: least diverse


def test_run_mode_generates_up_to_max_new_tokens_and_changing_the_prompt_changes_it(app_test):
    at = app_test(PAGE)
    at.radio(key="generate_mode").set_value("run").run()
    at.slider(key="generate_max_new").set_value(5).run()
    at.checkbox(key="generate_stop_eos").set_value(False).run()
    assert not at.exception
    assert len(generated_rows(at)) == 5
    first = at.code[0].value
    at.selectbox(key="generate_example").set_value("The bank by the").run()
    assert at.code[0].value != first and at.code[0].value.startswith("<bos> the bank by the")
    at.slider(key="generate_max_new").set_value(at.slider(key="generate_max_new").max).run()  # past the context
    warning = next(w.value for w in at.warning if "filled the model's context" in w.value)
    max_len = int(re.search(r"context of (\d+) tokens", warning).group(1))
    assert generated_rows(at)["position"].iloc[-1] == max_len - 1  # stopped exactly at the last readable position


def test_strategy_widgets_are_disabled_for_greedy_and_change_the_filtered_bars(app_test):
    at = app_test(PAGE)
    at.radio(key="generate_mode").set_value("run").run()
    assert at.slider(key="generate_temperature").disabled
    at.radio(key="generate_kind").set_value("sampling").run()
    assert not at.slider(key="generate_temperature").disabled
    at.checkbox(key="generate_use_k").set_value(True).run()
    at.slider(key="generate_k").set_value(3).run()
    at.slider(key="generate_view_step").set_value(1).run()
    before, after = (values(t["x"]) for t in chart(at, "generate_bars")["data"])
    assert (after > 0).sum() == 3  # top-3: everything else removed (drawn as 0)
    assert abs(after.sum() - 1) < 1e-6  # the three kept tokens are renormalised to sum to 1
    assert before.sum() < 1  # the model's own probabilities are spread over the whole vocabulary
    assert not at.exception


def test_awkward_prompts_give_a_message_not_a_traceback(app_test):
    at = app_test(PAGE)
    at.radio(key="generate_mode").set_value("run").run()
    for text, says in [("", "Type a prompt"), ("   ", "Type a prompt"), ("word " * 1000, "reads at most"),
                       ("😀 🎉", None), ("<b>x</b>", None), ("<pad>", None)]:
        at.text_input(key="generate_text").set_value(text).run()
        assert not at.exception and not at.error, text
        messages = " ".join(m.value for m in [*at.warning, *at.info])
        assert (says in messages) if says else at.code[0].value.startswith("<bos>"), text


def test_next_token_bars_grey_removed_tokens_highlight_the_choice_and_escape_labels():
    from viz_model.figures.generate import CHOSEN, REMOVED, next_token_bars

    fig = next_token_bars(["<b>x</b>", "cat", "&lt;"], [0.5, 0.3, 0.2], [0.625, 0.375, 0.0], chosen=1,
                          strategy="top-k=2")
    before, after = fig.data
    assert list(before.marker.color) == [before.marker.color[0], CHOSEN, REMOVED]
    assert list(after.x) == [0.625, 0.375, 0.0] and after.text[2] == "removed"
    ticks = fig.layout.yaxis.ticktext
    assert ticks[0] == "&lt;b&gt;x&lt;/b&gt;" and ticks[1] == "▶ cat" and ticks[2] == "&amp;lt;"
