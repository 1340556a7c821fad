"""Widgets every page uses: the sentence box with lecture examples, token chips, and ✓/✗ check lines."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.lecture import EXAMPLES
from viz_model.tokenizer import BOS, Encoded, encode, load_tokenizer
from viz_model.ui import share

CUSTOM = "(type your own)"


MAX_CHARS = 5000


def sentence_input(prefix: str, ckpt: Checkpoint, max_tokens: int | None = None,
                   default: str = EXAMPLES[1]) -> Encoded:
    """Example picker + text box; stops the page with a clear message when there is nothing to show."""
    cfg = ckpt.model.config
    limit = min(cfg.max_len, max_tokens or cfg.max_len)
    share.bind_text("text", f"{prefix}_text", f"{prefix}_example", f"{prefix}_last_example", EXAMPLES, CUSTOM)
    c1, c2 = st.columns([1, 2])
    example = c1.selectbox("Example from the lecture", [CUSTOM, *EXAMPLES], index=1 + EXAMPLES.index(default),
                           key=f"{prefix}_example")
    if st.session_state.get(f"{prefix}_last_example") != example and example != CUSTOM:
        st.session_state[f"{prefix}_text"] = example  # picking an example fills the box
    st.session_state[f"{prefix}_last_example"] = example
    text = c2.text_input("Sentence", key=f"{prefix}_text", max_chars=MAX_CHARS,
                         help="Any text; it is cut to the model's context length.")
    bos = uses_bos(ckpt)
    enc = encode(ckpt.tokenizer, text, max_len=limit, bos=bos)
    if enc.truncated:
        st.info(f"Your text has {enc.n_tokens_total} tokens; this view reads at most {limit}, "
                f"so only the first {limit} are used.")
    if len(enc.ids) <= int(bos):
        st.warning("Type at least one word (the box is empty or holds only spaces) to see attention.")
        share.stop()
    if bos:
        st.caption("A `<bos>` token is put in front, as in training: many heads park their spare attention on it.")
    if enc.unknown:
        st.caption("Words this model has never seen become `<unk>`: "
                   + ", ".join(f"`{w}`" for w in dict.fromkeys(enc.unknown[:12])))
    return enc


def uses_bos(ckpt: Checkpoint) -> bool:
    """Shipped models were trained on '<bos> text' (metadata "bos"); feed them the same."""
    return bool((ckpt.metadata or {}).get("bos")) and ckpt.tokenizer.token_to_id(BOS) is not None


def token_chips(enc: Encoded) -> None:
    """Tokens as a row of labelled cells with their ids (st.dataframe: no HTML, shown exactly as typed).

    Built as an all-string Arrow table: a transposed pandas frame of mixed types is slow to convert at T = 64.
    """
    cols = {"": ["token", "vocabulary entry", "id"]}
    cols.update({str(i): [t, p, str(x)] for i, (t, p, x) in enumerate(zip(enc.tokens, enc.pieces, enc.ids))})
    st.dataframe(pa.table(cols), hide_index=True, width="stretch")


def tokenizer_comparison(text: str, model_tok) -> pd.DataFrame | None:
    """The same text under the shipped BPE tokenizer vs the model's own (word) tokenizer."""
    try:
        bpe = load_tokenizer("bpe")
    except ValueError:
        return None
    a, b = encode(model_tok, text, max_len=64), encode(bpe, text, max_len=64)
    n = max(len(a.ids), len(b.ids))
    pad = lambda xs: [*xs, *[""] * (n - len(xs))]  # noqa: E731
    return pd.DataFrame({"word (the model's)": pad(a.pieces), "word id": pad([str(i) for i in a.ids]),
                         "bpe piece": pad(b.pieces), "bpe id": pad([str(i) for i in b.ids])})


def check_line(ok: bool, text: str) -> None:
    (st.success if ok else st.error)(("✓ " if ok else "✗ ") + text)


def verdict(error: float, tol: float, claim: str) -> None:
    """✓ with the measured error when the claim holds, ✗ otherwise."""
    ok = error <= tol
    check_line(ok, f"{claim} (max error {error:.1e})" if ok else
               f"{claim} — failed here: max error {error:.1e} (tolerance {tol:.0e})")


def token_id(ckpt: Checkpoint, word: str) -> int | None:
    enc = encode(ckpt.tokenizer, word)
    return enc.ids[0] if enc.ids and not enc.unknown else None
