"""Explorer: every head at a glance, one head large, and every step of attention for it, live."""

import numpy as np
import streamlit as st

from viz_model.figures.attention import attention_heatmap
from viz_model.figures.common import head_name
from viz_model.figures.explorer import entropy_bars
from viz_model.ui import cache, chart, share, widgets
from viz_model.ui import explorer as ui
from viz_model.ui.sidebar import current_model

st.title("Attention explorer")
st.markdown("Every head of the model in the sidebar, on your sentence, computed live. Choose a **Layer** and "
            "**Head** under the grid to open one large, then follow it step by step from **X** to **W_O**.")

ckpt = current_model()
model, cfg = ckpt.model, ckpt.model.config
enc = widgets.sentence_input("explorer", ckpt)
tokens, T = enc.tokens, len(enc.ids)

ui.tokens_view(ckpt, enc)

with st.expander("Knobs that re-run the model", expanded=False):
    k1, k2, k3, k4 = st.columns(4)
    scale_on = k1.toggle("Scale scores by 1/√d_k", value=True, key="explorer_scale", **share.URL)
    temperature = k2.slider("Attention temperature", 0.1, 5.0, 1.0, 0.1, key="explorer_temp", **share.URL,
                            help="Scores are divided by this before the softmax.")
    default_mask = "causal" if cfg.causal else "bidirectional"
    mask_kind = k3.radio("Mask", ["causal", "bidirectional"], index=0 if cfg.causal else 1, key="explorer_mask",
                         **share.URL)
    average = k4.toggle("Average of all heads", value=False, key="explorer_avg", **share.URL)
    if mask_kind != default_mask:
        st.warning(f"This model was trained {default_mask}. Running it {mask_kind} is off-distribution: the pattern "
                   "shows what the weights do with inputs they never saw, not what they learned.")
    if not scale_on:
        st.caption(f"Without 1/√d_k (= 1/{np.sqrt(cfg.d_k):.3g}) the scores are larger, so softmax rows saturate: "
                   "watch the row entropies drop in the tab “How sharp is each row?”.")

mask = np.tri(T, dtype=bool) if mask_kind == "causal" else np.ones((T, T), dtype=bool)
bits = cache.mask_bits(mask)
mid = cache.model_id(ckpt)
data = cache.cached_trace(model, mid, tuple(enc.ids), bits, scale_on, float(temperature))
tkey = cache.input_key(mid, enc.ids, tokens, bits, scale_on, float(temperature))  # figure cache key
probs = data["probs"]  # (L, H, T, T)

st.subheader("All heads at a glance")
roles, measured = ui.roles_for(ckpt)
ui.grid(cfg, probs, tokens, roles, data["allowed"], tkey)
if (note := ui.kv_note(cfg)) is not None:
    st.caption(note)
    ui.kv_share_check(data, cfg)
if roles is not None and (table := ui.roles_table(ckpt, measured)) is not None:
    label = "measured now on this model" if measured else "measured on held-out text when the model was trained"
    with st.expander(f"Head roles, {label}"):
        st.dataframe(table, hide_index=True, width="stretch")
        st.caption(ui.ROLE_LEGEND if measured is None else ui.MEASURED_LEGEND.format(
            n=8, bos=f": {widgets.start_token(ckpt)[1]}" if widgets.uses_bos(ckpt) else ""))

c1, c2 = st.columns(2)
layer = share.select(c1, "Layer", range(cfg.n_layers), "explorer_layer")
head = share.select(c2, "Head", range(cfg.n_heads), "explorer_head")  # its role: in the line below (a label
# with the role would be the URL's value, and change when the roles are measured)
if roles and roles[layer][head]:
    st.info(f"{head_name(layer, head).capitalize()}: measured role **{roles[layer][head]}**.")
if (g := ui.kv_group(cfg)) > 1:
    mates = [str(h) for h in range(head // g * g, head // g * g + g) if h != head]
    st.caption(f"Head {head} reads K/V head {head // g}, shared with query head{'s' * (len(mates) > 1)} "
               f"{', '.join(mates)}.")

big = probs[layer].mean(0) if average else probs[layer, head]
title = f"Layer {layer}, average of {cfg.n_heads} heads" if average else f"Layer {layer}, head {head}"
fig = cache.cached("head", (tkey, layer, head, average),
                       lambda: attention_heatmap(big, tokens, allowed=data["allowed"], title=title))
chart.show(fig, key="explorer_head_map", name=f"attention_L{layer}_H{'avg' if average else head}")
err = float(np.abs(big.sum(-1) - 1).max())
widgets.check_line(err < 1e-5, f"Rows sum to 1, max error {err:.0e}. Grey cells are blocked by the mask "
                          "(weight exactly 0), not learned zeros.")

# Only the open tab runs: opening the page draws the grid, the head and one more chart.
label, tab = share.tabs(["Pipeline", "Query focus", "How sharp is each row?"], key="explorer_tab")
with tab:
    if label == "Pipeline":
        st.markdown(f"**Every step of {head_name(layer, head)}**, recomputed from the trace and checked.")
        steps = ui.pipeline_steps(T, cfg.d_model, cfg.n_heads, cfg.d_k)
        chk = cache.cached_checks(model, mid, tuple(enc.ids), bits, scale_on, float(temperature), layer)
        errors = [chk["qkv"], chk["scores"], None, None, chk["row_sums"], chk["head_out"], None, chk["attn_out"]]
        st.dataframe(ui.pipeline_table(steps, errors), hide_index=True, width="stretch")
        step = st.segmented_control("Show step", range(len(steps)), default=1, key="explorer_step", **share.URL,
                                    format_func=lambda i: steps[i].title.split(". ")[1])
        if step is not None:
            st.markdown(f"**{steps[step].title}** · `{steps[step].formula}` · shape {steps[step].shape}")
            ui.pipeline_step(step, data, chk, layer, head, tokens, "explorer", tkey)
    elif label == "Query focus":
        ui.query_focus(data, layer, head, tokens, "explorer", tkey)
    else:
        ent = data["entropy"][layer].mean(0) if average else data["entropy"][layer, head]
        uniform = np.log(np.maximum(data["allowed"].sum(-1), 1))
        chart.show(cache.cached("entropy", (tkey, layer, head, average),
                                    lambda: entropy_bars(ent, tokens, max_entropy=uniform)),
                   key="explorer_entropy", name="row_entropy")
        st.caption(f"Mean row entropy {ent.mean():.3f} nats (uniform rows would give {uniform.mean():.3f}). "
                   "Turn off the 1/√d_k scaling or lower the temperature: rows saturate towards one key.")
