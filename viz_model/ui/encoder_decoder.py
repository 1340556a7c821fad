"""Streamlit glue for the Encoder-decoder page: the translator, the source box, step-by-step decoding and the tabs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
import torch

from viz_model import data
from viz_model import generate as G
from viz_model.figures import encoder_decoder as F
from viz_model.figures.generate import next_token_bars, top_candidates
from viz_model.lessons import encoder_decoder as lesson
from viz_model.seq2seq import decode_steps
from viz_model.tokenizer import BOS, EOS, PAD, display_token, encode
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY
from viz_model.ui.widgets import (
    check_line,
    example_text,
    layer_head,
    reveal_steps,
    row,
    specials_notice,
    unknown_notice,
    verdict,
)

SHIPPED = "translate"
# Sentences of the toy language (the lecture's first, two the model never trained on), then two lecture sentences
# outside it: the model translates them anyway, and the page says there is no reference.
EXAMPLES = ("The cat sat on the mat", "the old king thanked the children when they giggled",
            "the keys near the dog are on the table", "the happy girl waited by the river at night",
            "after the tall boy saw the girl , she smiled all day", "the little dog slept under the old table",
            "The bank by the river", "She gave him the book because he asked for it")
N_PAD = 2  # pads added to the source in the padding view (as a shorter sentence in a batch would get)


@dataclass(frozen=True)
class Source:
    text: str                    # the vocabulary entries the model reads (after truncation), joined by spaces
    ids: tuple[int, ...]         # source ids, <eos> last
    labels: tuple[str, ...]      # vocabulary entries ('<unk>' for unknown words), '<eos>' last
    reference: str | None        # the toy language's translation, None outside it
    alignment: tuple[int, ...] | None
    reason: str | None           # why the source is outside the toy language


@dataclass(frozen=True)
class Settings:
    strategy: G.Sampling
    seed: int
    step_mode: bool


@dataclass
class StepView:
    """What the page keeps of one decoding step: the chosen token, the top-N bars, the attention rows."""
    token_id: int
    token: str
    logprob: float
    labels: list[str]
    p: np.ndarray
    q: np.ndarray
    chosen: int
    cross: np.ndarray         # (L, H, T_src): the step's query over the source
    stop_reason: str | None


def device() -> str:
    return st.session_state.get(DEVICE_KEY, "auto")


def translator():
    """The shipped translator (or one the student trained on the translation task); stops when there is none."""
    entries = [e for e in available_models(("seq2seq",)) if e.path]
    if not entries:
        st.error("The shipped translation model is missing: there is no `assets/models/translate.safetensors` "
                 "(with its `.json`). Build it with `python scripts/build_assets.py translate`, or train one on the "
                 "Train page (task “translation (encoder-decoder)”) and come back.")
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
    guided = lesson.guided_of(ckpt.metadata, ckpt.model.config)
    if guided is not None:
        weight = lesson.guide_weight(ckpt.metadata)
        st.info(f"In this model head L{guided[0]}·H{guided[1]} was **guided** toward the known alignment while it "
                f"trained: an extra loss (weight {weight:g}) on -log(its attention on the aligned source word), as "
                "Garg et al. (2019) do to read alignments off a translator. Its alignment is taught; every other "
                "head found its own way. Nothing in the translation loss asks a head to align.")
    return ckpt


def source_input(ckpt) -> Source:
    """Example picker + box; long text is cut to the model's source length, unknown words become <unk>."""
    tok, limit = ckpt.tokenizer, ckpt.model.config.max_len - 1  # the source keeps room for its <eos>
    text = example_text("ed_text", "ed_example", list(EXAMPLES), EXAMPLES[0], "Source sentence (English)",
                        picker="Example", help="Any text: sentences of the toy language get a reference translation.")
    enc = encode(tok, text, max_len=limit)
    if not enc.ids:
        st.warning("Type a sentence to translate (the box is empty or holds only spaces).")
        st.stop()  # the settings below keep their values (persist_state)
    if enc.truncated:
        st.info(f"Your text has {enc.n_tokens_total} words; this model reads at most {limit} (plus `<eos>`), so "
                f"only the first {limit} are translated.")
    # Typed text is literal (tokenizer.encode): a typed <pad>, <bos>, <eos> or <mask> is plain text, here words the
    # model never saw; the page adds the one <eos> itself.
    specials_notice(ckpt, enc.literal)
    ids, pieces, unknown = list(enc.ids), list(enc.pieces), enc.unknown
    if unknown:
        unknown_notice(unknown, verb="are read as", offer_english=False)
    kept = " ".join(pieces)  # the words as the model reads them (lower case, <unk>): re-encodes to the same ids
    try:  # the words as typed, so that a refusal names the word ("'zebra' is not a word of the toy language")
        reference, alignment = data.reference_translation(" ".join(enc.tokens))
        reason = None
    except ValueError as e:
        reference, alignment, reason = None, None, str(e)
    return Source(kept, (*ids, tok.token_to_id(EOS)), (*pieces, EOS), reference,
                  None if alignment is None else tuple(alignment), reason)


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
    """Every decoding step of this setting (encoder once, cross K/V reused, decoder KV cache), cached."""
    def compute() -> list[StepView]:
        tok, views = ckpt.tokenizer, []
        for d in decode_steps(ckpt.model, list(src.ids), strategy=s.strategy, seed=s.seed,
                                     max_new_tokens=ckpt.model.config.max_len, tokenizer=tok,
                                     bos_id=tok.token_to_id(BOS), eos_id=tok.token_to_id(EOS)):
            g = d.step
            top = top_candidates(g.probs, g.filtered_probs, g.token_id, 10)
            views.append(StepView(g.token_id, g.token, g.logprob, [display_token(tok, int(i)) for i in top],
                                  g.probs[top].numpy(), g.filtered_probs[top].numpy(),
                                  int(np.nonzero(top == g.token_id)[0][0]), d.cross_attention.numpy(),
                                  g.stop_reason))
        return views
    with torch.no_grad():
        return cached("ed_run", input_key(model_id(ckpt), src.ids, s.strategy, s.seed), compute)


