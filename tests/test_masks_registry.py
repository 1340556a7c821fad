"""The mask table (viz_model.masks.MASKS) and the model-family table (viz_model.hf.FAMILIES) are the single lists of
their kinds: build_mask, the gallery, ModelConfig.mask and hf.py all iterate them. The strided kind is the worked
example of adding one (#27)."""

import json
from pathlib import Path

import pytest
import torch

from viz_model import hf, masks
from viz_model.config import ModelConfig
from viz_model.model import TinyTransformer

ROOT = Path(__file__).resolve().parent.parent


def brute_strided(T: int, stride: int) -> torch.Tensor:
    """Child et al. 2019's strided pattern, cell by cell: s <= t and (t - s < stride or (t - s) % stride == 0)."""
    return torch.tensor([[s <= t and (t - s < stride or (t - s) % stride == 0) for s in range(T)] for t in range(T)])


@pytest.mark.parametrize("T,stride", [(1, 1), (7, 1), (7, 2), (7, 3), (9, 4), (5, 9)])
def test_strided_mask_follows_the_sparse_transformer_definition(T, stride):
    got = masks.strided_mask(T, stride)
    assert torch.equal(got, brute_strided(T, stride))
    assert torch.equal(got & ~masks.causal_mask(T), torch.zeros(T, T, dtype=torch.bool))  # never a later key
    if stride == 1 or stride >= T:
        assert torch.equal(got, masks.causal_mask(T))


def test_strided_mask_reads_far_back_where_a_sliding_window_of_the_same_width_cannot():
    strided, window = masks.strided_mask(7, 3), masks.sliding_window_mask(7, 3)
    assert strided[6, 0] and strided[6, 3] and not window[6, 0] and not window[6, 3]
    assert not strided[6, 2] and not strided[5, 1]
    with pytest.raises(ValueError, match="stride must be at least 1"):
        masks.strided_mask(4, 0)


def test_every_kind_in_the_table_builds_through_build_mask():
    T = 6
    inputs = {"padding": dict(real=[True] * 4 + [False] * 2), "custom": dict(cells=masks.causal_mask(T).tolist())}
    for kind, row in masks.MASKS.items():
        m = masks.build_mask(kind, T, **inputs.get(kind, {}))
        assert m.shape == (T, T) and m.dtype == torch.bool, kind
        assert bool((m & ~masks.causal_mask(T)).any()) != row.causal or kind == "custom", kind
    assert masks.MASK_KINDS == tuple(masks.MASKS)
    assert torch.equal(masks.build_mask("strided", 7, stride=2), brute_strided(7, 2))
    assert torch.equal(masks.build_mask("strided", 2), masks.causal_mask(2))  # the default stride is cut to T
    with pytest.raises(ValueError, match="unknown mask kind 'dilated'"):
        masks.build_mask("dilated", 4)


def test_old_configs_name_no_mask_and_save_the_json_they_saved_before():
    for path in sorted((ROOT / "assets" / "models").glob("*.json")):
        doc = json.loads(path.read_text())
        if doc.get("kind", "transformer") != "transformer":
            continue
        cfg = ModelConfig.from_dict(doc["config"])
        saved = cfg.to_dict()
        assert "mask" not in saved and "mask_params" not in saved, path.name
        assert {k: saved[k] for k in doc["config"]} == doc["config"], path.name
        assert cfg.mask == ("causal" if doc["config"]["causal"] else "bidirectional")


def test_a_named_mask_sets_causal_and_round_trips():
    cfg = ModelConfig.preset("tiny", mask="strided", mask_params={"stride": 3})
    assert cfg.causal is True and cfg.mask == "strided"
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert ModelConfig.preset("tiny", mask="bidirectional").causal is False
    for bad, match in ((dict(mask="custom"), "a model's mask must be one of"),
                       (dict(mask="strided", mask_params={"window": 2}), "has no parameter 'window'"),
                       (dict(mask="strided", mask_params={"stride": 0}), "must be a whole number >= 1"),
                       (dict(mask_params={"stride": 2}), "the 'causal' mask has no parameter 'stride'")):
        with pytest.raises(ValueError, match=match):
            ModelConfig.preset("tiny", **bad)


@pytest.fixture(scope="module")
def strided_model():
    torch.manual_seed(0)
    return TinyTransformer(ModelConfig.preset("tiny", vocab_size=40, mask="strided", mask_params={"stride": 3})).eval()


def test_a_strided_model_gives_blocked_cells_exactly_zero_and_rows_summing_to_one(strided_model):
    ids = torch.randint(0, 40, (2, 10), generator=torch.Generator().manual_seed(1))
    allowed = masks.strided_mask(10, 3)
    with torch.no_grad():
        layers = strided_model(ids, trace=True).trace.layers
    for layer in layers:
        assert float(layer.probs[..., ~allowed].abs().max()) == 0.0
        assert float((layer.probs.sum(-1) - 1).abs().max()) < 1e-5


def test_a_strided_model_equals_a_causal_model_given_the_strided_mask_and_keeps_it_with_the_cache(strided_model):
    ids = torch.randint(0, 40, (1, 11), generator=torch.Generator().manual_seed(2))
    plain = TinyTransformer(ModelConfig.preset("tiny", vocab_size=40)).eval()
    plain.load_state_dict(strided_model.state_dict())
    with torch.no_grad():
        full = strided_model(ids).logits
        assert torch.allclose(full, plain(ids, attn_mask=masks.strided_mask(11, 3)).logits, atol=1e-6)
        assert not torch.allclose(full, plain(ids).logits, atol=1e-3)  # the strided mask is not the causal one
        first = strided_model(ids[:, :7], use_cache=True)
        rest = strided_model(ids[:, 7:], past=first.cache)
    assert torch.allclose(torch.cat([first.logits, rest.logits], 1), full, atol=1e-5)


def test_hf_reads_exactly_the_families_in_its_table():
    assert hf.SUPPORTED_TYPES == tuple(hf.FAMILIES) == ("gpt2", "llama", "mistral", "qwen2")
    with pytest.raises(ValueError, match="reads only gpt2, llama, mistral and qwen2"):
        hf.hf_config({"model_type": "bert"})
    assert hf.FAMILIES["qwen2"].biases == dict(attn_bias=True, out_bias=False, mlp_bias=False)
    assert hf.FAMILIES["mistral"].slides({}) and not hf.FAMILIES["llama"].slides({})


def test_the_strided_mask_gets_the_four_panel_figure_with_blocked_cells_as_holes():
    import numpy as np

    from viz_model.figures.masks import mask_panels
    from viz_model.lessons.masks import mask_effects

    T, allowed = 7, masks.strided_mask(7, 3)
    scores = torch.randn(T, T, generator=torch.Generator().manual_seed(3))
    probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
    fig = mask_panels(allowed, scores, probs, [f"t{i}" for i in range(T)], title="Strided (sparse) mask")
    traces = {t.name: t for t in fig.data}
    assert np.array_equal(np.asarray(traces["mask"].z), allowed.numpy().astype(float))
    p = np.asarray(traces["probs"].z, dtype=float)
    assert np.isnan(p[~allowed.numpy()]).all() and np.allclose(np.nansum(p, 1), 1, atol=1e-6)
    assert (np.asarray(traces["additive"].text)[~allowed.numpy()] == "−∞").all()
    eff = mask_effects(scores, allowed)
    assert float((eff.row_sums - 1).abs().max()) < 1e-6 and float(eff.row_sums_multiplied.min()) < 1
