"""Every figure factory's output, built from plain dicts without validation, is a figure Plotly's validation accepts
unchanged: go.Figure(fig.to_dict()) does not raise and gives back the same data and layout."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import typing

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import viz_model.figures
from viz_model.lessons.sinks import StreamResult

TOKENS = ["the", "cat", "<pad>", "the", "<b>x</b>"]  # a duplicate, a special token, HTML-looking text
T = len(TOKENS)
CAUSAL = np.tril(np.ones((T, T), dtype=bool))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def softmax_rows(s: np.ndarray, ok: np.ndarray) -> np.ndarray:
    e = np.exp(np.where(ok, s, -np.inf) - np.where(ok, s, -np.inf).max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def probs(seed: int = 0, ok: np.ndarray = CAUSAL) -> np.ndarray:
    return softmax_rows(np.random.default_rng(seed).normal(size=ok.shape), ok)


def pe_table(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    ang = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)[None, :]  # (n, d/2)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe


THETA = 10000.0 ** (-np.arange(0, 16, 2) / 16)  # (8,) RoPE inverse frequencies, d = 16
PE = pe_table(40, 16)
SCORES = np.where(CAUSAL, rng(1).normal(size=(T, T)), -np.inf)
WINDOW = CAUSAL & ~np.tril(np.ones((T, T), dtype=bool), -2)  # sliding window of 2
PADDED = np.ones((T, T), dtype=bool) & (np.arange(T) != 2)[None, :]  # key 2 is <pad>: blocked for every query
STEPS = np.arange(0, 400, 1)
SNAPS = [np.stack([np.stack([probs(s + h) for h in range(2)]) for _ in range(2)]) for s in range(4)]  # (L, H, T, T)


def _module(name: str):
    return importlib.import_module(f"viz_model.figures.{name}")


def _f(qualname: str):
    module, func = qualname.split(".")
    return getattr(_module(module), func)


# qualname -> a call with small, realistic inputs that reaches the figure's optional parts (masks, titles, labels)
SAMPLES: dict[str, typing.Callable[[], go.Figure]] = {
    "attention.attention_heatmap": lambda: _f("attention.attention_heatmap")(
        probs(), TOKENS, allowed=CAUSAL, title="L0 H0 <i>"),
    "attention.attention_grid": lambda: _f("attention.attention_grid")(
        np.stack([np.stack([probs(h) for h in range(2)])] * 2), TOKENS, roles=[["prev 0.9", "<b>"], ["", ""]],
        title="All heads", allowed=CAUSAL),
    "explorer.matrix_heatmap": lambda: _f("explorer.matrix_heatmap")(
        SCORES, TOKENS, TOKENS, col_tokens=True, allowed=CAUSAL, title="S + M", value_name="S + M", col_title="key"),
    "explorer.additive_mask_heatmap": lambda: _f("explorer.additive_mask_heatmap")(CAUSAL, TOKENS, title="M <b>"),
    "explorer.query_bars": lambda: _f("explorer.query_bars")(probs()[2], TOKENS, TOKENS[2], allowed=CAUSAL[2]),
    "attention.value_mix": lambda: _f("attention.value_mix")(probs()[2], rng(2).normal(size=(T, 4)), TOKENS, TOKENS[2]),
    "explorer.entropy_bars": lambda: _f("explorer.entropy_bars")(
        np.array([0.0, 0.5, 1.0, 1.2, 1.5]), TOKENS, max_entropy=np.log(np.arange(1, T + 1)), title="Entropy"),
    "masks.mask_panels": lambda: _f("masks.mask_panels")(
        WINDOW, rng(3).normal(size=(T, T)), probs(ok=WINDOW), TOKENS, title="Sliding window"),
    "masks.dependency_figure": lambda: _f("masks.dependency_figure")(
        np.tril(rng(4).uniform(0.5, 2, size=(T, T))), TOKENS, title="Who depends on whom"),
    "masks.row_sum_bars": lambda: _f("masks.row_sum_bars")(np.ones(T), np.linspace(0.2, 1, T), TOKENS),
    "alibi.bias_heads": lambda: _f("alibi.bias_heads")(
        -np.array([0.25, 0.0625])[:, None, None] * np.abs(np.arange(T)[:, None] - np.arange(T)), CAUSAL, [0.25, 0.0625],
        title="ALiBi <b>"),
    "lens.top_token_map": lambda: _f("lens.top_token_map")(
        np.sort(rng(5).dirichlet(np.ones(8), size=(3, T)), -1)[..., ::-1][..., :5],
        [[["<b>x</b>", "a", "b", "c", " "]] * T] * 3, TOKENS, ["embeddings", "layer 0", "layer 1"], title="Lens <b>"),
    "lens.rank_curve": lambda: _f("lens.rank_curve")([300, 20, 1], [0.001, 0.05, 0.7],
                                                     ["embeddings", "layer 0", "layer 1"], "<eos>", "“<b>” (2)", 8192),
    "attribution.methods_heatmap": lambda: _f("attribution.methods_heatmap")(
        {m: rng(6).normal(size=T) for m in ("head", "occlusion")}, {"head": "<b>head</b>", "occlusion": "occlusion"},
        {"head": "head 0", "occlusion": "occlusion"}, TOKENS, list(range(1, T + 1)), title="Methods <b>"),
    "attribution.agreement_matrix": lambda: _f("attribution.agreement_matrix")(
        np.array([[1.0, 0.4, np.nan], [0.4, 1.0, np.nan], [np.nan, np.nan, np.nan]]), ["a <b>", "b", "c"],
        ["a", "b", "c"], title="ρ"),
    "sinks.share_heatmap": lambda: _f("sinks.share_heatmap")(rng(7).uniform(size=(3, 4)), "<bos>", title="Sinks <b>"),
    "sinks.loss_bars": lambda: _f("sinks.loss_bars")(
        [{"input": "as is", "loss (nats)": 4.0}, {"input": "<b>dropped</b>", "loss (nats)": 8.9}], title="Loss"),
    "sinks.stream_lines": lambda: _f("sinks.stream_lines")(
        [StreamResult(8, 2, {m: rng(8).uniform(1, 9, size=40) for m in ("window", "sinks", "recompute")}),
         StreamResult(16, 2, {m: rng(9).uniform(1, 9, size=40) for m in ("window", "sinks", "recompute")})], 8,
        title="Stream"),
    "next_token.next_token_bars": lambda: _f("next_token.next_token_bars")(
        ["<b>x</b>", "cat", "&lt;", " "], [0.4, 0.3, 0.2, 0.1], [4 / 7, 3 / 7, 0.0, 0.0], chosen=1,
        strategy="top-k=2", title="Step 1"),
    "generate.attention_rows": lambda: _f("generate.attention_rows")(
        [probs()[2, :3], probs()[3, :4], probs()[4]], ["<bos>", "the", "<cat>", "a", "b"], [2, 3, 4],
        ["a", "b", "<c>"], n_prompt=3, title="Attention while generating"),
    "generate.latency_chart": lambda: _f("generate.latency_chart")(
        [1, 2, 3, 4], [1.0, 1.1, 1.0, 1.2], [1, 2, 3, 4], [1.0, 1.8, 2.9, 4.1], title="Latency"),
    "generate.strategy_scatter": lambda: _f("generate.strategy_scatter")(
        pd.DataFrame({"strategy": ["greedy", "top-k <5>", "top-p 0.9"], "distinct-2": [0.2, 0.7, 0.8],
                      "avg log p": [-0.5, -1.9, -2.4]}), title="Likely vs diverse"),
    "generate.branch_grid": lambda: _f("generate.branch_grid")(
        [["<b>a</b>", "cat"], ["a", "dog", "&lt;"]], [[0.5, 0.4], [0.5, 0.2, 0.1]], [[1.0, 1.0], [0.6, 0.3, 0.2]],
        ["A: greedy", "B: T=0.7, seed 1"], start=4, diverge=1, forced=None, title="Branches"),
    "rope.pair_arrows": lambda: _f("rope.pair_arrows")(
        {"q before rotation": [1.0, 0.0], "q at t = 2": [0.0, 1.0], "k at s = 3": [0.5, 0.5]}, "Pair 0"),
    "rope.angle_heatmap": lambda: _f("rope.angle_heatmap")(
        np.mod(np.arange(32)[:, None] * THETA[None, :], 2 * math.pi), np.arange(0, 32, 4), "t·θ_i mod 2π"),
    "rope.wavelength_bars": lambda: _f("rope.wavelength_bars")(2 * math.pi / THETA, 64, "Wavelengths"),
    "rope.scores_vs_distance": lambda: _f("rope.scores_vs_distance")(
        {"<i>h</i>": np.cos(np.arange(11) * 0.3), "random": np.sin(np.arange(11))}, "Score", "mean score"),
    "rope.frequency_ratios": lambda: _f("rope.frequency_ratios")(
        {"default": np.ones(8), "linear": np.full(8, 0.25), "yarn": np.linspace(1, 0.25, 8)},
        {"default": "no scaling", "linear": "linear <PI>", "yarn": "YaRN"}, "yarn", "θ′/θ"),
    "rope.angle_coverage": lambda: _f("rope.angle_coverage")(
        np.minimum(64 * THETA, 2 * math.pi), np.minimum(512 * THETA, 2 * math.pi), "Angles at L′"),
    "rope.length_losses": lambda: _f("rope.length_losses")(
        pd.DataFrame({"model": ["m"] * 6, "method": ["none", "none", "yarn", "yarn", "linear", "linear"],
                      "length": [64, 128, 64, 128, 64, 128], "loss": [2.0, 3.0, 2.0, float("nan"), np.nan, np.nan]}),
        {"yarn": "YaRN", "linear": "linear"}, "Loss against length"),
    "sinusoidal.pe_curves": lambda: _f("sinusoidal.pe_curves")(PE, [0, 1, 6], "PE value against position"),
    "class_mode.answer_histogram": lambda: _f("class_mode.answer_histogram")(
        ["0 the", "1 <b>x</b>", "2 cat"], [3, 0, 1], [1], "Which word?"),
    "sinusoidal.pe_slices": lambda: _f("sinusoidal.pe_slices")(pe_table(8, 4), [0, 2, 5], "d = 4"),
    "sinusoidal.pe_heatmap": lambda: _f("sinusoidal.pe_heatmap")(
        PE, np.arange(0, 40, 2), np.arange(0, 16, 2), "The PE table", "PE <sin>"),
    "sinusoidal.table_heatmap": lambda: _f("sinusoidal.table_heatmap")(PE, np.arange(0, 40, 2), np.arange(16)),
    "sinusoidal.bits_vs_signs": lambda: _f("sinusoidal.bits_vs_signs")(
        (np.arange(16)[:, None] >> np.arange(4)[None, :]) & 1, (pe_table(16, 16)[:, 0::2] > 0).astype(int), "Bits"),
    "sinusoidal.matrix_heatmap": lambda: _f("sinusoidal.matrix_heatmap")(
        np.kron(np.eye(4), [[math.cos(3), math.sin(3)], [-math.sin(3), math.cos(3)]]), "M_3", "M_3", "row"),
    "sinusoidal.shift_errors": lambda: _f("sinusoidal.shift_errors")(
        pd.DataFrame({"t": [0, 5, 9], "max error": [0.0, 1e-16, 3e-15]}), "Same M_k, every t"),
    "sinusoidal.similarity_heatmap": lambda: _f("sinusoidal.similarity_heatmap")(
        PE @ PE.T, np.arange(0, 40, 4), "P·Pᵀ", "P·Pᵀ <dot>", False),
    "sinusoidal.dot_vs_offset": lambda: _f("sinusoidal.dot_vs_offset")(
        {"t = 0": PE[0] @ PE.T, "t = <5>": PE[5] @ PE[5:].T}, "Dot product against offset"),
    "sinusoidal.vector_rows": lambda: _f("sinusoidal.vector_rows")(
        {"<b>x</b>": PE[0], "the + P_2": PE[2] + 1}, np.arange(8), "“the” at positions 0 and 2"),
    "train.loss_curves": lambda: _f("train.loss_curves")(
        {"run <1>": {"steps": STEPS, "loss": 3 * np.exp(-STEPS / 100), "eval_steps": [0, 200, 399],
                     "heldout": [3.0, 0.5, 0.2]},
         "run 2": {"steps": STEPS[:50], "loss": np.linspace(3, 2, 50), "eval_steps": [], "heldout": []}},
        title="Loss", total=400),
    "train.lr_curve": lambda: _f("train.lr_curve")(STEPS, 1e-3 * np.cos(STEPS / 400), total=400),
    "train.role_timeline": lambda: _f("train.role_timeline")(
        [0, 100, 200], rng(5).uniform(size=(3, 2, 2)), "prev <token>", STEPS, 3 * np.exp(-STEPS / 100)),
    "train.attention_now": lambda: _f("train.attention_now")(SNAPS[-1], TOKENS, title="Probe attention now"),
    "train.attention_player": lambda: _f("train.attention_player")(SNAPS, [0, 10, 20, 30], TOKENS, max_frames=3),
    "cost.loglog_chart": lambda: _f("cost.loglog_chart")(
        [dict(name="materialised <T×T>", T=[64, 128, 256], y=[0.1, 0.4, 1.6], slope=2.0, kind="materialised",
              mode="forward"),
         dict(name="sdpa", T=[64], y=[0.05], slope=None, kind="sdpa", mode="forward+backward")],
        y_title="time", unit="ms", title="Time against T"),
    "cost.kv_cache_chart": lambda: _f("cost.kv_cache_chart")(
        [dict(name="tiny <1>", T=[64, 128], mib=[0.5, 1.0], layers=1, note="d_model 64"),
         dict(name="classroom", T=[64, 128], mib=[2.0, 4.0], layers=4, note="4 heads")], title="KV cache"),
    "encoder.fill_in_bars": lambda: _f("encoder.fill_in_bars")(
        [[("<b>x</b>", 0.6), ("cat", 0.3)], [("are", 0.9), ("is", 0.05)], [("the", 0.5), ("a", 0.4)],
         [("mat", 0.7), ("<pad>", 0.1)]], [1, 3, 4, 6], ["cat", None, "a", "<b>"], title="Fill-ins <i>"),
    "encoder.masked_attention_grid": lambda: _f("encoder.masked_attention_grid")(
        np.stack([np.stack([probs(h, np.ones((T, T), dtype=bool)) for h in range(2)])] * 2), TOKENS, [1, 4],
        title="All heads"),
    "encoder.masked_attention_heatmap": lambda: _f("encoder.masked_attention_heatmap")(
        probs(2, np.ones((T, T), dtype=bool)), TOKENS, [2], title="L0 H1 <i>"),
    "encoder.look_ahead_bars": lambda: _f("encoder.look_ahead_bars")(
        probs()[2], TOKENS, 2, 4, allowed=CAUSAL[2], title="What “<b>bank</b>” reads"),
    "qkv.lookup_bars": lambda: _f("qkv.lookup_bars")(
        rng(6).normal(size=T), probs()[2], CAUSAL[2], TOKENS, 2, title="Lookup of <b>x</b>"),
    "qkv.score_panels": lambda: _f("qkv.score_panels")(
        [rng(7).normal(size=(T, T)), np.eye(T), np.zeros((T, T))], ["separate", "shared <Q = K>", "raw X"], TOKENS,
        title="Scores before the mask"),
    "qkv.self_attention_bars": lambda: _f("qkv.self_attention_bars")(
        ["separate", "<b>Q = K</b>"], [0.15, 0.44], [0.15, 0.55], 0.24, title="Self-attention"),
    "qkv.pair_cosine_bars": lambda: _f("qkv.pair_cosine_bars")(
        ["separate", "shared K = V"], [[0.05, -0.02], [0.31, 0.69]], [0.21, 0.60], "<sat>", title="cos"),
    "qkv.loss_bars": lambda: _f("qkv.loss_bars")(
        ["separate", "raw <X>"], [1.1724, 1.1719], reference=0, title="Held-out loss"),
    "encoder_decoder.attention_panel": lambda: _f("encoder_decoder.attention_panel")(
        "encoder self: 5 × 5 <pad>, both ways", probs(8, PADDED), PADDED, TOKENS, TOKENS, title="L0 H1 <i>", rows=6,
        title_lines=4, key_chars=12),
    "encoder_decoder.alignment_map": lambda: _f("encoder_decoder.alignment_map")(
        probs(11, np.ones((4, T), dtype=bool)), TOKENS, ["ethay", "<b>atcay</b>", "ka", "<eos>"], [0, 1, 1],
        title="Cross-attention <i>"),
    "encoder_decoder.head_accuracy": lambda: _f("encoder_decoder.head_accuracy")(
        {"this <sentence>": rng(12).uniform(size=(2, 4)), "held-out": rng(13).uniform(size=(2, 4))}, title="Heads"),
    "encoder_decoder.decode_timing_bars": lambda: _f("encoder_decoder.decode_timing_bars")(
        12, 0.012, 0.031, title="Decoding <12> tokens"),
    "recurrence.depth_chart": lambda: _f("recurrence.depth_chart")(
        [dict(name="RNN <T>", kind="rnn", T=[1, 16, 300], depth=[1, 16, 300]),
         dict(name="transformer", kind="transformer", T=[1, 16, 300], depth=[2, 2, 2])], 300, title="Depth <i>"),
    "recurrence.timing_chart": lambda: _f("recurrence.timing_chart")(
        [dict(name="RNN · slope 1.02", kind="rnn", T=[16, 32, 64], ms=[1.5, 3.1, 6.0]),
         dict(name="<b>x</b>", kind="other", T=[16, 32, 64], ms=[2.0, 0.0, float("nan")])], title="Time"),
    "recurrence.gradient_chart": lambda: _f("recurrence.gradient_chart")(
        [dict(name="RNN · ×0.70 <per step>", kind="rnn", d=[0, 1, 2, 3], y=[1.0, 0.7, 0.49, 0.0]),
         dict(name="ref", kind="reference", dash="dot", mode="lines", d=[0, 1, 2, 3], y=[1.0, 0.5, 0.25, 0.125])],
        marker_distance=2, marker_text="the <key>", title="Gradient"),
    "recurrence.jacobian_chart": lambda: _f("recurrence.jacobian_chart")(
        [1.4, 1.2, 2.0], [1.0, 1.4, 0.9, 0.3], [1.0, 1.4, 1.68, 3.36], title="Jacobians <J>"),
    "recurrence.accuracy_chart": lambda: _f("recurrence.accuracy_chart")(
        [dict(name="RNN (saved)", kind="rnn", d=[1, 8, 60], accuracy=[0.95, 0.57, 0.56]),
         dict(name="LSTM <saved>", kind="lstm", d=[1, 8, 60], accuracy=[1.0, 1.0, 1.0])], 1 / 16, title="Recall"),
    "normalization.norm_groups": lambda: _f("normalization.norm_groups")(
        rng(14).normal(size=(2, 3, 4)), "layernorm", {"mean <μ>": np.zeros((2, 3)), "variance": np.ones((2, 3))},
        title="LayerNorm <b>output</b>"),
    "normalization.padding_bars": lambda: _f("normalization.padding_bars")(
        np.zeros(4), rng(15).normal(size=4), np.ones(4), rng(16).uniform(size=4), n_pad=2, title="Stats <pad>"),
    "normalization.per_layer_chart": lambda: _f("normalization.per_layer_chart")(
        [dict(name="with <x + F(x)>", y=[3e-3, 3e-3, 2.9e-3], color="#2CA02C"),
         dict(name="without", y=[1e-4, 1e-3, 1e-2], dash="dash")], y_title="‖∂L/∂x‖", title="Gradients"),
    "normalization.loss_chart": lambda: _f("normalization.loss_chart")(
        [dict(name="pre-norm, warm-up 20", y=[5.7, 4.0, 3.5]), dict(name="<post>", y=[5.7, 4.4, 3.9], dash="dash")],
        title="Loss"),
    "normalization.sample_matrices": lambda: _f("normalization.sample_matrices")(
        np.stack([probs(17), probs(18)]), [TOKENS, ["a", "b", "<pad>", "<pad>", "<pad>"]], ["sample 1", "<b>2</b>"],
        title="Each sample"),
    "real_models.attention_grid_page": lambda: _f("real_models.attention_grid_page")(
        np.stack([np.stack([probs(20 + 4 * l + h) for h in range(4)]) for l in range(3)]), TOKENS, [1, 2], [0, 2],
        roles=[["<b>prev</b> 0.9"] * 4 for _ in range(3)], kv_group=2, title="Layers 1–2 <i>", allowed=CAUSAL),
}

# Trace types of every factory's sample, recorded before the factories moved to fast_figure (they must not change).
TRACE_TYPES = {
    "attention.attention_heatmap": ["heatmap"] * 2,
    "attention.attention_grid": ["heatmap"] * 8,
    "explorer.matrix_heatmap": ["heatmap"] * 2,
    "explorer.additive_mask_heatmap": ["heatmap"],
    "explorer.query_bars": ["bar"],
    "attention.value_mix": ["heatmap"],
    "explorer.entropy_bars": ["bar", "scatter"],
    "masks.mask_panels": ["heatmap"] * 6,
    "masks.dependency_figure": ["heatmap"] * 2,
    "masks.row_sum_bars": ["bar"] * 2,
    "alibi.bias_heads": ["heatmap"] * 4,  # per head: the blocked cells, the bias
    "lens.top_token_map": ["heatmap"],
    "lens.rank_curve": ["scatter"],
    "attribution.methods_heatmap": ["heatmap"],
    "attribution.agreement_matrix": ["heatmap"],
    "sinks.share_heatmap": ["heatmap"],
    "sinks.loss_bars": ["bar"],
    "sinks.stream_lines": ["scatter"] * 6,
    "next_token.next_token_bars": ["bar"] * 2,
    "generate.attention_rows": ["heatmap"] * 2,
    "generate.latency_chart": ["scatter"] * 2,
    "generate.strategy_scatter": ["scatter"],
    "generate.branch_grid": ["heatmap"],
    "rope.pair_arrows": ["scatter"] * 3,
    "rope.angle_heatmap": ["heatmap"],
    "rope.wavelength_bars": ["bar"] * 2,
    "rope.scores_vs_distance": ["scatter"] * 2,
    "rope.frequency_ratios": ["scatter"] * 3,
    "rope.angle_coverage": ["bar"] * 2,
    "rope.length_losses": ["scatter"] * 2,
    "sinusoidal.pe_curves": ["scatter"] * 3,
    "class_mode.answer_histogram": ["bar"],
    "sinusoidal.pe_slices": ["scatter"] * 7,
    "sinusoidal.pe_heatmap": ["heatmap"],
    "sinusoidal.table_heatmap": ["heatmap"],
    "sinusoidal.bits_vs_signs": ["heatmap"] * 2,
    "sinusoidal.matrix_heatmap": ["heatmap"],
    "sinusoidal.shift_errors": ["bar"],
    "sinusoidal.similarity_heatmap": ["heatmap"],
    "sinusoidal.dot_vs_offset": ["scatter"] * 2,
    "sinusoidal.vector_rows": ["heatmap"],
    "train.loss_curves": ["scatter"] * 3,
    "train.lr_curve": ["scatter"],
    "train.role_timeline": ["scatter"] * 5,
    "train.attention_now": ["heatmap"] * 4,
    "train.attention_player": ["heatmap"] * 4,
    "cost.loglog_chart": ["scatter"] * 2,  # (added after the conversion, built with fast_figure from the start)
    "cost.kv_cache_chart": ["scatter"] * 2,
    "encoder.fill_in_bars": ["bar"] * 4,
    "encoder.masked_attention_grid": ["heatmap"] * 4,
    "encoder.masked_attention_heatmap": ["heatmap"],
    "encoder.look_ahead_bars": ["bar"] * 2,
    "qkv.lookup_bars": ["bar"] * 2,
    "qkv.score_panels": ["heatmap"] * 3,
    "qkv.self_attention_bars": ["bar", "bar", "scatter"],
    "qkv.pair_cosine_bars": ["bar"] * 3,
    "qkv.loss_bars": ["bar"] * 2,
    "encoder_decoder.attention_panel": ["heatmap"] * 2,  # was three_attentions' 5 (3 panels, 2 masks), one figure
    "encoder_decoder.alignment_map": ["heatmap", "scatter", "scatter"],
    "encoder_decoder.head_accuracy": ["heatmap"] * 2,
    "encoder_decoder.decode_timing_bars": ["bar"],
    "recurrence.depth_chart": ["scatter"] * 2,
    "recurrence.timing_chart": ["scatter"] * 2,
    "recurrence.gradient_chart": ["scatter"] * 2,
    "recurrence.jacobian_chart": ["scatter"] * 3,
    "recurrence.accuracy_chart": ["scatter"] * 2,
    "normalization.norm_groups": ["heatmap"],
    "normalization.padding_bars": ["bar"] * 4,
    "normalization.per_layer_chart": ["scatter"] * 2,
    "normalization.loss_chart": ["scatter"] * 2,
    "normalization.sample_matrices": ["heatmap"] * 2,
    "real_models.attention_grid_page": ["heatmap", "heatmap", "scatter"],  # #42 (6): tiles, grey, titles; was 8
}


def figure_factories() -> set[str]:
    """Every public function of a viz_model.figures module that returns a go.Figure it builds from data (a function
    that takes a figure, like export.presenter_style, restyles one and is not a factory; common.fast_figure is the
    builder every factory uses)."""
    found = set()
    for info in pkgutil.iter_modules(viz_model.figures.__path__):
        if info.name == "common":
            continue
        module = _module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != module.__name__:
                continue
            hints = typing.get_type_hints(obj)
            takes_figure = any(v is go.Figure for k, v in hints.items() if k != "return")
            if hints.get("return") is go.Figure and not takes_figure:
                found.add(f"{info.name}.{name}")
    return found


def assert_same(before, after, path: str = "figure") -> None:
    """after (validated) equals before (as built), under Plotly's own equivalences: a property set to None is unset,
    and a colour scale named in `before` is validated into that scale's colour list."""
    if isinstance(before, dict):
        assert isinstance(after, dict), path
        assert set(after) <= set(before), f"{path}: validation added {sorted(set(after) - set(before))}"
        for k, v in before.items():
            if v is None:  # unset: validation drops it (or keeps None where any value is allowed, as in meta)
                assert after.get(k) is None, f"{path}.{k}: None became {after[k]!r}"
            elif k == "colorscale" and isinstance(v, str):
                assert after[k] == go.Heatmap(colorscale=v).to_plotly_json()["colorscale"], f"{path}.{k}: {v}"
            else:
                assert k in after, f"{path}.{k}: dropped by validation"
                assert_same(v, after[k], f"{path}.{k}")
    elif isinstance(before, np.ndarray) or isinstance(after, np.ndarray):
        assert np.shape(before) == np.shape(after), path
        np.testing.assert_array_equal(before, after, err_msg=path)
    elif isinstance(before, (list, tuple)):
        assert type(before) is type(after) and len(before) == len(after), f"{path}: {before!r:.80} vs {after!r:.80}"
        for i, (b, a) in enumerate(zip(before, after)):
            assert_same(b, a, f"{path}[{i}]")
    elif isinstance(before, float) and math.isnan(before):
        assert isinstance(after, float) and math.isnan(after), path
    else:
        assert before == after and type(before) is type(after), f"{path}: {before!r} vs {after!r}"


def test_every_figure_factory_has_a_sample():
    factories = figure_factories()
    assert len(factories) >= 30  # the discovery itself works (34 factories when this test was written)
    assert factories - set(SAMPLES) == set(), "add a sample call for each new figure factory to SAMPLES"
    assert set(SAMPLES) - factories == set(), "a sample for a factory that no longer exists"
    assert set(TRACE_TYPES) == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_figure_passes_validation_unchanged(name):
    fig = SAMPLES[name]()
    assert fig._validate is False  # built by fast_figure, the one figure style (plain dicts, validation skipped)
    built = fig.to_dict()
    again = go.Figure(fig.to_dict()).to_dict()  # raises if any property is invalid
    assert [t["type"] for t in built["data"]] == TRACE_TYPES[name]
    assert set(again) == set(built)  # data, layout (and frames, for animations)
    for part in built:
        assert_same(built[part], again[part], f"{name}.{part}")
