"""Streamlit glue for the Encoder-decoder page: the translator, the source box, step-by-step decoding and the tabs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from viz_model import generate as G
from viz_model.checkpoint import SEQ2SEQ
from viz_model.figures import encoder_decoder as F
from viz_model.figures.next_token import next_token_bars
from viz_model.lessons import encoder_decoder as lesson
from viz_model.lessons.common import StepView
from viz_model.lessons.encoder_decoder import Source
from viz_model.model_text import md_token
from viz_model.tokenizer import EOS, PAD, encode
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY
from viz_model.ui.widgets import (
    example_text,
    layer_head,
    reveal_steps,
    row,
    show_check,
    show_checks,
    specials_notice,
    text_notes,
)

SHIPPED = lesson.TRANSLATOR
N_PAD = lesson.N_PAD  # the handout pads as the page does


@dataclass(frozen=True)
class Settings:
    strategy: G.Sampling
    seed: int
    step_mode: bool


def device() -> str:
    return st.session_state.get(DEVICE_KEY, "auto")


def translator():
    """The shipped translator (or one the student trained on the translation task); stops when there is none."""
    entries = [e for e in available_models((SEQ2SEQ,)) if e.path]
    if not entries:
        st.error(lesson.MISSING_TRANSLATOR)
        st.stop()
    keys = [e.key for e in entries]
    if SHIPPED not in keys:
        st.warning("The shipped translator `translate` is missing; this page uses another encoder-decoder.")
    if len(entries) > 1:
        key = share.select(st, "Encoder-decoder model", keys, "ed_model",
                           format_func={e.key: e.title for e in entries}.get)
    else:
        key = keys[0]
    ckpt = load_model(key, device())
    st.markdown(f":material/translate: {lesson.toy_language_text(ckpt.tokenizer)}")  # body text: 7:1 in presenter mode
    note = lesson.guide_note(ckpt.metadata, ckpt.model.config)
    if note is not None:
        st.info(note)
    return ckpt


def source_input(ckpt) -> Source:
    """Example picker + box; long text is cut to the model's source length, unknown words become <unk>."""
    tok, limit = ckpt.tokenizer, ckpt.model.config.max_len - 1  # the source keeps room for its <eos>
    text = example_text("ed_text", "ed_example", list(lesson.EXAMPLES), lesson.EXAMPLES[0], "Source sentence (English)",
                        picker="Sentence of the toy language",
                        help="Words of the toy grammar (any other is `<unk>`): its sentences get a reference.")
    enc = encode(tok, text, max_len=limit)
    # Typed text is literal (tokenizer.encode): a typed <pad>, <bos>, <eos> or <mask> is plain text, here words the
    # model never saw; the page adds the one <eos> itself.
    specials_notice(ckpt, enc.literal)
    text_notes(enc, cut=f"Your text has {enc.n_tokens_total} words; this model reads at most {limit} (plus `<eos>`), "
                        f"so only the first {limit} are translated.",
               empty="Type a sentence to translate (the box is empty or holds only spaces).", verb="are read as",
               offer_english=False)
    return lesson.source_of(tok, enc)


def controls() -> Settings:
    line = row()
    kind = line.radio("Strategy", ["greedy", "sampling"], horizontal=True, key="ed_kind", **share.URL,
                      help="Greedy takes the most probable word; sampling draws one (as on the Generate page).")
    temperature = line.slider("Temperature", 0.05, 3.0, 1.0, 0.05, key="ed_temperature", **share.URL,
                              disabled=kind == "greedy")
    step_mode = line.radio("Mode", ["step", "run"], horizontal=True, key="ed_mode", **share.URL,
                           help="step: one word per click; run: the whole translation at once.") == "step"
    seed = int(line.number_input("Seed", 0, 2**31 - 1, 0, key="ed_seed", **share.URL, disabled=kind == "greedy"))
    return Settings(G.GREEDY if kind == "greedy" else G.Sampling(temperature), seed, step_mode)


def full_run(ckpt, src: Source, s: Settings) -> list[StepView]:
    """Every decoding step of this setting (lesson.decode_views), cached."""
    return cached("ed_run", input_key(model_id(ckpt), src.ids, s.strategy, s.seed),
                  lambda: lesson.decode_views(ckpt.model, ckpt.tokenizer, src.ids, s.strategy, s.seed))