def visible_steps(views: list[StepView], src: Source, s: Settings) -> list[StepView]:
    """Step mode: the first word at once, one more per click (see widgets.reveal_steps); run mode: all of them."""
    return views[:reveal_steps("ed", (src.ids, s), len(views), "word")] if s.step_mode else views


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
        c2.caption(lesson.training_membership(src.text, ckpt.metadata).caption)
        c2.caption(_shape_caption(ckpt, src.text))
    if done and steps[-1].stop_reason != "eos":
        st.warning(f"Stopped: {G.stop_message(steps[-1].stop_reason, max_len)}")
    if done and src.reference is not None:
        same = " ".join(words) == src.reference
        check_line(same, "The translation equals the reference word for word." if same else
                   "The translation differs from the reference.")


def _shape_caption(ckpt, text: str) -> str:
    """Whether the sentence's skeleton was in training (the replay is cached per model: a few seconds once)."""
    return cached("ed_shape", input_key(model_id(ckpt), text),
                  lambda: lesson.shape_membership(text, ckpt.metadata).caption)


def decoder_input(ckpt, steps: list[StepView]) -> tuple[list[int], list[str], list[str]]:
    """(ids, tokens, row labels) of <bos> + the chosen words (the last one too while decoding goes on): row j is
    the query that chose word j + 1, labelled 'input → chosen' ('?' for the word not chosen yet)."""
    tok = ckpt.tokenizer
    fed = steps[:-1] if steps and steps[-1].stop_reason else steps
    ids, tokens = [tok.token_to_id(BOS), *(v.token_id for v in fed)], [BOS, *(v.token for v in fed)]
    produced = [v.token for v in steps] + ["?"] * (len(ids) - len(steps))
    return ids, tokens, [f"{t} → {p}" for t, p in zip(tokens, produced)]


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
    tgt_ids, fed, tgt_labels = decoder_input(ckpt, steps)
    run = traced(ckpt, src.ids, tuple(tgt_ids), pad)
    src_labels = [*src.labels, *[PAD] * pad]
    enc_layer = min(layer, cfg.n_encoder_layers - 1)
    (ep, ea), (dp, da), (cp, ca) = run["encoder"], run["decoder"], run["cross"]
    Ts, Tt = len(src_labels), len(tgt_labels)
    panels = [(f"encoder self: {Ts} × {Ts}, padding only (both directions)", ep[enc_layer, head], ea, src_labels,
               src_labels),
              (f"decoder self: {Tt} × {Tt}, causal", dp[layer, head], da, tgt_labels, fed),
              (f"cross: {Tt} × {Ts}, queries from the decoder, keys/values from the encoder", cp[layer, head], ca,
               tgt_labels, src_labels)]
    fig = cached("ed_three", (input_key(model_id(ckpt), src.ids, tuple(tgt_ids), tuple(src.labels), tuple(fed),
                                        tuple(tgt_labels)), pad, layer, head),
                 lambda: F.three_attentions(panels, title=f"Encoder layer {enc_layer}, decoder layer {layer}, head "
                                                          f"{head}"))
    show(fig, key="ed_three_chart", name=f"three_attentions_L{layer}_H{head}")
    st.caption("Grey × = masked (−∞ before the softmax, weight exactly 0). The encoder reads the whole source both "
               "ways; the decoder reads only the words it has written; cross-attention lets every target position "
               "read every real source word. Row labels: the decoder's input → the word that row chose (? = next).")
    _three_checks(ckpt, src, steps, run, pad)


