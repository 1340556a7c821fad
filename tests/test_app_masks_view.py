"""AppTest of what the Masks page shows (#43, item 7): a method shown going wrong on purpose is a neutral "what goes
wrong" note, never a ✗ error box (those are for claims about the model); the custom mask is labelled by the
sentence's tokens; the padding tables are each the page's width."""

import pytest
from conftest import assert_clean, open_app


@pytest.fixture(scope="module")
def masks_page():
    return open_app("app_pages/masks.py")


def test_the_wrong_ways_are_what_goes_wrong_notes_not_error_boxes(masks_page):
    at = masks_page
    assert_clean(at)
    assert [e.value for e in at.error] == []  # was: "✗ Multiplying softmax(S) by the 0/1 mask ..." in an error box
    notes = [i.value for i in at.info if i.value.startswith("**What goes wrong:**")]
    assert len(notes) == 1 and "rows no longer sum to 1" in notes[0]
    at.session_state["masks_tab"] = "Causal ≠ sequential"
    at.query_params["masks_tab"] = "Causal ≠ sequential"
    at.run()
    assert_clean(at)
    assert [e.value for e in at.error] == []  # was: "✗ Without the mask, one pass no longer equals the prefix runs"
    notes = [i.value for i in at.info if i.value.startswith("**What goes wrong:**")]
    assert any("Without the mask, one pass no longer equals the prefix runs" in n for n in notes)
    assert any(s.value.startswith("✓ Causal: one pass gives the same logits") for s in at.success)


def test_the_custom_mask_is_labelled_by_the_sentences_tokens():
    at = open_app("app_pages/masks.py", query={"masks_kind": "Custom (edit cells)"})
    assert_clean(at)
    (editor,) = [e for e in at.dataframe if "0 <bos>" in list(e.value.index)]
    labels = ["0 <bos>", "1 The", "2 cat", "3 sat", "4 on", "5 the", "6 mat"]  # was q0…q6 and k0…k6
    assert list(editor.value.index) == labels and list(editor.value.columns) == labels
