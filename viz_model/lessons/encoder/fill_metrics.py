"""The English encoder's held-out measurement: fill-in accuracy on WordNet text it never trained on, against a
unigram baseline that guesses from token counts alone."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model import data
from viz_model.english import encode_lines, load_heldout
from viz_model.mlm import N_SPECIAL
from viz_model.model import TinyTransformer, eval_mode
from viz_model.tokenizer import MASK

FILL_P, FILL_SEED = 0.15, 0   # each ordinary token of a held-out text is hidden with this probability


@dataclass(frozen=True)
class Unigram:
    """Token frequencies of the training text: the baseline that fills every blank from counts alone, ignoring
    the sentence (its best guess is the most frequent token everywhere). Add-one smoothed over ordinary tokens."""

    probs: torch.Tensor    # (V,) 0 for the special tokens
    ranked: list[int]      # the 5 most frequent ordinary tokens, most frequent first

    @classmethod
    def fit(cls, seqs, vocab_size: int) -> Unigram:
        flat = torch.tensor([i for s in seqs for i in s], dtype=torch.long)
        counts = torch.bincount(flat, minlength=vocab_size).double() + 1.0   # (V,)
        counts[:N_SPECIAL] = 0.0
        probs = counts / counts.sum()
        return cls(probs, probs.topk(5).indices.tolist())


def fill_in_items(tokenizer, texts: list[str], max_len: int, p: float = FILL_P, seed: int = FILL_SEED
                  ) -> list[tuple[list[int], list[int]]]:
    """(<bos> ids <eos> cut to max_len, the positions to hide) per text: each ordinary token is hidden with
    probability p (at least one per text), all drawn from one seeded generator: the same blanks on every machine."""
    gen = torch.Generator().manual_seed(seed)
    items = []
    for ids in encode_lines(tokenizer, texts):
        ids = ids[: max_len - 1] + [ids[-1]]                        # keep the <eos>
        draw = torch.rand(len(ids), generator=gen)
        ordinary = [t for t, i in enumerate(ids) if i >= N_SPECIAL]
        if not ordinary:
            continue
        hidden = [t for t in ordinary if draw[t] < p] or [ordinary[int(draw[0] * len(ordinary))]]
        items.append((ids, hidden))
    return items


@torch.no_grad()
def fill_in_accuracy(model: TinyTransformer, tokenizer, texts: list[str], unigram_ranked: list[int],
                     batch_size: int = 64) -> dict[str, float | int]:
    """Every hidden token of the held-out texts replaced by <mask> (as a student types it), the encoder run once per
    text: top-1 and top-5 accuracy and mean cross-entropy (nats) over the hidden tokens, beside the unigram
    baseline's top-1 and top-5 (its ranked tokens guessed at every blank)."""
    items = fill_in_items(tokenizer, texts, model.config.max_len)
    pad, mask_id = tokenizer.token_to_id("<pad>"), tokenizer.token_to_id(MASK)
    top1 = top5 = 0
    loss = 0.0
    answers_all = []
    with eval_mode(model):
        for i in range(0, len(items), batch_size):
            chunk = items[i: i + batch_size]
            ids = data.pad_right([s for s, _ in chunk], pad)                       # (B, T)
            inputs = ids.clone()
            for row, (_, hidden) in enumerate(chunk):
                inputs[row, hidden] = mask_id
            logits = model(inputs.to(model.device), key_padding_mask=(ids != pad).to(model.device)).logits
            for row, (_, hidden) in enumerate(chunk):
                lp = torch.log_softmax(logits[row, hidden].float(), dim=-1).cpu()  # (k, V)
                answers = ids[row, hidden]                                        # (k,)
                best = lp.topk(5, dim=-1).indices                                  # (k, 5)
                top1 += int((best[:, 0] == answers).sum())
                top5 += int((best == answers[:, None]).any(-1).sum())
                loss -= float(lp.gather(-1, answers[:, None]).sum())
                answers_all += answers.tolist()
    n = len(answers_all)
    answers = torch.tensor(answers_all)
    ranked = torch.tensor(unigram_ranked[:5])
    return {"fill_top1": top1 / n, "fill_top5": top5 / n, "fill_loss": loss / n,
            "unigram_top1": float((answers == ranked[0]).float().mean()),
            "unigram_top5": float((answers[:, None] == ranked).any(-1).float().mean()),
            "n_texts": len(items), "n_masked": n}


def heldout_fill_texts(excluded: list[int] = ()) -> list[str]:
    """The WordNet test-split sample shipped with the English model (assets/english_heldout.json), less the texts
    at `excluded` (those that also occur, word for word, in the training text: the build records them)."""
    drop = set(excluded)
    return [t for i, t in enumerate(load_heldout()["wordnet"]) if i not in drop]


def fill_in_metrics(model: TinyTransformer, tokenizer, meta: dict) -> dict[str, float | int]:
    """fill_in_accuracy recomputed now on the texts the build measured (the unigram's ranked tokens from `meta`)."""
    return fill_in_accuracy(model, tokenizer, heldout_fill_texts(meta.get("heldout_excluded", [])),
                            meta["unigram_ranked"])


def unigram_loss(unigram: Unigram, tokenizer, texts: list[str], max_len: int) -> float:
    """The unigram baseline's mean cross-entropy (nats) on the same hidden tokens as fill_in_accuracy."""
    answers = [ids[t] for ids, hidden in fill_in_items(tokenizer, texts, max_len) for t in hidden]
    return float(-unigram.probs[answers].log().mean())
