"""Widgets and live sections of the Train page: the setup form, the run's status, curves, attention,
teacher forcing, the compare-setups ablation and checkpoints. The logic lives in viz_model.lessons.train."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from viz_model.config import NORMS, POS_ENCODINGS, QKV_MODES
from viz_model.data import TASK_LABELS, probe_text
from viz_model.device import available_devices
from viz_model.figures.train import attention_now, attention_player, loss_curves, lr_curve, role_timeline
from viz_model.lessons import train as lesson
from viz_model.lessons.train import TrainSpec
from viz_model.masks import MASKS, MODEL_MASKS
from viz_model.runtime import jobs as J
from viz_model.runtime.runs import checkpoint_zip, import_upload, model_key, runs_dir, safe_name, save_run
from viz_model.runtime.train_process import make_events
from viz_model.tokenizer import typed_specials
from viz_model.ui import chart, share
from viz_model.ui.errors import guard
from viz_model.ui.jobs import JOB_KEY
from viz_model.ui.models import register_user_model
from viz_model.ui.widgets import show_check, specials_notice

ABLATION_KEY, DISCARD_KEY, TF_TASK_KEY = "train_ablation_ids", "train_confirm_discard", "train_tf_task"
ADDED_KEY = "train_added"
STEPS_HELP = (f"{lesson.LIMITS['steps'][0]} to {lesson.LIMITS['steps'][1]:,} on this shared server; a count "
              "outside that trains the nearest allowed one, and the page says so beside Start.")


def config_form() -> TrainSpec:
    """Widgets -> TrainSpec (validated later, before anything starts)."""
    c0, c1, c2, c3 = st.columns(4)
    kind = c0.selectbox("Model kind", lesson.ARCHS, key="train_arch", **share.URL, format_func=lesson.ARCH_LABELS.get,
                        help="A transformer, or torch's own nn.RNN / nn.LSTM (no attention: a hidden state "
                             "carried step by step). The RNN ignores the transformer switches below.")
    preset = c1.selectbox("Size", ["tiny", "classroom", "custom"], key="train_preset", on_change=_apply_preset,
                          **share.URL,
                          help="tiny trains in seconds; classroom is the lecture model; custom lets you pick.")
    task = c2.selectbox("Task", list(TASK_LABELS), format_func=TASK_LABELS.get, key="train_task", **share.URL)
    device = c3.selectbox("Device", ["auto", *available_devices()], key="train_device", **share.URL)
    arch = {}
    if preset == "custom":
        a1, a2, a3 = st.columns(3)
        arch = dict(n_layers=a1.slider("Layers", 1, 6, 2, key="train_layers", **share.URL),
                    n_heads=a2.slider("Heads", 1, 8, 2, key="train_heads", **share.URL),
                    d_model=a3.select_slider("d_model", [16, 24, 32, 48, 64, 96, 128, 192, 256], 64,
                                             key="train_dmodel", **share.URL))
    p1, p2, p3, p4 = st.columns(4)
    pos = p1.selectbox("Positional encoding", POS_ENCODINGS, index=3, key="train_pos", **share.URL)
    base = p2.number_input("RoPE base", 2.0, 1e6, 10000.0, key="train_base", **share.URL, disabled=pos != "rope")
    norm = p3.radio("LayerNorm", ["pre", "post"], horizontal=True, key="train_norm", **share.URL)
    mask = p4.selectbox("Mask", MODEL_MASKS, key="train_mask", format_func=lambda k: MASKS[k].label, **share.URL,
                        help=lesson.MASK_HELP)
    tie = p4.toggle("Tie input/output weights", True, key="train_tie", **share.URL)
    q1, q2, q3, q4 = st.columns(4)
    qkv = q1.selectbox("Q, K and V", QKV_MODES, key="train_qkv", **share.URL, format_func=lesson.QKV_LABELS.get,
                       help="Separate projections, one shared by Q and K, one shared by K and V, or none (XXᵀ).")
    norm_kind = q2.selectbox("Normalization", NORMS, key="train_norm_kind", **share.URL,
                             help="LayerNorm: each token over its features; BatchNorm: each feature over the "
                                  "batch and positions (padding included); RMSNorm: no mean subtracted (Llama).")
    residual = q3.toggle("Residual connections", True, key="train_residual", **share.URL)
    warmup = q4.toggle("Learning-rate warm-up", True, key="train_warmup", **share.URL)
    for k, v in lesson.PRESET_FORM[preset].items():
        # a link's value wins; else a first visit takes the preset's (a switch of preset: _apply_preset)
        if k not in st.query_params:
            st.session_state.setdefault(k, v)
    h1, h2, h3, h4, h5, h6 = st.columns(6)
    lr = h1.select_slider("Learning rate", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1], 3e-3, key="train_lr", **share.URL)
    batch = h2.select_slider("Batch", [1, 4, 8, 16, 32, 64], key="train_batch", **share.URL)
    seq = h3.select_slider("Context length", [32, 48, 64, 96, 128], key="train_seq", **share.URL)
    # no min or max: the widget would refuse a typed count and keep the old one; clamp_steps says what runs
    steps, _ = lesson.clamp_steps(h4.number_input("Steps", step=10, key="train_steps", **share.URL, help=STEPS_HELP))
    seed = h5.number_input("Seed", 0, 10_000, 0, key="train_seed", **share.URL)
    every = h6.number_input("Snapshot every", 5, 500, 20, 5, key="train_every", **share.URL,
                            help="Held-out loss, attention snapshot and a greedy sample every N steps.")
    align = 0.0
    if task == "translate":
        g1, g2 = st.columns([2, 3])
        if g1.toggle("Guide one head toward the alignment", False, key="train_guide", **share.URL,
                     help="Guided alignment (Garg et al. 2019): an extra loss, -log(attention on the aligned source "
                          "word), for head 0 of the last decoder layer. Off, every head finds its own way: none "
                          "is told to align."):
            align = float(g2.select_slider("Guide weight", lesson.GUIDE_WEIGHTS, lesson.GUIDE_WEIGHT,
                                           key="train_guide_weight", **share.URL))
    return TrainSpec(preset=preset, task=task, arch=kind, pos_encoding=pos, rope_base=float(base), norm_position=norm,
                     mask=mask, tie_weights=tie, qkv=qkv, norm=norm_kind, residual=residual, warmup=warmup,
                     lr=float(lr), batch_size=int(batch), seq_len=int(seq),
                     steps=int(steps), seed=int(seed), device=device, every=int(every), align_weight=align, **arch)


def steps_notice() -> None:
    """Beside Start: a Steps count outside the limits trains the nearest allowed count, and says so."""
    _, note = lesson.clamp_steps(st.session_state["train_steps"])  # the raw count config_form clamped
    if note:
        st.warning(note, icon=":material/warning:")


def _apply_preset() -> None:
    """on_change of the Size box: the new preset's batch, context and steps replace the old preset's."""
    st.session_state.update(lesson.PRESET_FORM[st.session_state["train_preset"]])


def start_run(reg, owner: str, spec: TrainSpec, vocab_size: int) -> str:
    _, n_params = lesson.validate(spec, vocab_size)  # a clear message before any thread starts
    job = reg.submit(owner, spec.label(), spec.steps, make_events(spec), meta={"spec": spec, "params": n_params})
    return job.id


def live(what: str, every: float, jobs: Callable[[], list], draw: Callable[[list], None]) -> None:
    """Draw `draw(jobs())` in a fragment that redraws itself every `every` s while one of the jobs is active.
    When the last one ends it asks for one full rerun: that shows the final state everywhere (controls, badge,
    tabs) and stops the timers, since run_every only changes on a full run. Idle, nothing polls."""
    active = any(j.active for j in jobs())

    @st.fragment(run_every=every if active else None)
    def part() -> None:
        now = jobs()
        if active and not any(j.active for j in now):
            st.rerun()
        with guard(what):  # fragment reruns bypass app.py's guard
            draw(now)

    part()


def this_job(reg) -> list:
    """This tab's run, as the list live() takes (empty before the first Start)."""
    job = reg.get(st.session_state.get(JOB_KEY))
    return [job] if job is not None else []


