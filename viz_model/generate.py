"""Step-wise generation: greedy, temperature, top-k, top-p, with or without a KV cache.

    generate(model, ids, *, strategy, max_new_tokens, seed, use_cache) -> Iterator[GenStep]

Each step runs the model on the prefix (or, with the cache, on the one newest token), turns the last
position's logits into the model's distribution p, filters it (temperature, then top-k, then top-p,
then renormalise), picks a token and yields everything a figure needs.

Token text: `GenStep.token` is filled from the optional `tokenizer=` argument (its display form, so
byte-level 'Ġthe' reads ' the'); without a tokenizer it is '#<id>'. Keeping the text on the step lets a
page or a test read a generation without carrying the tokenizer around.

Context limit: the model reads at most `model.config.max_len` tokens. Generation STOPS (no sliding
window) once the sequence fills that context; the last step says so in `stop_reason == "context"`.
Sliding would silently forget the prompt and, with a cache, shift every cached RoPE key.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from viz_model.attention import LayerTrace
from viz_model.model import TinyTransformer, eval_mode

EOS_ID = 3  # <eos> in every tokenizer of this project (tokenizer.SPECIAL_TOKENS)

STOP_MESSAGES = {
    "eos": "the model chose the end token <eos>.",
    "length": "the requested number of new tokens was reached.",
    "context": "the sequence filled the model's context of {max_len} tokens; this model cannot read further, "
               "so generation stops here (no sliding window: the prompt is never silently dropped).",
}


@dataclass(frozen=True)
class Sampling:
    """How the next token is picked. temperature == 0 means greedy."""

    temperature: float = 1.0
    top_k: int | None = None      # keep only the k most probable tokens
    top_p: float | None = None    # keep the smallest set of tokens whose mass reaches p (nucleus)
    greedy: bool = False          # always the most probable token (ignores the rest)

    def __post_init__(self) -> None:
        t = float(self.temperature)
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"temperature must be a number >= 0, got {self.temperature}.")
        if self.top_k is not None and (isinstance(self.top_k, bool) or int(self.top_k) != self.top_k
                                       or self.top_k < 1):
            raise ValueError(f"top-k must be a whole number >= 1, got {self.top_k}.")
        if self.top_p is not None and not 0.0 < float(self.top_p) <= 1.0:
            raise ValueError(f"top-p must be in (0, 1], got {self.top_p}.")

    @property
    def is_greedy(self) -> bool:
        return self.greedy or self.temperature == 0

    def describe(self) -> str:
        if self.is_greedy:
            return "greedy"
        parts = [f"T={self.temperature:g}"]
        if self.top_k is not None:
            parts.append(f"top-k={self.top_k}")
        if self.top_p is not None:
            parts.append(f"top-p={self.top_p:g}")
        return ", ".join(parts)


GREEDY = Sampling(greedy=True)


def as_sampling(strategy: Sampling | str) -> Sampling:
    if isinstance(strategy, Sampling):
        return strategy
    if strategy == "greedy":
        return GREEDY
    raise ValueError(f"strategy must be 'greedy' or a Sampling(...), got {strategy!r}.")


def top_k_mask(probs: torch.Tensor, k: int) -> torch.Tensor:
    """(V,) bool: the k most probable tokens (ties broken by index)."""
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[torch.topk(probs, min(int(k), probs.numel())).indices] = True
    return keep


def top_p_mask(probs: torch.Tensor, p: float) -> torch.Tensor:
    """(V,) bool: the smallest set of most probable tokens whose total mass reaches p."""
    sorted_p, order = torch.sort(probs, descending=True, stable=True)
    mass_before = torch.cumsum(sorted_p, 0) - sorted_p  # mass of the strictly more probable tokens
    keep_sorted = mass_before < p                         # still short of p before this token: keep it
    keep_sorted[0] = True
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[order[keep_sorted]] = True
    return keep


def filter_distribution(logits: torch.Tensor, strategy: Sampling | str) -> tuple[torch.Tensor, torch.Tensor]:
    """logits (V,) -> (p, filtered): the model's softmax, and the renormalised distribution actually sampled.

    Order (as in Hugging Face): temperature, then top-k, then top-p on the tempered, top-k-renormalised p.
    Greedy gives a one-hot filtered distribution on the argmax.
    """
    s = as_sampling(strategy)
    logits = logits.double()
    probs = torch.softmax(logits, -1)  # (V,)
    if s.is_greedy:
        filtered = torch.zeros_like(probs)
        filtered[int(torch.argmax(probs))] = 1.0
        return probs, filtered
    q = torch.softmax(logits / s.temperature, -1)
    if s.top_k is not None:
        q = torch.where(top_k_mask(q, s.top_k), q, 0.0)
        q = q / q.sum()
    if s.top_p is not None:
        q = torch.where(top_p_mask(q, s.top_p), q, 0.0)
        q = q / q.sum()
    return probs, q


@dataclass
class GenStep:
    index: int                   # 0 for the first new token
    position: int                # where the new token sits in the sequence
    token_id: int
    token: str                   # display text (from the tokenizer), or '#<id>' without one
    logits: torch.Tensor         # (V,) raw logits at the last position, float32 CPU
    probs: torch.Tensor          # (V,) the model's distribution p(. | prefix), float64
    filtered_probs: torch.Tensor  # (V,) after temperature/top-k/top-p, renormalised (what was sampled)
    logprob: float               # log p(token | prefix) under the MODEL's distribution (the lecture's term)
    filtered_logprob: float      # log of the sampling probability of the chosen token
    attention: torch.Tensor | None  # (L, H, T) last prefix position's attention over the T-token prefix
    seconds: float               # wall time of this step's forward pass
    use_cache: bool
    stop_reason: str | None = None  # set on the last step: "eos" | "length" | "context"


def _context_error(n: int, max_len: int) -> ValueError:
    return ValueError(f"the prompt has {n} tokens but this model reads at most {max_len}; "
                      f"shorten the prompt to at most {max_len - 1} tokens to leave room for a new one.")


def _check_request(model: TinyTransformer, prompt: list[int], max_new_tokens: int) -> None:
    """A sentence for every request generate() cannot serve."""
    if not prompt:
        raise ValueError("the prompt has no tokens; type at least one word.")
    if len(prompt) >= model.config.max_len:
        raise _context_error(len(prompt), model.config.max_len)
    if not model.config.causal:
        raise ValueError("this model attends in both directions (an encoder); it cannot generate left to right.")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}.")


def generate(
    model: TinyTransformer,
    ids: Sequence[int] | torch.Tensor,
    *,
    strategy: Sampling | str = "greedy",
    max_new_tokens: int = 20,
    seed: int = 0,
    use_cache: bool = True,
    tokenizer=None,
    stop_at_eos: bool = True,
    eos_id: int | None = None,
    attention: bool = True,   # False: skip tracing (faster; GenStep.attention is None)
) -> Iterator[GenStep]:
    """Yield one GenStep per new token; the last step carries its stop_reason."""
    s = as_sampling(strategy)
    prompt = [int(i) for i in (ids.flatten().tolist() if torch.is_tensor(ids) else ids)]
    max_len = model.config.max_len
    _check_request(model, prompt, max_new_tokens)
    if eos_id is None:
        eos_id = tokenizer.token_to_id("<eos>") if tokenizer is not None else EOS_ID
    if stop_at_eos and eos_id in prompt[1:]:  # [1:]: a model may start a text with its end token (GPT-2)
        raise ValueError(f"the prompt holds the end token (id {eos_id}) at position {prompt.index(eos_id, 1)}: "
                         "a text ends there, so there is nothing to continue. Remove it from the prompt.")

    def stop(index: int, seq: list[int], token_id: int) -> str | None:
        if stop_at_eos and token_id == eos_id:
            return "eos"
        if len(seq) >= max_len:
            return "context"
        return "length" if index == max_new_tokens - 1 else None

    def forward(feed: list[int], cache):
        return model(torch.tensor([feed], device=model.device), trace=attention, past=cache, use_cache=use_cache)

    for step, _ in decode_loop(forward, prompt, stop, strategy=s, steps=max_new_tokens, seed=seed,
                               use_cache=use_cache, layers=(lambda out: out.trace.layers) if attention else None,
                               tokenizer=tokenizer):
        yield step


def last_rows(layers: Sequence[LayerTrace]) -> torch.Tensor:
    """(L, H, Tk): the newest query's attention row in every layer (batch row 0), float32 on the CPU."""
    return torch.stack([lt.probs[0, :, -1, :] for lt in layers]).float().cpu()


