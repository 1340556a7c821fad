"""Start: what the app is, the loaded model, and one sentence through the whole pipeline."""

import pandas as pd
import streamlit as st
import torch

from viz_model.data import TASK_LABELS
from viz_model.device import describe
from viz_model.figures.attention import attention_heatmap
from viz_model.tokenizer import encode
from viz_model.ui import chart, share
from viz_model.ui.sidebar import current_model
from viz_model.ui.widgets import token_chips, uses_bos

st.title("Attention Lab")
st.markdown(
    "See inside a small transformer **while it runs**. Every number on these pages is computed live "
    "on the model in the sidebar: pick a sentence, a layer and a head, and watch where each token looks."
)

ckpt = current_model()
model, tok, cfg = ckpt.model, ckpt.tokenizer, ckpt.model.config

st.subheader("The model")
card = {
    "parameters": f"{model.num_params():,}",
    "layers": cfg.n_layers,
    "heads per layer": cfg.n_heads,
    "d_model (d_k per head)": f"{cfg.d_model} ({cfg.d_k})",
    "context length": cfg.max_len,
    "position encoding": cfg.pos_encoding,
    "attention": "causal (decoder)" if cfg.causal else "bidirectional (encoder)",
    "device": describe(model.device),
}
st.dataframe(pd.DataFrame({"": list(card.values())}, index=list(card), dtype=str).T, hide_index=True)
meta = ckpt.metadata
if meta.get("heldout_loss") is not None:
    task = TASK_LABELS.get(meta.get("task"), meta.get("task", "?"))
    st.caption(f"Trained for {meta.get('steps', '?')} steps on {task}; "
               f"held-out loss {meta['heldout_loss']:.3f}.")

st.subheader("One sentence, end to end")
share.bind("text", "start_text")
text = st.text_input("Type a sentence", "The cat sat on the mat", key="start_text", max_chars=2000)
share.bind("bos", "start_bos", bool)
bos = st.toggle("Start with `<bos>`, as in training", value=uses_bos(ckpt), key="start_bos",
                help="The shipped models saw a <bos> token in front of most training sentences; "
                     "many heads park spare attention on it.")
enc = encode(tok, text, max_len=cfg.max_len, bos=bos)
if enc.truncated:
    st.info(f"Your text has {enc.n_tokens_total} tokens; the model reads at most {cfg.max_len}, "
            "so only the first ones are shown.")
if not enc.ids or enc.tokens == ["<bos>"]:
    st.warning("Type at least one word to see its tokens and attention.")
    share.stop()
if enc.unknown:
    st.caption("Words this model has never seen become `<unk>`: " + ", ".join(f"`{w}`" for w in enc.unknown[:12]))

token_chips(enc)

share.bind("layer", "start_layer", int, choices=range(cfg.n_layers))
share.bind("head", "start_head", int, choices=range(cfg.n_heads))
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(cfg.n_layers), key="start_layer")
head = c2.selectbox("Head", range(cfg.n_heads), key="start_head")
with torch.no_grad():
    out = model(torch.tensor([enc.ids], device=model.device), trace=True)
lt = out.trace.layers[layer]
probs = lt.probs[0, head]
allowed = torch.isfinite(lt.mask).expand(lt.probs.shape)[0, head]
fig = attention_heatmap(probs, enc.tokens, allowed=allowed, title=f"Layer {layer}, head {head}: attention weights")
chart.show(fig, key="start_heatmap", name=f"attention_L{layer}_H{head}")
role = next((r for r in meta.get("head_roles", []) if (r["layer"], r["head"]) == (layer, head)), None)
if role:
    st.caption(f"Measured role of this head on held-out text: **{role['role']}** (score {role['score']:.2f}).")
err = (probs.sum(-1) - 1).abs().max().item()
note = "grey cells (×) are blocked by the causal mask" if cfg.causal else "this model attends in both directions"
st.success(f"✓ Every row sums to 1 (max error {err:.1e}); {note}.")
