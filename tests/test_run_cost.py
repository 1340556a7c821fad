"""What every page run costs the server, by construction (the numbers are in bench/lecture_present.py): a class of 60
followers switching page together is bound by one process's interpreter, so work repeated on every run is
measurable lag."""

from __future__ import annotations

import pytest
from conftest import open_app
from streamlit.runtime.caching import cache_utils


@pytest.mark.parametrize("page", ["app_pages/explorer.py", "app_pages/masks.py"])
def test_a_page_run_asks_the_servers_caches_by_keyword(monkeypatch, page):
    """st.cache_resource names each positional argument with inspect.signature on every call (Streamlit 1.67): with
    a call per figure, 3.7 % of a following class's server time (py-spy --gil). ui.cache.cached and the model
    loader pass their arguments by keyword."""
    named = []
    real = cache_utils._get_positional_arg_name
    monkeypatch.setattr(cache_utils, "_get_positional_arg_name",
                        lambda func, i: named.append(func.__qualname__) or real(func, i))
    at = open_app(page, timeout=300)
    assert not at.exception
    assert len(at.get("plotly_chart")) >= 1  # the page drew its charts (through the caches)
    assert named == []