def decode_loop(forward: Callable[[list[int], Any], Any], prompt: list[int],
                stop: Callable[[int, list[int], int], str | None], *, strategy: Sampling | str, steps: int,
                seed: int = 0, use_cache: bool = True, layers: Callable[[Any], Sequence[LayerTrace]] | None = None,
                tokenizer=None) -> Iterator[tuple[GenStep, Any]]:
    """The one sampling loop of generate() and seq2seq.decode_steps: (GenStep, model output) per new token.

    forward(feed, cache) runs the model on `feed` (the whole sequence, or with use_cache the tokens after the
    cached ones) and returns an output with .logits (1, T, V) and .cache. stop(index, seq, token_id) names the
    stop reason of the step that appended token_id, or None; the loop ends after a step with one, or after
    `steps`. layers(out): the traced self-attention layers whose newest row is GenStep.attention.
    """
    s = as_sampling(strategy)
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    seq, cache, feed = list(prompt), None, list(prompt)
    for index in range(steps):
        t0 = time.perf_counter()
        with torch.no_grad():
            out = forward(feed if use_cache else seq, cache)
        logits = out.logits[0, -1].float().cpu()  # (V,)
        seconds = time.perf_counter() - t0
        probs, filtered = filter_distribution(logits, s)
        pick = torch.argmax(filtered) if s.is_greedy else torch.multinomial(filtered, 1, generator=gen)
        token_id = int(pick)
        seq.append(token_id)
        reason = stop(index, seq, token_id)
        yield GenStep(
            index=index, position=len(seq) - 1, token_id=token_id, token=_text(tokenizer, token_id),
            logits=logits, probs=probs, filtered_probs=filtered,
            logprob=float(torch.log(probs[token_id])), filtered_logprob=float(torch.log(filtered[token_id])),
            attention=last_rows(layers(out)) if layers is not None else None, seconds=seconds,
            use_cache=use_cache, stop_reason=reason,
        ), out
        if reason:
            return
        cache, feed = out.cache, [token_id]


