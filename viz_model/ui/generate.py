"""Streamlit glue for the Generate page: controls, step state, memoised runs and the side sections."""

from __future__ import annotations

import time
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from viz_model import generate as G
from viz_model.figures import generate as F
from viz_model.lecture import PROMPTS
from viz_model.lessons import generate as lesson
from viz_model.lessons.common import ROW_SUM_TOL, StepView
from viz_model.lessons.generate import Settings
from viz_model.model_text import end_token, is_folder_model, md_token, sequence_texts, token_texts
from viz_model.tokenizer import Encoded
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id, shared_results
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.widgets import (
    FOLDER_VIEW_TOKENS,
    answer_line,
    encode_text,
    example_text,
    layer_head,
    reveal_steps,
    row,
    show_check,
    text_notes,
)

MAX_NEW = 128          # new tokens per run, whatever the context (bounds the work of one click)
MAX_CONTEXT_RUN = 512  # the Context limit tab generates to the end of the context only up to this length
VIEW_STEP = "generate_view_step"  # widgets.reveal_steps("generate", ...) moves it


def end_name(ckpt) -> str:
    """The model's own end token as text: "<eos>", "<|endoftext|>", "</s>"... ("the end token" if it has none)."""
    end = end_token(ckpt)
    return end[1] if end is not None else "the end token"


def prompt_input(ckpt) -> Encoded:
    """Example picker + text box; the prompt starts with the model's start token where it was trained so."""
    folder, bos = is_folder_model(ckpt), lesson.prompt_bos(ckpt)
    limit = min(ckpt.model.config.max_len - 1, FOLDER_VIEW_TOKENS) if folder else ckpt.model.config.max_len - 1
    start = encode_text(ckpt, "", bos=True).tokens[:1] if bos else []
    note = f" Its start token {md_token(start[0])} is put in front, as in training." if start else ""
    text = example_text("generate_text", "generate_example", PROMPTS, PROMPTS[0], "Prompt", picker="Lecture example",
                        help="The model continues this text." + note)
    enc = encode_text(ckpt, text, max_len=limit, bos=bos)
    text_notes(enc, cut=lesson.truncation_note(enc.n_tokens_total, limit, folder), min_ids=int(bos),
               empty="Type a prompt (at least one word) for the model to continue.", unknown=not folder)
    return enc


def controls(cfg, vocab: int, end: str = "<eos>") -> Settings:
    line = row()
    kind = line.radio("Strategy", ["greedy", "sampling"], horizontal=True, key="generate_kind", **share.URL,
                      help="Greedy always takes the most probable token; sampling draws from the distribution.")
    off = kind == "greedy"
    temperature = line.slider("Temperature", 0.05, 3.0, 1.0, 0.05, key="generate_temperature", **share.URL,
                              disabled=off, help="Divides the logits: < 1 sharpens the distribution, > 1 flattens it.")
    c3, c4 = line.container(), line.container()  # each a box and its slider, one above the other
    use_k = c3.checkbox("top-k", key="generate_use_k", **share.URL, disabled=off)
    share.valid("generate_k", range(1, max(2, min(vocab, 100)) + 1), 5)  # the bounds follow the model
    share.valid("generate_max_new", range(1, min(MAX_NEW, cfg.max_len - 1) + 1), min(12, cfg.max_len - 1))
    k = c3.slider("k", 1, max(2, min(vocab, 100)), 5, key="generate_k", **share.URL, disabled=off or not use_k)
    use_p = c4.checkbox("top-p (nucleus)", key="generate_use_p", **share.URL, disabled=off)
    p = c4.slider("p", 0.05, 1.0, 0.9, 0.05, key="generate_p", **share.URL, disabled=off or not use_p)
    line = row()
    step_mode = line.radio("Mode", ["step", "run"], horizontal=True, key="generate_mode", **share.URL,
                           help="step: one token per click; run: the whole continuation at once.") == "step"
    max_new = line.slider("Max new tokens", 1, min(MAX_NEW, cfg.max_len - 1), min(12, cfg.max_len - 1),
                          key="generate_max_new", **share.URL)
    seed = int(line.number_input("Seed", 0, 2**31 - 1, 0, key="generate_seed", **share.URL))
    stop_at_eos = line.checkbox(f"Stop at {end}", True, key="generate_stop_eos", **share.URL,
                                help="Stop when the model writes its end token.")
    strategy = G.GREEDY if off else G.Sampling(temperature, k if use_k else None, p if use_p else None)
    return Settings(strategy, max_new, stop_at_eos, seed, step_mode)


