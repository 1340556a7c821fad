"""What the Generate page proves, measured: teacher forcing scores every position of a given sentence in one pass
(equal to scoring each true prefix on its own), while free running feeds the model its own choices; the KV cache
changes the time of a step, not its tokens; generation stops at the model's context."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import generate as G
from viz_model.lessons.common import Check, Fact, StepView, TeacherForcing, measured_ago, row_sum_error
from viz_model.model import eval_mode
from viz_model.model_text import end_token, is_folder_model, md_token, uses_bos

TOP_N = 10             # bars in the next-token chart
TEMPERATURES = (0.5, 1.0, 1.5)


@dataclass(frozen=True)
class Settings:
    strategy: G.Sampling
    max_new: int
    stop_at_eos: bool
    seed: int
    step_mode: bool

    @property
    def run_seed(self) -> int:
        """The seed as a run depends on it: greedy decoding never draws, so every seed gives the same run (one cache
        entry, one revealed step count, not one per seed)."""
        return 0 if self.strategy.is_greedy else self.seed


def prompt_bos(ckpt) -> bool:
    """The app's models continue '<bos> prompt' as they were trained; a model folder gets its own start token
    only where its tokenizer puts one in front (Llama yes, GPT-2 no)."""
    return uses_bos(ckpt) if is_folder_model(ckpt) else True


def eos_id(ckpt) -> int:
    """The id generation stops at: "<eos>" for the app's models, a model folder's own end token (-1: none)."""
    end = end_token(ckpt)
    return end[0] if end is not None else -1


def end_ids(ckpt) -> set[int]:
    """Every id that ends a text: the end token, plus the other end ids a folder's config lists (Llama 3: several)."""
    return {eos_id(ckpt), *((ckpt.metadata or {}).get("eos_ids") or [])} - {-1}


def run_steps(model, ids: list[int], s: Settings, eos_id: int, tokenizer=None, **kw) -> list[G.GenStep]:
    """generate() with the page's settings (cache on); keyword arguments override them."""
    args = dict(strategy=s.strategy, max_new_tokens=s.max_new, seed=s.seed, use_cache=True, tokenizer=tokenizer,
                stop_at_eos=s.stop_at_eos, eos_id=eos_id)
    return list(G.generate(model, ids, **{**args, **kw}))


def step_views(model, ids: list[int], s: Settings, eos_id: int, end_ids: set[int],
               texts: Callable[[list[int]], list[str]], tokenizer=None,
               sequence: Callable[[list[int]], list[str]] | None = None) -> list[StepView]:
    """Every step of this setting as the page keeps it; `texts` labels token ids one by one (the top-N bars),
    `sequence` (where given) labels the tokens of prompt + continuation as one text, so the byte pieces of a
    character the model wrote in several steps read as that character. A run stopping at its end token also stops at
    the model's other end ids (Llama 3 has several), which then count as its end."""
    views = []
    for step in G.generate(model, ids, strategy=s.strategy, max_new_tokens=s.max_new, seed=s.seed, use_cache=True,
                           tokenizer=tokenizer, stop_at_eos=s.stop_at_eos, eos_id=eos_id):
        views.append(StepView.of(step, texts([step.token_id])[0], texts, step.attention, TOP_N))
        if s.stop_at_eos and step.token_id in end_ids and step.stop_reason != "eos":  # another of the end ids
            views[-1].stop_reason = "eos"
            break
    if sequence is not None and views:
        for v, label in zip(views, sequence([*ids, *(v.token_id for v in views)])[len(ids):]):
            v.token = label
    return views


def end_position(ids: list[int], end_ids: set[int]) -> int | None:
    """Where a prompt holds one of the model's end ids after its first token (a text ends there), else None."""
    return next((i for i, t in enumerate(ids) if i > 0 and t in end_ids), None)


def ended_prompt(end: str, at: int) -> str:
    return (f"The prompt holds the end token `{end}` (token {at}): a text ends there, so the model has nothing to "
            "continue. Remove it from the prompt.")