def greedy_ids(model: TinyTransformer, ids: Sequence[int], max_new_tokens: int, eos_id: int | None = EOS_ID
               ) -> list[int]:
    """The argmax continuation of `ids` (without them) for training samples and the Train page, stopping before
    <eos> or at the context length: decode_loop without a KV cache, re-reading the whole sequence each step, so it
    also runs a model trained without the causal mask (the no-mask demo)."""
    prompt = [int(i) for i in ids]
    steps = min(max_new_tokens, model.config.max_len - len(prompt))
    if steps < 1:
        return []
    forward = lambda feed, _cache: model(torch.tensor([feed], device=model.device))  # noqa: E731
    stop = lambda _index, _seq, token_id: "eos" if token_id == eos_id else None  # noqa: E731
    with eval_mode(model):
        new = [step.token_id for step, _ in decode_loop(forward, prompt, stop, strategy="greedy", steps=steps,
                                                        use_cache=False)]
    return new[:-1] if new and new[-1] == eos_id else new


def _text(tokenizer, token_id: int) -> str:
    if tokenizer is None:
        return f"#{token_id}"
    from viz_model.tokenizer import display_token  # local: keeps this module importable without tokenizers
    return display_token(tokenizer, token_id)


def stop_message(reason: str | None, max_len: int) -> str:
    return STOP_MESSAGES.get(reason or "", "generation was interrupted.").format(max_len=max_len)


# -- sequence probability -------------------------------------------------------------------------
def sequence_logprob(logprobs: Sequence[float]) -> float:
    """log p(w1..wL | c) = sum_l log p(w_l | c, w_<l)."""
    return float(sum(logprobs))


def sequence_prob(logprobs: Sequence[float]) -> float:
    """p(w1..wL | c) = prod_l p(w_l | c, w_<l) as a float: exp of the log-sum, so 0.0 below ~1e-308 (to print it,
    sci_from_log(sequence_logprob(...)))."""
    return math.exp(sequence_logprob(logprobs))


def sci_from_log(logp: float, digits: int = 3) -> str:
    """exp(logp) in scientific notation, written from log10 p = logp / ln 10 (mantissa 10**frac, exponent floor), never
    from the float itself: a product of 129 probabilities can be 1e-645, below the smallest float64 (~1e-308)."""
    if logp == -math.inf:
        return "0"
    if not math.isfinite(logp):
        raise ValueError(f"a log-probability must be finite or -inf, got {logp}.")
    x = logp / math.log(10)  # log10 p
    exponent = math.floor(x)
    mantissa = round(10 ** (x - exponent), digits - 1)  # in [1, 10]
    if mantissa >= 10:  # 9.9996 rounds up to 10.00: carry into the exponent
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.{digits - 1}f}e{exponent:+03d}"  # the same form as Python's f"{p:.2e}": 1.23e-05


STOP_PHRASES = {  # why a generation ended without its end token, for the sequence-probability sentence
    "length": "the run stopped at the length limit (Max new tokens)",
    "context": "the run stopped when the text filled the model's context",
    None: "the text is not finished yet",
}