def refuse_ended_prompt(ckpt, ids: list[int]) -> None:
    """Stop the page when the prompt holds one of the model's end ids after its first token: the text ends there,
    so there is nothing to continue. Typed text is literal (encode_text), so only a model whose end token is an
    ordinary vocabulary entry gets here."""
    at = lesson.end_position(ids, lesson.end_ids(ckpt))
    if at is not None:
        st.warning(lesson.ended_prompt(end_name(ckpt), at))
        st.stop()


def full_run(ckpt, ids: list[int], s: Settings) -> list[StepView]:
    """All steps of this setting; step mode reveals them one per click (the same seed gives the same tokens)."""
    key = input_key(model_id(ckpt), tuple(ids), s.strategy, s.max_new, s.run_seed, s.stop_at_eos)
    return cached("generate_run", key, lambda: lesson.step_views(
        ckpt.model, ids, s, lesson.eos_id(ckpt), lesson.end_ids(ckpt), partial(token_texts, ckpt), ckpt.tokenizer,
        sequence=partial(sequence_texts, ckpt)))


@share.in_slot  # step mode's row of buttons comes and goes
def visible_steps(views: list[StepView], ids: list[int], s: Settings) -> list[StepView]:
    """Step mode: the first token at once, one more per click (see widgets.reveal_steps); run mode: all of them."""
    sig = (tuple(ids), s.strategy, s.max_new, s.run_seed, s.stop_at_eos)  # greedy: a new seed starts nothing anew
    return views[:reveal_steps("generate", sig, len(views))] if s.step_mode else views


def end_logprob(ckpt, seq: list[int]) -> float | None:
    """log p(<eos> | whole sequence): the end factor of the lecture's product (None past the context, or for a
    model without an end token)."""
    if len(seq) > ckpt.model.config.max_len or end_token(ckpt) is None:
        return None
    return cached("generate_end", (input_key(model_id(ckpt), tuple(seq)),),  # one forward per exact sequence
                  lambda: lesson.end_logprob(ckpt.model, seq, lesson.eos_id(ckpt)))


def running_table(views: list[StepView]) -> pd.DataFrame:
    """One row per generated token: the factors of p(w1..wL | c). The end token is a row only where the model
    wrote it (the run stopped on it), never for a run cut off at its length or the context."""
    return F.sequence_table([v.token for v in views], [v.logprob for v in views], [v.position for v in views],
                            lesson.end_notes(views), product_text=G.sci_from_log)


def sequence_sentence(ckpt, enc: Encoded, views: list[StepView]) -> str:
    """G.sequence_sentence for these steps; a text cut off before its end token also says p(end | text), not
    counted as a factor."""
    reason = views[-1].stop_reason if views else None
    end = None if reason == "eos" else end_logprob(ckpt, enc.ids + [v.token_id for v in views])
    return G.sequence_sentence([v.logprob for v in views], reason, end_name(ckpt), end)


@section("the next-token distribution")  # the step slider reruns only this part of the page
def distribution(steps: list[StepView], settings: Settings) -> None:
    """One step's next-token probabilities before and after the strategy (a slider picks the step)."""
    pick = len(steps) - 1
    if len(steps) > 1:
        share.valid(VIEW_STEP, range(1, len(steps) + 1), len(steps))
        pick = st.slider("Show step", 1, len(steps), len(steps), key=VIEW_STEP, **share.URL) - 1
    v = steps[pick]
    answer_line("generate_step_sentence", lesson.step_sentence(v, pick, settings.strategy))  # #39: hidden in class
    key = input_key(tuple(v.labels), np.asarray(v.p).tobytes(), np.asarray(v.q).tobytes(), v.chosen)
    fig = cached("generate_bars", (key, settings.strategy), lambda: F.next_token_bars(
        v.labels, v.p, v.q, v.chosen, strategy=settings.strategy.describe()))
    show(fig, key="generate_bars", name=f"next_token_step{pick + 1}")


@section("the attention of each step")  # the Layer and Head pickers rerun only this part of the page
def attention_of_steps(cfg, prompt_tokens: list[str], n_prompt: int, steps: list[StepView]) -> None:
    """One head's attention row of every step, the causal triangle growing, with the row-sum check."""
    layer, head = layer_head("generate", cfg.n_layers, cfg.n_heads)
    labels = [*prompt_tokens, *[s.token for s in steps]]
    rows = [np.asarray(s.attention[layer, head]) for s in steps]  # (position,) each: the figure's exact input
    key = (input_key(tuple(r.tobytes() for r in rows), tuple(labels), n_prompt), layer, head)
    fig = cached("generate_attention", key, lambda: F.attention_rows(
        rows, labels[:steps[-1].position], [s.position - 1 for s in steps],
        [s.token for s in steps], n_prompt=n_prompt, title=f"Layer {layer} · head {head}: attention of each step"))
    show(fig, key="generate_attention", name=f"generation_attention_L{layer}_H{head}")
    show_check(lesson.row_sum_check(steps, layer, head, ROW_SUM_TOL))


