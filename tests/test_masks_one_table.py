"""#41 items 1 and 3 for masks: masks.MASKS is the only list of mask kinds (ModelConfig.mask, the Explorer's and the
Train page's pickers read it; `causal` is read from the row, and "causal": true / false stays a JSON alias), proved by
one new row (StreamingLLM's sliding window with attention sinks); MultiHeadAttention.forward, Block.forward and
TinyTransformer.forward name every option after their inputs."""

import inspect
import json

import pytest
import torch
from conftest import assert_clean, named, plotly_array, spec

from viz_model import checkpoint, masks
from viz_model.attention import MultiHeadAttention
from viz_model.config import ModelConfig
from viz_model.model import Block, TinyTransformer
from viz_model.tokenizer import load_tokenizer


def brute_sink_window(T: int, window: int, sinks: int) -> torch.Tensor:
    """StreamingLLM's cache, cell by cell: s <= t and (t - s < window or s < sinks)."""
    return torch.tensor([[s <= t and (t - s < window or s < sinks) for s in range(T)] for t in range(T)])


# -- the new row ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("T,window,sinks", [(1, 1, 0), (8, 3, 1), (8, 2, 2), (9, 4, 0), (6, 9, 2), (7, 1, 7)])
def test_the_sink_window_mask_is_streaming_llms_cache(T, window, sinks):
    got = masks.build_mask("sink_window", T, window=window, sinks=sinks)
    assert torch.equal(got, brute_sink_window(T, window, sinks))
    assert not bool((got & ~masks.causal_mask(T)).any())  # never a later key: the row says causal
    if sinks == 0:
        assert torch.equal(got, masks.sliding_window_mask(T, window))
    if window >= T or sinks >= T:
        assert torch.equal(got, masks.causal_mask(T))
    with pytest.raises(ValueError, match="at least 0"):
        masks.sink_window_mask(4, 2, -1)


def test_the_sink_window_is_one_row_every_list_reads():
    row = masks.MASKS["sink_window"]
    assert row.causal and row.model and [p.name for p in row.params] == ["window", "sinks"]
    assert "sink_window" in masks.MODEL_MASKS and "sink_window" in masks.MASK_KINDS
    assert masks.kind_named("sink window") == masks.kind_named(row.label) == "sink_window"
    with pytest.raises(ValueError, match="unknown mask 'dilated'"):
        masks.kind_named("dilated")


@pytest.fixture(scope="module")
def sink_model():
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", vocab_size=40, mask="sink_window", mask_params={"window": 3, "sinks": 1})
    return TinyTransformer(cfg).eval()


def test_a_sink_window_model_blocks_its_cells_and_keeps_its_mask_with_the_cache(sink_model):
    ids = torch.randint(0, 40, (1, 12), generator=torch.Generator().manual_seed(1))
    allowed = brute_sink_window(12, 3, 1)
    plain = TinyTransformer(ModelConfig.preset("tiny", vocab_size=40)).eval()
    plain.load_state_dict(sink_model.state_dict())
    with torch.no_grad():
        out = sink_model(ids, trace=True)
        assert all(float(lt.probs[..., ~allowed].abs().max()) == 0.0 for lt in out.trace.layers)
        assert torch.allclose(out.logits, plain(ids, attn_mask=allowed).logits, rtol=1e-5, atol=1e-5)  # traced vs fused
        assert not torch.allclose(out.logits, plain(ids).logits, atol=1e-3)  # not the causal mask
        first = sink_model(ids[:, :8], use_cache=True)
        rest = sink_model(ids[:, 8:], past=first.cache)
    assert torch.allclose(torch.cat([first.logits, rest.logits], 1), out.logits, atol=1e-5)


# -- ModelConfig reads the table; "causal" is a JSON alias -------------------------------------------------------
def test_causal_is_read_from_the_mask_row_and_is_no_field():
    assert ModelConfig().mask == "causal" and ModelConfig().causal is True
    assert ModelConfig(mask="bidirectional").causal is False and ModelConfig(mask="prefix_lm").causal is False
    assert ModelConfig(mask="sink_window").causal is True
    with pytest.raises(TypeError):
        ModelConfig(causal=False)  # one way to say it: mask=