def _three_checks(ckpt, src: Source, steps: list[StepView], run: dict, pad: int) -> None:
    (cp, ca), (dp, da) = run["cross"], run["decoder"]
    real = len(src.ids)
    verdict(float(np.abs(cp[..., :real].sum(-1) - 1).max()), 1e-5,
            f"Every cross-attention row sums to 1 over the {real} real source tokens")
    future = np.triu(np.ones(da.shape, dtype=bool), 1)  # (T_tgt, T_tgt): key after the query
    zero = bool((dp[..., future] == 0).all()) and bool((cp[..., real:] == 0).all())
    masks_ok = bool((da == ~future).all()) and bool(ca[:, :real].all()) and not bool(ca[:, real:].any())
    check_line(zero and masks_ok,
               "Future target keys and the padded source keys get weight exactly 0.0" if pad else
               "Future target keys get weight exactly 0.0 (causal); no source key is masked (there is no padding)")
    if steps:
        rows = np.stack([v.cross for v in steps], axis=2)  # (L, H, n, T_src) from the step-by-step decoding
        verdict(float(np.abs(rows - cp[:, :, : len(steps), :real]).max()), 1e-5,
                f"The {len(steps)} rows decoded one word at a time (encoder once, caches) equal this one pass "
                "over the whole output")
    if pad:
        plain = traced(ckpt, src.ids, tuple(decoder_input(ckpt, steps)[0]), 0)["cross"][0]
        # 1e-5 like the other float32 checks: a padded pass sums over more (zero-weight) keys in another order, and
        # its rounding differs by up to ~1e-6 after two layers (6.6e-7 on two threads, above 1e-6 on one)
        verdict(float(np.abs(plain - cp[..., :real]).max()), 1e-5,
                f"Adding {pad} pads changes nothing the real tokens see")


def crossings(src: Source, target: list[str]) -> list[str]:
    """Where the alignment is not the identity: a word moved before another, or one source word becoming two."""
    a, out = src.alignment or (), []
    for j in range(1, len(a)):
        if a[j] < a[j - 1]:
            out.append(f"“{target[j]}” (source word {a[j]} “{src.labels[a[j]]}”) comes after “{target[j - 1]}” "
                       f"(source word {a[j - 1]} “{src.labels[a[j - 1]]}”)")
        elif a[j] == a[j - 1]:
            out.append(f"“{src.labels[a[j]]}” becomes two words: “{target[j - 1]} {target[j]}”")
    return out


