"""Streamlit glue for the Q, K and V page: the lookup, the four variants, minimal pairs, held-out loss, claims."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.config import QKV_MODES
from viz_model.figures.attention import value_mix
from viz_model.figures.qkv import lookup_bars, loss_bars, pair_cosine_bars, score_panels, self_attention_bars
from viz_model.lessons import qkv as lesson
from viz_model.tokenizer import typed_specials
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.errors import section
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY, MODEL_KEY
from viz_model.ui.widgets import layer_head, show_check, show_checks, specials_notice, train_ablation_button

MAX_T = 16            # the four score panels stay readable up to here
CUSTOM_PAIR = "(type your own pair)"


def variant_models() -> tuple[dict[str, Checkpoint], list[str]]:
    """The shipped model of each variant that is installed ({variant: checkpoint}) and the missing model keys (named
    in a warning)."""
    installed = {e.key for e in available_models()}
    device = st.session_state.get(DEVICE_KEY, "auto")
    have = {v: load_model(k, device) for v, k in lesson.SHIPPED.items() if k in installed}
    missing = [k for v, k in lesson.SHIPPED.items() if v not in have]
    if missing:
        st.warning("Not installed here, so left out: " + ", ".join(f"`{k}`" for k in missing)
                   + ". Run `make models` to build the shipped Q, K and V models.")
    return have, missing


def variant_note(ckpt: Checkpoint) -> None:
    """Say which variant the sidebar model is, and what that means for q, k and v."""
    variant = ckpt.model.config.qkv
    others = picker_names([k for v, k in lesson.SHIPPED.items() if v != "separate"])
    text = lesson.variant_note(variant, st.session_state.get(MODEL_KEY, ""), others)
    if variant == "separate":
        st.caption(text)
    else:
        st.info(text, icon=":material/info:")


def picker_names(keys: list[str]) -> list[str]:
    """The installed models among `keys`, each named as the sidebar's Model picker shows it (its title)."""
    titles = {e.key: e.title for e in available_models()}
    return [titles[k] for k in keys if k in titles]


@section("the database lookup")  # the layer, head and query pickers rerun only this part
def lookup_view(ckpt: Checkpoint, text: str) -> None:
    cfg = ckpt.model.config
    ids, tokens = lesson.encode_sentence(ckpt.model, ckpt.tokenizer, text)
    c1, c2, c3, _ = st.columns([1, 1, 2, 2])
    layer, head = layer_head("qkv", cfg.n_layers, cfg.n_heads, where=(c1, c2))
    query = share.select(c3, "Query token", range(len(ids)), "qkv_query", lesson.default_query(tokens),
                         format_func=lambda i: f"{i} · {tokens[i]}", help="The token whose q asks the question.")
    key = (input_key(model_id(ckpt), text), layer, head, query)
    lk = cached("qkv_lookup", key, lambda: lesson.lookup(ckpt.model, ckpt.tokenizer, text, layer, head, query))
    q = tokens[query]
    st.markdown(lesson.lookup_text(q))
    chart.show(cached("qkv_lookup_fig", key, lambda: lookup_bars(
        lk.scores, lk.probs, lk.allowed, lk.tokens, query, title=f"Layer {layer}, head {head}: the lookup of "
                                                                 f"query {query} ({q})")),
               key="qkv_lookup_chart", name=f"qkv_lookup_L{layer}_H{head}_q{query}")
    ok = lk.allowed
    st.markdown(lesson.VALUES_TEXT)
    chart.show(cached("qkv_mix_fig", key, lambda: value_mix(lk.probs[ok], lk.v[ok], [t for t, o in zip(
        lk.tokens, ok) if o], q)), key="qkv_mix_chart", name=f"qkv_values_L{layer}_H{head}_q{query}")
    st.dataframe(pd.DataFrame(lesson.contributor_rows(lk)), hide_index=True, width="stretch")
    st.caption(lesson.contributors_text(lk))
    show_check(lesson.lookup_check(lk))


@section("the four variants")  # the layer and head pickers rerun only this part
def variants_view(text: str) -> None:
    models, _ = variant_models()
    if not models:
        return
    cfg = next(iter(models.values())).model.config
    c1, c2, _ = st.columns([1, 1, 4])
    layer, head = layer_head("qkv_var", cfg.n_layers, cfg.n_heads, where=(c1, c2))
    key = (input_key(*(model_id(c) for c in models.values()), text), layer, head)
    rows = cached("qkv_variant_scores", key, lambda: [
        lesson.variant_scores({v: c.model}, c.tokenizer, text, layer, head)[0] for v, c in models.items()])
    titles = [f"{lesson.label(r.variant)} · asym {lesson.asym_text(r.asymmetry)}" for r in rows]
    chart.show(cached("qkv_panels_fig", key, lambda: score_panels(
        [r.scores for r in rows], titles, rows[0].tokens,
        title=f"Score matrix S = QKᵀ/√d_k of layer {layer}, head {head}, before the mask")),
               key="qkv_panels_chart", name=f"qkv_scores_L{layer}_H{head}")
    st.caption(lesson.SCORES_CAPTION)
    st.dataframe(pd.DataFrame(lesson.variant_rows(rows)), hide_index=True, width="stretch")
    show_checks(lesson.symmetry_facts(rows))
    if caption := lesson.asymmetry_caption(rows):
        st.caption(caption)
    chart.show(cached("qkv_self_fig", key, lambda: self_attention_bars(
        [lesson.label(r.variant) for r in rows], [r.self_share for r in rows], [r.diag_max_rate for r in rows],
        rows[0].chance_share, title="How much each token attends to itself (after the mask)")),
               key="qkv_self_chart", name=f"qkv_self_L{layer}_H{head}")


