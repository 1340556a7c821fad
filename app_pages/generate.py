"""Generate: from next-token probabilities to text, one visible step at a time."""

import streamlit as st

from viz_model import generate as G
from viz_model.figures import generate as F
from viz_model.ui import generate as ui
from viz_model.ui import share
from viz_model.ui.chart import show
from viz_model.ui.sidebar import current_model

st.title("Generate")
st.markdown("A decoder writes text **one token at a time**: it turns the prefix into a probability for every word "
            "in its vocabulary, picks one (greedy, or sampled after temperature / top-k / top-p), appends it and "
            "repeats. Everything below is computed live on the model in the sidebar.")

ckpt = current_model()
model, cfg = ckpt.model, ckpt.model.config
if not cfg.causal:
    st.warning("This model attends in both directions (an encoder): it cannot write left to right. "
               "Pick a decoder model in the sidebar.")
    st.stop()
enc = ui.prompt_input(ckpt)
ui.refuse_ended_prompt(ckpt, enc.ids)  # never continue a text past its end token
end = ui.end_name(ckpt)  # the model's own end token: "<eos>", "<|endoftext|>", "</s>"...
settings = ui.controls(cfg, cfg.vocab_size, end)
all_steps = ui.full_run(ckpt, enc.ids, settings)
steps = ui.visible_steps(all_steps, enc.ids, settings)

seq = enc.ids + [v.token_id for v in steps]
st.code(ckpt.tokenizer.decode(seq, skip_special_tokens=False), language=None, wrap_lines=True)
if steps and steps[-1].stop_reason:
    reason = G.stop_message(steps[-1].stop_reason, cfg.max_len).replace("<eos>", end)
    (st.warning if steps[-1].stop_reason == "context" else st.caption)(f"Stopped: {reason}")
if not steps:
    st.stop()

st.header("1 · The next-token distribution")
pick = len(steps) - 1
if len(steps) > 1:
    share.valid(ui.VIEW_STEP, range(1, len(steps) + 1), len(steps))
    pick = st.slider("Show step", 1, len(steps), len(steps), key=ui.VIEW_STEP, **share.URL) - 1
v = steps[pick]
st.markdown(f"Step {pick + 1}: the model's probabilities for position {v.position} (left), then after "
            f"**{settings.strategy.describe()}** (right: removed tokens grey, the rest renormalised to sum to 1). "
            f"The chosen token is orange: **{v.token}** with p = {v.p[v.chosen]:.3f}.")
show(F.next_token_bars(v.labels, v.p, v.q, v.chosen, strategy=settings.strategy.describe()),
     key="generate_bars", name=f"next_token_step{pick + 1}")

st.header("2 · Sequence probability = product of next-token probabilities")
table = ui.running_table(ckpt, enc, steps)
st.dataframe(table, hide_index=True, key="generate_table", column_config={
    c: st.column_config.NumberColumn(format="%.3e" if c.startswith("Π") else "%.4f")
    for c in table.columns if "p" in c and c != "position"})
total = G.sequence_logprob(table["log p"])
st.markdown(f"p(w₁…w_L | c) = Π p(w_l | c, w<l) over **{len(table)}** factors, including the end token "
            f"`{end}` = **{G.sequence_prob(table['log p']):.3e}**, and Σ log p = **{total:.3f}**. Long texts have "
            "tiny probabilities, so models add log-probabilities instead of multiplying.")

st.header("3 · Where the new token looks")
st.markdown("Each row is the attention of the position that predicts the next token, over everything before it. "
            "One row per step: the **causal triangle** builds up as the text grows.")
c1, c2 = st.columns(2)
share.valid("generate_layer", range(cfg.n_layers))
share.valid("generate_head", range(cfg.n_heads))
layer = c1.selectbox("Layer", range(cfg.n_layers), key="generate_layer", **share.URL)
head = c2.selectbox("Head", range(cfg.n_heads), key="generate_head", **share.URL)
labels = [*enc.tokens, *[s.token for s in steps]]
fig = F.attention_rows([s.attention[layer, head] for s in steps], labels[:steps[-1].position],
                       [s.position - 1 for s in steps], [s.token for s in steps], n_prompt=len(enc.ids),
                       title=f"Layer {layer} · head {head}: attention of each step")
show(fig, key="generate_attention", name=f"generation_attention_L{layer}_H{head}")
err = max(abs(float(s.attention[layer, head].sum()) - 1) for s in steps)
st.success(f"✓ Every row sums to 1 over the prefix (max error {err:.1e}); grey cells did not exist yet.")

label, tab = share.tabs(list(ui.TABS), key="generate_tab")  # only the open tab computes
with tab:
    ui.TABS[label](ckpt, enc.ids, settings)