def end_notes(views: list[StepView]) -> list[str]:
    """The running table's notes: the end token is a factor only where the model wrote it (the run stopped on it),
    never for a run cut off at its length or the context."""
    notes = ["" for _ in views]
    if views and views[-1].stop_reason == "eos":
        notes[-1] = "end token (generated)"
    return notes


def step_sentence(v: StepView, pick: int, strategy: G.Sampling) -> str:
    return (f"Step {pick + 1}: the model's probabilities for position {v.position} (left), then after "
            f"**{strategy.describe()}** (right: removed tokens grey, the rest renormalised to sum to 1). The chosen "
            f"token is orange: {md_token(v.token)} with p = {v.p[v.chosen]:.3f}.")


def end_logprob(model, seq: list[int], eos_id: int) -> float:
    """log p(end token | whole sequence): the end factor of the lecture's product."""
    return float(G.score(model, seq, [eos_id])[0])


def row_sum_check(steps: list[StepView], layer: int, head: int, tol: float) -> Check:
    err = max(row_sum_error(s.attention[layer, head]) for s in steps)  # each step's row over its own prefix
    return Check(err, tol, "Every row sums to 1 over the prefix; grey cells did not exist yet")


# -- the KV cache ---------------------------------------------------------------------------------------------
@dataclass
class CacheRun:
    """The same greedy/sampled continuation with and without the KV cache: tokens, logits and time per step."""
    same: bool               # the same tokens both ways
    diff: float              # largest |logit with cache - without|
    scale: float             # the largest |logit| (at least 1): float32 rounding grows with it
    ms_on: np.ndarray        # (n,) milliseconds per step with the cache (best of 2)
    ms_off: np.ndarray       # (n,) without it

    @property
    def claim(self) -> Fact:
        return Fact(self.same and self.diff <= 1e-5 * self.scale,
                    f"The same {len(self.ms_on)} tokens with and without the cache; largest logit difference "
                    f"{self.diff:.1e} on logits up to {self.scale:.1f} in size (relative {self.diff / self.scale:.1e}: "
                    "float32 rounding, ≤ 1e-5).")

    def caption(self, max_len: int) -> str:
        ratio = self.ms_off.sum() / max(self.ms_on.sum(), 1e-9)
        note = (" At this short context the saving is within the timing noise of a shared server; it grows with the "
                "length of the text." if ratio < 1.5 else "")
        return (f"Total: {self.ms_off.sum():.0f} ms without the cache, {self.ms_on.sum():.0f} ms with it (ratio "
                f"{ratio:.1f}×) for this small model and its {max_len}-token context.{note} Without the cache every "
                "step re-reads the whole prefix (work grows with its length); with it, only the new token's query, "
                "key and value are computed and the stored ones are reused. `bench/bench_generate.py` measures 512 "
                "tokens.")


def cache_run(model, ids: list[int], s: Settings, n: int, eos_id: int, tokenizer=None) -> CacheRun:
    """n new tokens from `ids` with and without the cache, untraced, best of 2 per token (a shared server is noisy)."""
    runs = {}
    for cache in (True, False):
        tries = [run_steps(model, ids, s, eos_id, tokenizer, use_cache=cache, max_new_tokens=n, stop_at_eos=False,
                           attention=False) for _ in range(2)]
        ms = np.min([[step.seconds * 1000 for step in t] for t in tries], axis=0)
        runs[cache] = ([x.token_id for x in tries[0]], torch.stack([x.logits for x in tries[0]]), ms)
    diff = (runs[True][1] - runs[False][1]).abs().max().item()
    scale = max(1.0, runs[False][1].abs().max().item())
    return CacheRun(runs[True][0] == runs[False][0], diff, scale, runs[True][2], runs[False][2])


