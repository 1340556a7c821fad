"""The Q, K and V lesson: symmetric scores for Q = K and raw X, K = V in the head output, the lookup equals the
model's own head output, the cosine, the claims' verdicts, and the shipped variants' held-out losses."""

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch

from viz_model import ASSETS_DIR
from viz_model.checkpoint import load_checkpoint
from viz_model.config import QKV_MODES, ModelConfig
from viz_model.data import TaskData
from viz_model.lessons import qkv
from viz_model.model import TinyTransformer
from viz_model.train import evaluate

torch.set_num_threads(1)
TEXT = "the cat sat on the mat"


def build(tok, qkv_mode: str, pos_encoding: str = "rope", seed: int = 0) -> TinyTransformer:
    """A tiny random model with weights large enough that every score is far from 0."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=tok.get_vocab_size(), d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=32,
                      pos_encoding=pos_encoding, qkv=qkv_mode)
    model = TinyTransformer(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.4)
    return model


@pytest.fixture(scope="module")
def tiny(tok):
    return {m: build(tok, m) for m in QKV_MODES}


def test_asymmetry_is_zero_for_a_symmetric_matrix_and_two_for_an_antisymmetric_one():
    a = torch.randn(5, 5)
    assert float(qkv.asymmetry(a + a.T)) <= 1e-7
    assert float(qkv.asymmetry(a - a.T)) == pytest.approx(2.0, abs=1e-6)  # ‖2A‖/‖A‖ when Aᵀ = −A


@pytest.mark.parametrize("pos", ["rope", "none"])
def test_shared_qk_and_raw_x_give_symmetric_scores_separate_does_not(tok, pos):
    for mode in QKV_MODES:
        rows = qkv.variant_scores({mode: build(tok, mode, pos)}, tok, TEXT, layer=1, head=1)
        if mode in ("shared_qk", "none"):
            assert rows[0].asymmetry <= 1e-6, mode
        elif mode == "separate":
            assert rows[0].asymmetry > 0.3, mode


def test_shared_kv_head_out_is_probs_times_the_keys(tok):
    model = build(tok, "shared_kv", pos_encoding="none")  # with RoPE, V is the *unrotated* K
    ids, _ = qkv.encode_sentence(model, tok, TEXT)
    for lt in qkv.traced(model, ids).layers:
        assert torch.equal(lt.v, lt.k)
        torch.testing.assert_close(lt.head_out, lt.probs @ lt.k, rtol=0, atol=1e-6)


def test_lookup_weighted_sum_equals_the_traced_head_out(tiny, tok):
    for mode, model in tiny.items():
        ids, _ = qkv.encode_sentence(model, tok, TEXT)
        trace = qkv.traced(model, ids)
        for query in (1, 3, 6):
            res = qkv.lookup(model, tok, TEXT, layer=1, head=0, query=query)
            want = trace.layers[1].head_out[0, 0, query].numpy()
            assert abs(res.out - want).max() <= 1e-6, mode
            assert res.probs[query + 1:].sum() == 0 and res.probs.sum() == pytest.approx(1, abs=1e-6)
            assert sorted(c.index for c in res.contributors) == list(range(query + 1))
            norms = [c.norm for c in res.contributors]
            assert norms == sorted(norms, reverse=True)
            top = res.contributors[0]
            assert top.norm == pytest.approx(top.weight * float((res.v[top.index] ** 2).sum()) ** 0.5, rel=1e-5)


def test_lookup_rejects_a_query_outside_the_sentence(tiny, tok):
    with pytest.raises(ValueError, match="query position"):
        qkv.lookup(tiny["separate"], tok, TEXT, layer=0, head=0, query=7)


def test_cosine_on_hand_examples():
    assert qkv.cosine(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])) == pytest.approx(1 / math.sqrt(2))
    assert qkv.cosine(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([-2.0, -4.0, -6.0])) == pytest.approx(-1.0)
    assert qkv.cosine(torch.tensor([3.0, 0.0]), torch.tensor([0.0, 5.0])) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        qkv.cosine(torch.zeros(3), torch.ones(3))


def test_minimal_pair_measures_the_shared_last_word(tiny, tok):
    res = qkv.minimal_pair(tiny, tok, "the cat sat", "the mat sat")
    assert (res.word, res.position, res.differs_at) == ("sat", 3, 2)
    model = tiny["separate"]
    ta = qkv.traced(model, qkv.encode_sentence(model, tok, "the cat sat")[0])
    tb = qkv.traced(model, qkv.encode_sentence(model, tok, "the mat sat")[0])
    want = torch.nn.functional.cosine_similarity(ta.residual[-1][0, 3], tb.residual[-1][0, 3], dim=0)
    assert res.hidden_cos["separate"] == pytest.approx(float(want), abs=1e-6)
    assert all(len(c) == 2 and max(c) < 1 - 1e-6 for c in res.attn_cos.values())  # the outputs do differ


def test_minimal_pair_rejects_pairs_that_are_not_minimal(tiny, tok):
    for a, b in (("the cat sat", "the cat sat down"), ("the cat sat", "a mat ran"), ("the cat sat", "the cat ran")):
        with pytest.raises(ValueError):
            qkv.minimal_pair(tiny, tok, a, b)


def test_self_attention_counts_rows_that_see_more_than_one_key():
    probs = torch.tensor([[1.0, 0, 0], [0.7, 0.3, 0], [0.2, 0.2, 0.6]])
    allowed = torch.ones(3, 3).tril().bool()
    share, rate, chance = qkv.self_attention(probs, allowed)
    assert (share, rate, chance) == pytest.approx(((0.3 + 0.6) / 2, 0.5, (1 / 2 + 1 / 3) / 2))


def test_claims_on_tiny_models_give_the_symmetry_verdicts(tiny, tok):
    sums = [qkv.summarize(m, tok, sentences=qkv.CLAIM_SENTENCES[:2], pairs=qkv.MINIMAL_PAIRS[:2],
                          heldout_loss=float(i)) for i, m in enumerate(tiny.values())]
    rows = qkv.claims(sums)
    assert [r.ok for r in rows[:3]] == [True, True, True]  # raw X, Q = K symmetric; separate asymmetric
    assert rows[0].value <= 1e-6 and rows[2].value >= qkv.ASYMMETRY_MIN
    assert rows[-1].ok and rows[-1].note == ""  # heldout 3.0 for "none" (the last mode) is the largest
    flipped = qkv.claims([replace(s, heldout_loss=-s.heldout_loss) for s in sums])
    assert not flipped[-1].ok and "raw X's loss is" in flipped[-1].note  # now raw X is the best, not the worst
    assert not flipped[-3].ok and flipped[-3].value == pytest.approx(3.0)  # separate is 3 nats above the best
    with pytest.raises(ValueError, match="all four"):
        qkv.claims(sums[:3])


def test_the_claims_are_the_one_claim_type(tiny, tok):
    """#41 (item 2): the page's claims are lessons.common.Fact values (drawn by ui.widgets.show_check), each with
    what was measured and when it holds; qkv has no claim type of its own."""
    from viz_model.lessons.common import Fact

    sums = [qkv.summarize(m, tok, sentences=qkv.CLAIM_SENTENCES[:1], pairs=qkv.MINIMAL_PAIRS[:1],
                          heldout_loss=float(i)) for i, m in enumerate(tiny.values())]
    rows = qkv.claims(sums)
    assert rows and all(type(r) is Fact and r.measurement and r.tolerance for r in rows)
    assert not hasattr(qkv, "ClaimRow")


def test_traced_restores_the_models_mode_even_when_the_pass_raises(tiny):
    """#41 (item 2): traced runs in eval_mode, whose finally restores train mode also when the pass raises."""
    model = tiny["separate"].train()
    with pytest.raises(IndexError):
        qkv.traced(model, [model.config.vocab_size + 5])  # an id past the vocabulary: the embedding raises
    assert model.training
    model.eval()


