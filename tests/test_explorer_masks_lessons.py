"""The live proofs behind the Explorer and Masks pages, checked by computation on small seeded models."""

import math

import pytest
import torch

from viz_model import masks
from viz_model.config import ModelConfig
from viz_model.lessons import explorer as xl
from viz_model.lessons import masks as masks_lesson
from viz_model.model import TinyTransformer


def tiny(pos: str = "rope", causal: bool = True, norm: str = "pre", dtype=torch.float32) -> TinyTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", vocab_size=40, pos_encoding=pos, mask="causal" if causal else "bidirectional",
                             norm_position=norm)
    return TinyTransformer(cfg).eval().requires_grad_(False).to(dtype)


IDS = torch.tensor([5, 9, 12, 7, 9, 20, 31])  # the token 9 appears twice


@pytest.mark.parametrize("pos,norm", [("rope", "pre"), ("sinusoidal", "post"), ("none", "pre")])
def test_every_pipeline_step_recomputes_to_the_trace(pos, norm):
    model = tiny(pos, norm=norm)
    out = model(IDS, trace=True)
    for layer in range(model.config.n_layers):
        checks = xl.pipeline_check(model, out.trace, layer, xl.score_scale(model))
        assert set(checks) == {"qkv", "scores", "probs", "row_sums", "masked_weight", "head_out", "attn_out"}
        assert max(checks.values()) < 1e-5, checks


def test_pipeline_check_catches_a_wrong_scale():
    model = tiny()
    out = model(IDS, trace=True, temperature=2.0)
    right = xl.pipeline_check(model, out.trace, 0, xl.score_scale(model, temperature=2.0))
    wrong = xl.pipeline_check(model, out.trace, 0, xl.score_scale(model))
    assert right["scores"] < 1e-6 < wrong["scores"]


def test_unscaled_scores_give_sharper_rows():
    model = tiny()
    scaled = xl.row_entropy(model(IDS, trace=True).trace.layers[1].probs).mean()
    raw = xl.row_entropy(model(IDS, trace=True, scale_scores=False, temperature=0.05).trace.layers[1].probs).mean()
    assert raw < scaled


def test_row_entropy_is_zero_for_one_hot_and_log_n_for_uniform():
    probs = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    ent = xl.row_entropy(probs)
    assert ent[0].item() == 0.0
    assert ent[1].item() == pytest.approx(math.log(4), abs=1e-6)


def test_additive_mask_rows_sum_to_one_but_multiplied_rows_do_not():
    torch.manual_seed(1)
    scores = torch.randn(6, 6)
    eff = masks_lesson.mask_effects(scores, masks.causal_mask(6))
    assert (eff.row_sums - 1).abs().max() < 1e-6
    assert eff.probs.triu(1).abs().max().item() == 0.0  # exactly zero weight on the future
    assert torch.isneginf(eff.additive.triu(1)[0, 1:]).all() and (eff.additive.tril() == 0).all()
    # multiplying after softmax drops the future's share: every row but the last sums to < 1
    assert (eff.row_sums_multiplied[:-1] < 1 - 1e-3).all()
    assert eff.row_sums_multiplied[-1].item() == pytest.approx(1.0, abs=1e-6)


def test_a_row_with_no_allowed_key_is_zero_not_nan():
    allowed = masks.causal_mask(3).clone()
    allowed[1] = False
    eff = masks_lesson.mask_effects(torch.randn(3, 3), allowed)
    assert torch.isfinite(eff.probs).all() and eff.row_sums[1].item() == 0.0


def test_pads_change_nothing_at_real_positions_in_an_encoder():
    model = tiny(causal=False)  # bidirectional: real tokens could read the pads without the key mask
    batch = torch.tensor([[6, 7, 8, 9], [7, 9, 0, 0]])
    chk = masks_lesson.padding_check(model, batch, pad_id=0, replacement=11)
    assert chk.max_diff < 1e-6 and chk.n_real == 6
    assert chk.key_mask.tolist() == [[True] * 4, [True, True, False, False]]
    assert chk.loss_mask.tolist() == [[True] * 3, [True, False, False]]
    # the check is meaningful: without the key mask the same swap does move the real positions
    swapped = batch.masked_fill(batch == 0, 11)
    leak = (model(batch).logits - model(swapped).logits).abs().amax(-1)[batch != 0].max()
    assert leak > 1e-3


def test_causal_row_matches_prefix_run():
    model = tiny()
    diffs = masks_lesson.prefix_check(model, IDS)
    assert diffs.shape == (len(IDS),) and diffs.max() < 1e-5


def test_without_the_mask_early_rows_differ_from_their_prefix_runs():
    model = tiny()
    T = len(IDS)
    diffs = masks_lesson.prefix_check(model, IDS, torch.ones(T, T, dtype=torch.bool))
    assert diffs[:-1].min() > 1e-4      # every early position read the future
    assert diffs[-1] < 1e-5             # the last position sees everything either way


def test_dependency_map_is_lower_triangular_under_a_causal_mask():
    model = tiny()
    T = 5
    causal = masks_lesson.dependency_map(model, IDS[:T], masks.causal_mask(T))
    full = masks_lesson.dependency_map(model, IDS[:T], torch.ones(T, T, dtype=torch.bool))
    assert causal.triu(1).abs().max().item() == 0.0 and (causal.diagonal() > 0).all()
    assert (full.triu(1)[torch.ones(T, T).triu(1).bool()] > 0).all()


def test_dependency_map_matches_finite_differences():
    model = tiny("none", dtype=torch.float64)
    ids = IDS[:4]
    t, s, eps, d = 3, 1, 1e-6, model.config.d_model
    norms = masks_lesson.dependency_map(model, ids, masks.causal_mask(4), chunk=40)

    def hidden_with(delta):  # h_t when the embedding of position s is shifted by delta
        emb = model.tok_emb(ids[None]).clone()
        emb[0, s] += delta
        handle = model.tok_emb.register_forward_hook(lambda *_: emb)
        try:
            return masks_lesson.final_hidden(model, ids, masks.causal_mask(4)).double()[t]
        finally:
            handle.remove()

    cols = [(hidden_with(eps * e) - hidden_with(-eps * e)) / (2 * eps) for e in torch.eye(d, dtype=torch.float64)]
    fd = torch.stack(cols, 1).norm()  # Frobenius norm of the (d x d) block d h_t / d e_s
    assert norms[t, s].item() == pytest.approx(fd.item(), rel=1e-4)


def test_no_position_model_is_permutation_equivariant():
    a, b = [5, 6, 7, 8, 6, 9], [5, 6, 9, 8, 6, 7]  # "send the report before the slides" and its swap
    none = tiny("none")
    assert masks_lesson.permutation_distances(none, a, b).max() < 1e-5
    assert masks_lesson.permutation_distances(none, a, b, attn_mask=True)[2:].min() > 1e-4  # a mask breaks it ...
    for pos in ("sinusoidal", "learned", "rope"):                                      # ... so does position
        assert masks_lesson.permutation_distances(tiny(pos), a, b)[2] > 1e-4, pos


def test_match_positions_pairs_duplicates_in_order_and_rejects_other_sentences():
    assert masks_lesson.match_positions([1, 2, 1, 3], [3, 1, 2, 1]) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    with pytest.raises(ValueError, match="same tokens"):
        masks_lesson.match_positions([1, 2], [1, 3])