def kv_cache(ckpt, ids: list[int], s: Settings) -> None:
    """Same tokens and logits with and without the cache; per-token latency as the sequence grows. Timed only on its
    button (as on Cost) and kept per prompt and setting for everyone: a setting change never re-times."""
    room = ckpt.model.config.max_len - len(ids)
    n, store = min(room, MAX_NEW), shared_results("generate_kv_cache", 32)  # the newest 32 measurements
    st.markdown(lesson.cache_intro(n, room))
    key = input_key(model_id(ckpt), tuple(ids), s.strategy, s.run_seed, n)
    found = store.get(key)
    if st.button("Measure again" if found else "Measure on this server", key="generate_kv_go", type="primary",
                 icon=":material/speed:"):
        with store.turn(lesson.CACHE_BUSY) as mine, st.spinner(lesson.cache_spinner(n)):
            if mine:
                store.put(key, (lesson.cache_run(ckpt.model, ids, s, n, lesson.eos_id(ckpt), ckpt.tokenizer),
                                time.time()))
        if mine:
            st.rerun()  # draw the stored result, the button now saying "Measure again"
    if found is None:
        st.caption(lesson.cache_before(n))
        return
    run, when = found
    show_check(run.claim)
    lengths = list(range(len(ids), len(ids) + len(run.ms_on)))
    fig = cached("generate_latency", (key, when), lambda: F.latency_chart(
        lengths, run.ms_on, lengths, run.ms_off, title="Time per new token as the sequence grows"))
    show(fig, key="generate_latency", name="kv_cache_latency")
    st.caption(f"{run.caption(ckpt.model.config.max_len)} {lesson.cache_measured(when)}")


def strategy_comparison(ckpt, ids: list[int], s: Settings) -> None:
    st.markdown(lesson.COMPARE_INTRO)
    n_samples = st.slider("Samples per strategy", 1, 5, 3, key="generate_samples", **share.URL)
    text = partial(lesson.sample_text, tokenizer=ckpt.tokenizer, decode=is_folder_model(ckpt))
    key = input_key(model_id(ckpt), tuple(ids), s.max_new, s.seed, s.stop_at_eos, n_samples)
    samples, summary = map(pd.DataFrame, cached("generate_compare", key, lambda: lesson.compare_strategies(
        ckpt.model, ids, s, n_samples, lesson.eos_id(ckpt), text, ckpt.tokenizer)))
    st.dataframe(samples, hide_index=True, key="generate_samples_table",
                 column_config={"avg log p": st.column_config.NumberColumn(format="%.2f")})
    c1, c2 = st.columns([2, 3])
    c1.dataframe(summary, hide_index=True, key="generate_summary_table", column_config={
        c: st.column_config.NumberColumn(format="%.2f") for c in ("avg log p", "distinct-1", "distinct-2")})
    with c2:
        show(F.strategy_scatter(summary, title="Likely vs diverse"), key="generate_strategy_scatter",
             name="strategies", exports=False)
    st.caption(lesson.strategies_caption(n_samples))
    if n_samples == 1:
        st.caption(lesson.ONE_SAMPLE)


def teacher_forcing(ckpt, ids: list[int] | None = None, s: Settings | None = None) -> None:
    st.markdown(lesson.TF_INTRO)
    text = share.text(st, "Sentence", "please send the report", "generate_tf_text", 500)
    first = int(lesson.prompt_bos(ckpt))  # the start token, when the model reads one
    limit = ckpt.model.config.max_len - 2
    enc = encode_text(ckpt, text, max_len=min(limit, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt) else limit,
                      bos=bool(first))
    if len(enc.ids) < first + 2:
        st.warning("Type a sentence of at least two words: the first is the context, the rest is scored.")
        return
    most = len(enc.ids) - first - 1
    share.valid("generate_tf_k", range(1, most + 1), 1)  # the sentence may have become shorter
    k = 1 if most == 1 else st.slider("Context words given to the model", 1, most, 1, key="generate_tf_k", **share.URL)
    end = [lesson.eos_id(ckpt)] if end_token(ckpt) is not None else []
    context, truth = enc.ids[:first + k], [*enc.ids[first + k:], *end]
    run = cached("generate_teacher_forcing", (input_key(model_id(ckpt), context, truth),),  # 1 + 2n passes
                 lambda: lesson.teacher_forcing(ckpt.model, context, truth, ckpt.tokenizer, lesson.eos_id(ckpt)),
                 model_pass=True)
    st.dataframe(pd.DataFrame(lesson.forcing_table(run, first + k, truth, partial(token_texts, ckpt))), hide_index=True,
                 key="generate_tf_table")
    show_check(run.check)
    st.caption(lesson.forcing_caption(run, end_name(ckpt)))