def test_qkv_variants_replace_only_the_qkv_field():
    @dataclass(frozen=True)
    class Spec:
        steps: int = 10
        qkv: str = "separate"

    runs = qkv.qkv_variants(Spec(steps=7))
    assert [r.qkv for r in runs] == list(QKV_MODES) and {r.steps for r in runs} == {7}

    @dataclass(frozen=True)
    class OldSpec:
        steps: int = 10

    with pytest.raises(ValueError, match="no 'qkv'"):
        qkv.qkv_variants(OldSpec())


# -- the shipped variants -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    return {m: load_checkpoint(ASSETS_DIR / "models" / f"{name}.safetensors") for m, name in qkv.SHIPPED.items()}


def test_shipped_variants_share_the_classroom_recipe(shipped):
    base = shipped["separate"]
    for mode, ck in shipped.items():
        cfg = ck.model.config
        assert cfg.qkv == mode
        assert (cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff, cfg.pos_encoding) == (128, 4, 2, 512, "rope")
        assert ck.metadata["train_config"] == base.metadata["train_config"]


def test_shipped_heldout_losses_recompute(shipped):
    for mode, ck in shipped.items():
        loss, _ = evaluate(ck.model, TaskData("lm", ck.tokenizer, seed=ck.metadata["seed"]))
        assert loss == pytest.approx(ck.metadata["heldout_loss"], abs=1e-4), mode


