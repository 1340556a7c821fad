"""AppTest of the Train page. AppTest never fires run_every timers, so each at.run() is one poll of the page."""

from __future__ import annotations

import json
import re
import time

import pytest
import streamlit as st
from conftest import assert_clean, open_tab, plotly_array


def values(v) -> list:
    return plotly_array(v).tolist()


@pytest.fixture(autouse=True)
def fresh_registry():
    st.cache_resource.clear()  # the job registry is process-wide: every test gets its own (and stops it after)
    yield
    st.cache_resource.clear()


def progress_step(at) -> tuple[int, str]:
    texts = [p.proto.text for p in at.get("progress")]
    m = re.search(r"step ([\d,]+)/[\d,]+ · (\w+)", texts[0]) if texts else None
    return (int(m.group(1).replace(",", "")), m.group(2)) if m else (-1, "")


def poll(at, until, timeout: float = 60):
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        at.run()
        assert not at.exception
        seen.append(progress_step(at))
        if until(*seen[-1]):
            return seen
        time.sleep(0.3)
    raise AssertionError(f"page never reached the condition; saw {seen[-5:]}")


def configure(at, steps: int, every: int, task: str = "induction"):
    at.selectbox(key="train_task").set_value(task)
    at.select_slider(key="train_batch").set_value(4)
    at.number_input(key="train_steps").set_value(steps)
    at.number_input(key="train_every").set_value(every).run()


def chart(at, title: str) -> dict:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(s for s in specs if title in json.dumps(s["layout"].get("title", "")))


def test_a_started_run_shows_progress_loss_curves_samples_and_finishes(app_test, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(tmp_path))
    at = app_test("app_pages/train.py")
    assert not at.exception and "Start" in at.info[0].value
    configure(at, steps=20, every=10)
    at.button(key="train_start").click().run()
    seen = poll(at, lambda step, status: status == "done")
    steps = [s for s, _ in seen]
    assert steps == sorted(steps) and steps[-1] == 20
    at.run()  # the page's full rerun after the run ends (the fragment would trigger it in a browser)
    assert any("Finished 20 steps" in s.value for s in at.success)
    loss = chart(at, "Loss: train")
    train = next(t for t in loss["data"] if t["name"] == "train")
    y = values(train["y"])
    assert values(train["x"]) == list(range(1, 21)) and y[-1] < y[0]
    assert values(next(t for t in loss["data"] if t["name"] == "held-out")["x"]) == [10, 20]
    samples = next(d.value for d in at.dataframe if "greedy continuation" in d.value.columns)
    assert list(samples["step"]) == [20, 10]
    assert not any("p(target)" in d.value.columns for d in at.dataframe)  # only the open tab runs
    at.session_state["train_tab"] = "Teacher forcing"
    at.run()
    tf = next(d.value for d in at.dataframe if "p(target)" in d.value.columns)
    assert len(tf) >= 5 and tf["p(target)"].between(0, 1).all()
    assert any("Each row equals running its prefix alone" in s.value for s in at.success)
    assert not at.button(key="train_start").disabled
    # keep it: saved under runs/, selectable in the sidebar, downloadable
    at.session_state["train_tab"] = "Save / load"
    at.run()
    at.text_input(key="train_ckpt_name").set_value("my <b>model</b>").run()
    at.button(key="train_save").click().run()
    assert any("Saved as **my-b-model-b**" in s.value for s in at.success)
    assert "my-b-model-b" in at.session_state["user_models"]  # what the sidebar's Model menu lists
    assert at.get("download_button")
    assert len(list(tmp_path.rglob("my-b-model-b--*.safetensors"))) == 1


def test_pause_stops_progress_and_resume_continues(app_test):
    at = app_test("app_pages/train.py")
    configure(at, steps=5000, every=500, task="copy")  # long enough that Stop comes first
    at.button(key="train_start").click().run()
    poll(at, lambda step, status: step >= 2)
    at.button(key="train_pause").click().run()
    step, status = progress_step(at)
    assert status == "paused"
    time.sleep(0.5)
    at.run()
    assert progress_step(at) == (step, "paused")
    at.button(key="train_resume").click().run()
    poll(at, lambda s, status: s > step)
    at.button(key="train_stop").click().run()
    assert progress_step(at)[1] == "stopped"
    at.button(key="train_reset").click().run()
    assert at.get("progress") == [] or progress_step(at) == (-1, "")