def context_window(ckpt, ids: list[int], s: Settings | None = None) -> None:
    max_len = ckpt.model.config.max_len
    st.markdown(lesson.context_intro(max_len))
    if max_len - len(ids) > MAX_CONTEXT_RUN:
        st.info(lesson.too_long_to_run(max_len - len(ids), MAX_CONTEXT_RUN))
        return
    steps = cached("generate_context", input_key(model_id(ckpt), tuple(ids)),
                   lambda: lesson.context_run(ckpt.model, ids))
    st.info(lesson.context_sentence(steps, max_len, end_name(ckpt)))
    show_check(lesson.context_claim(steps, max_len))


def branches(ckpt, ids: list[int], s: Settings) -> None:
    """Two or three continuations side by side (temperature and seed each, in the link); a token forced at one step
    goes on with the KV cache, checked against a full recompute. The page's Max new tokens and end-token setting."""
    st.markdown(lesson.BRANCH_INTRO)
    n = st.radio("Branches", [2, 3], index=1, horizontal=True, key="generate_branch_n", **share.URL)
    cols, texts = st.columns(3), partial(token_texts, ckpt)
    picks = [(cols[i].slider(f"{name} temperature", 0.0, 3.0, t, 0.05, key=f"generate_branch_t{i}", **share.URL),
              int(cols[i].number_input(f"{name} seed", 0, 2**31 - 1, seed, key=f"generate_branch_seed{i}",
                                       **share.URL)))
             for i, (name, t, seed) in enumerate(zip(lesson.BRANCH_NAMES, lesson.BRANCH_TEMPERATURES,
                                                      lesson.BRANCH_SEEDS)) if i < n]
    key = input_key(model_id(ckpt), tuple(ids), tuple(picks), s.max_new, s.stop_at_eos)
    runs = cached("generate_branches", key, lambda: lesson.branch_runs(
        ckpt.model, ids, picks, s.max_new, s.stop_at_eos, lesson.eos_id(ckpt), texts), model_pass=True)
    answer_line("generate_branch_sentence", lesson.divergence_sentence(runs, len(ids), end_name(ckpt)))
    forced = force_token(ckpt, ids, s, runs, key)
    rows = [*runs, *([forced.branch] if forced else [])]
    fig = cached("generate_branch_grid", (key, forced and forced.branch.ids), lambda: F.branch_grid(
        [b.tokens for b in rows], [b.p for b in rows], [b.q for b in rows], [b.label for b in rows], start=len(ids),
        diverge=lesson.first_divergence([b.ids for b in runs]), forced=forced and (len(runs), forced.at),
        title="Branches · colour = the model's p"))
    show(fig, key="generate_branch_grid", name="branches")
    if forced:
        st.markdown(lesson.forced_sentence(forced, len(ids)))
        show_check(forced.check)


def force_token(ckpt, ids: list[int], s: Settings, runs: list, key: tuple):
    """Branch, step and token pickers (a token among that step's most probable); the forced run, or None."""
    c1, c2, c3 = st.columns([1, 1, 2])
    share.valid("generate_force_branch", range(len(runs)), 0)
    b = runs[c1.selectbox("Force in branch", range(len(runs)), format_func=lambda i: runs[i].name,
                          key="generate_force_branch")]
    share.valid("generate_force_at", range(len(b.ids)), 0)
    at = c2.selectbox("at new token", range(len(b.ids)), format_func=lambda i: f"{i + 1} (position {len(ids) + i})",
                      key="generate_force_at")
    top = {i: lesson.force_label(t, p) for i, t, p in b.top[at]}
    share.valid("generate_force_token", [-1, *top], -1)
    tok = c3.selectbox("the token", [-1, *top], format_func=lambda i: top.get(i, lesson.NO_FORCE),
                       key="generate_force_token", help="One of the model's most probable tokens at this step.")
    if tok == -1:
        return None
    return cached("generate_force", (key, b.name, at, tok), lambda: lesson.force(
        ckpt.model, ids, b, at, tok, s.max_new, s.stop_at_eos, lesson.eos_id(ckpt), partial(token_texts, ckpt)),
        model_pass=True)


TABS = {"KV cache": kv_cache, "Compare strategies": strategy_comparison,
        "Teacher forcing vs free running": teacher_forcing, "Context limit": context_window, "Branches": branches}
