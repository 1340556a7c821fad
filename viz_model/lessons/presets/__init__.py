"""A preset prediction question on every page (#39, item 6), answered by the model now on the view it is about:
one registry, PRESETS, of rows; each question's function lives in its page group's module.

A row: a stable NAME that a lecture names with `ask: preset NAME`, the page's URL path, the label the "Ask the
class" box lists, and a function computing the Preset from the model and the view's settings. Preset.answer is
{"correct": [choice indices], "why": a sentence built from the measured numbers}.

The settings are the page's widget values by key (st.session_state in the app, a dict in tests); a setting the
page has not drawn yet takes the page's own default. Nothing here knows Streamlit: `Inputs.load` (a model by its key)
and `Inputs.cached` (the server's cache, shared with the page) come from the ui layer.

One module per group of pages: base (the Preset, the Inputs a question reads, a registry Row and the pieces every
question shares), start, attention (Explorer, Masks, Q K V), position (RoPE, ALiBi, Sinusoidal), encoders (Encoder,
Encoder–decoder), architecture (RNN vs Transformer, Normalization, Train), generation (Generate) and measures (Cost,
Logit lens, Attention vs attribution, Attention sinks); the registry is here. A new question is its function in its
page group's module plus one Row below."""

from __future__ import annotations

from collections.abc import Sequence

from viz_model.lectures import PAGE_ALIASES
from viz_model.lessons.presets.architecture import (
    NORM_NAMES,
    RECALL_BAR,
    norm_padding,
    recurrence_recall,
    train_tying,
)
from viz_model.lessons.presets.attention import (
    explorer_previous,
    masks_visible,
    previous_token_weights,
    qkv_best_key,
)
from viz_model.lessons.presets.base import (
    FOLDER_VIEW_TOKENS,
    MAX_CHOICES,
    MAX_PROMPT_CHARS,
    MAX_TOKEN_CHOICES,
    QKV_MAX_T,
    Inputs,
    Preset,
    Row,
    _checked,
)
from viz_model.lessons.presets.encoders import (
    KEPT_MASKS,
    encoder_fill,
    translator_looks,
)
from viz_model.lessons.presets.generation import (
    generate_branch,
    generate_next,
)
from viz_model.lessons.presets.measures import (
    attribution_occlusion,
    cost_scores,
    lens_first_top,
    sinks_stream_best,
)
from viz_model.lessons.presets.position import (
    ROPE_EXTRA_KEYS,
    rope_alibi_reach,
    rope_extension,
    rope_preset,
    rope_question,
    sinusoidal_position,
)
from viz_model.lessons.presets.start import (
    attention_question,
    attention_row,
    start_question,
    start_row,
)

# -- the registry ---------------------------------------------------------------------------------------------
PRESETS: dict[str, Row] = {r.name: r for r in (
    Row("start_row", "start", "Which word does this head attend to most? (Start)", start_row),
    Row("explorer_previous", "explorer", "Which head attends to the previous token? (Explorer)", explorer_previous),
    Row("masks_visible", "masks", "How many tokens can row t see? (Mask gallery)", masks_visible),
    Row("qkv_best_key", "qkv", "Which key does this query match best? (Database lookup)", qkv_best_key),
    Row("sinusoidal_position", "sinusoidal", "Which position is this vector? (Sinusoidal)", sinusoidal_position),
    Row("rope_extension", "rope", "Which RoPE method keeps every angle in range? (Context extension)",
        rope_extension),
    Row("rope_alibi_reach", "rope", "Which ALiBi head reads furthest back? (ALiBi)", rope_alibi_reach),
    Row("encoder_fill", "encoder", "Which word fills the blank? (Encoder)", encoder_fill),
    Row("translator_looks", "encoder-decoder", "Which source word does the first target word read? (Cross-attention)",
        translator_looks),
    Row("recurrence_recall", "recurrence", "Which model recalls at this distance? (Recall accuracy)",
        recurrence_recall, live=True),
    Row("norm_padding", "normalization", "Which norm does padding in another sample change? (Four reasons)",
        norm_padding),
    Row("train_tying", "train", "How does weight tying change the parameter count? (Train)", train_tying),
    Row("generate_next", "generate", "Which token comes next? (Generate)", generate_next),
    Row("generate_branch", "generate", "Where do two branches first differ? (Generate › Branches)", generate_branch),
    Row("cost_scores", "cost", "How much memory do the T × T scores take? (Cost)", cost_scores),
    Row("sinks_stream_best", "sinks", "Which KV cache keeps perplexity lowest? (Attention sinks)",
        sinks_stream_best),
    Row("attribution_occlusion", "attribution", "Which token matters most, by occlusion? (Attention vs attribution)",
        attribution_occlusion),
    Row("lens_first_top", "logit-lens", "At which layer does the final prediction first come top? (Logit lens)",
        lens_first_top),
)}


def page_of(url_path: str) -> str:
    """A page's URL path as the registry names it ("" and "home" are Start)."""
    return PAGE_ALIASES.get(url_path, url_path)


def presets_for(url_path: str) -> dict[str, Row]:
    """The page's preset questions, by name, in the registry's order."""
    page = page_of(url_path)
    return {name: row for name, row in PRESETS.items() if row.page == page}


def compute(name: str, inp: Inputs) -> Preset:
    """The preset `name` on this view, answered now; ValueError with a sentence for an unknown name or a view it
    cannot ask about (an empty sentence, one token)."""
    if name not in PRESETS:
        raise ValueError(f"There is no preset question “{name[:40]}”; the presets are: {', '.join(PRESETS)}.")
    return _checked(PRESETS[name].compute(inp))


def solo_answer_text(choices: Sequence[str], answer: dict, pick: int) -> tuple[bool, str]:
    """A student alone revealed the answer after picking `pick`: (whether the model picks it too, the sentence: their
    choice beside the model's own answer and why)."""
    correct = answer.get("correct") or []
    model = " or ".join(f"“{choices[i]}”" for i in correct)
    same = pick in correct
    head = (f"You picked “{choices[pick]}”, as the model does." if same else
            f"You picked “{choices[pick]}”; the model's own answer is {model}.")
    return same, f"{head} {answer.get('why', '')}".strip()


__all__ = [
    "FOLDER_VIEW_TOKENS",
    "Inputs",
    "KEPT_MASKS",
    "MAX_CHOICES",
    "MAX_PROMPT_CHARS",
    "MAX_TOKEN_CHOICES",
    "NORM_NAMES",
    "PRESETS",
    "Preset",
    "QKV_MAX_T",
    "RECALL_BAR",
    "ROPE_EXTRA_KEYS",
    "Row",
    "attention_question",
    "attention_row",
    "attribution_occlusion",
    "compute",
    "cost_scores",
    "encoder_fill",
    "explorer_previous",
    "generate_branch",
    "generate_next",
    "lens_first_top",
    "masks_visible",
    "norm_padding",
    "page_of",
    "presets_for",
    "previous_token_weights",
    "qkv_best_key",
    "recurrence_recall",
    "rope_alibi_reach",
    "rope_extension",
    "rope_preset",
    "rope_question",
    "sinks_stream_best",
    "sinusoidal_position",
    "solo_answer_text",
    "start_question",
    "start_row",
    "train_tying",
    "translator_looks",
]