def cache_intro(n: int, room: int) -> str:
    """What the KV cache tab measures: n new tokens, `room` being what is left of the context after the prompt."""
    span = "up to the full context" if n == room else f"for {n} new tokens"
    return ("The keys and values of earlier tokens never change (the mask stops them looking ahead), so they can be "
            "**stored** and reused: each new step computes only the new token. Measured here from your prompt "
            f"{span}.")


def cache_before(n: int) -> str:
    """Under the KV cache tab's button, before anything is measured for this prompt and setting."""
    return (f"The measurement writes {n} new tokens four times, twice with the cache and twice without (the faster of "
            "each pair counts), then compares their tokens, logits and time per token: a few seconds on a shared "
            "server. Nothing is measured until you click; the result is kept for this prompt and these settings and "
            "shared with everyone on this server.")


def cache_spinner(n: int) -> str:
    return f"Writing {n} tokens with and without the cache, twice each…"


def cache_measured(when: float) -> str:
    return f"Measured on this server {measured_ago(when)}; **Measure again** times it anew."


# -- strategies -----------------------------------------------------------------------------------------------
def compare_strategies(model, ids: list[int], s: Settings, n_samples: int, eos_id: int,
                       text: Callable[[list[G.GenStep]], str], tokenizer=None) -> tuple[list[dict], list[dict]]:
    """(one row per sample: strategy, sample, text, avg log p; one row per strategy: G.strategy_scores) for greedy
    and sampling at TEMPERATURES; greedy is run once (its samples would all be the same text)."""
    rows, summary = [], []
    for name, strat in [("greedy", G.GREEDY), *[(f"T={t:g}", G.Sampling(temperature=t)) for t in TEMPERATURES]]:
        runs = [run_steps(model, ids, s, eos_id, tokenizer, strategy=strat, seed=s.seed + i, attention=False)
                for i in range(1 if strat.is_greedy else n_samples)]
        for i, r in enumerate(runs):
            rows.append({"strategy": name, "sample": i + 1, "text": text(r),
                         "avg log p": G.average_logprob([x.logprob for x in r])})
        summary.append({"strategy": name, **G.strategy_scores(
            [[x.token_id for x in r] for r in runs], [[x.logprob for x in r] for r in runs], n_samples,
            deterministic=strat.is_greedy)})
    return rows, summary


def sample_text(steps: list[G.GenStep], tokenizer=None, decode: bool = False) -> str:
    """A sample as text: the app's word tokens joined by spaces; decode: a model folder's tokens decoded."""
    if decode:
        return tokenizer.decode([x.token_id for x in steps], skip_special_tokens=False)
    return " ".join(x.token for x in steps)


def strategies_caption(n_samples: int) -> str:
    return ("Low temperature: likely but repetitive text (high average log p, few distinct n-grams). High "
            f"temperature: more diverse, less likely text. Greedy is deterministic: its {n_samples} samples would "
            "all be the same text, so it is run once and that text counts for all of them. Diversity is measured "
            "across the samples: writing the same thing every time is the least diverse a strategy can be.")


# -- teacher forcing ------------------------------------------------------------------------------------------
def teacher_forcing(model, context: list[int], truth: list[int], tokenizer, eos_id: int | None) -> TeacherForcing:
    """Score `truth` after `context` with the true prefix (one pass, checked against one run per prefix), the top
    pick at each of its positions, and the model's own greedy continuation of the same length."""
    tf = TeacherForcing.of(model, context, truth)
    separate = G.score_stepwise(model, context, truth)
    n = len(truth)
    tf.check = Check(float((tf.forced - separate).abs().max()), 1e-5,
                     f"One teacher-forced pass (all {n} predictions at once) equals {n} separate runs on each "
                     "true prefix, in log p")
    tf.free = list(G.generate(model, context, strategy="greedy", max_new_tokens=n, tokenizer=tokenizer,
                              attention=False, eos_id=eos_id))
    return tf


