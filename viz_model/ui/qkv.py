"""Streamlit glue for the Q, K and V page: the lookup, the four variants, minimal pairs, held-out loss, claims."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.config import QKV_MODES
from viz_model.figures.explorer import value_mix
from viz_model.figures.qkv import lookup_bars, loss_bars, pair_cosine_bars, score_panels, self_attention_bars
from viz_model.lessons import qkv as lesson
from viz_model.tokenizer import Encoded, typed_specials
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.errors import section
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY, MODEL_KEY
from viz_model.ui.widgets import check_line, layer_head, specials_notice, train_ablation_button, verdict

MAX_T = 16            # the four score panels stay readable up to here
LOOKUP_TOL = 1e-5     # float32 rounding of a sum of T products
METADATA_TOL = 1e-4   # the recomputed held-out loss against the checkpoint's own number
TOP_N = 5
CUSTOM_PAIR = "(type your own pair)"
HOW = {"separate": "q, k and v come from three separate projections W_Q, W_K, W_V.",
       "shared_qk": "q and k come from one projection (W_Q = W_K): q·k is the same both ways, only RoPE's rotation "
                    "differs between positions.",
       "shared_kv": "k and v come from one projection (W_K = W_V): v is k before RoPE's rotation, so what a token is "
                    "found by is also what it hands over.",
       "none": "there are no projections: q, k and v are the normed input itself (q and k rotated by RoPE), XXᵀ "
               "attention."}


def md(text: str) -> str:
    """A user-typed token or sentence as literal Markdown text (no *, _, ` or [ formatting)."""
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~$])", r"\\\1", str(text))


def label(variant: str) -> str:
    return lesson.VARIANT_LABELS.get(variant, variant)


def lesson_text(enc: Encoded, raw: str) -> str:
    """The text the lesson functions encode: the typed text, or what is left of it after truncation."""
    if not enc.truncated:
        return raw
    return " ".join(t for t in enc.tokens if t != "<bos>")


def _device() -> str:
    return st.session_state.get(DEVICE_KEY, "auto")


def variant_models() -> tuple[dict[str, Checkpoint], list[str]]:
    """The shipped model of each variant that is installed ({variant: checkpoint}) and the missing model keys."""
    installed = {e.key for e in available_models()}
    have = {v: load_model(k, _device()) for v, k in lesson.SHIPPED.items() if k in installed}
    return have, [k for v, k in lesson.SHIPPED.items() if v not in have]


def _missing_note(missing: list[str]) -> None:
    if missing:
        st.warning("Not installed here, so left out: " + ", ".join(f"`{k}`" for k in missing)
                   + ". Run `make models` to build the shipped Q, K and V models.")


def variant_note(ckpt: Checkpoint) -> None:
    """Say which variant the sidebar model is, and what that means for q, k and v."""
    variant = ckpt.model.config.qkv
    key = st.session_state.get(MODEL_KEY, "")
    shipped = {k: v for v, k in lesson.SHIPPED.items()}
    where = f"the shipped `{key}`, " if key in shipped else ""
    text = f"The sidebar model ({where}**{label(variant)}**): {HOW.get(variant, '')}"
    if variant == "separate":
        others = picker_names([k for v, k in lesson.SHIPPED.items() if v != "separate"])
        if others:
            st.caption(text + f" Pick {_or(others)} in the sidebar's Model picker to see the others.")
        else:
            st.caption(text)
    else:
        st.info(text + " It is not the usual separate-projection model.", icon=":material/info:")


def picker_names(keys: list[str]) -> list[str]:
    """The installed models among `keys`, each named as the sidebar's Model picker shows it (its title)."""
    titles = {e.key: e.title for e in available_models()}
    return [titles[k] for k in keys if k in titles]


def _or(names: list[str]) -> str:
    quoted = [f"“{md(n)}”" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def asym_text(value: float) -> str:
    """‖S − Sᵀ‖/‖S‖ as every panel title, table cell and caption on the page writes it (one rounding)."""
    return f"{value:.2f}"


def _default_query(tokens: list[str]) -> int:
    lower = [t.lower() for t in tokens]
    return lower.index("sat") if "sat" in lower else len(tokens) - 1


@section("the database lookup")  # the layer, head and query pickers rerun only this part
def lookup_view(ckpt: Checkpoint, text: str) -> None:
    cfg = ckpt.model.config
    ids, tokens = lesson.encode_sentence(ckpt.model, ckpt.tokenizer, text)
    c1, c2, c3, _ = st.columns([1, 1, 2, 2])
    layer, head = layer_head("qkv", cfg.n_layers, cfg.n_heads, where=(c1, c2))
    query = share.select(c3, "Query token", range(len(ids)), "qkv_query", _default_query(tokens),
                         format_func=lambda i: f"{i} · {tokens[i]}", help="The token whose q asks the question.")
    key = (input_key(model_id(ckpt), text), layer, head, query)
    lk = cached("qkv_lookup", key, lambda: lesson.lookup(ckpt.model, ckpt.tokenizer, text, layer, head, query))
    q = tokens[query]
    st.markdown(f"**Query** = the q of *{md(q)}*; **keys** = the k of every token it may read; the **scores** "
                "q·k_j/√d_k say how well each key matches; the **softmax** turns them into weights p_j that sum to 1.")
    chart.show(cached("qkv_lookup_fig", key, lambda: lookup_bars(
        lk.scores, lk.probs, lk.allowed, lk.tokens, query, title=f"Layer {layer}, head {head}: the lookup of "
                                                                 f"query {query} ({q})")),
               key="qkv_lookup_chart", name=f"qkv_lookup_L{layer}_H{head}_q{query}")
    ok = lk.allowed
    st.markdown("**Values**: the answer is the weighted sum Σ_j p_j v_j of the keys' v vectors (rows p_j · v_j, "
                "then their sum).")
    chart.show(cached("qkv_mix_fig", key, lambda: value_mix(lk.probs[ok], lk.v[ok], [t for t, o in zip(
        lk.tokens, ok) if o], q)), key="qkv_mix_chart", name=f"qkv_values_L{layer}_H{head}_q{query}")
    contributors(lk)
    verdict(lk.error, LOOKUP_TOL, "Σ_j p_j v_j recomputed here equals the model's own head output for this query")


def contributors(lk: lesson.Lookup) -> None:
    """The top contributors by ‖p_j v_j‖, named, with their weights."""
    top = lk.contributors[:TOP_N]
    total = sum(c.norm for c in lk.contributors) or 1.0
    st.dataframe(pd.DataFrame({"key": [f"{c.index} · {c.token}" for c in top],
                               "weight p_j": [f"{c.weight:.3f}" for c in top],
                               "‖p_j · v_j‖": [f"{c.norm:.3f}" for c in top],
                               "share of Σ‖p_j · v_j‖": [f"{c.norm / total:.0%}" for c in top]}),
                 hide_index=True, width="stretch")
    first = top[0]
    by_weight = max(lk.contributors, key=lambda c: c.weight)
    text = (f"The answer is mostly the value of *{md(first.token)}* (position {first.index}, p = {first.weight:.2f}, "
            f"‖p·v‖ = {first.norm:.2f})")
    if by_weight.index != first.index:
        text += (f"; *{md(by_weight.token)}* has the largest weight ({by_weight.weight:.2f}) but a shorter value "
                 "vector, so it adds less")
    st.caption(text + ".")


@section("the four variants")  # the layer and head pickers rerun only this part
def variants_view(text: str) -> None:
    models, missing = variant_models()
    _missing_note(missing)
    if not models:
        return
    cfg = next(iter(models.values())).model.config
    c1, c2, _ = st.columns([1, 1, 4])
    layer, head = layer_head("qkv_var", cfg.n_layers, cfg.n_heads, where=(c1, c2))
    key = (input_key(*(model_id(c) for c in models.values()), text), layer, head)
    rows = cached("qkv_variant_scores", key, lambda: [
        lesson.variant_scores({v: c.model}, c.tokenizer, text, layer, head)[0] for v, c in models.items()])
    titles = [f"{label(r.variant)} · asym {asym_text(r.asymmetry)}" for r in rows]
    chart.show(cached("qkv_panels_fig", key, lambda: score_panels(
        [r.scores for r in rows], titles, rows[0].tokens,
        title=f"Score matrix S = QKᵀ/√d_k of layer {layer}, head {head}, before the mask")),
               key="qkv_panels_chart", name=f"qkv_scores_L{layer}_H{head}")
    st.caption("The whole matrix before the causal mask (which later hides everything above the diagonal); "
               "red positive, blue negative, each panel on its own scale centred at 0. asym = ‖S − Sᵀ‖/‖S‖.")
    variant_table(rows)
    chart.show(cached("qkv_self_fig", key, lambda: self_attention_bars(
        [label(r.variant) for r in rows], [r.self_share for r in rows], [r.diag_max_rate for r in rows],
        rows[0].chance_share, title="How much each token attends to itself (after the mask)")),
               key="qkv_self_chart", name=f"qkv_self_L{layer}_H{head}")


def variant_table(rows: list[lesson.VariantScores]) -> None:
    st.dataframe(pd.DataFrame({
        "variant": [label(r.variant) for r in rows],
        "‖S − Sᵀ‖ / ‖S‖": [asym_text(r.asymmetry) for r in rows],
        "mean weight on itself": [f"{r.self_share:.3f}" for r in rows],
        "itself is the largest weight": [f"{r.diag_max_rate:.0%}" for r in rows],
        "even spread": [f"{r.chance_share:.3f}" for r in rows]}), hide_index=True, width="stretch")
    for r in rows:
        if r.variant in ("shared_qk", "none"):
            sym = r.asymmetry <= lesson.SYMMETRY_TOL
            check_line(sym, f"{label(r.variant)}: ‖S − Sᵀ‖/‖S‖ = {r.asymmetry:.1e} "
                            + (f"(≤ {lesson.SYMMETRY_TOL:g}), the scores are symmetric: token i matches j exactly "
                               "as well as j matches i." if sym else
                               f"(> {lesson.SYMMETRY_TOL:g}): the scores are not symmetric here."))
    asym = [f"{label(r.variant)} {asym_text(r.asymmetry)}" for r in rows if r.variant in ("separate", "shared_kv")]
    if asym:
        st.caption("With separate W_Q and W_K the matrix is asymmetric (" + ", ".join(asym) + "; an unrelated "
                   "random matrix gives about 1.41). The even spread is the weight on itself if a row spread "
                   "its weight evenly over the keys it may read.")


@section("the minimal pairs")
def pairs_view() -> None:
    models, missing = variant_models()
    _missing_note(missing)
    if not models:
        return
    options = [f"{a} / {b}" for a, b in lesson.MINIMAL_PAIRS] + [CUSTOM_PAIR]
    choice = share.select(st, "Minimal pair (one word differs, the last word is shared)", options, "qkv_pair")
    if choice == CUSTOM_PAIR:
        c1, c2 = st.columns(2)
        a = share.text(c1, "First sentence", "the cat sat", "qkv_pair_a", 300)
        b = share.text(c2, "Second sentence", "the dog sat", "qkv_pair_b", 300)
        first = next(iter(models.values()))  # typed text is literal: say so when it spells a special token
        specials_notice(first, typed_specials(first.tokenizer, a) + typed_specials(first.tokenizer, b))
    else:
        a, b = lesson.MINIMAL_PAIRS[options.index(choice)]
    key = (input_key(*(model_id(c) for c in models.values()), a, b),)
    res = cached("qkv_pairs", key, lambda: [lesson.minimal_pair({v: c.model}, c.tokenizer, a, b)
                                            for v, c in models.items()])
    word, names = res[0].word, [label(v) for v in models]
    attn = [r.attn_cos[v] for r, v in zip(res, models)]
    hidden = [r.hidden_cos[v] for r, v in zip(res, models)]
    st.markdown(f"The vectors of the shared word **{md(word)}** (position {res[0].position}) in *{md(a)}* and in "
                f"*{md(b)}*: "
                "for each layer its **attention output** (the attention block's output after W_O, before it is "
                "added to the residual stream) and the **final hidden state** (the residual stream after the last "
                "block, before the final norm). Cosine 1 = the same direction; the lecture expects K = V to blur "
                "the two sentences together.")
    chart.show(cached("qkv_pairs_fig", key, lambda: pair_cosine_bars(
        names, attn, hidden, word, title=f"cos('{word}' in “{a}”, '{word}' in “{b}”)")),
               key="qkv_pairs_chart", name="qkv_minimal_pair")
    table = {"variant": names}
    for i in range(len(attn[0])):
        table[f"attention output, layer {i}"] = [f"{row[i]:.3f}" for row in attn]
    table["final hidden state"] = [f"{h:.3f}" for h in hidden]
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
    if "shared_kv" in models and "separate" in models:
        kv, sep = attn[list(models).index("shared_kv")][0], attn[list(models).index("separate")][0]
        st.caption(f"Layer 0 attention output: shared K = V {kv:.3f} against separate {sep:.3f} for this pair "
                   f"({'more' if kv > sep else 'less'} alike). The Claims tab averages over all "
                   f"{len(lesson.MINIMAL_PAIRS)} pairs.")


def summaries(models: dict[str, Checkpoint]) -> list[lesson.VariantSummary]:
    """Each variant's summary with its held-out loss measured (about 1.5 s a model, once per server)."""
    bar = st.progress(0.0, text="Measuring the variants on the held-out split (once per server)…")
    out = []
    for i, (v, c) in enumerate(models.items()):
        bar.progress(i / len(models), text=f"Measuring {label(v)} on the held-out split (once per server)…")
        out.append(cached("qkv_summary", (model_id(c),), lambda c=c: lesson.summarize(
            c.model, c.tokenizer, heldout_loss=lesson.heldout_loss(c.model, c.tokenizer))))
    bar.empty()
    return out


@section("the held-out loss")
def loss_view() -> None:
    models, missing = variant_models()
    _missing_note(missing)
    if not models:
        return
    sums = summaries(models)
    names = [label(s.variant) for s in sums]
    losses = [s.heldout_loss for s in sums]
    chart.show(cached("qkv_loss_fig", (input_key(*(model_id(c) for c in models.values())),), lambda: loss_bars(
        names, losses, reference=[s.variant for s in sums].index("separate") if "separate" in models else 0,
        title="Held-out loss of the variants (same data, size, seed and steps)")),
               key="qkv_loss_chart", name="qkv_heldout_loss")
    stored = [(c.metadata or {}).get("heldout_loss") for c in models.values()]
    st.dataframe(pd.DataFrame({"variant": names, "measured now (nats/token)": [f"{x:.4f}" for x in losses],
                               "in the checkpoint's metadata": ["—" if m is None else f"{m:.4f}" for m in stored]}),
                 hide_index=True, width="stretch")
    pairs = [(x, m) for x, m in zip(losses, stored) if m is not None]
    if pairs:
        err = max(abs(x - m) for x, m in pairs)
        check_line(err <= METADATA_TOL, f"Recomputed here, the held-out losses match the numbers saved at training "
                                        f"time (largest difference {err:.1e} nats).")
    spread = max(losses) - min(losses)
    st.caption(f"All {len(losses)} are within {spread:.4f} nats of each other. One training run each: seed-to-seed "
               "noise is not measured, so a gap this small says little.")


def train_link() -> None:
    st.markdown("Train them yourself: the Train page's **Compare setups** tab retrains the four variants live, side "
                "by side, and overlays their loss curves (pick **Q, K and V** under **Vary** there).")
    train_ablation_button("Q, K and V", "Open the Q, K and V ablation on the Train page", "qkv_to_train")


@section("the claims")
def claims_view() -> None:
    models, missing = variant_models()
    if missing:
        _missing_note(missing)
        st.info("The claims compare all four variants, so they need every shipped Q, K and V model.")
        return
    rows = lesson.claims(summaries({v: models[v] for v in QKV_MODES}))
    held = sum(r.holds for r in rows)
    ref = models["separate"]
    size = sum(p.numel() for p in ref.model.parameters())
    steps = (ref.metadata or {}).get("steps")
    st.markdown(f"**{held} of {len(rows)}** claims hold on these small models. Where one does not, the page says "
                f"so: the lecture speaks of large trained models; these have {ref.model.config.n_layers} layers and "
                f"{size:,} parameters" + (f", trained for {steps:,} steps." if steps else "."))
    for r in rows:
        with st.container(border=True):
            if r.holds:
                st.success(f"✓ {r.claim}")
            else:
                st.warning(f"✗ {r.claim}", icon=":material/science:")
            st.markdown(f"**Measured:** {md(r.measurement)}")
            st.caption(f"Holds when: {r.tolerance}.")
            if r.note:
                st.info(r.note, icon=":material/lightbulb:")
