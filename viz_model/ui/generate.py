"""Streamlit glue for the Generate page: controls, step state, memoised runs and the side sections."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
import torch

from viz_model import generate as G
from viz_model.figures import generate as F
from viz_model.lecture import PROMPTS
from viz_model.lessons import generate as lesson
from viz_model.tokenizer import Encoded
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.models import is_folder_model
from viz_model.ui.widgets import (
    FOLDER_VIEW_TOKENS,
    ROW_SUM_TOL,
    encode_text,
    end_token,
    example_text,
    layer_head,
    reveal_steps,
    row,
    show_check,
    token_texts,
    unknown_notice,
    uses_bos,
    verdict,
)

MAX_NEW = 128          # new tokens per run, whatever the context (bounds the work of one click)
MAX_CONTEXT_RUN = 512  # the Context limit tab generates to the end of the context only up to this length
TOP_N = 10             # bars in the next-token chart
TEMPERATURES = (0.5, 1.0, 1.5)
VIEW_STEP = "generate_view_step"  # widgets.reveal_steps("generate", ...) moves it


@dataclass(frozen=True)
class Settings:
    strategy: G.Sampling
    max_new: int
    stop_at_eos: bool
    seed: int
    step_mode: bool


@dataclass
class StepView:
    """What the page keeps of one GenStep: a few numbers and the top-N bars, not the full vocab vectors."""
    position: int
    token_id: int
    token: str
    logprob: float
    labels: list[str]
    p: np.ndarray
    q: np.ndarray
    chosen: int
    attention: np.ndarray  # (L, H, T)
    stop_reason: str | None


def prompt_bos(ckpt) -> bool:
    """The app's models continue '<bos> prompt' as they were trained; a model folder gets its own start token
    only where its tokenizer puts one in front (Llama yes, GPT-2 no)."""
    return uses_bos(ckpt) if is_folder_model(ckpt) else True


def end_name(ckpt) -> str:
    """The model's own end token as text: "<eos>", "<|endoftext|>", "</s>"... ("the end token" if it has none)."""
    end = end_token(ckpt)
    return end[1] if end is not None else "the end token"


def prompt_input(ckpt) -> Encoded:
    """Example picker + text box; the prompt starts with the model's start token where it was trained so."""
    folder, bos = is_folder_model(ckpt), prompt_bos(ckpt)
    limit = ckpt.model.config.max_len - 1
    limit = min(limit, FOLDER_VIEW_TOKENS) if folder else limit
    start = encode_text(ckpt, "", bos=True).tokens[:1] if bos else []
    note = f" Its start token {start[0]} is put in front, as in training." if start else ""
    text = example_text("generate_text", "generate_example", PROMPTS, PROMPTS[0], "Prompt", picker="Lecture example",
                        help="The model continues this text." + note)
    enc = encode_text(ckpt, text, max_len=limit, bos=bos)
    if enc.truncated:
        st.info(f"Your prompt has {enc.n_tokens_total} tokens; this model reads at most {limit + 1}, so the "
                f"first {limit} are kept to leave room for at least one new token." if not folder else
                f"Your prompt has {enc.n_tokens_total} tokens; this page keeps the first {limit}.")
    if len(enc.ids) <= int(bos):
        st.warning("Type a prompt (at least one word) for the model to continue.")
        st.stop()  # the settings below are not drawn: they keep their values (persist_state)
    if enc.unknown and not folder:
        unknown_notice(enc.unknown)
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


def _view(step: G.GenStep) -> StepView:
    ids = F.top_candidates(step.probs, step.filtered_probs, step.token_id, TOP_N)
    return StepView(step.position, step.token_id, step.token, step.logprob, [], step.probs[ids].numpy(),
                    step.filtered_probs[ids].numpy(), int(np.nonzero(ids == step.token_id)[0][0]),
                    step.attention.numpy(), step.stop_reason), ids


def eos_id(ckpt) -> int:
    """The id generation stops at: "<eos>" for the app's models, a model folder's own end token (-1: none)."""
    end = end_token(ckpt)
    return end[0] if end is not None else -1


def end_ids(ckpt) -> set[int]:
    """Every id that ends a text: the end token, plus the other end ids a folder's config lists (Llama 3: several)."""
    return {eos_id(ckpt), *((ckpt.metadata or {}).get("eos_ids") or [])} - {-1}


