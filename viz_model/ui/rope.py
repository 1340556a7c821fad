"""Sections of the RoPE page; each computes live via viz_model.lessons.rope and shows its checks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
import torch

from viz_model import rope
from viz_model.data import corpus_split
from viz_model.figures import rope as rfigs
from viz_model.figures.attention import attention_heatmap
from viz_model.lecture import ROPE_Q, ROPE_SENTENCE
from viz_model.lessons import rope as lesson
from viz_model.lessons.common import decimate
from viz_model.tokenizer import special_ids
from viz_model.ui import share
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.models import available_models, is_folder_model, load_model
from viz_model.ui.sidebar import DEVICE_KEY, model_with
from viz_model.ui.widgets import encode_text, verdict

BASES = [100.0, 1000.0, 10000.0, 100000.0, 500000.0, 1000000.0]
D_KS = [8, 16, 32, 64, 128, 256]
MULTIPLES = (1, 2, 4)
MAX_DISTANCE = 1024  # score-vs-distance curves of a model stop here (a real model's context is 1k-128k)
EXT_KEYS = {"d_k": "rope_ext_dk", "base": "rope_ext_base", "L": "rope_ext_L", "Lp": "rope_ext_Lp",
            "method": "rope_ext_method", "beta_fast": "rope_ext_bf", "beta_slow": "rope_ext_bs",
            "low_freq_factor": "rope_ext_lo", "high_freq_factor": "rope_ext_hi"}
EXT_SEEDED = "rope_ext_seeded"  # which model's settings the context-extension panel was last seeded with
TOKEN_BUDGET = 1024  # held-out tokens scored per (method, length) cell: well under a second on 2 cores


@st.cache_resource(max_entries=8, show_spinner=False)
def _on_off(model_id: str, ids: tuple[int, ...], _model) -> tuple:
    """Traces with RoPE on and off for one (read-only, shared) model and sentence."""
    return lesson.rope_on_off(_model, ids)


def on_off(ckpt, ids) -> tuple:
    return _on_off(f"{ckpt.path}:{ckpt.metadata.get('title')}:{id(ckpt.model)}", tuple(ids), ckpt.model)


def rope_model():
    ckpt, where = model_with("rope", ("classroom", "enc-rope"))
    if ckpt is None:
        st.info("No RoPE model is available (the sidebar model does not use RoPE and neither “classroom” nor "
                "“enc-rope” is installed), so this part shows the math on random vectors only.")
    return ckpt, where


# -- worked example -------------------------------------------------------------------------------------
@section("the worked example")
def worked_example() -> None:
    st.markdown("**“I like cats”**: T = 3 tokens, d_model = 8, H = 2 heads, so d_k = 4 and each head has two "
                "pairs. Edit Q (one row per token) and every number below follows.")
    cols = [f"q{j}" for j in range(8)]
    frame = pd.DataFrame(ROPE_Q, columns=cols, index=[f"{t} {w}" for t, w in enumerate(["I", "like", "cats"])])
    edited = st.data_editor(frame, key="rope_q_editor", num_rows="fixed")
    q_full = lesson.parse_matrix(edited.to_numpy(dtype=float, na_value=np.nan), (3, 8))
    ex = lesson.worked_example(q_full)
    idx = frame.index
    h0, h1 = st.columns(2)
    for h, col in enumerate((h0, h1)):
        col.markdown(f"Head {h}: columns {4 * h}–{4 * h + 3} of Q_full; pairs (q{4 * h}, q{4 * h + 1}) and "
                     f"(q{4 * h + 2}, q{4 * h + 3})")
        col.dataframe(pd.DataFrame(ex.heads[h], index=idx, columns=["pair 0 · a", "pair 0 · b", "pair 1 · a",
                                                                   "pair 1 · b"]), key=f"rope_head{h}")
    st.markdown(f"Frequencies ω_i = 10000^(−2i/4) = **[{ex.omega[0]:g}, {ex.omega[1]:g}]**. Row t turns pair i by "
                "t·ω_i radians: (a, b) → (a·cos − b·sin, a·sin + b·cos).")
    a1, a2 = st.columns([1, 2])
    a1.dataframe(pd.DataFrame(ex.angles, index=idx, columns=["t·ω₀ (rad)", "t·ω₁ (rad)"]), key="rope_angles_ex")
    a2.dataframe(pd.DataFrame(ex.rotated[0].round(6), index=idx, columns=["a′₀", "b′₀", "a′₁", "b′₁"]),
                 key="rope_rotated_ex")
    a2.caption("Head 0 after RoPE. Head 1 uses the same angles on its own columns.")
    verdict(ex.core_error, 1e-12, "the pair formula written out above equals viz_model.rope.apply_rope")


# -- pair rotation --------------------------------------------------------------------------------------
@section("the pair rotation")
def pair_rotation(d_k: int, base: float) -> None:
    theta = rope.default_inv_freq(d_k, base)
    c = st.columns(4)
    share.valid("rope_pair", range(d_k // 2), 0)  # d_k follows the sidebar model
    pair = c[0].slider("pair i", 0, d_k // 2 - 1, 0, key="rope_pair", **share.URL)
    t = c[1].slider("query position t", 0, 64, 3, key="rope_t", **share.URL)
    s = c[2].slider("key position s", 0, 64, 5, key="rope_s", **share.URL)
    shift = c[3].slider("shift both by", 0, 1000, 0, key="rope_shift", **share.URL)
    q, k = lesson.random_qk(d_k, seed=7, unit_pairs=True)
    ref, now = lesson.pair_view(q, k, t, s, pair, theta), lesson.pair_view(q, k, t + shift, s + shift, pair, theta)
    left, right = st.columns([3, 2])
    with left:
        arrows = {"q before rotation": now["q"], "k before rotation": now["k"],
                  f"q at t = {t + shift}": now["q_rot"], f"k at s = {s + shift}": now["k_rot"]}
        show(rfigs.pair_arrows(arrows, f"Pair {pair}: θ_{pair} = {theta[pair]:.4g} rad per position"),
             key="rope_pair_fig", name="rope_pair_rotation")
    right.metric("angle from q to k in this pair", f"{math.degrees(now['angle']):.4f}°",
                 help="(s − t)·θ_i, wrapped to (−180°, 180°]")
    right.metric("score ⟨R_t q, R_s k⟩ (all pairs)", f"{now['score']:.6f}")
    right.metric("this pair's share of the score", f"{now['pair_score']:.6f}")
    left.caption("Move *shift both by*: both arrows turn by the same angle, so the angle between them — and "
                 "the score — stay put.")
    err = max(abs(now["score"] - ref["score"]), abs(now["angle"] - ref["angle"]) % (2 * math.pi))
    with right:
        verdict(err, 1e-9, f"shifting both positions by {shift} leaves the angle and the score unchanged")


# -- angles and wavelengths -----------------------------------------------------------------------------
@section("the angle table")
def angles_and_wavelengths(d_k: int, base: float) -> None:
    ctx = st.slider("context length (positions)", 16, 8192, 512, step=16, key="rope_ctx", **share.URL)
    theta = rope.default_inv_freq(d_k, base)
    idx = decimate(ctx, 256)
    wl = rope.wavelengths(theta).numpy()
    left, right = st.columns(2)
    with left:
        show(rfigs.angle_heatmap(lesson.angle_table(ctx, theta), idx, f"t·θ_i mod 2π, t < {ctx:,}"),
             key="rope_angle_table", name="rope_angle_table")
    with right:
        show(rfigs.wavelength_bars(wl, ctx, "Wavelength of each pair"), key="rope_wavelengths", name="rope_wavelengths")
    n_wrap = int((wl <= ctx).sum())
    st.caption(f"{n_wrap} of {d_k // 2} pairs turn at least once inside {ctx:,} positions (red): their angle repeats, "
               f"so alone they cannot tell t from t + λ. The slowest pair needs {wl[-1]:,.0f} positions for one turn.")


# -- relative invariance --------------------------------------------------------------------------------
@section("the relative scores")
def relative_scores(d_k: int, base: float) -> None:
    theta = rope.default_inv_freq(d_k, base)
    q, k = lesson.random_qk(d_k, seed=3)
    near, far = lesson.rope_score(q, k, 3, 4, theta), lesson.rope_score(q, k, 500, 501, theta)
    c1, c2 = st.columns(2)
    c1.metric("score(q @ 3, k @ 4)", f"{near:.6f}")
    c2.metric("score(q @ 500, k @ 501)", f"{far:.6f}")
    verdict(abs(near - far), 1e-9, "⟨R_t q, R_s k⟩ = ⟨q, R_(s−t) k⟩: only the offset s − t = 1 matters")
    max_dist = st.slider("largest distance Δ", 16, 1024, 128, step=16, key="rope_maxdist", **share.URL)
    g = torch.Generator().manual_seed(1)
    same = torch.randn(32, d_k, generator=g, dtype=torch.float64)
    curves = {"one random q, k": lesson.scores_by_distance(q, k, theta, max_dist),
              "q = k, averaged over 32 random vectors": lesson.mean_self_scores(same, theta, max_dist)}
    show(rfigs.scores_vs_distance(curves, "Score against relative distance (random vectors)"),
         key="rope_dist_random", name="rope_scores_random")
    ckpt, where = rope_model()
    if ckpt is None:
        return
    model = ckpt.model
    ids = encode_text(ckpt, ROPE_SENTENCE, max_len=model.config.max_len).ids
    _, off = on_off(ckpt, ids)
    reach = min(model.config.max_len - 1, MAX_DISTANCE)
    th, _ = rope.inv_freq(model.config.d_k, model.config.rope_base, model.config.rope_scaling,
                          seq_len=model.config.max_len)  # the model's own frequencies (its scaling included)
    q0, k0 = off.layers[0].q[0], off.layers[0].k[0]  # (H, T, d_k) before rotation: layer 0 has no position yet
    heads = {f"head {h}": lesson.scores_by_distance(q0[h], k0[h], th, reach)
             for h in range(model.config.n_heads)}
    title = f"Layer 0 of {where}: mean q·k of “{ROPE_SENTENCE}” moved to distance Δ"
    show(rfigs.scores_vs_distance(heads, title, "mean score"), key="rope_dist_model", name="rope_scores_model")


# -- base and context extension -------------------------------------------------------------------------
def model_extension(cfg) -> dict:
    """The context-extension panel's settings that describe a RoPE model: its d_k and rope_theta, the length its
    scaling was set up from (L) and the length it reaches (L′ = factor × L), its method and parameters."""
    sc = dict(cfg.rope_scaling or {})
    method, factor = sc.pop("type", "none"), float(sc.pop("factor", 1.0))
    original = int(sc.pop("original_max_position_embeddings", 0)) or round(cfg.max_len / factor)
    out = {"d_k": cfg.d_k, "base": float(cfg.rope_base), "L": min(max(16, original), 131072), "method": method}
    out["Lp"] = min(max(out["L"], round(factor * out["L"])) if method != "none" else 8 * out["L"], 1048576)
    out.update({k: float(v) for k, v in sc.items() if k in EXT_KEYS})
    return out


def _seed_extension(model: dict | None, name: str) -> None:
    """Open the panel on the sidebar model's own settings when it is a model folder; going back to one of the
    app's models restores the panel's defaults. A link's values win on the first visit."""
    marker = name if model is not None else None
    before = st.session_state.get(EXT_SEEDED, "unset")
    if before == marker:
        return
    st.session_state[EXT_SEEDED] = marker
    for field, key in EXT_KEYS.items():
        if model is None:
            if before not in ("unset", None):
                st.session_state.pop(key, None)
        elif field in model and (before != "unset" or key not in st.session_state):
            st.session_state[key] = model[field]