def forcing_table(tf: TeacherForcing, start: int, truth: list[int],
                  texts: Callable[[list[int]], list[str]]) -> dict[str, list]:
    """The table's columns from position `start`: the true tokens beside the free-running ones (None where one of
    the two is shorter)."""
    n = max(len(truth), len(tf.free))
    pad = lambda xs: [*xs, *[None] * (n - len(xs))]  # noqa: E731
    return {"position": list(range(start, start + n)),
            "true token": pad(texts(truth)),
            "p(true | true prefix)": pad(tf.forced.exp().tolist()),
            "model's top pick (true prefix)": pad(texts(tf.top)),
            "free running: own token": pad(texts([x.token_id for x in tf.free])),
            "p(own | own prefix)": pad([math.exp(x.logprob) for x in tf.free])}


def forcing_caption(tf: TeacherForcing, end: str) -> str:
    return (f"Teacher forcing: log p(sentence incl. {end} | context) = Σ log p = {tf.forced.sum().item():.2f}. "
            f"Free running feeds the model its own choices: Σ log p = "
            f"{sum(x.logprob for x in tf.free):.2f} over {len(tf.free)} tokens. Training uses teacher "
            "forcing; generation must run free, so an early mistake changes everything after it.")


# -- the context limit ----------------------------------------------------------------------------------------
def context_run(model, ids: list[int]) -> list[tuple[int, str | None]]:
    """(position, stop_reason) of every step of greedy generation from `ids` that never stops at an end token."""
    return [(x.position, x.stop_reason) for x in G.generate(model, ids, strategy="greedy",
                                                            max_new_tokens=model.config.max_len, stop_at_eos=False,
                                                            attention=False)]


def context_intro(max_len: int) -> str:
    return (f"This model reads at most **{max_len:,} tokens**. When the text fills that context, generation "
            "**stops** with a message. (A sliding window would silently forget the start of the prompt.)")


def too_long_to_run(n: int, cap: int) -> str:
    return (f"Writing the {n:,} tokens that would fill this model's context is too long a run for a shared server, so "
            f"it is not run here; models with a context of up to {cap} tokens show it live.")


def context_sentence(steps: list[tuple[int, str | None]], max_len: int, end: str) -> str:
    return (f"Greedy from your prompt without stopping at {end}: {len(steps)} new tokens, then it stopped because "
            + G.stop_message(steps[-1][1], max_len))


def context_claim(steps: list[tuple[int, str | None]], max_len: int) -> Fact:
    last, reason = steps[-1]
    return Fact(reason == "context" and last == max_len - 1, f"The sequence ends at position {last} "
                f"(positions 0..{max_len - 1} = {max_len} tokens, the model's context).")


# -- branches ----------------------------------------------------------------------------------------------------
BRANCH_TEMPERATURES = (0.0, 0.7, 1.2)  # the Branches tab's defaults: greedy beside two samples. Measured on the English
BRANCH_SEEDS = (0, 1, 2)               # model, "please send the": A " report to emma by friday", B " report to dave
# before the meeting", C " budget to frank tomorrow" (C differs at new token 1, A and B at token 3)
BRANCH_NAMES = ("A", "B", "C")
BRANCH_TOP = 8                         # candidates a student can force at a step
FORCE_TOL = 1e-4                       # |p with cache - p recomputed|: measured <= 1e-6 (float32), 100x room


@dataclass(frozen=True)
class Branch:
    """One continuation as the Branches tab keeps it (no vocabulary vectors): its tokens, p and sampling q of each,
    and the top candidates of each step (ids, labels, p) that a student may force instead."""
    name: str
    temperature: float
    seed: int
    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    p: tuple[float, ...]
    q: tuple[float, ...]
    top: tuple[tuple[tuple[int, str, float], ...], ...]

    @property
    def strategy(self) -> G.Sampling:
        return G.Sampling(temperature=self.temperature)

    @property
    def label(self) -> str:
        return f"{self.name}: {self.strategy.describe()}" + ("" if self.strategy.is_greedy else f", seed {self.seed}")


