"""Widgets every page uses: the sentence box with lecture examples, token chips, notices and ✓/✗ check lines. How a
model reads text (its special tokens, labels, unknown words) is viz_model.model_text."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pyarrow as pa
import streamlit as st
from streamlit.errors import StreamlitAPIException

from viz_model.checkpoint import TRANSFORMER, Checkpoint
from viz_model.figures.classview import hidden_values
from viz_model.lecture import EXAMPLES
from viz_model.lessons import classview
from viz_model.lessons.common import Claim, Fact, WrongWay
from viz_model.model_text import (
    case_note,
    encode_for,
    is_folder_model,
    md_text,
    reading_note,
    specials_text,
    tokenizer_columns,
    unknown_words_text,
    uses_bos,
)
from viz_model.runtime.class_mode import CODE, FOLLOW_KEY
from viz_model.tokenizer import PAD, Encoded
from viz_model.ui import share
from viz_model.ui.models import ENGLISH_MODEL, available_models

CUSTOM = "(your own)"


MAX_CHARS = 5000
FOLDER_VIEW_TOKENS = 64  # a real model's context is 1k-128k tokens; a view of every head reads at most this many


def sentence_input(prefix: str, ckpt: Checkpoint, max_tokens: int | None = None,
                   default: str = EXAMPLES[1], specials: tuple[str, ...] = ()) -> Encoded:
    """Example picker + text box; stops the page with a clear message when there is nothing to show. `specials`:
    the special tokens this lesson lets a student type (encode_text); any other is read as plain text."""
    cfg = ckpt.model.config
    limit = min(cfg.max_len, max_tokens or cfg.max_len)
    if is_folder_model(ckpt):
        limit = min(limit, FOLDER_VIEW_TOKENS)
    # The padded lecture sentence teaches the padding mask: offered where a typed <pad> is the token (Masks), not
    # where it would be plain text.
    examples = list(EXAMPLES) if PAD in specials else [e for e in EXAMPLES if "<pad>" not in e.lower()]
    text = example_text(f"{prefix}_text", f"{prefix}_example", examples, default, "Sentence",
                        help="Any text; it is cut to the model's context length.", picker="Example from the lecture")
    enc = encode_text(ckpt, text, max_len=limit, bos=uses_bos(ckpt), specials=specials)
    text_notes(enc, cut=f"Your text has {enc.n_tokens_total} tokens; this view reads at most {limit}, so only the "
                        f"first {limit} are used.",
               empty="Type at least one word (the box is empty or holds only spaces) to see attention.",
               min_ids=int(uses_bos(ckpt)), caption=reading_note(ckpt), unknown=not is_folder_model(ckpt))
    return enc


@share.in_slot
def text_notes(enc: Encoded, *, cut: str, empty: str, min_ids: int = 0, caption: str | None = None,
               unknown: bool = True, **unknown_kw) -> None:
    """What a page says about a typed text as read, in one slot (share.in_slot): cut; empty (the page stops: the
    settings below keep their values, persist_state); how it is read; words read as <unk> (unknown_notice's kw)."""
    if enc.truncated:
        st.info(cut)
    if len(enc.ids) <= min_ids:
        st.warning(empty)
        st.stop()
    if caption:
        st.caption(caption)
    if enc.unknown and unknown:
        unknown_notice(enc.unknown, **unknown_kw)


MODEL_KEY = "model_key"  # the sidebar's model picker (ui.sidebar.MODEL_KEY; sidebar imports this module's peers)


def unknown_notice(words: list[str], verb: str = "become", offer_english: bool = True) -> None:
    """Name the words a word-level model reads as <unk>, and (where the sidebar's model is the one reading them)
    offer one click to the English model with the same sentence: the text box keeps its value, the link changes
    only its model_key."""
    st.caption(f"Words this model has never seen {verb} `<unk>`: {unknown_words_text(words)}")
    current = st.session_state.get(MODEL_KEY)
    if (offer_english and current != ENGLISH_MODEL
            and any(e.key == ENGLISH_MODEL for e in available_models((TRANSFORMER,)))):
        st.button("Read it with the English model (knows any word)", key="unknown_to_english",
                  icon=":material/translate:", on_click=_pick_model, args=(ENGLISH_MODEL,),
                  help="Switches the sidebar's model to the English model; your sentence stays.")


def _pick_model(key: str) -> None:
    st.session_state[MODEL_KEY] = key


def row():
    """A line of controls side by side: one horizontal container, the controls sharing its width.

    Not st.columns for a plain row of controls: Streamlit sends every block as a message of its own, and
    st.columns([...]) is the row plus one block per column (a row of four controls: five messages, here one). Each
    message hands the server's GIL from the script to the event loop; on the pages with most controls that
    per-message work was most of what a rerun cost beyond its charts (bench/class_load.py saturation)."""
    return st.container(horizontal=True, gap="medium", vertical_alignment="bottom")


def layer_head(prefix: str, n_layers: int, n_heads: int, *, where=None, default: tuple[int, Any] = (0, None),
               heads=None, layer_label: str = "Layer", **kwargs) -> tuple[int, Any]:
    """The one Layer and Head picker pair, keys `{prefix}_layer` and `{prefix}_head` (also the URL names): side by side
    in one row, or in `where` (two containers, e.g. columns beside other controls). `default`: the model-dependent
    first choice (a best head), as the pickers' own default; `heads`: other head options (e.g. "mean" first);
    `kwargs` go to the Head picker (a format_func, a width)."""
    layer_at, head_at = where if where is not None else (row(),) * 2
    layer = share.select(layer_at, layer_label, range(n_layers), f"{prefix}_layer", default=default[0],
                         **{k: v for k, v in kwargs.items() if k == "width"})
    head = share.select(head_at, "Head", list(range(n_heads)) if heads is None else heads, f"{prefix}_head",
                        default=default[1], **kwargs)
    return layer, head


def example_text(text_key: str, example_key: str, examples: list[str], default: str, label: str, *, help: str,
                 picker: str, limit: int = MAX_CHARS) -> str:
    """A text box (in the link, kept per session) with an example picker on its left that follows it: picking an
    example fills the box, typing your own shows CUSTOM. A paste over `limit` characters is cut, with a notice."""
    c1, c2 = st.columns([1, 2])
    text = sentence_text(c2, label, default, text_key, limit, help=help)
    share.follow_text(text_key, example_key, examples, CUSTOM)
    c1.selectbox(picker, [CUSTOM, *examples], key=example_key, on_change=share.pick_example,
                 args=(text_key, example_key, CUSTOM))
    return text


def encode_text(ckpt: Checkpoint, text: str, max_len: int | None = None, bos: bool = False,
                specials: tuple[str, ...] = (), notice: bool = True) -> Encoded:
    """model_text.encode_for (the model's own start token with bos, literal typed specials but `specials`); with
    notice the page says which typed special tokens were read as plain text."""
    enc = encode_for(ckpt, text, max_len=max_len, bos=bos, specials=specials)
    if notice:
        specials_notice(ckpt, enc.literal, specials)
    return enc


@share.in_slot
def specials_notice(ckpt: Checkpoint | None, literal: list[tuple[str, str]], kept: tuple[str, ...] = ()) -> None:
    """Say that special tokens typed in the text were read as plain text (model_text.specials_text)."""
    if said := specials_text(ckpt, literal, kept):
        st.info(said, icon=":material/text_fields:")


def page_link(page: str, label: str, icon: str) -> None:
    """A link to another lesson page (none in an app that does not register it, such as a test's bare app)."""
    try:
        st.page_link(page, label=label, icon=icon)
    except StreamlitAPIException:
        pass


def token_chips(enc: Encoded) -> None:
    """Tokens as a row of labelled cells with their ids (st.dataframe: no HTML, shown exactly as typed).

    Built as an all-string Arrow table: a transposed pandas frame of mixed types is slow to convert at T = 64.
    """
    cols = {"": ["token", "vocabulary entry", "id"]}
    cols.update({str(i): [t, p, str(x)] for i, (t, p, x) in enumerate(zip(enc.tokens, enc.pieces, enc.ids))})
    st.dataframe(pa.table(cols), hide_index=True, width="stretch")
    _case_caption(enc)


@share.in_slot
def _case_caption(enc: Encoded) -> None:
    if note := case_note(enc):
        st.caption(note)


def tokenizer_comparison(text: str, model_tok, other: str = "bpe") -> pd.DataFrame | None:
    """model_text.tokenizer_columns as a table (None when the shipped `other` tokenizer is not installed)."""
    cols = tokenizer_columns(text, model_tok, other)
    return None if cols is None else pd.DataFrame(cols)


def show_check(check: Claim) -> None:
    """The one way a computed claim (lessons.common.Check or Fact) reaches the page: ✓ in a success box or ✗ in an
    error box, with its measured error and tolerance for a Check. A WrongWay (a method shown failing on purpose) is a
    neutral "what goes wrong" note, not a ✗; if it did not go wrong here, a warning says so."""
    if isinstance(check, WrongWay):
        if check.shown:
            st.info(f"**What goes wrong:** {check.claim}", icon=":material/science:")
        else:
            st.warning(f"This was meant to show a method going wrong, but on this input it did not: {check.claim}")
        return
    if isinstance(check, Fact) and check.measurement:  # a lecture's claim measured here: a finding either way
        with st.container(border=True):
            (st.success if check.ok else st.warning)(("✓ " if check.ok else "✗ ") + check.claim,
                                                     icon=None if check.ok else ":material/science:")
            st.markdown(f"**Measured:** {md_text(check.measurement)}")
            st.caption(f"Holds when: {check.tolerance}.")
            if check.note:
                st.info(check.note, icon=":material/lightbulb:")
        return
    if isinstance(check, Fact):
        text = check.claim
    elif check.ok:
        text = f"{check.claim} (max error {check.error:.1e}, tolerance {check.tol:.0e})"
    else:
        text = f"{check.claim} — failed here: max error {check.error:.1e} (tolerance {check.tol:.0e})"
    (st.success if check.ok else st.error)(("✓ " if check.ok else "✗ ") + text)


def show_checks(checks: list[Claim]) -> None:
    for check in checks:
        show_check(check)


def reveal_steps(prefix: str, sig, total: int, what: str = "token") -> int:
    """Step mode of Generate and the Encoder–decoder: the first of `total` steps at once, one more per click. How
    many are shown ({prefix}_step_n) is a setting like the others (in the link, kept per session); it goes back to
    one when `sig` (the input and settings) changes. The inspected step ({prefix}_view_step) follows the newest."""
    if total == 0:
        return 0
    key, sig_key = f"{prefix}_step_n", f"{prefix}_step_sig"
    if st.session_state.get(sig_key, sig) != sig:  # a fresh session keeps the link's count
        st.session_state[key] = 1
    st.session_state[sig_key] = sig
    share.valid(key, range(1, total + 1), min(st.session_state.get(key, 1), total))
    line = row()  # the count first: its value decides which buttons are enabled
    n = line.number_input(f"{what.capitalize()}s shown", 1, total, 1, key=key, **share.URL, width=180,
                          help=f"Step mode reveals one {what} per click; this is how many are shown.")
    buttons = (("next", f"Next {what} ▶", n + 1, None), ("all", "To the end", total, ":material/skip_next:"),
               ("reset", "Reset", 1, None))
    for name, label, to, icon in buttons:
        line.button(label, key=f"{prefix}_{name}", type="primary" if name == "next" else "secondary", icon=icon,
                    disabled=name != "reset" and n >= total, on_click=_reveal, args=(prefix, min(to, total)))
    return n


def _reveal(prefix: str, n: int) -> None:
    st.session_state[f"{prefix}_step_n"] = st.session_state[f"{prefix}_view_step"] = n


TRAIN_PAGE = "app_pages/train.py"


def train_ablation_button(kind: str, label: str, key: str) -> None:
    """A button that opens the Train page on its Compare setups tab with `kind` (a name of lessons.train.ABLATIONS)
    chosen under Vary.

    A button, not st.page_link: a link cannot set the Train page's tab and Vary picker, so it opened on the
    first tab (#26). query_params={}: a plain switch_page clears the URL, which Streamlit 1.67 refuses while
    widgets are bound to it; the bound parameters of this page leave the URL with the page anyway."""
    def choose() -> None:
        st.session_state["train_ablation_kind"] = kind
        st.session_state["train_tab"] = "Compare setups"

    if st.button(label, key=key, on_click=choose, icon=":material/model_training:"):
        st.switch_page(TRAIN_PAGE, query_params={})


# -- what the class sees while presenting (#39, item 4) ------------------------------------------------------------
def sentence_text(where, label: str, default: str, key: str, limit: int, **kwargs) -> str:
    """share.text that opens on the session's sentence (lessons.classview.carry_in/carry_out): a box that takes a
    sentence, opened with none of its own in the link, starts from the one the session set on another page. A tab
    following a class takes the leader's (their link names it): never its own."""
    named = key in st.query_params
    if not (st.session_state.get(FOLLOW_KEY) and st.session_state.get(CODE)):
        classview.carry_in(st.session_state, st.query_params, key)
    text = share.text(where, label, default, key, limit, **kwargs)
    classview.carry_out(st.session_state, key, text, default, named=named)
    return text


HIDDEN_KEYS = "_class_hidden"  # the elements of the page drawn hidden in this run (ui.class_mode.begin sets it)


def answer_hidden(key: str) -> bool:
    """Whether the element `key` answers the class's open question, hidden on this student's screen until Reveal."""
    return key in st.session_state.get(HIDDEN_KEYS, ())


def answer_line(key: str, text: str, draw=st.markdown, hidden: str = classview.HIDDEN_TEXT) -> None:
    """A line that states an answer (`draw`: st.markdown, st.caption...): `hidden` in its place while answer_hidden."""
    draw(hidden if answer_hidden(key) else text)


def answer_table(key: str, table, **kwargs) -> None:
    """st.dataframe of a table that states an answer: one line in its place while answer_hidden."""
    if answer_hidden(key):
        st.caption(classview.HIDDEN_TEXT)
    else:
        st.dataframe(table, hide_index=True, width="stretch", key=key, **kwargs)


def hidden_chart(fig, key: str, target, exports: bool):
    """ui.chart.show for a hidden answer: the chart's frame, one grey, no hover or exports (their data would tell),
    with the same elements in the same places (chart, caption, row), so nothing below moves."""
    shown = fig.__dict__.get("_lab_hidden")
    if shown is None:
        shown = hidden_values(fig, "hidden", labels=key not in classview.LABELS_TELL)
        object.__setattr__(fig, "_lab_hidden", shown)  # once per figure object; never changed after
    event = target.plotly_chart(shown, key=key, theme=None, alt=classview.HIDDEN_TEXT,
                                config={"displayModeBar": False, "staticPlot": True})
    target.caption(classview.HIDDEN_TEXT)
    if exports:
        target.container(horizontal=True, gap="small")
    return event


_SCROLLED = "_scrolled_to"  # the lecture step this session last scrolled to
# Streamlit has no API to scroll the page: a small script does, run once in the page (st.html). It waits for the
# chart for up to 2 min (it is drawn after the panel, Plotly draws it later still, and a cold server takes long),
# centres it, follows it while the page above
# it settles for 2 s, and stops at once when the student scrolls, clicks or types.
_SCROLL_JS = """<script>(() => {
  const sel = %s; let tries = 0, settle = 0, moved = false;
  const stop = () => { moved = true; };
  ["wheel", "touchstart", "keydown", "mousedown"].forEach(e => window.addEventListener(e, stop, {once: true}));
  const t = setInterval(() => {
    const el = document.querySelector(sel);
    if (moved || ++tries > 1200) return clearInterval(t);
    if (!el || !el.querySelector(".js-plotly-plot")) return;
    el.scrollIntoView({block: "center"});
    if (++settle > 20) clearInterval(t);
  }, 100);
})();</script>"""


def scroll_to_chart(key: str | None, place: Any) -> None:
    """Scroll the page to the chart `key` (ui.chart.show's key: Streamlit gives its element the class st-key-KEY)
    once per `place` (a lecture step): opening the step scrolls, a rerun on it does not (a student who scrolled away
    stays). In a slot that is always there, so the page below keeps its place."""
    with st.container():
        if not key or st.session_state.get(_SCROLLED) == place:
            return
        st.session_state[_SCROLLED] = place
        st.html(_SCROLL_JS % json.dumps(f".st-key-{key}"), unsafe_allow_javascript=True)