def refuse_ended_prompt(ckpt, ids: list[int]) -> None:
    """Stop the page when the prompt holds one of the model's end ids after its first token: the text ends there,
    so there is nothing to continue. Typed text is literal (encode_text), so only a model whose end token is an
    ordinary vocabulary entry gets here."""
    ends = end_ids(ckpt)
    at = next((i for i, t in enumerate(ids) if i > 0 and t in ends), None)
    if at is not None:
        st.warning(f"The prompt holds the end token `{end_name(ckpt)}` (token {at}): a text ends there, so the model "
                   "has nothing to continue. Remove it from the prompt.")
        st.stop()


def full_run(ckpt, ids: list[int], s: Settings) -> list[StepView]:
    """All steps of this setting; step mode reveals them one per click (the same seed gives the same tokens)."""
    def compute():
        views, ends = [], end_ids(ckpt)
        for step in G.generate(ckpt.model, ids, strategy=s.strategy, max_new_tokens=s.max_new, seed=s.seed,
                               use_cache=True, tokenizer=ckpt.tokenizer, stop_at_eos=s.stop_at_eos,
                               eos_id=eos_id(ckpt)):
            v, top = _view(step)
            v.labels = token_texts(ckpt, top)
            v.token = token_texts(ckpt, [v.token_id])[0]
            views.append(v)
            if s.stop_at_eos and v.token_id in ends and v.stop_reason != "eos":  # another of the model's end ids
                v.stop_reason = "eos"
                break
        return views
    key = input_key(model_id(ckpt), tuple(ids), s.strategy, s.max_new, s.seed, s.stop_at_eos)
    return cached("generate_run", key, compute)


def visible_steps(views: list[StepView], ids: list[int], s: Settings) -> list[StepView]:
    """Step mode: the first token at once, one more per click (see widgets.reveal_steps); run mode: all of them."""
    return views[:reveal_steps("generate", (tuple(ids), s), len(views))] if s.step_mode else views


def end_logprob(ckpt, seq: list[int]) -> float | None:
    """log p(<eos> | whole sequence): the end factor of the lecture's product (None past the context, or for a
    model without an end token)."""
    if len(seq) > ckpt.model.config.max_len or end_token(ckpt) is None:
        return None
    return cached("generate_end", (input_key(model_id(ckpt), tuple(seq)),),  # one forward per exact sequence
                  lambda: float(G.score(ckpt.model, seq, [eos_id(ckpt)])[0]))


def running_table(views: list[StepView]) -> pd.DataFrame:
    """One row per generated token: the factors of p(w1..wL | c). The end token is a row only where the model
    wrote it (the run stopped on it), never for a run cut off at its length or the context."""
    notes = ["" for _ in views]
    if views and views[-1].stop_reason == "eos":
        notes[-1] = "end token (generated)"
    return F.sequence_table([v.token for v in views], [v.logprob for v in views], [v.position for v in views], notes,
                            product_text=G.sci_from_log)


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
    st.markdown(f"Step {pick + 1}: the model's probabilities for position {v.position} (left), then after "
                f"**{settings.strategy.describe()}** (right: removed tokens grey, the rest renormalised to sum to "
                f"1). The chosen token is orange: **{v.token}** with p = {v.p[v.chosen]:.3f}.")
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
    err = max(abs(float(s.attention[layer, head].sum()) - 1) for s in steps)
    verdict(err, ROW_SUM_TOL, "Every row sums to 1 over the prefix; grey cells did not exist yet")


def _steps(ckpt, ids, s: Settings, **kw) -> list[G.GenStep]:
    args = dict(strategy=s.strategy, max_new_tokens=s.max_new, seed=s.seed, use_cache=True,
                tokenizer=ckpt.tokenizer, stop_at_eos=s.stop_at_eos, eos_id=eos_id(ckpt))
    return list(G.generate(ckpt.model, ids, **{**args, **kw}))


