"""Attention vs attribution: the sentence, the target picker, and each method's scores beside the causal test."""

from __future__ import annotations

import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.figures import attribution as figs
from viz_model.lecture import EXAMPLES, PROMPTS
from viz_model.lessons import attribution as lesson
from viz_model.model_text import pad_token, token_texts, uses_bos
from viz_model.tokenizer import Encoded
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.widgets import answer_line, encode_text, example_text, show_checks, text_notes

EXAMPLES_HERE = list(dict.fromkeys([*PROMPTS, *(e for e in EXAMPLES if "<pad>" not in e.lower())]))


def sentence(ckpt: Checkpoint) -> Encoded:
    """The sentence box (a prompt or a lecture sentence), read as the model reads it; the page stops on an empty
    text or a single token, with the sentence that says why."""
    limit = min(ckpt.model.config.max_len, lesson.MAX_TOKENS)  # occlusion: one row per token
    text = example_text("attribution_text", "attribution_example", EXAMPLES_HERE, lesson.DEFAULT_TEXT, "Sentence",
                        help="The model predicts the token after it; cut to the model's context.",
                        picker="Example (a prompt or a lecture sentence)")
    enc = encode_text(ckpt, text, max_len=limit, bos=uses_bos(ckpt))
    text_notes(enc, cut=lesson.CUT.format(n=enc.n_tokens_total, limit=limit), empty=lesson.EMPTY,
               min_ids=int(uses_bos(ckpt)))
    if len(enc.ids) - int(uses_bos(ckpt)) < lesson.MIN_WORDS:
        st.info(lesson.ONE_TOKEN)
        st.stop()
    return enc


def targets(ckpt: Checkpoint, ids: tuple[int, ...]) -> list[tuple[int, str, float]]:
    """The model's top next tokens (id, text, p), from one cached pass."""
    key = input_key(model_id(ckpt), ids)
    top = cached("attribution_top", (key,), lambda: lesson.top_next(ckpt.model, ids), model_pass=True)
    return [(i, t, p) for (i, p), t in zip(top, token_texts(ckpt, [i for i, _ in top]))]


@section("the attribution view")  # the layer, head and target pickers rerun only this part
def view(ckpt: Checkpoint, enc: Encoded) -> None:
    cfg, ids = ckpt.model.config, tuple(enc.ids)
    top = targets(ckpt, ids)
    c1, c2, c3 = st.columns([2, 1, 1])
    rank = share.select(c1, "Explain the prediction", range(len(top)), "attribution_target",
                        format_func=lambda r: lesson.target_label(r, top[r][1]),
                        help=lesson.TARGET_HELP)
    # the last layer first (the default, as the page reads the prediction there): each picker's next option is a choice
    layer = share.select(c2, "Layer", range(cfg.n_layers - 1, -1, -1), "attribution_layer", help=lesson.LAYER_HELP)
    head = share.select(c3, "Head", range(cfg.n_heads), "attribution_head")
    tid, ttext, p = top[rank]
    st.markdown(lesson.target_sentence(ttext, p, rank))
    start, base, pass_key = int(uses_bos(ckpt)), pad_token(ckpt), input_key(model_id(ckpt), ids, tid)
    m = cached("attribution_passes", (pass_key,), lambda: lesson.passes(ckpt.model, ids, tid, start=start,
               baseline=base[0]), model_pass=True, spinner="Running the four methods…")  # a head is a lookup
    key = input_key(pass_key, layer, head)
    res = cached("attribution", (key,), lambda: lesson.attribution_of(
        m, ids, enc.tokens, layer=layer, head=head, target=tid, start=start, baseline=base, target_text=ttext))
    names, short = lesson.method_names(layer, head), lesson.method_names(layer, head, short=True)
    st.markdown(lesson.agreement_sentence(res))
    answer_line("attribution_top_text", lesson.top_sentence(res))  # #39: hidden in class until Reveal
    show(cached("attribution_fig", (key,), lambda: figs.methods_heatmap(res.scores, names, short, res.tokens,
                                                                           res.positions)),
         key="attribution_methods", name="attribution_methods")
    st.caption(lesson.METHODS_NOTE + " " + lesson.BASELINE_NOTE.format(baseline=res.baseline))
    if (said := lesson.start_sentence(res)) is not None:
        st.caption(said)
    st.header("Do the methods agree? Rank correlation")
    show(cached("attribution_rho", (key,), lambda: figs.agreement_matrix(
        res.rho, list(names.values()), list(short.values()))),
         key="attribution_agreement", name="attribution_agreement")
    show_checks(lesson.claims(res))