@section("the context extension panel")
def context_extension(default_len: int, ckpt=None) -> None:
    """ckpt: the sidebar's RoPE model folder, whose own theta, scaling and lengths the panel opens on (and checks
    against its own frequencies); None for the app's own models."""
    own = model_extension(ckpt.model.config) if ckpt is not None else None
    if own is not None:
        _seed_extension(own, str(ckpt.path))
        scaling = ckpt.model.config.rope_scaling
        st.caption(f"Opened on the sidebar model's own RoPE: d_k = {own['d_k']}, rope_theta = {own['base']:,.0f}, "
                   + (f"{rope.ROPE_SCALING_LABELS[own['method']]} scaling from L = {own['L']:,} to L′ = "
                      f"{own['Lp']:,} (its config.json)." if scaling else "no scaling (plain RoPE)."))
    else:
        _seed_extension(None, "")
    c = st.columns(4)
    d_ks = sorted({*D_KS, *([own["d_k"]] if own else [])})
    bases = sorted({*BASES, *([own["base"]] if own else [])})
    d_k = c[0].select_slider("d_k", d_ks, value=128, key="rope_ext_dk", **share.URL)
    base = c[1].select_slider("base", bases, value=10000.0, key="rope_ext_base", **share.URL,
                              format_func=lambda b: f"{b:,.0f}")
    L = c[2].number_input("training length L", 16, 131072, min(default_len, 131072), step=16, key="rope_ext_L",
                          **share.URL)
    Lp = c[3].number_input("target length L′", 16, 1048576, min(8 * default_len, 1048576), step=16,
                           key="rope_ext_Lp", **share.URL)
    labels = rope.ROPE_SCALING_LABELS
    method = st.radio("method", list(rope.ROPE_INIT_FUNCTIONS), format_func=labels.get, horizontal=True,
                      key="rope_ext_method", **share.URL, index=list(rope.ROPE_INIT_FUNCTIONS).index("ntk"))
    with st.expander("YaRN and Llama 3 parameters"):
        e = st.columns(4)
        extra = {"beta_fast": e[0].number_input("beta_fast", 0.0, 1024.0, 32.0, key="rope_ext_bf", **share.URL),
                 "beta_slow": e[1].number_input("beta_slow", 0.0, 1024.0, 1.0, key="rope_ext_bs", **share.URL),
                 "low_freq_factor": e[2].number_input("low_freq_factor", 0.0, 64.0, 1.0, key="rope_ext_lo",
                                                      **share.URL),
                 "high_freq_factor": e[3].number_input("high_freq_factor", 0.0, 64.0, 4.0, key="rope_ext_hi",
                                                       **share.URL)}
    _extension_views(d_k, base, int(L), int(Lp), method, extra, ckpt)


