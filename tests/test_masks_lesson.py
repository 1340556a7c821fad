"""The Masks page's claims and tables, computed by lessons.masks (#27: lessons compute, ui shows): each holds on the
shipped models and fails on an input that breaks it."""

from __future__ import annotations

import numpy as np
import torch

from viz_model.checkpoint import load_checkpoint
from viz_model.lecture import PAD_BATCH, PERMUTATION
from viz_model.lessons import masks as lesson
from viz_model.lessons.common import WrongWay
from viz_model.lessons.explorer import trace_arrays
from viz_model.tokenizer import PAD, encode
from viz_model.ui.models import MODELS_DIR

IDS_TEXT = "the cat sat on the mat"


def shipped(name: str):
    return load_checkpoint(MODELS_DIR / f"{name}.safetensors")


def ids_of(ckpt, text: str = IDS_TEXT) -> list[int]:
    return encode(ckpt.tokenizer, text).ids


def test_gallery_claims_hold_on_the_traced_weights_and_fail_with_weight_on_a_blocked_cell(classroom):
    data = trace_arrays(classroom.model, ids_of(classroom))
    p, allowed = data["probs"][0, 0], data["allowed"]
    (good,) = lesson.gallery_claims(p, allowed)
    assert good.ok and "weight exactly 0" in good.claim
    leaked = p.copy()
    leaked[0, -1] = 0.1  # a blocked cell (the first query may not read the last key) with weight
    assert not lesson.gallery_claims(leaked, allowed)[0].ok


def test_additive_keeps_rows_and_multiplying_loses_the_blocked_weight(classroom):
    data = trace_arrays(classroom.model, ids_of(classroom))
    s, allowed = data["scores"][0, 0], data["allowed"]
    claims, note = lesson.effects_claims(lesson.mask_effects(s, allowed), allowed)
    # #43 (7): multiplying is a method shown going wrong (the rows no longer sum to 1), not a ✗ about the model
    assert note is None and claims[0].ok and isinstance(claims[1], WrongWay) and claims[1].shown
    everything = np.ones_like(allowed)
    claims, note = lesson.effects_claims(lesson.mask_effects(s, everything), everything)
    assert len(claims) == 1 and claims[0].ok and "blocks nothing" in note


def test_pads_are_invisible_with_the_key_mask_and_seen_without_it(classroom):
    ckpt = classroom
    pad_id = ckpt.tokenizer.token_to_id(PAD)
    seqs = [(e.ids, e.tokens) for e in (encode(ckpt.tokenizer, s, specials=(PAD,)) for s in PAD_BATCH)]
    tables = lesson.padding_tables(ckpt.model, seqs, pad_id, PAD)
    assert tables.claims[0].ok and list(tables.key_rows) == ["sentence 1", "sentence 2"]
    assert tables.key_rows["sentence 2"]["3"] == f"✗ {PAD}" and tables.key_rows["sentence 1"]["0"].startswith("✓")
    assert tables.loss_rows["sentence 2"]["2→3"].endswith("ignored")

    class NoKeyMask(torch.nn.Module):  # the same model reading every key: no key mask, no causal mask
        def __init__(self, model):
            super().__init__()
            self.model, self.config, self.device = model, model.config, model.device

        def forward(self, ids, key_padding_mask=None):
            return self.model(ids, attn_mask=torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool))

    assert not lesson.padding_tables(NoKeyMask(ckpt.model), seqs, pad_id, PAD).claims[0].ok


def test_causal_equals_the_prefix_runs_and_no_mask_does_not(classroom):
    ids = ids_of(classroom)
    causal, free = (lesson.prefix_runs(classroom.model, ids, masked) for masked in (True, False))
    claims, note = lesson.prefix_claims(causal, free)
    assert note is None and claims[0].ok and isinstance(claims[1], WrongWay) and claims[1].shown
    assert f"over {len(ids)} positions" in claims[0].claim
    assert not lesson.prefix_claims(free, free)[0][0].ok  # the unmasked runs fail the causal claim
    cols = lesson.prefix_columns(encode(classroom.tokenizer, IDS_TEXT).tokens, causal, free)
    assert cols["causal: max |full − prefix|"] == [f"{x:.1e}" for x in causal]


def test_no_output_depends_on_a_later_input_under_the_causal_mask_only(classroom):
    ids = ids_of(classroom, "the cat sat")
    masked, free = (lesson.dependency_runs(classroom.model, ids, m) for m in (True, False))
    assert lesson.causal_dependence(masked).ok
    assert not lesson.causal_dependence(free).ok and free[0, -1] > 0
    assert lesson.free_dependence(free).startswith("No mask: outputs depend on later inputs too")
    assert lesson.dependency_cost(classroom.model, len(ids)) is None


def test_dependency_cost_names_the_passes_of_a_big_model(classroom, monkeypatch):
    monkeypatch.setattr(lesson, "MAX_DEP_PARAMS", classroom.model.num_params() - 1)
    said = lesson.dependency_cost(classroom.model, 12)
    assert f"{12 * classroom.model.config.d_model:,} backward passes" in said


def test_without_positions_or_a_mask_the_order_of_the_tokens_is_lost():
    distances = {}
    for name in ("enc-none", "enc-learned"):
        ckpt = shipped(name)
        a, b = (encode(ckpt.tokenizer, s, bos=True).ids for s in PERMUTATION)
        report = ckpt.tokenizer.token_to_id("report")
        distances[name] = {m: lesson.report_distance(ckpt.model, a, b, report, m) for m in (False, True)}
    claims, warning = lesson.permutation_claims(distances)
    assert warning is None and claims[0].ok
    rows = lesson.permutation_rows(distances)
    assert [r["model"] for r in rows[:4]] == ["enc-none", "enc-none", "enc-sinusoidal", "enc-learned"]
    assert rows[2]["distance of 'report'"] == "model not installed"
    assert rows[0]["same vector in both orders?"] == "✓ yes (≈ 0)"
    assert not lesson.permutation_claims({"enc-none": distances["enc-learned"]})[0][0].ok  # a model with positions
    assert lesson.permutation_claims({})[1].startswith("The position-free model")


def test_the_quiz_answers_are_judged_by_the_lesson():
    for n, (_, options, right, why) in enumerate(lesson.QUIZ):
        assert lesson.quiz_answer(n, right).ok and why in lesson.quiz_answer(n, right).claim
        wrong = next(i for i in range(len(options)) if i != right)
        assert not lesson.quiz_answer(n, wrong).ok


def test_the_lecture_padded_row_on_a_bpe_model_has_its_pads_at_the_end_and_no_lone_spaces(english_model):
    """The Masks page's batch on the English model: typed as 'send report <pad> <pad>', the byte-level BPE read each
    space before a pad as a token of its own (' ' between the pads, counted as a real word); the tokenizer now gives
    each kept <pad> the space before it, so the typed row is the batch-padded one."""
    tok = english_model.tokenizer
    pad_id = tok.token_to_id("<pad>")
    seqs = [(e.ids, e.tokens) for e in (encode(tok, s, bos=True, specials=(PAD,)) for s in PAD_BATCH)]
    tables = lesson.padding_tables(english_model.model, seqs, pad_id, "<pad>")
    short = list(tables.key_rows["sentence 2"].values())
    assert short[-2:] == ["✗ <pad>", "✗ <pad>"] and all(c.startswith("✓ ") for c in short[:-2])
    assert all(c[2:].strip() for c in short)  # no token whose label is only white space
    assert tables.claims[0].ok
    unpadded = encode(tok, "send report", bos=True)
    assert seqs[1][0] == [*unpadded.ids, pad_id, pad_id]
