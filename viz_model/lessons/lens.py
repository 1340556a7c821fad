"""What the Logit lens page proves (nostalgebraist, 2020): the residual stream after the embeddings and after each
block, read through the model's own final norm (ln_f) and unembedding (head), is a next-token distribution at every
position. The last reading is the model's output itself (checked live); the earlier ones show when the final
prediction appears.

One pass of the model: forward(trace_layers=()) records Trace.residual (the stream after each block) and no attention
at all, and gives the logits. Only what the page shows is kept: per (layer, position) the top-k tokens and their
probabilities, and the rank and probability of the model's final prediction (torch)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.lessons.common import Check
from viz_model.model import TinyTransformer, eval_mode
from viz_model.model_text import md_token

TOP_K = 5                 # the hover's top tokens per cell
MAX_T = 64                # the heatmap reads at most this many positions (a real model's context is far longer)
LOGIT_BUDGET = 1 << 26    # (layers + 1) x T x vocab logits one view may compute: GPT-2 small reads 101 tokens
CHUNK = 1 << 23           # logits per read-out matmul (32 MB of float32): bounds a view's memory, not its count
LENS_TOL = 1e-5           # float32 softmax of the same logits through another BLAS kernel: |Δp| ~ 1e-7


def row_names(n_layers: int) -> list[str]:
    """The lens's rows, bottom to top: the stream entering block 0, then the stream after each block."""
    return ["embeddings", *(f"layer {i}" for i in range(n_layers))]


def max_tokens(model: TinyTransformer, limit: int = MAX_T) -> int:
    """How many tokens the lens reads on this model: the view's cap, the model's context and the server's budget of
    logits (every row computes T x vocab of them); ValueError when the model is too large for even two tokens."""
    cfg = model.config
    fit = LOGIT_BUDGET // ((cfg.n_layers + 1) * cfg.vocab_size)
    if fit < 2:
        raise ValueError(f"This model is too large for the logit lens on a shared server: each token needs "
                         f"{cfg.n_layers + 1} × {cfg.vocab_size:,} logits, more than its budget of {LOGIT_BUDGET:,}.")
    return int(min(limit, cfg.max_len, fit))


@torch.no_grad()
def streams(model: TinyTransformer, ids: Sequence[int]) -> tuple[list[torch.Tensor], torch.Tensor]:
    """(the residual stream after the embeddings and after each block, each (T, d_model); the model's own logits
    (T, vocab)), from one pass that traces no attention."""
    if len(ids) == 0:
        raise ValueError("Type at least one word: the lens needs a token to read.")
    x = torch.tensor([list(ids)], device=model.device)  # (1, T)
    with eval_mode(model):
        out = model(x, trace_layers=())
    tr = out.trace
    first = tr.embeddings + tr.positional  # what enters block 0 (dropout is off in eval mode)
    return [first[0], *(r[0] for r in tr.residual)], out.logits[0]


def read_logits(model: TinyTransformer, h: torch.Tensor) -> torch.Tensor:
    """One stream (T, d_model) through the model's final norm and unembedding: next-token logits (T, vocab)."""
    return model.head(model.ln_f(h)).float()


def read_out(model: TinyTransformer, h: torch.Tensor) -> torch.Tensor:
    """One stream (T, d_model) read out as next-token probabilities (T, vocab)."""
    return torch.softmax(read_logits(model, h), dim=-1)


@torch.no_grad()
def logit_lens(model: TinyTransformer, ids: Sequence[int]) -> torch.Tensor:
    """(n_layers, T, vocab): the probabilities read after each block; the last row is the model's own output."""
    with eval_mode(model):
        hs, _ = streams(model, ids)
        return torch.stack([read_out(model, h) for h in hs[1:]]).cpu()


@dataclass(frozen=True)
class LensView:
    """What the page shows, (rows = embeddings + n_layers): top_ids/top_p (rows, T, k), the model's own prediction
    at each position final_ids (T,) with its rank (1 = top) and probability at every row (rows, T), and the last row
    against the model's output: max |Δp| and KL over every position."""

    top_ids: np.ndarray
    top_p: np.ndarray
    final_ids: np.ndarray
    final_rank: np.ndarray
    final_p: np.ndarray
    max_dp: float
    kl: float

    @property
    def n_rows(self) -> int:
        return self.top_ids.shape[0]