def kv_cache(ckpt, ids: list[int], s: Settings) -> None:
    """Same tokens and logits with and without the cache; per-token latency as the sequence grows."""
    n = min(ckpt.model.config.max_len - len(ids), MAX_NEW)
    span = "up to the full context" if n == ckpt.model.config.max_len - len(ids) else f"for {n} new tokens"
    st.markdown("The keys and values of earlier tokens never change (the mask stops them looking ahead), so "
                "they can be **stored** and reused: each new step computes only the new token. Measured here from "
                f"your prompt {span}.")

    def compute():
        runs = {}
        for cache in (True, False):  # best of 2 per token, untraced: the server is shared, timings are noisy
            tries = [_steps(ckpt, ids, s, use_cache=cache, max_new_tokens=n, stop_at_eos=False, attention=False)
                     for _ in range(2)]
            ms = np.min([[st_.seconds * 1000 for st_ in t] for t in tries], axis=0)
            runs[cache] = ([x.token_id for x in tries[0]], torch.stack([x.logits for x in tries[0]]), ms)
        diff = (runs[True][1] - runs[False][1]).abs().max().item()
        scale = max(1.0, runs[False][1].abs().max().item())  # float32 rounding grows with the logits' size
        return runs[True][0] == runs[False][0], diff, scale, runs[True][2], runs[False][2]

    key = input_key(model_id(ckpt), tuple(ids), s.strategy, s.seed)
    same, diff, scale, ms_on, ms_off = cached("generate_cache", key, compute)
    ok = same and diff <= 1e-5 * scale
    (st.success if ok else st.error)(
        f"{'✓' if ok else '✗'} The same {len(ms_on)} tokens with and without the cache; largest logit difference "
        f"{diff:.1e} on logits up to {scale:.1f} in size (relative {diff / scale:.1e}: float32 rounding, ≤ 1e-5).")
    lengths = list(range(len(ids), len(ids) + len(ms_on)))
    fig = cached("generate_latency", key, lambda: F.latency_chart(lengths, ms_on, lengths, ms_off,
                                                                  title="Time per new token as the sequence grows"))
    show(fig, key="generate_latency", name="kv_cache_latency")
    ratio = ms_off.sum() / max(ms_on.sum(), 1e-9)
    note = (" At this short context the saving is within the timing noise of a shared server; it grows with the "
            "length of the text." if ratio < 1.5 else "")
    st.caption(f"Total: {ms_off.sum():.0f} ms without the cache, {ms_on.sum():.0f} ms with it (ratio {ratio:.1f}×) "
               f"for this small model and its {ckpt.model.config.max_len}-token context.{note} Without the cache every "
               "step re-reads the whole prefix (work grows with its length); with it, only the new token's query, key "
               "and value are computed and the stored ones are reused. `bench/bench_generate.py` measures 512 tokens.")


def strategy_comparison(ckpt, ids: list[int], s: Settings) -> None:
    st.markdown("Several samples from your prompt at a few temperatures (no top-k/top-p), scored by the model's own "
                "average log-probability and by diversity (distinct n-grams across the samples).")
    n_samples = st.slider("Samples per strategy", 1, 5, 3, key="generate_samples", **share.URL)
    strategies = [("greedy", G.GREEDY), *[(f"T={t:g}", G.Sampling(temperature=t)) for t in TEMPERATURES]]

    def compute():
        rows, summary = [], []
        for name, strat in strategies:
            runs = [_steps(ckpt, ids, s, strategy=strat, seed=s.seed + i, attention=False)
                    for i in range(1 if strat.is_greedy else n_samples)]
            for i, r in enumerate(runs):
                rows.append({"strategy": name, "sample": i + 1, "text": _text(ckpt, r),
                             "avg log p": G.average_logprob([x.logprob for x in r])})
            summary.append({"strategy": name, **G.strategy_scores(
                [[x.token_id for x in r] for r in runs], [[x.logprob for x in r] for r in runs], n_samples,
                deterministic=strat.is_greedy)})
        return pd.DataFrame(rows), pd.DataFrame(summary)

    key = input_key(model_id(ckpt), tuple(ids), s.max_new, s.seed, s.stop_at_eos, n_samples)
    samples, summary = cached("generate_compare", key, compute)
    st.dataframe(samples, hide_index=True, key="generate_samples_table",
                 column_config={"avg log p": st.column_config.NumberColumn(format="%.2f")})
    c1, c2 = st.columns([2, 3])
    c1.dataframe(summary, hide_index=True, key="generate_summary_table", column_config={
        c: st.column_config.NumberColumn(format="%.2f") for c in ("avg log p", "distinct-1", "distinct-2")})
    with c2:
        show(F.strategy_scatter(summary, title="Likely vs diverse"), key="generate_strategy_scatter",
             name="strategies", exports=False)
    st.caption("Low temperature: likely but repetitive text (high average log p, few distinct n-grams). High "
               f"temperature: more diverse, less likely text. Greedy is deterministic: its {n_samples} samples would "
               "all be the same text, so it is run once and that text counts for all of them. Diversity is measured "
               "across the samples: writing the same thing every time is the least diverse a strategy can be.")
    if n_samples == 1:
        st.caption("With one sample per strategy, distinct-n only sees repeats inside a single text: take 2 or more "
                   "samples to compare how diverse the strategies are.")