def branch_of(name: str, temperature: float, seed: int, steps: list[G.GenStep],
              texts: Callable[[list[int]], list[str]]) -> Branch:
    top = []
    for x in steps:
        # a stable sort, not topk: tied probabilities (a peaked model's underflowed zeros) keep the token order, so the
        # candidates, and the picker built from them, are the same on every rerun
        ids = [int(i) for i in torch.sort(x.probs, descending=True, stable=True).indices[:BRANCH_TOP]]
        top.append(tuple(zip(ids, texts(ids), (float(x.probs[i]) for i in ids))))
    return Branch(name, float(temperature), int(seed), tuple(x.token_id for x in steps),
                  tuple(texts([x.token_id for x in steps])), tuple(math.exp(x.logprob) for x in steps),
                  tuple(float(x.filtered_probs[x.token_id]) for x in steps), tuple(top))


def branch_runs(model, ids: list[int], settings: list[tuple[float, int]], max_new: int, stop_at_eos: bool,
                eos_id: int, texts: Callable[[list[int]], list[str]]) -> list[Branch]:
    """The prompt continued once per (temperature, seed), KV cache on (generate(); temperature 0 is greedy)."""
    return [branch_of(BRANCH_NAMES[i], t, seed, list(G.generate(
        model, ids, strategy=G.Sampling(temperature=t), max_new_tokens=max_new, seed=seed, use_cache=True,
        stop_at_eos=stop_at_eos, eos_id=eos_id, attention=False)), texts) for i, (t, seed) in enumerate(settings)]


def first_divergence(seqs: list[tuple[int, ...]] | list[list[int]]) -> int | None:
    """The first new-token index where the branches do not all hold the same token (a branch that has ended differs
    from one that goes on); None when they are identical."""
    for i in range(max((len(s) for s in seqs), default=0)):
        if len({s[i] if i < len(s) else None for s in seqs}) > 1:
            return i
    return None


def divergence_sentence(branches: list[Branch], n_prompt: int, end: str) -> str:
    """Where the branches first differ and what each wrote there, or why they are identical."""
    at = first_divergence([b.ids for b in branches])
    if at is None:
        why = ("temperature 0 is greedy: each step takes the most probable token, so every branch writes the same "
               "text, whatever its seed." if all(b.strategy.is_greedy for b in branches) else
               "the same temperature and seed draw the same tokens; change a seed or a temperature to branch.")
        return f"All {len(branches)} branches wrote the same {len(branches[0].ids)} tokens: {why}"
    there = ", ".join(f"**{b.name}** {md_token(b.tokens[at]) if at < len(b.ids) else f'(ended with {end})'}"
                      + (f" (p = {b.p[at]:.3f})" if at < len(b.ids) else "") for b in branches)
    same = f"the first {at} new tokens are the same; " if at else ""
    return (f"The branches first differ at new token **{at + 1}** (position {n_prompt + at}): {same}there {there}. "
            "One different draw, and every later step reads a different prefix.")


@dataclass
class Forced:
    """A branch with one token forced at new-token index `at`, continued from there with the KV cache."""
    branch: Branch           # prefix + forced token + continuation, as one Branch (its q: the continuation's)
    at: int
    error: float             # largest |p with the cache - p from one full recompute| over the continuation's steps
    n: int                   # continuation steps compared

    @property
    def check(self) -> Check:
        return Check(self.error, FORCE_TOL, f"The forced continuation ({self.n} steps) written with the KV cache "
                     "gives the same next-token probabilities as one full recompute of the whole text: largest "
                     "|Δp|")