def test_shipped_shared_qk_and_raw_x_are_symmetric(shipped):
    models = {m: ck.model for m, ck in shipped.items()}
    tok = shipped["separate"].tokenizer  # the vocabulary the models were trained with
    rows = {r.variant: r for r in qkv.variant_scores(models, tok, TEXT, layer=0, head=0)}
    assert rows["shared_qk"].asymmetry <= 1e-6 and rows["none"].asymmetry <= 1e-6
    assert rows["separate"].asymmetry > qkv.ASYMMETRY_MIN


# -- the claims' checks, on hand-made numbers (the shipped models' own, and their opposites) ---------------------
SHIPPED_LOSSES = {"separate": 1.1724, "shared_qk": 1.1686, "shared_kv": 1.1779, "none": 1.1719}


def summary(variant: str, **numbers) -> qkv.VariantSummary:
    base = dict(asymmetry_max=0.0, asymmetry_mean=0.0, self_share=0.2, diag_max_rate=0.2, chance_share=0.24,
                pair_cos_attn=0.4, pair_cos_hidden=0.6, heldout_loss=1.0, pair_cos_each=(0.4, 0.4))
    return qkv.VariantSummary(variant, **{**base, **numbers})


def test_lowest_loss_claim_is_false_when_another_variant_is_lower_even_within_noise():
    lowest = qkv.loss_claims(SHIPPED_LOSSES)[0]
    assert not lowest.ok and lowest.value == pytest.approx(1.1724 - 1.1686)
    assert "shared Q = K is lower, by 0.0038 nats" in lowest.note and "run-to-run noise" in lowest.note
    assert lowest.tolerance == "separate has the lowest loss of the four"
    won = qkv.loss_claims({**SHIPPED_LOSSES, "separate": 1.16})[0]
    assert won.ok and won.note == "" and won.value == 0


def test_reformer_and_raw_x_loss_claims_read_their_own_numbers():
    _, reformer, raw = qkv.loss_claims(SHIPPED_LOSSES)
    assert reformer.ok and reformer.value == pytest.approx(-0.0038)  # shared Q = K is not worse
    assert not raw.ok and "run-to-run noise" in raw.note  # raw X is not the highest: shared K = V is
    assert "1.1779" in raw.measurement and "raw X − separate: -0.0005" in raw.measurement
    worse = qkv.loss_claims({**SHIPPED_LOSSES, "shared_qk": 1.2, "none": 1.3})
    assert not worse[1].ok and worse[2].ok and worse[2].note == ""


