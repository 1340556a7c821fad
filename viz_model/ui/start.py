"""Streamlit glue for the Start page: one head of the sentence's attention, as a fragment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from viz_model import hf
from viz_model.checkpoint import Checkpoint
from viz_model.english import load_heldout
from viz_model.figures.attention import attention_heatmap
from viz_model.lessons import common as common_lesson
from viz_model.lessons import english as english_lesson
from viz_model.ui import chart
from viz_model.ui.cache import cached, input_key, model_id, shared_results
from viz_model.ui.errors import section
from viz_model.ui.models import is_folder_model
from viz_model.ui.widgets import ROW_SUM_TOL, check_line, layer_head, verdict


def model_card(ckpt: Checkpoint, device: str) -> dict[str, str]:
    """What the model is, one value per row of the Start page's card (a model folder's also: K/V heads, dtype,
    memory, norm, MLP, RoPE theta and scaling)."""
    model, cfg, meta = ckpt.model, ckpt.model.config, ckpt.metadata or {}
    attention = "causal (decoder)" if cfg.causal else "bidirectional (encoder)"
    if not is_folder_model(ckpt):
        return {"parameters": f"{model.num_params():,}", "layers": str(cfg.n_layers),
                "heads per layer": str(cfg.n_heads), "d_model (d_k per head)": f"{cfg.d_model} ({cfg.d_k})",
                "context length": str(cfg.max_len), "position encoding": cfg.pos_encoding,
                "attention": attention, "device": device}
    position = cfg.pos_encoding
    if cfg.pos_encoding == "rope":
        scaling = cfg.rope_scaling
        position = f"RoPE, θ = {cfg.rope_base:,.0f}" + (
            f", {scaling['type']} scaling ×{scaling['factor']:g}" if scaling else "")
    kv = str(cfg.kv_heads) + (f" (grouped-query: {cfg.n_heads // cfg.kv_heads} query heads share each)"
                              if cfg.kv_heads != cfg.n_heads else " (one per query head)")
    return {"model": f"{meta.get('name')} ({meta.get('architecture') or meta.get('model_type')})",
            "parameters": f"{meta.get('n_params', model.num_params()):,}", "layers": str(cfg.n_layers),
            "heads per layer": str(cfg.n_heads), "K/V heads": kv,
            "d_model (d_k per head)": f"{cfg.d_model} ({cfg.d_k})", "context length": f"{cfg.max_len:,}",
            "position encoding": position, "norm · MLP": f"{cfg.norm} · {cfg.mlp}",
            "dtype": str(meta.get("dtype")), "memory": hf.human_bytes(int(meta.get("memory_bytes") or 0)),
            "attention": attention, "device": device}


def attention_of(ckpt: Checkpoint, ids: tuple[int, ...], layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(probs (H, T, T) of `layer`, allowed (T, T)) of one pass that traces only the layer on screen and stops there
    (no later block, no LM head: GPT-2 small's layer 0 at T = 32 in 6 ms instead of 85), shared by every student on
    the same sentence and layer (read-only arrays: nothing mutates them)."""
    return cached("start_attention", (input_key(model_id(ckpt), ids), layer),
                  lambda: common_lesson.layer_attention(ckpt.model, ids, layer))


@section("the attention view")  # the Layer and Head pickers rerun only this part of the page
def attention_view(ckpt: Checkpoint, enc) -> None:
    """Layer and Head pickers, the head's attention weights, its measured role and the row-sum check."""
    cfg, meta = ckpt.model.config, ckpt.metadata
    layer, head = layer_head("start", cfg.n_layers, cfg.n_heads)
    probs, allowed = attention_of(ckpt, tuple(enc.ids), layer)
    key = (input_key(model_id(ckpt), tuple(enc.ids), tuple(enc.tokens)), layer, head)
    fig = cached("start_heatmap", key, lambda: attention_heatmap(
        probs[head], enc.tokens, allowed=allowed, title=f"Layer {layer} · head {head}: attention weights"))
    chart.show(fig, key="start_heatmap", name=f"attention_L{layer}_H{head}")
    role = next((r for r in meta.get("head_roles") or [] if (r["layer"], r["head"]) == (layer, head)), None)
    if role:
        st.caption(f"Measured role of this head on held-out text: **{role['role']}** (score {role['score']:.2f}).")
    err = float(np.abs(probs[head].sum(-1) - 1).max())
    note = "grey cells (×) are blocked by the causal mask" if cfg.causal else "this model attends in both directions"
    verdict(err, ROW_SUM_TOL, f"Every row sums to 1; {note}")


# -- the English model's measured quality ------------------------------------------------------------------
SOURCE_NAMES = {"wordnet": "WordNet test split (never trained on)", "python_docs": "Python's docs (another source)"}


def quality_table(meta: dict) -> pd.DataFrame:
    """One row per held-out source: the model's perplexity beside its two baselines."""
    rows = []
    for source, h in meta["heldout"].items():
        rows.append({"held-out text": SOURCE_NAMES.get(source, source), "tokens": f"{h['tokens']:,}",
                     "perplexity": f"{h['perplexity']:.1f}",
                     "bigram model": f"{h['bigram_perplexity']:.1f}" if "bigram_perplexity" in h else "—",
                     "÷ bigram": f"{h['perplexity'] / h['bigram_perplexity']:.2f}" if "bigram_perplexity" in h else "—",
                     "same tokens shuffled": f"{h['shuffled_perplexity']:,.0f}",
                     "÷ shuffled": f"{h['perplexity'] / h['shuffled_perplexity']:.3f}"})
    return pd.DataFrame(rows)


def _claim_lines(meta: dict) -> None:
    for c in english_lesson.claims(meta):
        sign = "≥" if c.higher_is_better else "≤"
        check_line(c.ok, f"{c.text}: {c.value:.3g} (bar {sign} {c.bar})")


def _measure_live(ckpt: Checkpoint) -> dict:
    """The same measurements, run now on this server (the bigram's perplexity is the build's: it needs the
    training text)."""
    live = english_lesson.measure(ckpt.model, ckpt.tokenizer, load_heldout())
    for source, h in live["heldout"].items():
        recorded = ckpt.metadata["heldout"].get(source, {})
        if "bigram_perplexity" in recorded:
            h["bigram_perplexity"] = recorded["bigram_perplexity"]
    return live


def english_quality(ckpt: Checkpoint) -> None:
    """What the English model learned, on text it never trained on: the build's numbers, and a button that
    measures them again here."""
    meta = ckpt.metadata
    st.header("What it has learned, measured")
    st.markdown("On text it **never trained on**, against two baselines: a bigram model (the next token from the "
                "previous one alone, fitted to the same training text) and the same tokens in a shuffled order. "
                "Induction: the loss on the second copy of a repeated random token sequence against the first copy "
                "(a model that copies can predict the second).")
    st.dataframe(quality_table(meta), hide_index=True)
    _claim_lines(meta)
    results = shared_results("english_quality", size=4)
    live = results.get(model_id(ckpt))
    if live is None and st.button("Measure again on this server", key="start_measure",
                                  help="Runs the model on the 800 held-out texts now (a few seconds on 2 cores)."):
        with results.turn("Another student's measurement is running; try again in a few seconds.") as mine:
            if mine:
                with st.spinner("Measuring on 800 held-out texts…"):
                    live = _measure_live(ckpt)
                results.put(model_id(ckpt), live)
    if live is not None:
        st.caption("Measured again on this server just now:")
        st.dataframe(quality_table(live), hide_index=True)
        _claim_lines(live)