def _extension_views(d_k: int, base: float, L: int, Lp: int, method: str, extra: dict, ckpt) -> None:
    labels = rope.ROPE_SCALING_LABELS
    if Lp < L:
        st.warning(f"The target length L′ = {Lp:,} is shorter than the training length L = {L:,}: there is "
                   "nothing to extend. Choose L′ ≥ L.")
        return
    table, problems = lesson.scaling_table(d_k, base, L, Lp, extra), lesson.scaling_problems(L, Lp, extra)
    for bad, why in problems.items():  # one bad method's parameters hide no other method
        st.warning(f"{labels[bad]} cannot run with these parameters: {why}")
    theta = rope.default_inv_freq(d_k, base).numpy()
    left, right = st.columns(2)
    with left:
        ratios = {m: r for m, (r, _) in table.items()}
        show(rfigs.frequency_ratios(ratios, labels, method if method in table else "none",
                                    f"θ′/θ per pair, s = L′/L = {Lp / L:g}"),
             key="rope_ratios", name="rope_scaling_ratios")
    if method not in table:
        return
    ratio, att = table[method]
    seen, needed = lesson.angle_coverage(theta, theta * ratio, L, Lp)
    with right:
        show(rfigs.angle_coverage(seen, needed, f"{labels[method]}: angles at L′ vs training"),
             key="rope_coverage", name="rope_angle_coverage")
    n_out = int((needed > seen + 1e-9).sum())
    st.caption(f"With {labels[method]}, {n_out} of {d_k // 2} pairs reach angles at L′ = {Lp:,} that training "
               f"never produced (red). Attention factor {att:.4f}: cos and sin are multiplied by it, so every "
               f"logit is multiplied by its square, {att ** 2:.4f}.")
    st.dataframe(pd.Series(lesson.readouts(d_k, base, Lp / L, L, Lp), name="value"), key="rope_readouts")
    if ckpt is not None:
        own_check(ckpt, dict(d_k=d_k, base=base, L=L, Lp=Lp, method=method, **extra), ratio, att)
    lecture = rope.ntk_base(128, 10000.0, 8)
    st.info(f"A note on the lecture notes: for s = 8 and d_k = 128 they give the NTK-aware base as ≈ 500,000. "
            f"The formula b·s^(d/(d−2)) gives 10,000 · 8^(128/126) = **{lecture:,.1f}** (≈ 82,685). "
            f"500,000 is Llama 3's pre-training base; this formula would reach it only at "
            f"s ≈ {(500000 / 10000) ** (126 / 128):.1f}.")


