"""The preset questions on the session's view (#39, item 6): lessons.presets computes them; here the view's settings
are read from st.session_state, models come from the server's cache, and a model pass is cached like a page's.
`preset_by_name` is the one call for class mode and lectures; `ask_alone` is a lecture step's question for a student
alone (pick, Check, then the model's answer beside theirs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from viz_model.lectures import PAGE_PARAMS
from viz_model.lessons import presets as lesson
from viz_model.model_text import md_text
from viz_model.runtime.class_mode import fit_choice
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.models import load_model
from viz_model.ui.sidebar import DEVICE_KEY, current_model


def labels_here(page_url: str) -> dict[str, str]:
    """The page's preset questions as the "Ask the class" box lists them: label -> name."""
    return {row.label: name for name, row in lesson.presets_for(page_url).items()}


def preset_by_name(name: str, view: Mapping[str, Any] | None = None) -> lesson.Preset:
    """The preset `name` asked on the session's current view, answered now (choices fit for a poll). A setting whose
    widget is not drawn yet (the lecture panel runs above the page) takes the value the widget will take: the link's
    (`view`, by default the URL's query), else the page's default. ValueError with a sentence for an unknown name or
    a view it cannot ask about."""
    row = lesson.PRESETS.get(name)
    view = st.query_params.to_dict() if view is None else view
    settings = {**view, **{k: v for k, v in st.session_state.items() if isinstance(k, str)}}
    ckpt, device = current_model(), st.session_state.get(DEVICE_KEY, "auto")
    inp = lesson.Inputs(ckpt, settings, lambda key: load_model(key, device), cached)
    if row is None or row.live:
        p = lesson.compute(name, inp)
    else:
        prefixes = (*PAGE_PARAMS.get(row.page, ()), lesson.KEPT_MASKS)
        key = input_key(name, model_id(ckpt), device, sorted((k, repr(v)) for k, v in settings.items()
                                                             if k.startswith(prefixes)))
        p = cached("preset", (key,), lambda: lesson.compute(name, inp), model_pass=True)
    return lesson.Preset(p.kind, p.prompt, [fit_choice(c) for c in p.choices], p.answer)


def ask_alone(key: str, name: str, view: Mapping[str, Any] | None = None) -> None:
    """A lecture step's preset for a student alone: the question on the view, a pick, Check, then the model's answer
    computed live beside the student's. Another view (a setting changed) is another question: asked afresh."""
    try:
        p = preset_by_name(name, view)
    except ValueError as e:
        st.info(f"This step's question cannot be asked on this view: {e}")
        return
    key = f"{key}_{input_key(p.prompt, p.choices)[:8]}"
    st.markdown(f"**{md_text(p.prompt)}**")  # shown as typed; the radio's own label is for screen readers
    pick = st.radio(p.prompt, range(len(p.choices)), index=None, key=key, label_visibility="collapsed",
                    format_func=lambda i: md_text(p.choices[i]), on_change=st.session_state.pop,
                    args=(f"_{key}_checked", None))  # another pick asks again
    if st.button("Check", key=f"{key}_check", disabled=pick is None):
        st.session_state[f"_{key}_checked"] = True
    if pick is not None and st.session_state.get(f"_{key}_checked"):
        same, text = lesson.solo_answer_text(p.choices, p.answer, pick)
        (st.success if same else st.info)(md_text(text))