def _best_head(ckpt, acc: np.ndarray) -> tuple[int, int]:
    best = (ckpt.metadata or {}).get("best_alignment_head")
    if best and best.get("layer", 99) < acc.shape[0] and best.get("head", 99) < acc.shape[1]:
        return int(best["layer"]), int(best["head"])
    return lesson.best_head(acc)


@section("the alignment view")  # its layer/head (or step) pickers rerun only this part of the page
def alignment(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """One head's cross-attention with the known alignment on top, and the alignment accuracy of every head."""
    if src.reference is None:
        st.info("This source is not in the toy language, so there is no known alignment to compare with. Below: "
                "the cross-attention of the model's own translation.")
        layer, head = _head_picker(ckpt.model.config, "ed_align")
        ids, _, labels = decoder_input(ckpt, steps)
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
    layer, head = _head_picker(ckpt.model.config, "ed_align", _best_head(ckpt, acc), str(ckpt.path))
    n = len(src.alignment)
    hits = int(round(acc[layer, head] * n))
    show(F.alignment_map(tf.cross_attention[layer, head].numpy(), src.labels, tf.target_tokens, src.alignment,
                         title=f"Cross-attention, layer {layer}, head {head}: □ known alignment, • the row's peak"),
         key="ed_align_chart", name=f"alignment_L{layer}_H{head}")
    copies = lesson.alignment_accuracy(tf.cross_attention, list(src.alignment), list(src.ids)).numpy()  # (L, H)
    copy_hits = int(round(copies[layer, head] * n))
    st.markdown(f"Rows are the reference words fed to the decoder (teacher forcing, as the held-out score is "
                f"measured). Head L{layer}·H{head} peaks on the aligned source word for **{hits} of {n}** target "
                f"words (**{acc[layer, head]:.0%}**)"
                + (f"; counting a peak on an identical copy of that word (another “the”) as aligned, **{copy_hits} "
                   f"of {n}** (**{copies[layer, head]:.0%}**)." if copy_hits != hits else
                   ", the same counting a peak on an identical copy of the word as aligned."))
    guided = lesson.guided_of(ckpt.metadata, ckpt.model.config)
    if guided is not None:
        u_layer, u_head = lesson.best_head(acc, exclude=guided)
        st.markdown(f"Head L{guided[0]}·H{guided[1]} was guided toward this alignment in training. The best head "
                    f"that was not: L{u_layer}·H{u_head}, **{acc[u_layer, u_head]:.0%}** on this sentence.")
    else:
        st.caption("No head of this translator was told to align: any alignment here, it found on its own while "
                   "learning to translate. Where the decoder can tell the next word from what it has already "
                   "written (the “ka” after a plural noun), no head needs to look at its source word.")
    moves = crossings(src, tf.target_tokens)
    if moves:
        st.markdown("Where the alignment leaves the diagonal:\n" + "\n".join(f"- {m}" for m in moves))
    panels = {"this sentence": acc}
    held = (ckpt.metadata or {}).get("alignment_accuracy")
    if held is not None and np.shape(held) == acc.shape:
        panels["held-out sentences (metadata)"] = np.asarray(held, dtype=float)
    show(F.head_accuracy(panels, title="Alignment accuracy per head: argmax over the source = the aligned word",
                         guided=guided), key="ed_head_accuracy", name="alignment_accuracy")


def _shapes(ckpt, src: Source, steps: list[StepView]):
    """The tensors decoding keeps, measured on this source: encoder output, cross K/V, the decoder's cache."""
    model, cfg = ckpt.model, ckpt.model.config
    with torch.no_grad():
        state = model.encode(torch.tensor([src.ids], device=model.device))
    k, v = state.cross_kv[0]
    t_tgt = len(decoder_input(ckpt, steps)[0])
    rows = [("encoder output (memory)", "T_src × d_model", tuple(state.memory.shape[1:]), "once per source"),
            ("cross-attention K, each decoder layer", "H × T_src × d_k", tuple(k.shape[1:]), "once per source"),
            ("cross-attention V, each decoder layer", "H × T_src × d_k", tuple(v.shape[1:]), "once per source"),
            ("decoder self-attention K and V cache, each layer", "H × T_tgt × d_k", (cfg.n_heads, t_tgt, cfg.d_k),
             "one row more per step")]
    return pd.DataFrame([{"tensor": a, "shape": b, "here": " × ".join(map(str, c)), "computed": d}
                         for a, b, c, d in rows]), len(state.cross_kv)


def _timing(ckpt, src: Source, attempt: int) -> lesson.DecodeTiming:
    """Best of three of lesson.decode_timing (a shared server is noisy), cached per source and attempt."""
    def compute():
        runs = [lesson.decode_timing(ckpt.model, ckpt.tokenizer, src.text, ckpt.model.config.max_len)
                for _ in range(3)]
        best = min(runs, key=lambda r: r.seconds_reuse)
        return lesson.DecodeTiming(best.tokens, best.seconds_reuse, min(r.seconds_reencode for r in runs),
                                   all(r.same_tokens for r in runs), best.cross_kv_shape)
    return cached("ed_timing", input_key(model_id(ckpt), src.ids, attempt), compute)


def reuse(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """The encoder runs once per source; each decoder layer's cross K/V is projected once and read every step."""
    table, n_layers = _shapes(ckpt, src, steps)
    st.markdown(f"The source never changes while the translation is written, so the encoder runs **once** and each "
                f"of the {n_layers} decoder layers projects its cross-attention K and V **once**. Every step then "
                "computes only the new word's query (and its own K, V for the decoder's cache).")
    st.table(table)
    attempt = st.session_state.get("ed_timing_attempt", 0)
    if st.button("Measure again", key="ed_timing_again"):
        attempt = st.session_state["ed_timing_attempt"] = attempt + 1
    t = _timing(ckpt, src, attempt)
    show(F.decode_timing_bars(t.tokens, t.seconds_reuse, t.seconds_reencode,
                              title=f"Greedy decoding of {t.tokens} target tokens, measured on this server"),
         key="ed_timing_chart", name="decode_timing")
    check_line(t.same_tokens, f"Both ways choose the same {t.tokens} tokens")
    note = (" Here the saving is within the per-step overhead and the timing noise of a shared server: this model "
            "and sentence are tiny." if t.speedup < 1.2 else "")
    st.caption(f"With reuse {1000 * t.seconds_reuse:.1f} ms, re-encoding the source at every step "
               f"{1000 * t.seconds_reencode:.1f} ms: {t.speedup:.1f}× (best of 3, tracing off).{note} The work "
               "saved grows with the source length, the number of target words and the model's size; "
               "`bench/bench_seq2seq.py` measures 16 and 64 target tokens.")


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
    st.caption(f"Chosen: `{v.token}` with p = {v.p[v.chosen]:.3f} (log p = {v.logprob:.3f}).")


def _heldout_run(ckpt, n: int) -> dict:
    return cached("ed_heldout", input_key(model_id(ckpt), n),
                  lambda: lesson.heldout_metrics(ckpt.model, ckpt.tokenizer, n))


def heldout(ckpt, src: Source, steps: list[StepView], s: Settings) -> None:
    """The metadata's held-out scores, and the same measured again on this server on request."""
    meta = ckpt.metadata or {}
    n = int(meta.get("n_sentences", 400))
    guided = lesson.guided_of(meta, ckpt.model.config)
    if "exact_match" in meta:
        best = meta.get("best_alignment_head", {})
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Exact match (metadata)", f"{meta['exact_match']:.1%}", help="greedy translation = reference")
        c2.metric("Best head's alignment (metadata)", f"{best.get('accuracy', float('nan')):.1%}",
                  help=f"layer {best.get('layer')}, head {best.get('head')}"
                       + (" (the guided head)" if guided == (best.get("layer"), best.get("head")) else ""))
        unguided = meta.get("best_unguided_head")
        if unguided:
            c3.metric("Best head not guided (metadata)", f"{unguided['accuracy']:.1%}",
                      help=f"layer {unguided['layer']}, head {unguided['head']}: it found its own way")
        c4.metric("Held-out sentences", n)
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
    check_line(live["exact_match"] >= 0.95, f"Exact match {live['exact_match']:.1%} (the bar: at least 95 %)")
    taught = " (guided in training)" if guided == (best["layer"], best["head"]) else ""
    check_line(best["accuracy"] >= 0.80, f"Layer {best['layer']}, head {best['head']}{taught} aligns "
               f"{best['accuracy']:.1%} of target words (the bar: at least 80 %)")
    acc = np.asarray(live["alignment_accuracy"])
    if guided is not None:
        u_layer, u_head = lesson.best_head(acc, exclude=guided)
        st.markdown(f"The best head that was not guided: layer {u_layer}, head {u_head}, "
                    f"**{acc[u_layer, u_head]:.1%}**.")
    show(F.head_accuracy({f"{n} held-out sentences, measured now": acc}, title="Alignment accuracy per head",
                         guided=guided), key="ed_heldout_heads", name="heldout_alignment")


def structural_table(structural: dict) -> pd.DataFrame:
    """One row per structural split of the metadata: sentences, exact match, the best head's alignment."""
    rows = []
    for split, what in lesson.STRUCTURAL_SPLITS.items():
        m = structural.get(split)
        if m:
            b = m["best_head"]
            rows.append({"sentences": what, "n": m["n_sentences"], "exact match": f"{m['exact_match']:.1%}",
                         "head": f"L{b['layer']}·H{b['head']}", "alignment": f"{b['alignment']:.1%}",
                         "copy-aware alignment": f"{b['copy_aware_alignment']:.1%}"})
    return pd.DataFrame(rows)


def by_class_table(structural: dict) -> pd.DataFrame:
    """The best head's copy-aware alignment per word class, one column per structural split."""
    cols = {split: {c: f"{a:.0%} of {k}" for c, (a, k) in structural[split]["best_head_by_class"].items()}
            for split in lesson.STRUCTURAL_SPLITS if split in structural}
    return pd.DataFrame(cols).rename(columns=lambda sp: f"{sp} skeletons").fillna("–")


def structural(ckpt, guided) -> None:
    """Does it know the grammar or only the shapes it saw? The metadata's scores per structural split."""
    shapes = (ckpt.metadata or {}).get("structural")
    if not shapes:
        return
    st.markdown("**Seen and unseen sentence shapes.** A sentence's *skeleton* is its word classes (DET ADJ NOUN "
                "VERB …). Some skeletons were kept out of training altogether; a translator that learnt the "
                "grammar translates them as well as new sentences of shapes it saw.")
    st.table(structural_table(shapes))
    unseen = shapes.get("unseen", {})
    if unseen:
        em, al = unseen["exact_match"], unseen["best_head"]["copy_aware_alignment"]
        check_line(em >= 0.95, f"Exact match on unseen skeletons {em:.1%} (the bar: at least 95 %)")
        who = "best head not guided" if guided is not None else "best head"
        check_line(al >= 0.80, f"The {who}'s copy-aware alignment on unseen skeletons {al:.1%} (the bar: at least "
                   "80 %)")
    st.markdown("Where that head aligns, per word class (copy-aware: a peak on another “the” counts):")
    st.table(by_class_table(shapes))


TABS = {"Three attentions": three_attentions, "Alignment": alignment, "Encoder once, K/V reused": reuse,
        "Next-word distribution": next_token, "Held-out scores": heldout}