def own_check(ckpt, settings: dict, ratio: np.ndarray, att: float) -> None:
    """✓ the panel's method at these settings gives the model's own RoPE frequencies and attention factor
    (rope.inv_freq of its config), measured; shown while the panel holds the model's own settings."""
    cfg = ckpt.model.config
    own = model_extension(cfg)
    if any(settings.get(k) != v for k, v in own.items()):
        st.caption("Put the panel back on the sidebar model's own settings (pick another model and back, or reload) "
                   "to check them against its frequencies.")
        return
    theirs, their_att = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=own["Lp"])
    ours = rope.default_inv_freq(cfg.d_k, cfg.rope_base).numpy() * ratio
    err = float(np.abs(ours - theirs.numpy()).max() / theirs.numpy().max()) + abs(att - their_att)
    s = own["Lp"] / own["L"]
    verdict(err, 1e-9, f"{rope.ROPE_SCALING_LABELS[own['method']]} at s = L′/L = {s:g} gives this model's own "
                       f"RoPE frequencies and attention factor (rope_theta {cfg.rope_base:,.0f} and the scaling "
                       "in its config.json)")


# -- length experiment ----------------------------------------------------------------------------------
@st.cache_data(max_entries=64, show_spinner=False)
def _cell(key: str, path: str | None, mtime: float, multiple: int) -> pd.DataFrame:
    """Held-out losses of one model at one length, every method (cached per model file)."""
    ckpt = load_model(key, st.session_state.get(DEVICE_KEY, "auto"))
    sp = special_ids(ckpt.tokenizer)
    texts = corpus_split().heldout
    ids = [[sp["<bos>"], *e.ids, sp["<eos>"]] for e in ckpt.tokenizer.encode_batch(texts)]
    total = lesson.experiment_tokens(ckpt.model.config.max_len, MULTIPLES, TOKEN_BUDGET)
    return lesson.length_losses(ckpt.model, ids, [multiple], total=total)