def test_an_oversized_model_is_refused_with_a_message_before_it_starts(app_test):
    at = app_test("app_pages/train.py")
    at.selectbox(key="train_preset").set_value("custom").run()
    at.slider(key="train_layers").set_value(6)
    at.slider(key="train_heads").set_value(8)
    at.select_slider(key="train_dmodel").set_value(256)
    at.select_slider(key="train_batch").set_value(64)
    at.select_slider(key="train_seq").set_value(128)
    at.number_input(key="train_steps").set_value(5000).run()
    assert any("too big for the shared server" in w.value for w in at.warning)
    at.button(key="train_start").click().run()
    assert not at.exception
    assert any(w.value.startswith("Not started: this run is too big") for w in at.warning)
    assert "train_job_id" not in at.session_state
    at.slider(key="train_heads").set_value(5).run()  # 256 is not divisible by 5
    assert any("divisible by n_heads" in w.value for w in at.warning)


def test_an_lstm_trains_on_recall_from_the_page_and_says_it_has_no_attention(app_test):
    at = app_test("app_pages/train.py")
    at.selectbox(key="train_arch").set_value("lstm")
    configure(at, steps=20, every=10, task="recall")
    at.button(key="train_start").click().run()
    poll(at, lambda step, status: status == "done")
    at.run()
    assert any("LSTM has no attention to watch" in c.value for c in at.caption)
    loss = chart(at, "Loss: train")
    assert values(next(t for t in loss["data"] if t["name"] == "train")["x"]) == list(range(1, 21))
    at.session_state["train_tab"] = "Teacher forcing"
    at.run()
    assert not at.exception and any("p(target)" in d.value.columns for d in at.dataframe)


# -- settings you can trust (#14) -------------------------------------------------------------------------------
def form(at) -> tuple:
    return (at.select_slider(key="train_batch").value, at.select_slider(key="train_seq").value,
            at.number_input(key="train_steps").value)


def test_switching_the_size_preset_sets_that_presets_batch_context_and_steps(app_test):
    at = app_test("app_pages/train.py")
    assert form(at) == (16, 32, 200)
    at.selectbox(key="train_preset").set_value("classroom").run()
    assert form(at) == (32, 64, 600)
    assert any("19,200 sequences seen" in c.value for c in at.caption)  # the caption describes the same numbers
    at.select_slider(key="train_batch").set_value(4).run()  # a change of one's own ...
    at.selectbox(key="train_preset").set_value("tiny").run()  # ... gives way to the preset picked after it
    assert form(at) == (16, 32, 200)
    at.selectbox(key="train_preset").set_value("custom").run()
    assert form(at) == (32, 64, 600)
    assert not at.exception


def tf_text(at) -> str:
    return at.text_input(key="train_tf_text").value


def test_teacher_forcing_starts_from_the_tasks_own_probe_for_every_task(app_test):
    from viz_model.data import TASKS, probe_text

    at = app_test("app_pages/train.py")
    open_tab(at, "train_tab", "Teacher forcing")
    for task in TASKS:  # before a run: the task picked in the form
        at.selectbox(key="train_task").set_value(task).run()
        assert tf_text(at) == probe_text(task), task
    configure(at, steps=20, every=10, task="copy")  # the box was open on another task: it follows the run's
    at.button(key="train_start").click().run()
    poll(at, lambda step, status: status == "done")
    at.run()
    assert tf_text(at) == probe_text("copy")
    table = next(d.value for d in at.dataframe if "p(target)" in d.value.columns)
    assert set(table["target"]) <= set(probe_text("copy").split()) | {"<eos>"}  # letters, no English word
    at.text_input(key="train_tf_text").set_value("a b c").run()  # one's own sentence is kept
    assert tf_text(at) == "a b c"
    assert_clean(at)