def unsaved(job) -> bool:
    """A finished run with trained steps that nobody saved: a new Start would throw it away."""
    return job is not None and not job.active and job.step > 0 and job.result is not None \
        and not job.meta.get("saved")


def start_or_ask(reg, owner: str, spec: TrainSpec, vocab_size: int, job) -> None:
    """The Start button: a finished, unsaved run is only replaced once the student says so (confirm_discard)."""
    if unsaved(job):
        st.session_state[DISCARD_KEY] = job.id
        st.rerun()
    replace_run(reg, owner, spec, vocab_size, job)


def replace_run(reg, owner: str, spec: TrainSpec, vocab_size: int, job) -> None:
    try:
        new_id = start_run(reg, owner, spec, vocab_size)
    except ValueError as e:
        st.warning(f"Not started: {e}")
        return
    if job is not None:
        reg.remove(job.id)
    st.session_state.pop(DISCARD_KEY, None)
    st.session_state[JOB_KEY] = new_id
    st.rerun()


def confirm_discard(reg, owner: str, spec: TrainSpec, vocab_size: int, job) -> None:
    """After Start on an unsaved finished run: say what would be lost, and start only on an explicit Discard."""
    if job is None or st.session_state.get(DISCARD_KEY) != job.id or not unsaved(job):
        st.session_state.pop(DISCARD_KEY, None)
        return
    st.warning(f"Your finished run **{job.title}** ({job.step:,} steps) is not saved: a new run replaces it. "
               "Keep it with **Save checkpoint** in the Save / load tab, or discard it.", icon=":material/warning:")
    c1, c2, _ = st.columns([1, 1, 3])
    if c1.button("Discard it and start", key="train_discard", type="primary", icon=":material/delete:"):
        replace_run(reg, owner, spec, vocab_size, job)
    if c2.button("Keep it", key="train_keep", icon=":material/undo:"):
        st.session_state.pop(DISCARD_KEY, None)
        st.rerun()