@share.in_slot  # step mode's row of buttons comes and goes
def visible_steps(views: list[StepView], src: Source, s: Settings) -> list[StepView]:
    """Step mode: the first word at once, one more per click (see widgets.reveal_steps); run mode: all of them."""
    return views[:reveal_steps("ed", (src.ids, s), len(views), "word")] if s.step_mode else views


@share.in_slot  # the stop note and the check come when the translation is done
def translation(ckpt, src: Source, steps: list[StepView], max_len: int) -> None:
    """The model's words so far beside the toy language's reference (or why there is none)."""
    words = [v.token for v in steps if v.token != EOS]
    done = bool(steps) and steps[-1].stop_reason is not None
    c1, c2 = st.columns(2)
    c1.markdown(f"**The model's translation** ({len(words)} word{'s' * (len(words) != 1)}"
                f"{', finished' if done else ''})")
    c1.code(" ".join(words) or " ", language=None, wrap_lines=True)
    c2.markdown("**Reference translation** (from the toy language's grammar)")
    if src.reference is None:
        c2.code("not in the toy language", language=None)
        c2.caption(f"{src.reason} The model translates it anyway: every word it was never taught is a guess.")
    else:
        c2.code(src.reference, language=None, wrap_lines=True)
        # was it (and its skeleton) in training? A model's first sentence replays its draws: seconds, once per server
        for caption in cached("ed_membership", (input_key(model_id(ckpt), src.text),), spinner=lesson.REPLAY_SPINNER,
                              build=lambda: tuple(m(src.text, ckpt.metadata).caption for m in (
                                  lesson.training_membership, lesson.shape_membership))):
            c2.caption(caption)
    if done and steps[-1].stop_reason != "eos":
        st.warning(f"Stopped: {G.stop_message(steps[-1].stop_reason, max_len)}")
    if done and src.reference is not None:
        show_check(lesson.translation_claim(words, src.reference))


def traced(ckpt, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], pad: int = 0) -> dict:
    """One traced pass (source + `pad` pads, decoder input): every layer's three attentions and their masks."""
    return cached("ed_trace", input_key(model_id(ckpt), src_ids, tgt_ids, pad),
                  lambda: lesson.three_attentions(ckpt.model, src_ids, tgt_ids, pad))


def _head_picker(cfg, prefix: str, default: tuple[int, int] = (0, 0), model: str | None = None) -> tuple[int, int]:
    """Layer and head selectors; `model` (a path): when the translator changes, start again from its default
    (e.g. its best or guided head), since the previous choice was made among another model's heads."""
    if model is not None:
        if st.session_state.get(f"{prefix}_model", model) != model:  # set, not popped: a popped key re-reads the URL
            st.session_state[f"{prefix}_layer"], st.session_state[f"{prefix}_head"] = map(int, default)
        st.session_state[f"{prefix}_model"] = model
    # The default is the widget's own (not a session_state value set before it): Streamlit leaves a widget's
    # default out of the link, so any other choice, layer 0 too, is written to the URL and a link wins (#26).
    return layer_head(prefix, cfg.n_layers, cfg.n_heads, default=(int(default[0]), int(default[1])),
                      layer_label="Decoder layer", width=200)


