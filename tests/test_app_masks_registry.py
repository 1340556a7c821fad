"""AppTest of the Masks gallery driven by the mask table (#27): every kind of viz_model.masks.MASKS is an option, and
the strided kind (added as one table row) has its slider, its four panels and its live checks."""

from functools import partial

import numpy as np
import pytest
from conftest import ROOT, assert_clean, named, plotly_array, spec, texts

from viz_model.masks import MASKS

arr = partial(plotly_array, dtype=float)  # NaN where Plotly sent None (a masked hole)


@pytest.fixture(scope="module")
def masks_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/masks.py").run()
    return at


def test_masks_gallery_lists_every_kind_of_the_mask_table(masks_page):
    control = masks_page.segmented_control(key="masks_kind")
    assert list(control.options) == [row.label for row in MASKS.values()]


@pytest.mark.parametrize("stride", [3, 2, 1])
def test_masks_strided_kind_shows_its_mask_and_blocked_cells_get_exactly_zero(masks_page, stride):
    at = masks_page
    at.segmented_control(key="masks_kind").set_value("strided").run()
    at.slider(key="masks_stride").set_value(stride).run()
    assert_clean(at)
    fig = spec(at, "masks_panels")
    assert fig["layout"]["title"]["text"].startswith("Strided (sparse) mask")
    mask, probs = arr(named(fig, "mask")["z"]), arr(named(fig, "probs")["z"])
    T = len(mask)
    assert T > 4
    assert all(mask[t][s] == (s <= t and (t - s < stride or (t - s) % stride == 0))
               for t in range(T) for s in range(T))
    assert np.all(np.isnan(probs[mask == 0]))  # blocked: a grey hole, no weight
    assert np.allclose(np.nansum(probs, axis=1), 1, atol=1e-5)
    assert any(s.startswith("✓ Blocked cells get weight exactly 0;") for s in texts(at.success)), texts(at.success)
    if stride == 3:
        assert mask[T - 1][T - 4] == 1 and mask[T - 1][T - 3] == 1 and mask[T - 1][T - 5] == 0  # far and local keys
    at.segmented_control(key="masks_kind").set_value("causal").run()