def status(job, reg) -> None:
    """Progress bar with step/total, ETA, tokens/s, queue position, and the job's message."""
    st.progress(min(job.step / max(job.total, 1), 1.0), text=lesson.progress_text(job, job.status == J.RUNNING))
    if job.status == J.QUEUED:
        pos = reg.queue_position(job.id)
        st.info(f"Waiting in the queue: position {pos}. The server trains {reg.slots} runs at a time; "
                "yours starts automatically.", icon=":material/hourglass_top:")
    elif job.status == J.DIVERGED:
        st.error(job.message)
    elif job.status in (J.FAILED, J.RECLAIMED):
        st.warning(job.message)
    elif job.status == J.DONE:
        st.success(f"Finished {job.step:,} steps in {job.runtime():.0f} s ({job.steps_per_second():.1f} steps/s).")


def curves(job) -> None:
    """Loss (train + held-out) and the learning-rate schedule."""
    h = lesson.history(job.events_since())
    if not h.steps:
        st.caption("The charts appear with the first training step.")
        return
    c1, c2 = st.columns([3, 2])
    chart.show(loss_curves({job.title: h.curve()}, title="Loss: train (solid) and held-out (dashed)", total=job.total),
               key="train_loss_chart", name="train_loss", container=c1, exports=False)
    chart.show(lr_curve(h.steps, h.lr, total=job.total),
               key="train_lr_chart", name="train_lr", container=c2, exports=False)