def test_nearly_the_same_output_needs_a_cosine_of_at_least_nearly_same():
    sep = summary("separate", pair_cos_attn=0.404, pair_cos_each=(0.3, 0.5))
    blurrier, same = qkv.pair_claims(summary("shared_kv", pair_cos_attn=0.502, pair_cos_each=(0.4, 0.6)), sep)
    assert blurrier.ok and blurrier.value == pytest.approx(0.098)  # more alike than separate...
    assert not same.ok and same.value == pytest.approx(0.502)      # ...but far from 'nearly the same'
    assert "far from 'nearly the same'" in same.note and f"≥ {qkv.NEARLY_SAME:g}" in same.tolerance
    blurrier, same = qkv.pair_claims(summary("shared_kv", pair_cos_attn=0.95, pair_cos_each=(0.95, 0.95)), sep)
    assert blurrier.ok and same.ok and same.note == ""
    blurrier, _ = qkv.pair_claims(summary("shared_kv", pair_cos_attn=0.41), sep)
    assert not blurrier.ok and "does not make the two outputs more alike" in blurrier.note


def test_self_claim_needs_more_self_weight_and_the_diagonal_in_most_rows():
    sep, none = summary("separate", self_share=0.153), summary("none", self_share=0.725)
    assert qkv.self_claim(summary("shared_qk", self_share=0.444, diag_max_rate=0.55), none, sep).ok
    few = qkv.self_claim(summary("shared_qk", self_share=0.444, diag_max_rate=0.45), none, sep)
    assert not few.ok and "only 45% of rows" in few.note
    flat = qkv.self_claim(summary("shared_qk", self_share=0.17, diag_max_rate=0.9), none, sep)
    assert not flat.ok and "off the diagonal" in flat.note


def test_claims_leave_out_the_loss_rows_when_a_loss_was_not_measured():
    sums = [summary(m, heldout_loss=None) for m in QKV_MODES]
    assert len(qkv.claims(sums)) == 6 and len(qkv.claims([replace(s, heldout_loss=1.0) for s in sums])) == 9


# -- the score panels read on a projector ---------------------------------------------------------------------
def _luminance(rgb: str) -> float:
    channels = [int(float(x)) / 255 for x in rgb[rgb.index("(") + 1:-1].split(",")]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_score_panel_numbers_are_12px_dark_on_cells_light_enough_to_read():
    """The cell numbers were 9 px light grey on RdBu_r's dark ends: now 12 px, one dark colour, on a scale whose
    darkest cell keeps 4.5:1 contrast (WCAG AA), and printed only where 12 px type fits (masks.shows_text)."""
    from plotly.colors import hex_to_rgb, sample_colorscale

    from viz_model.figures.masks import shows_text
    from viz_model.figures.qkv import score_panels

    rng = np.random.default_rng(0)
    for T in (4, 5, 7, 12):
        mats = [rng.normal(size=(T, T)), np.eye(T) * 3]
        fig = score_panels(mats, ["separate · asym 1.03", "shared Q = K · asym 0.00"], [f"t{i}" for i in range(T)])
        heat = [t for t in fig.data if t.type == "heatmap"]
        chars = max(len(f"{x:.1f}") for m in mats for x in m.flat)
        for h, m in zip(heat, mats):
            assert h.textfont.size >= 12
            assert (h.text is not None) == shows_text(T, chars)
            if h.text is not None:
                assert h.text[0][0] == f"{m[0, 0]:.1f}"
            text_l = _luminance("rgb({}, {}, {})".format(*hex_to_rgb(h.textfont.color)))
            cells = sample_colorscale([list(s) for s in h.colorscale], list(np.linspace(0, 1, 101)))
            worst = min((_luminance(c) + 0.05) / (text_l + 0.05) for c in cells)
            assert worst >= 4.5, worst
            assert f"{m[1, 0]:.3f}" in h.hovertext[1][0]  # hidden or not, the hover keeps every number
    assert shows_text(4, 4) and not shows_text(7, 4)  # the short sentences print numbers, 7 tokens hover only