@torch.no_grad()
def lens_view(model: TinyTransformer, ids: Sequence[int], k: int = TOP_K) -> LensView:
    """One pass, then the rows read out a few at a time (one matmul per chunk of CHUNK logits: GPT-2 small's 13 rows
    at T = 32 in 3 matmuls, half the time of 13) and cut at once to what is shown: no (rows, T, vocab) tensor is
    kept. Top-k and ranks come from the logits; probabilities are exp(logit - logsumexp)."""
    with eval_mode(model):
        hs, logits = streams(model, ids)
        own = torch.softmax(logits.float(), dim=-1)  # (T, vocab): the model's output distribution
        final = own.argmax(-1)[None, :, None]  # (1, T, 1)
        T, V = own.shape
        step = max(1, CHUNK // (T * V))
        tops, top_p, ranks, fin_p = [], [], [], []
        for at in range(0, len(hs), step):
            z = read_logits(model, torch.stack(hs[at:at + step]))  # (c, T, vocab)
            lse = torch.logsumexp(z, dim=-1, keepdim=True)  # (c, T, 1)
            zt, i = z.topk(min(k, V), dim=-1)
            zf = z.gather(-1, final.expand(len(z), T, 1))  # (c, T, 1): the final prediction's logit
            tops.append(i.cpu())
            top_p.append((zt - lse).exp().cpu())
            # ranked by logit: far down the list float32 probabilities underflow to ties at 0
            ranks.append(((z > zf).sum(-1) + 1).cpu())
            fin_p.append((zf - lse)[..., 0].exp().cpu())
        last = torch.softmax(z[-1], dim=-1)  # the last row: the model's own output, read again
    dp = float((last - own).abs().max())
    kl = float((own * (own.clamp_min(1e-30).log() - last.clamp_min(1e-30).log())).sum(-1).max())
    return LensView(torch.cat(tops).numpy(), torch.cat(top_p).double().numpy(), final[0, :, 0].cpu().numpy(),
                    torch.cat(ranks).numpy(), torch.cat(fin_p).double().numpy(), dp, max(kl, 0.0))


def top_texts(view: LensView, label: Callable[[Sequence[int]], list[str]]) -> list[list[list[str]]]:
    """[row][position][k] the top tokens' texts, each distinct id labelled once (label: ids -> texts)."""
    uniq = np.unique(view.top_ids)
    text = dict(zip(uniq.tolist(), label(uniq.tolist())))
    return [[[text[int(i)] for i in cell] for cell in row] for row in view.top_ids]


def lens_claims(view: LensView) -> list[Check]:
    """The last row of the lens is the model's own output distribution (the same norm and head on the same stream)."""
    T = view.top_ids.shape[1]
    return [Check(view.max_dp, LENS_TOL, f"the last layer's lens equals the model's own output distribution: max "
                                         f"|Δp| over {T} position(s) × every token of the vocabulary "
                                         f"(KL {view.kl:.1e} nats at most)")]


def first_top(view: LensView, pos: int) -> int:
    """The first row (0 = embeddings) where the model's final prediction at `pos` is the lens's top token."""
    return int(np.flatnonzero(view.final_rank[:, pos] == 1)[0])


def row_groups(n_rows: int, most: int = 16) -> list[tuple[str, list[int]]]:
    """The rows as a question's choices: one each, or (a model of more than `most` rows) `most` runs of neighbours,
    named by their first and last row ("layers 4–7")."""
    names = row_names(n_rows - 1)
    groups = [g.tolist() for g in np.array_split(np.arange(n_rows), min(n_rows, most))]
    return [(names[g[0]] if len(g) == 1 else f"{names[g[0]]} – {names[g[-1]]}", g) for g in groups]


def stays_top(view: LensView, pos: int) -> bool:
    """Whether the final prediction stays the top token at every row from its first one up."""
    return bool((view.final_rank[first_top(view, pos):, pos] == 1).all())


# -- sentences computed from the numbers ----------------------------------------------------------------------
def _q(text: str) -> str:
    """A token inside a sentence drawn as Markdown: a code span, so '*x*' or '<b>' shows as typed."""
    return md_token(text.strip() or text)


def position_sentence(view: LensView, pos: int, tokens: Sequence[str], label: Callable[[int], str]) -> str:
    """When the final prediction at `pos` becomes the top token, and whether it stays there."""
    rows = row_names(view.n_rows - 1)
    first, final = first_top(view, pos), label(int(view.final_ids[pos]))
    where = f"After {_q(tokens[pos])} (position {pos}) the model predicts {_q(final)}"
    p_last = view.final_p[-1, pos]
    if first == view.n_rows - 1:
        return (f"{where} ({p_last:.0%}). It becomes the lens's top token only at the last layer: before that its best "
                f"rank is {int(view.final_rank[:-1, pos].min()):,}.")
    kept = ("and stays top in every layer above" if stays_top(view, pos) else
            "loses the top place again further up, and wins it back by the last layer")
    at = "the embeddings" if first == 0 else rows[first]
    return (f"{where} ({p_last:.0%}). It is already the lens's top token after {at} "
            f"({view.final_p[first, pos]:.0%} there), {kept}.")


def embedding_sentence(view: LensView, ids: Sequence[int], tied: bool, label: Callable[[int], str]) -> str:
    """What the embeddings alone predict: how often their top token is the input token itself, and how often it is
    already the model's final prediction."""
    T = len(ids)
    echo = int((view.top_ids[0, :, 0] == np.asarray(ids)).sum())
    agree = int((view.top_ids[0, :, 0] == view.final_ids).sum())
    why = (" With tied weights the unembedding is the embedding matrix, so a token's own row tends to read itself "
           "back." if tied and echo else "")
    return (f"The embeddings alone (no block run yet) make the input token itself the top prediction at {echo} of {T} "
            f"position(s), and the model's final prediction at {agree} of {T}.{why} Example: after "
            f"{_q(label(ids[-1]))} they read {_q(label(int(view.top_ids[0, -1, 0])))} ({view.top_p[0, -1, 0]:.0%}).")


def agreement(view: LensView) -> list[float]:
    """Per row: the share of positions whose top token is already the model's final prediction."""
    return [float(x) for x in (view.final_rank == 1).mean(axis=1)]


def agreement_sentence(view: LensView) -> str:
    rows, share = row_names(view.n_rows - 1), agreement(view)
    return ("Share of positions whose top token is already the final prediction: "
            + ", ".join(f"{r} {s:.0%}" for r, s in zip(rows, share)) + ".")


# -- what the page says ---------------------------------------------------------------------------------------
INTRO = ("Each block adds to the **residual stream**, the vector every position carries from the embeddings to the "
         "output. The **logit lens** (nostalgebraist, 2020) reads that stream early: it puts the stream after each "
         "layer through the model's own final norm and unembedding, as if the model stopped there, and gets a "
         "next-token distribution at every position. The last reading is the model's output itself.")
CAVEAT = ("The final norm and unembedding were trained to read the **last** layer's stream, so "
          "an early layer read through them is biased; a prediction that appears late in the lens may be present "
          "earlier in a form this head cannot read. The *tuned lens* (Belrose et al., 2023) trains one small "
          "translator per layer to fix that; this page does not train one. Read early rows as a hint, not a "
          "measurement of what the layer knows.")
HEATMAP_NOTE = ("Each cell: the lens's top next-token at that layer (row) and position (column), coloured by its "
                "probability. Hover a cell for its top 5.")
ONE_TOKEN = "One token: the lens reads one position. Type more words to see the prediction form along the sentence."
RANK_NOTE = ("Rank 1 means the lens's top token is already the model's final prediction; the rank axis is logarithmic, "
             "so a fall from rank 1,000 to 100 looks as long as one from 10 to 1.")