def test_start_asks_before_it_discards_a_finished_unsaved_run(app_test, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(tmp_path))
    at = app_test("app_pages/train.py")
    configure(at, steps=20, every=10)
    at.button(key="train_start").click().run()
    poll(at, lambda step, status: status == "done")
    first = at.session_state["train_job_id"]
    at.button(key="train_start").click().run()
    assert at.session_state["train_job_id"] == first  # nothing discarded yet: it asks
    assert any("is not saved" in w.value for w in at.warning)
    at.button(key="train_keep").click().run()
    assert at.session_state["train_job_id"] == first and not any("is not saved" in w.value for w in at.warning)
    # saved: listed in the sidebar at once, and Start may replace it without a question
    open_tab(at, "train_tab", "Save / load")
    at.text_input(key="train_ckpt_name").set_value("kept").run()
    at.button(key="train_save").click().run()
    assert "kept (yours)" in at.selectbox(key="model_key").options  # the sidebar, drawn before the click
    at.button(key="train_start").click().run()
    second = at.session_state["train_job_id"]
    assert second != first and not any("is not saved" in w.value for w in at.warning)
    poll(at, lambda step, status: status == "done")
    at.button(key="train_start").click().run()  # the new run is not saved: asked again, then discarded on purpose
    assert at.session_state["train_job_id"] == second
    at.button(key="train_discard").click().run()
    assert at.session_state["train_job_id"] not in (first, second)
    at.button(key="train_stop").click().run()
    assert_clean(at)


def test_a_translation_run_can_guide_one_head_and_the_evolution_says_which(app_test):
    """Translation only: the guide toggle and its weight reach the run (its label and the evolution's caption)."""
    at = app_test("app_pages/train.py")
    assert not [t for t in at.toggle if t.key == "train_guide"]  # next-token tasks have no alignment to guide with
    configure(at, steps=20, every=10, task="translate")
    at.toggle(key="train_guide").set_value(True).run()
    assert at.select_slider(key="train_guide_weight").value == 0.05
    at.button(key="train_start").click().run()
    poll(at, lambda step, status: status == "done")
    open_tab(at, "train_tab", "Attention evolution")
    assert_clean(at)
    assert any("Head 0 of the last layer is guided toward the alignment (weight 0.05)" in c.value for c in at.caption)


def test_a_steps_count_over_the_limit_is_clamped_and_said_not_replaced_by_the_old_value(app_test):
    """#26: 20000 in the Steps box used to be refused by the widget, and Start trained the previous 200."""
    from viz_model.lessons.train import LIMITS
    from viz_model.ui.jobs import registry

    hi = LIMITS["steps"][1]
    at = app_test("app_pages/train.py")
    assert form(at)[2] == 200
    at.number_input(key="train_steps").set_value(20000).run()
    assert not at.exception
    note = f"20,000 steps is more than the {hi:,} this page allows on a shared server; training {hi:,}."
    assert any(note in w.value for w in at.warning)
    assert any(f"{hi * 16:,} sequences seen" in c.value for c in at.caption)  # the form's summary: the clamped count
    at.button(key="train_start").click().run()
    assert not at.exception
    job = registry().get(at.session_state["train_job_id"])
    assert job.meta["spec"].steps == hi and job.total == hi  # the run trains the clamped count, not 200
    assert re.search(rf"step [\d,]+/{hi:,} ", at.get("progress")[0].proto.text)
    at.button(key="train_stop").click().run()
    at.number_input(key="train_steps").set_value(300).run()  # back within the limit: no note
    assert not any("this page allows" in w.value for w in at.warning)


def test_clamp_steps_keeps_counts_within_the_limits_and_says_what_it_changed():
    from viz_model.lessons.train import LIMITS, clamp_steps

    lo, hi = LIMITS["steps"]
    assert clamp_steps(200) == (200, None) and clamp_steps(hi) == (hi, None) and clamp_steps(lo) == (lo, None)
    assert clamp_steps(20000) == (hi, f"20,000 steps is more than the {hi:,} this page allows on a shared server; "
                                      f"training {hi:,}.")
    assert clamp_steps(0) == (lo, f"0 steps is fewer than the {lo} a run needs; training {lo}.")


def test_a_training_setup_is_a_link(app_test):
    """#27 item 4: every setting of the form is URL-bound: a link opens the same set-up (the preset's own batch,
    context and steps only where the link names none)."""
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.query_params.update({"train_preset": "tiny", "train_steps": "300", "train_batch": "8", "train_lr": "0.01",
                            "train_pos": "sinusoidal", "train_qkv": "shared Q = K",
                            "train_mask": "Bidirectional (encoder)"})  # labels
    at.switch_page("app_pages/train.py").run()
    assert not at.exception
    got = {k: at.session_state[k] for k in ("train_steps", "train_batch", "train_lr", "train_pos", "train_qkv",
                                            "train_mask", "train_seq")}
    assert got == {"train_steps": 300, "train_batch": 8, "train_lr": 0.01, "train_pos": "sinusoidal",
                   "train_qkv": "shared_qk", "train_mask": "bidirectional", "train_seq": 32}  # seq: the tiny preset's
