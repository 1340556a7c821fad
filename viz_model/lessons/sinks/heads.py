"""Which heads read the first token: the mean weight each head puts on key 0 over every later query of
the held-out texts, whatever that token is (an attention sink)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from viz_model.lessons.sinks.text import BATCH, _padded, check_model
from viz_model.model import TinyTransformer, eval_mode


@torch.no_grad()
def first_token_share(model: TinyTransformer, seqs: Sequence[Sequence[int]]) -> np.ndarray:
    """(L, H): the mean weight each head puts on key 0, over every query from position 1 on of every text (query 0
    can only read key 0). Right padding: causal, so a pad never reaches a real row."""
    check_model(model)
    total, count = None, 0
    with eval_mode(model):
        for i in range(0, len(seqs), BATCH):
            chunk = seqs[i: i + BATCH]
            probs = model(_padded(chunk, model.config.pad_id).to(model.device), trace=True).trace.stack("probs")
            valid = torch.zeros(probs.shape[1], probs.shape[3])  # (B, T)
            for j, s in enumerate(chunk):
                valid[j, 1: len(s)] = 1.0
            part = (probs[..., :, 0].double() * valid[None, :, None, :]).sum(dim=(1, 3))  # (L, H)
            total = part if total is None else total + part
            count += int(valid.sum())
    return (total / count).numpy()


def top_head(share: np.ndarray) -> tuple[int, int, float]:
    layer, head = np.unravel_index(int(np.argmax(share)), share.shape)
    return int(layer), int(head), float(share[layer, head])


def share_sentence(share: np.ndarray, first: str) -> str:
    layer, head, top = top_head(share)
    many = int((share > 0.5).sum())
    return (f"Layer {layer} head {head} puts the most weight on the first token ({first}): {top:.2f} of every "
            f"row on average. {many} of {share.size} heads put more than half of their weight there.")


# -- what the page says ------------------------------------------------------------------------------------------
SHARE_TITLE = "Share of each head's attention on the first token"
SHARE_CAPTION = ("Each cell: the mean weight a head puts on key 0, over every query from position 1 on of {n} "
                 "held-out texts ({source}). Query 0 is left out: it can only read key 0.")
