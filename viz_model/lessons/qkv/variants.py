"""Four ways to make q, k and v: separate W_Q, W_K, W_V, shared Q = K, shared K = V, or none (raw X);
which shipped model is which, and one sentence run through a model, traced."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace

import torch

from viz_model.config import QKV_MODES
from viz_model.model import TinyTransformer, Trace, eval_mode
from viz_model.model_text import md_text
from viz_model.tokenizer import Encoded, encode

VARIANT_LABELS = {"separate": "separate W_Q, W_K, W_V", "shared_qk": "shared Q = K", "shared_kv": "shared K = V",
                  "none": "raw X (XXᵀ attention)"}


SHIPPED = {"separate": "classroom", "shared_qk": "qkv-shared_qk", "shared_kv": "qkv-shared_kv", "none": "qkv-none"}


def label(variant: str) -> str:
    return VARIANT_LABELS.get(variant, variant)


def lesson_text(enc: Encoded, raw: str) -> str:
    """The text the lesson functions encode: the typed text, or what is left of it after truncation."""
    if not enc.truncated:
        return raw
    return " ".join(t for t in enc.tokens if t != "<bos>")


def default_query(tokens: list[str]) -> int:
    """The query the lookup opens on: 'sat' if the sentence has it, else the last token."""
    lower = [t.lower() for t in tokens]
    return lower.index("sat") if "sat" in lower else len(tokens) - 1


def encode_sentence(model: TinyTransformer, tok, text: str, allow_unknown: bool = True) -> tuple[list[int], list[str]]:
    """'<bos> text' as ids and labels; ValueError for an empty, too long or (optionally) unknown-word text."""
    enc = encode(tok, text, bos=True)
    if len(enc.ids) < 2:
        raise ValueError("type a sentence: there is nothing to attend to.")
    if len(enc.ids) > model.config.max_len:
        raise ValueError(f"this model reads at most {model.config.max_len - 1} words; the text has "
                         f"{len(enc.ids) - 1}.")
    if enc.unknown and not allow_unknown:
        raise ValueError(f"the model does not know {', '.join(repr(w) for w in enc.unknown)}; use words of the "
                         "classroom corpus.")
    return enc.ids, enc.tokens


@torch.no_grad()
def traced(model: TinyTransformer, ids: Sequence[int]) -> Trace:
    """One traced forward pass in eval mode (the model's train/eval mode is restored)."""
    with eval_mode(model):
        return model(torch.tensor([list(ids)], device=model.device), trace=True).trace


def _check_head(model: TinyTransformer, layer: int, head: int) -> None:
    cfg = model.config
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"choose a layer in 0..{cfg.n_layers - 1} and a head in 0..{cfg.n_heads - 1}.")


def qkv_variants(spec):
    """The four runs of a qkv ablation: `spec` (a dataclass with a `qkv` field, e.g. TrainSpec) with each mode."""
    if "qkv" not in {f.name for f in fields(spec)}:
        raise ValueError("this run spec has no 'qkv' setting, so it cannot be varied.")
    return [replace(spec, qkv=mode) for mode in QKV_MODES]


def or_list(names: Sequence[str]) -> str:
    """“a”, “b” or “c”: names quoted as literal Markdown."""
    quoted = [f"“{md_text(n)}”" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def variant_note(variant: str, model_key: str, others: Sequence[str]) -> str:
    """Which variant the sidebar model is and what that means for q, k and v; for the separate one, which of the
    other shipped variants (`others`, as the Model picker names them) to pick."""
    where = f"the shipped `{model_key}`, " if model_key in SHIPPED.values() else ""
    text = f"The sidebar model ({where}**{label(variant)}**): {HOW.get(variant, '')}"
    if variant != "separate":
        return text + " It is not the usual separate-projection model."
    return text + (f" Pick {or_list(others)} in the sidebar's Model picker to see the others." if others else "")


# -- what the page says ------------------------------------------------------------------------------------------
HOW = {"separate": "q, k and v come from three separate projections W_Q, W_K, W_V.",
       "shared_qk": "q and k come from one projection (W_Q = W_K): q·k is the same both ways, only RoPE's rotation "
                    "differs between positions.",
       "shared_kv": "k and v come from one projection (W_K = W_V): v is k before RoPE's rotation, so what a token is "
                    "found by is also what it hands over.",
       "none": "there are no projections: q, k and v are the normed input itself (q and k rotated by RoPE), XXᵀ "
               "attention."}
TRAIN_TEXT = ("Train them yourself: the Train page's **Compare setups** tab retrains the four variants live, side by "
              "side, and overlays their loss curves (pick **Q, K and V** under **Vary** there).")