def attention(job) -> None:
    """The latest probe attention, per-head role scores over time, and the greedy samples so far."""
    h, spec = lesson.history(job.events_since()), job.meta["spec"]
    if spec.recurrent:
        st.caption(lesson.no_attention(spec.arch))
    if h.snaps:
        d1, d2 = st.columns(2)
        what = "cross-attention (target → source)" if h.query_tokens else "attention"
        chart.show(attention_now(h.snaps[-1], h.tokens, q_tokens=h.query_tokens,
                                 title=f"Probe {what} now (step {h.snap_steps[-1]})"),
                   key="train_attn_now", name="train_attention", container=d1, exports=False)
        if h.roles:
            role = d2.selectbox("Head role", list(h.roles), key="train_role", **share.URL,
                                index=list(h.roles).index("induction") if "induction" in h.roles else 0)
            chart.show(role_timeline(h.snap_steps, h.roles[role], role, h.steps, h.loss),
                       key="train_roles", name="train_roles", container=d2, exports=False)
    if h.samples:
        st.dataframe(pd.DataFrame(h.samples[::-1][:12]), hide_index=True, key="train_samples")


def evolution(reg) -> None:
    """The probe's attention at every snapshot so far, as a player (slider + play); live while the run goes."""
    live("the attention evolution", 5.0, lambda: this_job(reg), _evolution)  # as often as the attention views


def _evolution(jobs: list) -> None:
    job = jobs[0] if jobs else None
    if job is None:
        st.caption("Snapshots of the probe's attention appear here once a run has started.")
        return
    if job.result is None:  # queued, or its process is still building the model
        st.caption(f"The run is {job.status}: snapshots appear here as it takes them, every "
                   f"{job.meta['spec'].every} steps.")
        return
    h = lesson.history(job.events_since())
    run = job.result
    if not h.snaps:
        st.caption("An RNN has no attention: there is nothing to snapshot." if run.spec.recurrent
                   else f"The first snapshot comes at step {run.spec.every}.")
        return
    for note in lesson.evolution_notes(run.spec, len(h.snaps), job.active, bool(h.query_tokens)):
        st.caption(note)
    chart.show(attention_player(h.snaps, h.snap_steps, h.tokens, q_tokens=h.query_tokens), key="train_player",
               name="train_attention_evolution", exports=not job.active)


def teacher_forcing(job) -> None:
    st.markdown(lesson.TF_INTRO)
    run = job.result if job is not None else None
    task = run.spec.task if run is not None else st.session_state.get("train_task", "lm")
    if st.session_state.get(TF_TASK_KEY) != task or "train_tf_text" not in st.session_state:
        st.session_state[TF_TASK_KEY] = task  # the task's own probe: English words mean nothing to a letters model
        st.session_state["train_tf_text"] = probe_text(task)
    text = st.text_input("Training sentence", max_chars=300, key="train_tf_text",
                         help="Starts as the probe of the run's task, the input the trainer snapshots; type your own.")
    if not text.strip():
        st.warning("Type at least one word.")
        return
    if run is None:
        st.info("Start a run first: the table uses the model being trained.")
        return
    if run.spec.task in ("mlm", "translate"):
        st.info(lesson.TF_NOT_NEXT_TOKEN)
        return
    specials_notice(None, typed_specials(run.tok, text))  # typed text is literal: "<eos>" is not the end token
    with job.model_lock:  # the worker mutates the model between steps; read a consistent copy
        tf = lesson.teacher_forcing_check(run, text)
    rows = lesson.forcing_rows(run, tf, text)
    st.dataframe(pd.DataFrame(rows).round({"p(target)": 3, "loss": 3}), hide_index=True, key="train_tf_table")
    st.caption(tf.summary)
    if tf.check is None:
        st.warning(lesson.TF_NO_MASK)
    else:
        show_check(tf.check)