def _text(ckpt, steps: list[G.GenStep]) -> str:
    """A sample as text: the app's word tokens joined by spaces, a model folder's tokens decoded."""
    if is_folder_model(ckpt):
        return ckpt.tokenizer.decode([x.token_id for x in steps], skip_special_tokens=False)
    return " ".join(x.token for x in steps)


def teacher_forcing(ckpt, ids: list[int] | None = None, s: Settings | None = None) -> None:
    st.markdown("**Teacher forcing** scores a given sentence with the *true* prefix at every position, all "
                "positions in one pass. **Free running** lets the model continue from the same context on its own.")
    text = share.text(st, "Sentence", "please send the report", "generate_tf_text", 500)
    first = int(prompt_bos(ckpt))  # the start token, when the model reads one
    limit = ckpt.model.config.max_len - 2
    enc = encode_text(ckpt, text, max_len=min(limit, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt) else limit,
                      bos=bool(first))
    if len(enc.ids) < first + 2:
        st.warning("Type a sentence of at least two words: the first is the context, the rest is scored.")
        return
    most = len(enc.ids) - first - 1
    share.valid("generate_tf_k", range(1, most + 1), 1)  # the sentence may have become shorter
    k = 1 if most == 1 else st.slider("Context words given to the model", 1, most, 1, key="generate_tf_k", **share.URL)
    end = [eos_id(ckpt)] if end_token(ckpt) is not None else []
    context, truth = enc.ids[:first + k], [*enc.ids[first + k:], *end]
    run = lesson.teacher_forcing(ckpt.model, context, truth, ckpt.tokenizer, eos_id(ckpt))
    forced, top, free = run.forced, run.top, run.free
    n = max(len(truth), len(free))
    pad = lambda xs: [*xs, *[None] * (n - len(xs))]  # noqa: E731
    df = pd.DataFrame({
        "position": range(first + k, first + k + n),
        "true token": pad(token_texts(ckpt, truth)),
        "p(true | true prefix)": pad(forced.exp().tolist()),
        "model's top pick (true prefix)": pad(token_texts(ckpt, top)),
        "free running: own token": pad(token_texts(ckpt, [x.token_id for x in free])),
        "p(own | own prefix)": pad([math.exp(x.logprob) for x in free]),
    })
    st.dataframe(df, hide_index=True, key="generate_tf_table")
    show_check(run.check)
    st.caption(f"Teacher forcing: log p(sentence incl. {end_name(ckpt)} | context) = Σ log p = "
               f"{forced.sum().item():.2f}. "
               f"Free running feeds the model its own choices: Σ log p = "
               f"{sum(x.logprob for x in free):.2f} over {len(free)} tokens. Training uses teacher forcing; "
               "generation must run free, so an early mistake changes everything after it.")


def context_window(ckpt, ids: list[int], s: Settings | None = None) -> None:
    max_len = ckpt.model.config.max_len
    st.markdown(f"This model reads at most **{max_len:,} tokens**. When the text fills that context, generation "
                "**stops** with a message. (A sliding window would silently forget the start of the prompt.)")
    if max_len - len(ids) > MAX_CONTEXT_RUN:
        st.info(f"Writing the {max_len - len(ids):,} tokens that would fill this model's context is too long a run "
                f"for a shared server, so it is not run here; models with a context of up to {MAX_CONTEXT_RUN} "
                "tokens show it live.")
        return
    steps = cached("generate_context", input_key(model_id(ckpt), tuple(ids)), lambda: [
        (x.position, x.stop_reason) for x in G.generate(ckpt.model, ids, strategy="greedy", max_new_tokens=max_len,
                                                        stop_at_eos=False, attention=False)])
    last, reason = steps[-1]
    st.info(f"Greedy from your prompt without stopping at {end_name(ckpt)}: {len(steps)} new tokens, then it "
            "stopped because "
            + G.stop_message(reason, max_len))
    ok = reason == "context" and last == max_len - 1
    (st.success if ok else st.error)(f"{'✓' if ok else '✗'} The sequence ends at position {last} "
                                     f"(positions 0..{max_len - 1} = {max_len} tokens, the model's context).")


TABS = {"KV cache": kv_cache, "Compare strategies": strategy_comparison,
        "Teacher forcing vs free running": teacher_forcing, "Context limit": context_window}
