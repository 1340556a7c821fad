"""The numbers a lecture states about its model, computed from the model when the step is shown (#39).

A lecture never types a number about the model: it writes a placeholder (the grammar is in `viz_model.lectures`'
docstring), the parser checks it and keeps it on the step as a `Number`, and this module turns each one into its
text for a given model:

    {{params}} {{layers}} {{heads}} {{d_model}} {{d_k}} {{d_ff}} {{vocab}} {{context}}   the model's settings
    {{attention layer=L head=H query="it" key="trophy" text="..."}}                      a measured weight, 0.00-1.00

An attention weight is read as the Explorer shows it: the sentence encoded for this model (its start token in front
where it uses one), one pass in eval mode, head H of layer L, the row of the query word, the column of the key word.
A word is matched against the tokens case-blind, spaces aside, at its first occurrence; a word that the tokenizer
splits into pieces is a run of tokens: the query is its last piece (the one that has read the whole word), the key
is the sum of its pieces' weights (what the query takes from the whole word).
"""

from __future__ import annotations

from collections.abc import Sequence

from viz_model.checkpoint import Checkpoint
from viz_model.lectures import Number
from viz_model.lessons.common import layer_attention
from viz_model.model_text import encode_for, is_folder_model, uses_bos

UNKNOWN = "?"  # what a number that cannot be computed on this model shows, beside a note that says why


def model_fact(ckpt: Checkpoint, name: str) -> str:
    """One of lectures.MODEL_FACTS, as the Start page's model card writes it (thousands separated)."""
    model, cfg = ckpt.model, ckpt.model.config
    params = (ckpt.metadata or {}).get("n_params") if is_folder_model(ckpt) else None
    values = {"params": int(params or model.num_params()), "layers": cfg.n_layers, "heads": cfg.n_heads,
              "d_model": cfg.d_model, "d_k": cfg.d_k, "d_ff": cfg.d_ff, "vocab": cfg.vocab_size,
              "context": cfg.max_len}
    return f"{values[name]:,}"


def _plain(token: str) -> str:
    return token.replace("␣", " ").strip().lower()


def word_span(tokens: Sequence[str], word: str) -> range | None:
    """The tokens that spell `word` (case-blind, spaces aside) at its first occurrence, or None."""
    want = word.strip().lower()
    for i in range(len(tokens)):
        spelled = ""
        for j in range(i, len(tokens)):
            spelled += _plain(tokens[j])
            if spelled == want and _plain(tokens[i]):
                return range(i, j + 1)
            if not want.startswith(spelled):
                break
    return None


def attention_weight(ckpt: Checkpoint, layer: int, head: int, query: str, key: str, text: str) -> float:
    """The weight `query` puts on `key` in head `head` of layer `layer`, on `text` (see the module's docstring).
    ValueError, with a sentence, when the model has no such layer or head or the text no such word."""
    cfg = ckpt.model.config
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"this model has layers 0 to {cfg.n_layers - 1} and heads 0 to {cfg.n_heads - 1}, "
                         f"not layer {layer}, head {head}")
    enc = encode_for(ckpt, text, max_len=cfg.max_len, bos=uses_bos(ckpt))
    spans = {w: word_span(enc.tokens, w) for w in (query, key)}
    missing = [w for w, span in spans.items() if span is None]
    if missing:
        raise ValueError(f"“{missing[0]}” is not a word of “{text[:60]}” as this model reads it")
    probs, _ = layer_attention(ckpt.model, enc.ids, layer)  # (H, T, T)
    return float(probs[head, spans[query][-1], list(spans[key])].sum())


def number_text(ckpt: Checkpoint, number: Number) -> str:
    """A placeholder's text on this model: a fact as an integer, a weight with two decimals."""
    if number.name != "attention":
        return model_fact(ckpt, number.name)
    weight = attention_weight(ckpt, int(number.arg("layer")), int(number.arg("head")), number.arg("query"),
                              number.arg("key"), number.arg("text"))
    return f"{weight:.2f}"


def step_values(ckpt: Checkpoint, numbers: Sequence[Number]) -> tuple[dict[str, str], list[str]]:
    """({placeholder as written: its text}, notes): a number this model cannot give shows UNKNOWN and a note says
    why (a lecture written for another model, a word this tokenizer reads differently)."""
    values: dict[str, str] = {}
    notes: list[str] = []
    for number in numbers:
        if number.source in values:
            continue
        try:
            values[number.source] = number_text(ckpt, number)
        except ValueError as err:
            values[number.source] = UNKNOWN
            notes.append(f"A number of this step cannot be computed on this model ({err}), so it shows {UNKNOWN}.")
    return values, notes


def fill(text: str, values: dict[str, str]) -> str:
    """`text` with each placeholder replaced by its value."""
    for source, value in values.items():
        text = text.replace(source, value)
    return text
