"""Train: start a run, watch the loss fall and attention patterns appear, compare setups, keep the model."""

import streamlit as st

from viz_model.lessons.train import spec_summary, validate
from viz_model.runtime import jobs as J
from viz_model.tokenizer import load_tokenizer
from viz_model.ui import share
from viz_model.ui import train as T
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
        st.caption(spec_summary(spec, *validate(spec, vocab)))
    except ValueError as e:
        st.warning(str(e))

b = st.columns(5)
if b[0].button("Start", type="primary", key="train_start", icon=":material/play_arrow:",
               disabled=job is not None and job.active):
    T.start_or_ask(reg, owner, spec, vocab, job)  # a finished run nobody saved is replaced only after asking
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
T.steps_notice()  # a Steps count over the limit: what Start will train instead
T.confirm_discard(reg, owner, spec, vocab, job)


def runs() -> list:
    return T.this_job(reg)


def progress(jobs: list) -> None:
    if not jobs:
        st.info("Pick a setup above and press **Start**. Tip: the *tiny* model on *induction* shows a head "
                "suddenly learning to look back, with a matching drop in the loss.")
    for j in jobs:
        T.status(j, reg)


def curves(jobs: list) -> None:
    for j in jobs:
        T.curves(j)


def attention(jobs: list) -> None:
    for j in jobs:
        T.attention(j)


# Each part redraws itself while the run goes and once when it ends; snapshots come every N steps: a slower timer.
T.live("the progress", 1.0, runs, progress)
T.live("the loss curves", 3.0, runs, curves)
T.live("the attention views", 5.0, runs, attention)

share.show_tabs({"Attention evolution": lambda: T.evolution(reg), "Teacher forcing": lambda: T.teacher_forcing(job),
                 "Compare setups": lambda: T.ablation(reg, owner, spec, vocab),
                 "Save / load": lambda: T.checkpoints(job, owner)}, key="train_tab")  # only the open tab runs