def ablation(reg, owner: str, spec: TrainSpec, vocab_size: int) -> None:
    kind = st.radio("Vary", list(lesson.ABLATIONS), horizontal=True, key="train_ablation_kind", **share.URL,
                    format_func=lambda name: lesson.ABLATIONS[name].label)
    try:
        specs = lesson.ablation_specs(spec, kind)
    except ValueError as e:
        st.info(f"Not available for this setup: {e}")
        return
    st.caption(f"Runs {len(specs)} copies of the setup above (same data, seed and steps), "
               f"{reg.slots} at a time; the rest wait in the queue.")
    if st.button(f"Run {len(specs)} side by side", key="train_ablation_start", icon=":material/compare:"):
        try:
            for s in specs:
                lesson.validate(s, vocab_size)
        except ValueError as e:
            st.warning(f"Not started: {e}")
        else:
            for old in st.session_state.get(ABLATION_KEY, []):
                reg.remove(old)
            st.session_state[ABLATION_KEY] = [start_run(reg, owner, s, vocab_size) for s in specs]
            st.rerun()
    live("the comparison", 2.0, lambda: [j for j in map(reg.get, st.session_state.get(ABLATION_KEY, [])) if j],
         lambda jobs: _compared(reg, kind, jobs))


def _compared(reg, kind: str, jobs: list) -> None:
    """The compared runs' bars and loss curves, and for the causal-mask pair the peeking demo once both are done."""
    if not jobs:
        return
    for j in jobs:
        pos = reg.queue_position(j.id)
        st.progress(min(j.step / max(j.total, 1), 1.0), text=f"{j.title}: {j.status}"
                    + (f" (queue position {pos})" if pos else f", step {j.step}/{j.total}"))
    runs = {j.title: lesson.history(j.events_since()).curve() for j in jobs}
    chart.show(loss_curves(runs, title="Same setup, one thing changed", total=max(j.total for j in jobs)),
               key="train_ablation_chart", name="train_ablation", exports=not any(j.active for j in jobs))
    done = [j for j in jobs if j.status == J.DONE]
    if kind == "mask" and len(done) == 2:  # lesson.ABLATIONS["mask"]: the causal mask on and off
        masked, free = sorted(done, key=lambda j: not j.meta["spec"].causal)
        with masked.model_lock, free.model_lock:
            d = lesson.mask_demo(masked.result, free.result)
        st.markdown(lesson.NO_MASK_WHY)
        show_check(lesson.mask_demo_claim(d))
        st.table(lesson.mask_demo_rows(d))


def checkpoints(job, owner: str) -> None:
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Save the trained model**")
        if job is None or job.result is None or job.step == 0:
            st.caption("Train a model first.")
        else:
            name = st.text_input("Name", f"my-{job.meta['spec'].task}-model", max_chars=40, key="train_ckpt_name")
            if st.button("Save checkpoint", key="train_save", disabled=job.status == J.RUNNING,
                         help="Pause or finish the run first." if job.status == J.RUNNING else None):
                with job.model_lock:
                    path = save_run(job.result, name, owner)
                register_user_model(model_key(path), path)
                job.meta["saved"] = str(path)  # this run's file; Start may now replace the run without asking
                st.rerun()  # the sidebar, drawn before this page, lists the new model at once
            saved = job.meta.get("saved")
            if saved and Path(saved).exists():
                key = model_key(Path(saved))
                st.success(f"Saved as **{key}**: pick it in the sidebar's Model menu on any page.")
                st.download_button("Download (.zip: safetensors + json)", checkpoint_zip(Path(saved)),
                                   f"{key}.zip", "application/zip", key="train_download")
    with c2:
        st.markdown("**Upload a checkpoint**")
        files = st.file_uploader("A .zip, or the .safetensors and .json pair", ["zip", "safetensors", "json"],
                                 accept_multiple_files=True, key="train_upload")
        if files and st.button("Check and add", key="train_upload_go"):
            dest = runs_dir() / safe_name(owner[:12]) / "uploads"
            ckpt = import_upload([(f.name, f.getvalue()) for f in files], dest)
            register_user_model(ckpt.path.stem, ckpt.path)
            st.session_state[ADDED_KEY] = (f"✓ {ckpt.path.stem}: valid safetensors, config and shapes check out "
                                           f"({ckpt.model.num_params():,} parameters). Pick it in the sidebar.")
            st.rerun()  # the sidebar, drawn before this page, lists the new model at once
        if added := st.session_state.pop(ADDED_KEY, None):
            st.success(added)