@section("the length experiment")
def length_experiment() -> None:
    shipped = {e.key: e for e in available_models()}
    keys = [k for k in ("enc-sinusoidal", "enc-learned") if k in shipped]
    if "enc-rope" in shipped:  # trained like the other two: only the position encoding differs
        keys.insert(0, "enc-rope")
    else:
        ckpt, _ = rope_model()
        if ckpt is not None:
            keys.insert(0, next((k for k, e in shipped.items() if e.path and ckpt.path
                                 and Path(e.path) == Path(ckpt.path)), st.session_state.get("model_key", "")))
    keys = [k for k in keys if k]
    if not keys:
        st.info("No shipped model is available for this experiment yet.")
        return
    st.markdown("Held-out loss of " + ", ".join(f"“{k}”" for k in keys) + " on the same held-out tokens, cut "
                f"into windows of {', '.join(f'{m}×' for m in MULTIPLES)} each model's training length. The RoPE "
                "model is run under every scaling (same weights: RoPE has no parameters); at 1× every scaling has "
                "factor 1, so they coincide there.")
    st.caption("The windows pack several held-out sentences end to end, which is harder than the one-sentence "
               "examples the models were trained on: compare the lines with each other, not with the training loss.")
    missing = [k for k in ("enc-sinusoidal", "enc-learned") if k not in shipped]
    if missing:
        st.caption("Not installed yet, so left out: " + ", ".join(missing) + ".")
    if st.button("Run the length experiment", key="rope_len_run"):
        st.session_state["rope_len_ran"] = True  # later reruns redraw the (cached) result
    if not st.session_state.get("rope_len_ran"):
        return
    bar = st.progress(0.0, text="starting…")
    frames, jobs = [], [(k, m) for k in keys for m in MULTIPLES]
    for j, (key, m) in enumerate(jobs):
        bar.progress(j / len(jobs), text=f"{key}: {m}× the training length")
        entry = shipped.get(key)
        path = entry.path if entry else None
        mtime = Path(path).stat().st_mtime if path else 0.0
        try:
            frames.append(_cell(key, path, mtime, m).assign(model=key))
        except ValueError as err:  # one unreadable model should not hide the others
            frames.append(pd.DataFrame([{"model": key, "method": "none", "multiple": m, "length": None,
                                         "loss": float("nan"), "note": f"could not be run ({err})"}]))
    bar.progress(1.0, text="done")
    table = pd.concat(frames, ignore_index=True)
    show(rfigs.length_losses(table, rope.ROPE_SCALING_LABELS, "Held-out loss against context length"),
         key="rope_len_fig", name="rope_length_experiment")
    for note in sorted({f"{r.model}: {r.note}" for r in table.itertuples() if r.note}):
        st.caption(note)
    st.caption("Lower is better. A line that climbs past 1× is a model reading positions it never saw in training.")
    st.caption("Why the scaled lines lose to plain RoPE here: these models were **not fine-tuned after scaling**. "
               "A scaling changes the angles the same weights see (linear interpolation shrinks every distance by "
               "the factor, so neighbouring tokens look closer than any pair did in training), and nothing here lets "
               "the model adapt to that. In practice a scaled model is fine-tuned briefly at the longer length "
               "(as for Code Llama, YaRN and Llama 3), and that short fine-tuning is what makes scaling pay off.")
    is_rope = table.groupby("model")["method"].transform("nunique") > 1
    labels = table["method"].map(rope.ROPE_SCALING_LABELS).where(is_rope, "as trained (not RoPE)")
    wide = table.assign(method=labels).pivot_table(index=["model", "method"], columns="length", values="loss",
                                                   sort=False)
    st.dataframe(wide.map(lambda v: "—" if pd.isna(v) else f"{v:.3f}"), key="rope_len_table")