@torch.no_grad()
def force(model, ids: list[int], b: Branch, at: int, token_id: int, max_new: int, stop_at_eos: bool, eos_id: int,
          texts: Callable[[list[int]], list[str]]) -> Forced:
    """Force `token_id` as new token `at` of branch `b` and continue (its temperature and seed) with the KV cache:
    generate() prefills prompt + the branch's first `at` tokens + the forced one, then feeds one token per step. The
    check recomputes every continuation step's distribution in ONE pass over the whole text, no cache."""
    prefix = [*ids, *b.ids[:at], int(token_id)]
    if stop_at_eos and token_id == eos_id:
        return Forced(_forced_branch(b, at, token_id, [], texts), at, 0.0, 0)
    room = min(max_new - at - 1, model.config.max_len - len(prefix))
    steps = list(G.generate(model, prefix, strategy=b.strategy, max_new_tokens=room, seed=b.seed, use_cache=True,
                            stop_at_eos=stop_at_eos, eos_id=eos_id, attention=False)) if room > 0 else []
    error = 0.0
    if steps:
        with eval_mode(model):
            full = [*prefix, *(x.token_id for x in steps[:-1])]
            logits = model(torch.tensor([full], device=model.device)).logits[0, len(prefix) - 1:]
        p_full = torch.softmax(logits.double().cpu(), -1)
        error = float((p_full - torch.stack([x.probs for x in steps])).abs().max())
    return Forced(_forced_branch(b, at, token_id, steps, texts), at, error, len(steps))


def _forced_branch(b: Branch, at: int, token_id: int, steps: list[G.GenStep], texts) -> Branch:
    p_forced = next((p for i, _, p in b.top[at] if i == token_id), float("nan"))
    cont = branch_of(b.name, b.temperature, b.seed, steps, texts)
    return Branch(f"{b.name} forced", b.temperature, b.seed, (*b.ids[:at], int(token_id), *cont.ids),
                  (*b.tokens[:at], texts([int(token_id)])[0], *cont.tokens), (*b.p[:at], p_forced, *cont.p),
                  (*b.q[:at], 1.0, *cont.q), (*b.top[:at + 1], *cont.top))


def force_label(token: str, p: float) -> str:
    """A token the force picker offers, as plain text (a select's options are not Markdown): "tomorrow · p = 0.068"."""
    return f"{token.strip() or repr(token)} · p = {p:.3f}"


def forced_sentence(f: Forced, n_prompt: int) -> str:
    tok = f.branch.tokens[f.at]
    return (f"Branch {f.branch.name.split()[0]} with {md_token(tok)} forced as new token {f.at + 1} (position "
            f"{n_prompt + f.at}; the model gave it p = {f.branch.p[f.at]:.3f}), then {f.n} more token"
            f"{'s' if f.n != 1 else ''} sampled as before from the new prefix.")


# -- what the page says -----------------------------------------------------------------------------------------
def truncation_note(total: int, limit: int, folder: bool) -> str:
    """Why a long prompt was cut: to leave room for a new token, or (a model folder) to this page's view size."""
    if folder:
        return f"Your prompt has {total} tokens; this page keeps the first {limit}."
    return (f"Your prompt has {total} tokens; this model reads at most {limit + 1}, so the first {limit} are kept to "
            "leave room for at least one new token.")


COMPARE_INTRO = ("Several samples from your prompt at a few temperatures (no top-k/top-p), scored by the model's own "
                 "average log-probability and by diversity (distinct n-grams across the samples).")
ONE_SAMPLE = ("With one sample per strategy, distinct-n only sees repeats inside a single text: take 2 or more "
              "samples to compare how diverse the strategies are.")
TF_INTRO = ("**Teacher forcing** scores a given sentence with the *true* prefix at every position, all positions in "
            "one pass. **Free running** lets the model continue from the same context on its own.")
BRANCH_INTRO = ("One prompt, continued in up to three **branches** side by side, each with its own temperature and "
                "seed (temperature 0 = greedy; no top-k or top-p here). The first new token where they differ is "
                "framed; hover a token for its probability. Force another token at any step: the branch goes on from "
                "there with the KV cache.")
NO_FORCE = "(none)"
CACHE_BUSY = ("Another KV-cache measurement is running on this server right now (one at a time keeps the server "
              "responsive). Try again in a moment; a result for the same prompt and settings is shared with everyone.")