@pytest.mark.parametrize("causal, kind", [(True, "causal"), (False, "bidirectional")])
def test_a_checkpoint_whose_json_says_causal_loads_with_that_mask(tmp_path, causal, kind):
    tok = load_tokenizer("word")
    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=tok.get_vocab_size(), mask=kind))
    path = tmp_path / "m.safetensors"
    checkpoint.save(model, tok, path)
    doc = json.loads(path.with_suffix(".json").read_text())
    assert doc["config"]["causal"] is causal and "mask" not in doc["config"]  # the JSON written before #27
    loaded, _ = checkpoint.load(path)
    assert loaded.config.mask == kind and loaded.config.causal is causal
    assert ModelConfig.from_dict({"causal": causal}).mask == kind


def test_a_named_mask_round_trips_through_the_json_and_a_contradiction_is_refused(tmp_path):
    tok = load_tokenizer("word")
    cfg = ModelConfig.preset("tiny", vocab_size=tok.get_vocab_size(), mask="sink_window", mask_params={"sinks": 2})
    path = tmp_path / "m.safetensors"
    checkpoint.save(TinyTransformer(cfg), tok, path)
    saved = json.loads(path.with_suffix(".json").read_text())["config"]
    assert (saved["causal"], saved["mask"], saved["mask_params"]) == (True, "sink_window", {"sinks": 2})
    assert checkpoint.load(path)[0].config == cfg
    for bad, match in (({"causal": True, "mask": "bidirectional"}, "causal: true but mask 'bidirectional'"),
                       ({"causal": "yes"}, "causal must be true or false")):
        with pytest.raises(ValueError, match=match):
            ModelConfig.from_dict(bad)


# -- the Explorer and the Train page offer the table's kinds ----------------------------------------------------
def test_the_explorer_offers_every_model_mask_and_runs_the_new_one():
    from conftest import open_app

    at = open_app("app_pages/explorer.py")
    radio = at.radio(key="explorer_mask")
    assert list(radio.options) == [masks.short_name(k) for k in masks.MODEL_MASKS]
    at = radio.set_value("sink_window").run()
    assert_clean(at)
    z = plotly_array(named(spec(at, "explorer_head_map"), "attention")["z"], dtype=float)  # NaN: a blocked cell
    window, sinks = (p.default for p in masks.MASKS["sink_window"].params)
    assert torch.equal(torch.from_numpy(~(z != z)), brute_sink_window(len(z), window, sinks))
    assert any("Sliding window + sinks at its default parameters" in c.value for c in at.caption)
    assert any(w.value.startswith("This model was trained with the causal mask. Running it with the sink window mask "
                                  "is off-distribution") for w in at.warning)  # read "Running it sink window" before


def test_the_train_page_offers_every_model_mask_and_builds_it():
    from conftest import open_app

    from viz_model.lessons.train import TrainSpec

    at = open_app("app_pages/train.py")
    box = at.selectbox(key="train_mask")
    assert list(box.options) == [masks.MASKS[k].label for k in masks.MODEL_MASKS]
    assert TrainSpec(mask="sink_window").model_config(50).mask == "sink_window"
    assert TrainSpec(mask="sink_window", task="mlm").model_config(50).mask == "bidirectional"  # an encoder


# -- item 3: signatures that say what they mean -------------------------------------------------------------------
def test_block_and_model_name_every_option_after_their_inputs():
    block = inspect.signature(Block.forward).parameters
    assert [n for n, p in block.items() if p.kind != p.KEYWORD_ONLY] == ["self", "x"]
    attn = inspect.signature(MultiHeadAttention.forward).parameters
    assert [n for n, p in attn.items() if p.kind != p.KEYWORD_ONLY] == ["self", "x"]
    model = inspect.signature(TinyTransformer.forward).parameters
    assert [n for n, p in model.items() if p.kind != p.KEYWORD_ONLY] == ["self", "ids", "targets"]  # as nanoGPT's
    torch.manual_seed(0)
    m = TinyTransformer(ModelConfig.preset("tiny", vocab_size=40)).eval()
    ids = torch.randint(1, 40, (1, 6), generator=torch.Generator().manual_seed(0))
    assert float(m(ids[:, :-1], ids[:, 1:]).loss) == pytest.approx(float(m(ids[:, :-1], targets=ids[:, 1:]).loss))
    with pytest.raises(TypeError):
        m(ids, None, None)  # key_padding_mask / trace by position: refused, not misread