# -- where RoPE operates --------------------------------------------------------------------------------
@section("where RoPE acts")
def where_rope_acts() -> None:
    ckpt, where = rope_model()
    if ckpt is None:
        return
    cfg = ckpt.model.config
    ids = encode_text(ckpt, ROPE_SENTENCE, max_len=cfg.max_len)
    on, off = on_off(ckpt, ids.ids)
    T, H, d_k = len(ids.ids), cfg.n_heads, cfg.d_k
    st.markdown(f"Inside every attention layer of {where}, for “{ROPE_SENTENCE}” (T = {T}):")
    if is_folder_model(ckpt):
        sc = cfg.rope_scaling
        st.caption(f"With its own rope_theta = {cfg.rope_base:,.0f}" + (
            f" and {rope.ROPE_SCALING_LABELS[sc['type']]} scaling ×{sc['factor']:g}" if sc else "") + (
            f"; K and V have {cfg.kv_heads} heads, repeated for the {H} query heads (grouped-query attention)"
            if cfg.kv_heads != H else "") + ".")
    st.dataframe(pd.DataFrame([
        ("x (after LayerNorm)", f"(1, {T}, {cfg.d_model})", "no RoPE: the residual stream is never rotated"),
        ("Q, K, V = split(x·W_qkv) into heads", f"(1, {H}, {T}, {d_k})", "projection first"),
        ("cos, sin tables", f"({T}, {d_k // 2})", "one angle per position and pair"),
        ("Q′ = R·Q, K′ = R·K", f"{tuple(on.layers[0].q.shape)}", "per head, on d_k"),
        ("V", f"{tuple(on.layers[0].v.shape)}", "untouched"),
    ], columns=["step", "shape", "note"]), hide_index=True, key="rope_where_shapes")
    theta, att = rope.inv_freq(d_k, cfg.rope_base, cfg.rope_scaling, seq_len=T)
    q_rot = rope.apply_rope(off.layers[0].q.double(), torch.arange(T), theta, att)
    q_err = float((q_rot - on.layers[0].q).abs().max())
    v_err = float((on.layers[0].v - off.layers[0].v).abs().max())
    verdict(q_err, 1e-4, "layer 0: Q with RoPE = RoPE applied per head to Q without it")
    verdict(v_err, 0.0, "V is identical with RoPE on and off: it is never rotated")
    c = st.columns(2)
    layer = share.select(c[0], "layer", range(cfg.n_layers), "rope_where_layer")
    head = share.select(c[1], "head", range(H), "rope_where_head")
    p_on, p_off = on.layers[layer].probs[0, head], off.layers[layer].probs[0, head]
    allowed = torch.isfinite(on.layers[layer].mask).expand(on.layers[layer].probs.shape)[0, head]
    left, right = st.columns(2)
    with left:
        show(attention_heatmap(p_on, ids.tokens, allowed=allowed, title="RoPE on (as trained)"),
             key="rope_where_on")
    with right:
        show(attention_heatmap(p_off, ids.tokens, allowed=allowed, title="RoPE switched off, same weights"),
             key="rope_where_off")
    st.metric("largest change in an attention weight", f"{float((p_on - p_off).abs().max()):.3f}")


