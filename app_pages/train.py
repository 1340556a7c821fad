"""Train: start a run, watch the loss fall and attention patterns appear, compare setups, keep the model."""

import streamlit as st

from viz_model.lessons.train import validate
from viz_model.runtime import jobs as J
from viz_model.tokenizer import load_tokenizer
from viz_model.ui import share
from viz_model.ui import train as T
from viz_model.ui.errors import guard
from viz_model.ui.jobs import JOB_KEY, hold_lease, registry

st.title("Train a model, live")
st.caption("A transformer, an RNN or an LSTM, on next-token, masked-LM or translation tasks. Training runs on the "
           "server in the background: switch pages and come back, it keeps going. "
           "Everyone shares the server, so a few runs train at a time and the rest wait in a queue.")

owner = hold_lease()  # while this tab is open, its runs are not orphaned
reg = registry()
vocab = load_tokenizer("word").get_vocab_size()
job = reg.get(st.session_state.get(JOB_KEY))

with st.expander("Configure", expanded=job is None, icon=":material/tune:"):
    spec = T.config_form()
    try:
        cfg, n_params = validate(spec, vocab)
        heads = f" × {cfg.n_heads} heads" if hasattr(cfg, "n_heads") else f" of {spec.arch.upper()}"
        st.caption(f"{n_params:,} parameters · {cfg.n_layers} layers{heads} · d_model {cfg.d_model}"
                   f" · {spec.steps * spec.batch_size:,} sequences seen.")
    except ValueError as e:
        st.warning(str(e))

b = st.columns(5)
if b[0].button("Start", type="primary", key="train_start", icon=":material/play_arrow:",
               disabled=job is not None and job.active):
    try:
        new_id = T.start_run(reg, owner, spec, vocab)
    except ValueError as e:
        st.warning(f"Not started: {e}")
    else:
        if job is not None:
            reg.remove(job.id)
        st.session_state[JOB_KEY] = new_id
        st.rerun()
if b[1].button("Pause", key="train_pause", icon=":material/pause:", disabled=job is None or job.status != J.RUNNING):
    reg.pause(job.id)
    reg.wait(job.id, 10, until=(J.PAUSED, *J.FINISHED))
    st.rerun()
if b[2].button("Resume", key="train_resume", icon=":material/resume:", disabled=job is None or job.status != J.PAUSED):
    reg.resume(job.id)
    st.rerun()
if b[3].button("Stop", key="train_stop", icon=":material/stop:", disabled=job is None or not job.active):
    reg.stop(job.id)
    reg.wait(job.id, 10)
    st.rerun()
if b[4].button("Reset", key="train_reset", icon=":material/restart_alt:", disabled=job is None):
    reg.remove(job.id)
    st.session_state.pop(JOB_KEY, None)
    st.rerun()

active = job is not None and job.active
st.session_state[T.WAS_ACTIVE_KEY] = active


@st.fragment(run_every=1.0 if active else None)
def progress() -> None:
    j = reg.get(st.session_state.get(JOB_KEY))
    if j is None:
        st.info("Pick a setup above and press **Start**. Tip: the *tiny* model on *induction* shows a head "
                "suddenly learning to look back, with a matching drop in the loss.")
        return
    with guard("the progress"):  # fragment reruns bypass app.py's guard
        T.status(j, reg)
    if st.session_state.get(T.WAS_ACTIVE_KEY) and not j.active:
        st.session_state[T.WAS_ACTIVE_KEY] = False
        st.rerun()  # full rerun: stops the timers and enables the controls


@st.fragment(run_every=3.0 if active else None)
def curves() -> None:
    j = reg.get(st.session_state.get(JOB_KEY))
    if j is not None:
        with guard("the loss curves"):
            T.curves(j)


@st.fragment(run_every=5.0 if active else None)
def attention() -> None:  # snapshots arrive every N steps: a slower timer is enough
    j = reg.get(st.session_state.get(JOB_KEY))
    if j is not None:
        with guard("the attention views"):
            T.attention(j)


progress()
curves()
attention()

TABS = ["Attention evolution", "Teacher forcing", "Compare setups", "Save / load"]
label, tab = share.tabs(TABS, key="train_tab")  # only the open tab runs
with tab:
    if label == TABS[0]:
        T.evolution(job)
    elif label == TABS[1]:
        T.teacher_forcing(job)
    elif label == TABS[2]:
        T.ablation(reg, owner, spec, vocab)
    else:
        T.checkpoints(job, owner)