def sequence_sentence(logprobs: Sequence[float], stop_reason: str | None, end: str = "<eos>",
                      end_logprob: float | None = None) -> str:
    """The page's sentence on p(w1..wL | c): the factor count, Σ log p and p written from it (sci_from_log).

    The end token is one of the factors only when the model wrote it (stop_reason "eos": it is the last of
    `logprobs`); a run cut off by its length or the context has no end factor. `end_logprob`, for such a run, is
    log p(end | the text): said as the factor ending the text would add, not counted."""
    n, total = len(logprobs), sequence_logprob(logprobs)
    head = f"p(w₁…w_L | c) = Π p(w_l | c, w<l) over **{n}** factor{'s' if n != 1 else ''}"
    if stop_reason == "eos":
        head += f", the last one the end token `{end}` that the model wrote"
    else:
        why = STOP_PHRASES.get(stop_reason, STOP_PHRASES[None])
        head += (f", one per generated token. No end token: {why}; the model has not written `{end}`, so it is not "
                 "a factor")
        if end_logprob is not None:
            head += f" (ending the text here would add p(`{end}` | text) = {sci_from_log(end_logprob)})"
    log10 = total / math.log(10) if math.isfinite(total) else -math.inf
    return (f"{head}. Σ log p = **{total:.3f}** (natural log), so log₁₀ p = {log10:.3f} and "
            f"p = **{sci_from_log(total)}**. Long texts have tiny probabilities, often below the smallest float (about "
            "1e-308, where a product of floats reads 0), so models add log-probabilities: p is written here from "
            "Σ log p.")


def average_logprob(logprobs: Sequence[float]) -> float:
    return sequence_logprob(logprobs) / max(len(logprobs), 1)


def score(model: TinyTransformer, context: Sequence[int], continuation: Sequence[int]) -> torch.Tensor:
    """Teacher forcing: log p(w_l | c, true w_<l) for every continuation token, in ONE forward pass.

    Returns (L,) float64. Append the end token to `continuation` to include p(<eos> | ...).
    """
    full = [int(i) for i in (*context, *continuation)]
    if not context or not continuation:
        raise ValueError("scoring needs at least one context token and one token to score.")
    if len(full) - 1 > model.config.max_len:
        raise ValueError(f"the sentence is longer than this model's context of {model.config.max_len} tokens.")
    logp = teacher_forced(model, full[:-1])  # (T, V): row t predicts full[t + 1]
    return logp[torch.arange(len(full) - 1), torch.tensor(full[1:])][len(context) - 1:]


@torch.no_grad()
def teacher_forced(model, ids: Sequence[int]) -> torch.Tensor:
    """Teacher forcing, the one body every page uses: ONE pass over the true tokens `ids`, in eval mode, gives every
    position's next-token distribution at once: (len(ids), V) float64 log-probabilities on the CPU, row t predicting
    the token after ids[t] from ids[..t] (a causal model's row t reads nothing after t)."""
    x = torch.tensor([[int(i) for i in ids]], device=model.device)
    with eval_mode(model):
        logits = model(x).logits[0]
    return torch.log_softmax(logits.double(), -1).cpu()


def score_stepwise(model: TinyTransformer, context: Sequence[int], continuation: Sequence[int]) -> torch.Tensor:
    """The same numbers as score(), but one separate run per prefix (what 'sequential' would mean)."""
    full, out = [int(i) for i in (*context, *continuation)], []
    for end in range(len(context), len(full)):
        with torch.no_grad():
            logits = model(torch.tensor([full[:end]], device=model.device)).logits[0, -1].double()
        out.append(torch.log_softmax(logits, -1)[full[end]].cpu())
    return torch.stack(out)


def distinct_n(samples: Sequence[Sequence[int]], n: int) -> float:
    """Distinct n-grams / all n-grams over the samples (1.0 = never repeats, near 0 = the same text)."""
    grams = [tuple(s[i:i + n]) for s in samples for i in range(len(s) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def strategy_scores(samples: Sequence[Sequence[int]], logprobs: Sequence[Sequence[float]], n_samples: int,
                    *, deterministic: bool = False) -> dict[str, float]:
    """One strategy's row of a comparison over n_samples samples: mean average log p, distinct-1 and distinct-2.

    Diversity is measured across the samples: a strategy that writes the same text every time is not diverse, however
    varied that one text is. A deterministic strategy (greedy) is run once: its n_samples samples would all be that
    text, so it is counted n_samples times (over a single sample greedy came out as the most diverse strategy)."""
    if n_samples < 1 or len(samples) != len(logprobs):
        raise ValueError("give at least one sample, and one list of log-probabilities per sample.")
    expected = 1 if deterministic else n_samples
    if len(samples) != expected:
        raise ValueError(f"expected {expected} sample(s) for this strategy, got {len(samples)}.")
    repeat = n_samples if deterministic else 1
    runs = [list(s) for s in samples] * repeat
    return {"avg log p": sum(average_logprob(lp) for lp in logprobs) / len(logprobs),
            "distinct-1": distinct_n(runs, 1), "distinct-2": distinct_n(runs, 2)}


__all__ = [
    "EOS_ID", "GREEDY", "GenStep", "STOP_MESSAGES", "Sampling", "as_sampling", "average_logprob", "decode_loop",
    "distinct_n", "filter_distribution", "generate", "last_rows", "sci_from_log", "score", "score_stepwise",
    "sequence_logprob", "sequence_prob", "sequence_sentence", "stop_message", "strategy_scores", "teacher_forced",
    "top_k_mask", "top_p_mask"
]