# -- conventions ----------------------------------------------------------------------------------------
@section("the conventions")
def conventions() -> None:
    d_k = 8
    st.markdown("Two layouts rotate the same pairs under different names. **Interleaved** (RoFormer, Meta Llama, "
                "this app): pair i = (x₂ᵢ, x₂ᵢ₊₁). **Rotate-half** (HF Llama, GPT-NeoX): pair i = (xᵢ, xᵢ₊d/2).")
    st.dataframe(pd.DataFrame({"interleaved": [f"({2 * i}, {2 * i + 1})" for i in range(d_k // 2)],
                               "rotate-half": [f"({i}, {i + d_k // 2})" for i in range(d_k // 2)]},
                              index=[f"pair {i}" for i in range(d_k // 2)]).T, key="rope_conv_pairs")
    c = st.columns(2)
    t = c[0].slider("q position", 0, 64, 2, key="rope_conv_t", **share.URL)
    s = c[1].slider("k position", 0, 64, 9, key="rope_conv_s", **share.URL)
    res = lesson.convention_check(d_k, t, s)
    st.markdown(f"Permutation P = {res['perm']} reorders a vector so that half(P·x) = P·interleaved(x). HF's "
                "weight converter applies P to the rows of W_q and W_k, so scores do not change.")
    cc = st.columns(3)
    cc[0].metric("interleaved score", f"{res['interleaved']:.6f}")
    cc[1].metric("rotate-half on P·q, P·k", f"{res['half_permuted']:.6f}")
    cc[2].metric("rotate-half, no permutation", f"{res['half_unpermuted']:.6f}")
    verdict(max(res["vector_error"], abs(res["interleaved"] - res["half_permuted"])), 1e-12,
            "half(P·x) = P·interleaved(x), and the scores are identical")
    st.caption(f"Using the wrong convention on the same weights changes the score by "
               f"{abs(res['interleaved'] - res['half_unpermuted']):.3f} — silently.")