def pair_input(models: dict[str, Checkpoint]) -> tuple[str, str]:
    """The minimal pair: one of the lesson's, or two sentences typed here."""
    options = [f"{a} / {b}" for a, b in lesson.MINIMAL_PAIRS] + [CUSTOM_PAIR]
    choice = share.select(st, "Minimal pair (one word differs, the last word is shared)", options, "qkv_pair")
    if choice != CUSTOM_PAIR:
        return lesson.MINIMAL_PAIRS[options.index(choice)]
    c1, c2 = st.columns(2)
    a = share.text(c1, "First sentence", "the cat sat", "qkv_pair_a", 300)
    b = share.text(c2, "Second sentence", "the dog sat", "qkv_pair_b", 300)
    first = next(iter(models.values()))  # typed text is literal: say so when it spells a special token
    specials_notice(first, typed_specials(first.tokenizer, a) + typed_specials(first.tokenizer, b))
    return a, b


@section("the minimal pairs")
def pairs_view() -> None:
    models, _ = variant_models()
    if not models:
        return
    a, b = pair_input(models)
    key = (input_key(*(model_id(c) for c in models.values()), a, b),)
    res = cached("qkv_pairs", key, lambda: [lesson.minimal_pair({v: c.model}, c.tokenizer, a, b)
                                            for v, c in models.items()])
    word, names = res[0].word, [lesson.label(v) for v in models]
    attn = [r.attn_cos[v] for r, v in zip(res, models)]
    hidden = [r.hidden_cos[v] for r, v in zip(res, models)]
    st.markdown(lesson.pair_text(res[0]))
    chart.show(cached("qkv_pairs_fig", key, lambda: pair_cosine_bars(
        names, attn, hidden, word, title=f"cos('{word}' in “{a}”, '{word}' in “{b}”)")),
               key="qkv_pairs_chart", name="qkv_minimal_pair")
    st.dataframe(pd.DataFrame(lesson.pair_rows(names, attn, hidden)), hide_index=True, width="stretch")
    if caption := lesson.pair_caption(list(models), attn):
        st.caption(caption)


def summaries(models: dict[str, Checkpoint]) -> list[lesson.VariantSummary]:
    """Each variant's summary with its held-out loss measured (about 1.5 s a model, once per server)."""
    bar = st.progress(0.0, text="Measuring the variants on the held-out split (once per server)…")
    out = []
    for i, (v, c) in enumerate(models.items()):
        bar.progress(i / len(models), text=f"Measuring {lesson.label(v)} on the held-out split (once per server)…")
        out.append(cached("qkv_summary", (model_id(c),), lambda c=c: lesson.summarize(
            c.model, c.tokenizer, heldout_loss=lesson.heldout_loss(c.model, c.tokenizer))))
    bar.empty()
    return out


@section("the held-out loss")
def loss_view() -> None:
    models, _ = variant_models()
    if not models:
        return
    sums = summaries(models)
    names = [lesson.label(s.variant) for s in sums]
    losses = [s.heldout_loss for s in sums]
    chart.show(cached("qkv_loss_fig", (input_key(*(model_id(c) for c in models.values())),), lambda: loss_bars(
        names, losses, reference=[s.variant for s in sums].index("separate") if "separate" in models else 0,
        title="Held-out loss of the variants (same data, size, seed and steps)")),
               key="qkv_loss_chart", name="qkv_heldout_loss")
    stored = [(c.metadata or {}).get("heldout_loss") for c in models.values()]
    st.dataframe(pd.DataFrame(lesson.loss_rows(names, losses, stored)), hide_index=True, width="stretch")
    show_checks(lesson.metadata_facts(losses, stored))
    st.caption(lesson.spread_text(losses))


def train_link() -> None:
    st.markdown(lesson.TRAIN_TEXT)
    train_ablation_button("qkv", "Open the Q, K and V ablation on the Train page", "qkv_to_train")


@section("the claims")
def claims_view() -> None:
    models, missing = variant_models()
    if missing:
        st.info("The claims compare all four variants, so they need every shipped Q, K and V model.")
        return
    rows = lesson.claims(summaries({v: models[v] for v in QKV_MODES}))
    ref = models["separate"]
    st.markdown(lesson.claims_intro(rows, ref.model, (ref.metadata or {}).get("steps")))
    show_checks(rows)