# -- what the page shows, computed by the lesson --------------------------------------------------------------
def test_lookup_check_passes_on_the_model_and_fails_on_a_wrong_sum(tiny, tok):
    res = qkv.lookup(tiny["shared_kv"], tok, TEXT, layer=1, head=1, query=4)
    assert qkv.lookup_check(res).ok and qkv.lookup_check(res).error == res.error
    assert not qkv.lookup_check(replace(res, error=res.error + 10 * qkv.LOOKUP_TOL)).ok
    rows = qkv.contributor_rows(res, top_n=3)
    assert [r["key"] for r in rows] == [f"{c.index} · {c.token}" for c in res.contributors[:3]]
    shares = [float(r["share of Σ‖p_j · v_j‖"].rstrip("%")) for r in qkv.contributor_rows(res, top_n=99)]
    assert sum(shares) == pytest.approx(100, abs=len(shares))  # each share is rounded to a whole percent
    assert f"position {res.contributors[0].index}," in qkv.contributors_text(res)


def test_symmetry_facts_hold_for_shared_qk_and_raw_x_and_fail_on_asymmetric_scores(tiny, tok):
    rows = [qkv.variant_scores({m: tiny[m]}, tok, TEXT, layer=1, head=1)[0] for m in QKV_MODES]
    facts = qkv.symmetry_facts(rows)
    assert len(facts) == 2 and all(f.ok for f in facts)  # shared Q = K and raw X, in that order
    assert facts[0].claim.startswith(qkv.VARIANT_LABELS["shared_qk"])
    asym = replace(rows[0], variant="shared_qk")  # separate's asymmetric scores, called shared Q = K
    (fact,) = qkv.symmetry_facts([asym])
    assert not fact.ok and "not symmetric" in fact.claim
    assert qkv.asym_text(rows[0].asymmetry) in qkv.asymmetry_caption(rows)
    assert qkv.asymmetry_caption(rows[1:2]) == ""  # shared Q = K alone: nothing asymmetric to name
    assert [r["variant"] for r in qkv.variant_rows(rows)] == [qkv.VARIANT_LABELS[m] for m in QKV_MODES]


def test_metadata_facts_compare_the_recomputed_losses_with_the_saved_ones(shipped):
    ck = shipped["separate"]
    loss = qkv.heldout_loss(ck.model, ck.tokenizer, seed=ck.metadata["seed"])
    (ok,) = qkv.metadata_facts([loss, 1.2], [ck.metadata["heldout_loss"], None])
    assert ok.ok and "largest difference" in ok.claim
    (bad,) = qkv.metadata_facts([loss], [ck.metadata["heldout_loss"] + 10 * qkv.METADATA_TOL])
    assert not bad.ok
    assert qkv.metadata_facts([loss], [None]) == []
    assert qkv.loss_rows(["a"], [loss], [None])[0]["in the checkpoint's metadata"] == "—"


def test_pair_table_and_caption_read_the_measured_cosines(tiny, tok):
    res = [qkv.minimal_pair({m: tiny[m]}, tok, "the cat sat", "the mat sat") for m in QKV_MODES]
    attn = [r.attn_cos[m] for r, m in zip(res, QKV_MODES)]
    hidden = [r.hidden_cos[m] for r, m in zip(res, QKV_MODES)]
    rows = qkv.pair_rows(list(QKV_MODES), attn, hidden)
    assert rows[1]["attention output, layer 1"] == f"{attn[1][1]:.3f}" and len(rows[0]) == 2 + len(attn[0])
    caption = qkv.pair_caption(list(QKV_MODES), attn)
    kv, sep = attn[QKV_MODES.index("shared_kv")][0], attn[QKV_MODES.index("separate")][0]
    assert f"shared K = V {kv:.3f} against separate {sep:.3f}" in caption
    assert ("(more alike)" in caption) == (kv > sep)
    assert qkv.pair_caption(["separate"], attn[:1]) == ""


def test_variant_note_names_the_variant_and_the_other_models():
    note = qkv.variant_note("separate", "classroom", ["Q = K model", "raw *X*"])
    from markdown_it import MarkdownIt

    shown = MarkdownIt().render(note)  # the model names escaped for Markdown (md_text) show as typed
    assert "the shipped <code>classroom</code>" in shown and "“Q = K model” or “raw *X*”" in shown
    assert qkv.variant_note("separate", "mine", []).endswith(qkv.HOW["separate"])
    assert qkv.variant_note("none", "qkv-none", []).endswith("It is not the usual separate-projection model.")