@section("the three attention kinds")  # its layer/head (or step) pickers rerun only this part of the page
def three_attentions(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """Encoder self (padding only), decoder self (causal), cross (padding only) for one layer and head."""
    cfg = ckpt.model.config
    layer, head = _head_picker(cfg, "ed_three")
    fits = len(src.ids) + N_PAD <= cfg.max_len
    pad = N_PAD if st.checkbox(f"Pad the source with {N_PAD} `<pad>` (as a shorter sentence in a batch is)",
                               key="ed_pad", **share.URL, disabled=not fits) and fits else 0
    tgt_ids, fed, tgt_labels = lesson.decoder_input(ckpt.tokenizer, steps)
    run = traced(ckpt, src.ids, tuple(tgt_ids), pad)
    panels, enc_layer = lesson.three_panels(run, layer, head, [*src.labels, *[PAD] * pad], tgt_labels, fed)
    figs = cached("ed_three", (input_key(model_id(ckpt), src.ids, tuple(tgt_ids), tuple(src.labels), tuple(fed),
                                         tuple(tgt_labels)), pad, layer, head),
                  lambda: F.three_attentions(panels, titles=lesson.three_titles(enc_layer, layer, head)))
    # Side by side in proportion to their cells; Streamlit stacks columns on a phone, each panel then full width
    for col, fig, part in zip(st.columns(F.panel_widths(panels), gap="small"), figs, F.THREE_PARTS):
        show(fig, key=f"ed_three_{part}", name=f"{part}_attention_L{layer}_H{head}", container=col)
    st.caption(lesson.THREE_CAPTION)
    plain = traced(ckpt, src.ids, tuple(tgt_ids), 0)["cross"][0] if pad else None
    show_checks(lesson.three_claims(run, len(src.ids), pad, steps, plain))


@section("the alignment view")  # its layer/head (or step) pickers rerun only this part of the page
def alignment(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """One head's cross-attention with the known alignment on top, and the alignment accuracy of every head."""
    if src.reference is None:
        st.info(lesson.NO_REFERENCE)
        layer, head = _head_picker(ckpt.model.config, "ed_align")
        ids, _, labels = lesson.decoder_input(ckpt.tokenizer, steps)
        cp = traced(ckpt, src.ids, tuple(ids), 0)["cross"][0]
        show(F.alignment_map(cp[layer, head], src.labels, labels, None, title=f"Cross-attention, layer {layer}, "
             f"head {head}: {len(labels)} × {len(src.labels)}"), key="ed_align_chart", name="cross_attention")
        return
    try:
        tf = cached("ed_teacher", input_key(model_id(ckpt), src.ids), lambda: lesson.teacher_forced(
            ckpt.model, ckpt.tokenizer, src.text))
    except ValueError as e:
        st.info(f"The reference cannot be fed to this model: {e}")
        return
    acc = lesson.alignment_accuracy(tf.cross_attention, list(src.alignment)).numpy()  # (L, H)
    layer, head = _head_picker(ckpt.model.config, "ed_align", lesson.shown_head(ckpt.metadata, acc), str(ckpt.path))
    show(F.alignment_map(tf.cross_attention[layer, head].numpy(), src.labels, tf.target_tokens, src.alignment,
                         title=f"Cross-attention, layer {layer}, head {head}: □ known alignment, • the row's peak"),
         key="ed_align_chart", name=f"alignment_L{layer}_H{head}")
    copies = lesson.alignment_accuracy(tf.cross_attention, list(src.alignment), list(src.ids)).numpy()  # (L, H)
    st.markdown(lesson.alignment_sentence(acc, copies, layer, head, len(src.alignment)))
    guided = lesson.guided_of(ckpt.metadata, ckpt.model.config)
    if guided is not None:
        st.markdown(lesson.guided_sentence(acc, guided))
    else:
        st.caption(lesson.NOT_GUIDED)
    moves = lesson.crossings(src.alignment, src.labels, tf.target_tokens)
    if moves:
        st.markdown("Where the alignment leaves the diagonal:\n" + "\n".join(f"- {m}" for m in moves))
    panels = lesson.accuracy_panels(acc, ckpt.metadata)
    show(F.head_accuracy(panels, title="Alignment accuracy per head: argmax over the source = the aligned word",
                         guided=guided), key="ed_head_accuracy", name="alignment_accuracy")


def _timing(ckpt, src: Source, attempt: int) -> lesson.DecodeTiming:
    """lesson.best_timing, cached per source and attempt ("Measure again" starts another)."""
    return cached("ed_timing", input_key(model_id(ckpt), src.ids, attempt),
                  lambda: lesson.best_timing(ckpt.model, ckpt.tokenizer, src.text))


def reuse(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """The encoder runs once per source; each decoder layer's cross K/V is projected once and read every step."""
    t_tgt = len(lesson.decoder_input(ckpt.tokenizer, steps)[0])
    rows, n_layers = cached("ed_shapes", input_key(model_id(ckpt), src.ids, t_tgt),
                            lambda: lesson.decoding_tensors(ckpt.model, src.ids, t_tgt))
    st.markdown(lesson.reuse_sentence(n_layers))
    st.table(pd.DataFrame(rows))
    attempt = st.session_state.get("ed_timing_attempt", 0)
    if st.button("Measure again", key="ed_timing_again"):
        attempt = st.session_state["ed_timing_attempt"] = attempt + 1
    t = _timing(ckpt, src, attempt)
    show(F.decode_timing_bars(t.tokens, t.seconds_reuse, t.seconds_reencode,
                              title=f"Greedy decoding of {t.tokens} target tokens, measured on this server"),
         key="ed_timing_chart", name="decode_timing")
    show_check(t.claim)
    st.caption(t.caption)


@section("the next-word view")  # its layer/head (or step) pickers rerun only this part of the page
def next_token(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """The decoder's distribution at one step, before and after the sampling filters (the Generate page's bars)."""
    if not steps:
        st.info("Decode at least one word (Next token) to see the distribution it was chosen from.")
        return
    pick = len(steps) - 1
    if len(steps) > 1:
        share.valid("ed_view_step", range(1, len(steps) + 1), len(steps))
        pick = st.slider("Step", 1, len(steps), len(steps), key="ed_view_step", **share.URL) - 1
    v = steps[pick]
    show(next_token_bars(v.labels, v.p, v.q, v.chosen, strategy=s.strategy.describe(),
                         title=f"Step {pick + 1}: p(next target word | source, words so far)"),
         key="ed_bars", name=f"next_word_step{pick + 1}")
    st.caption(f"Chosen: {md_token(v.token)} with p = {v.p[v.chosen]:.3f} (log p = {v.logprob:.3f}).")


def _heldout_run(ckpt, n: int) -> dict:
    return cached("ed_heldout", input_key(model_id(ckpt), n),
                  lambda: lesson.heldout_metrics(ckpt.model, ckpt.tokenizer, n))


def heldout(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """The metadata's held-out scores, and the same measured again on this server on request."""
    meta = ckpt.metadata or {}
    n = int(meta.get("n_sentences", 400))
    guided = lesson.guided_of(meta, ckpt.model.config)
    if "exact_match" in meta:
        for column, metric in zip(st.columns(4), lesson.metadata_metrics(meta, guided)):
            if metric is not None:
                column.metric(metric[0], metric[1], help=metric[2])
        structural(ckpt, guided)
    else:
        st.info("This model's metadata has no held-out scores (it was not built by the shipped recipe).")
    if st.button(f"Recompute on {n} held-out sentences", key="ed_heldout_go"):
        st.session_state["ed_heldout_on"] = True
    if not st.session_state.get("ed_heldout_on"):
        return
    with st.spinner("Translating the held-out sentences…"):
        live = _heldout_run(ckpt, n)
    best = live["best_alignment_head"]
    c1, c2, _ = st.columns(3)
    c1.metric("Exact match (now)", f"{live['exact_match']:.1%}")
    c2.metric("Best head's alignment (now)", f"{best['accuracy']:.1%}", help=f"L{best['layer']} H{best['head']}")
    show_checks(lesson.heldout_claims(live, guided))
    acc = np.asarray(live["alignment_accuracy"])
    if guided is not None:
        st.markdown(lesson.unguided_line(acc, guided))
    show(F.head_accuracy({f"{n} held-out sentences, measured now": acc}, title="Alignment accuracy per head",
                         guided=guided), key="ed_heldout_heads", name="heldout_alignment")


def structural(ckpt, guided) -> None:
    """Does it know the grammar or only the shapes it saw? The metadata's scores per structural split."""
    shapes = (ckpt.metadata or {}).get("structural")
    if not shapes:
        return
    st.markdown(lesson.SHAPES_INTRO)
    st.table(pd.DataFrame(lesson.structural_rows(shapes)))
    show_checks(lesson.structural_claims(shapes, guided))
    st.markdown("Where that head aligns, per word class (copy-aware: a peak on another “the” counts):")
    st.table(pd.DataFrame(lesson.by_class_columns(shapes)).fillna("–"))


TABS = {"Three attentions": three_attentions, "Alignment": alignment, "Encoder once, K/V reused": reuse,
        "Next-word distribution": next_token, "Held-out scores": heldout}
