"""Tracing only the layers a view shows (TinyTransformer.forward(trace_layers=..., logits=False)), and the page
caches built on it, give the same numbers as the full trace.

What "the same" means: a traced layer's softmax is computed exactly as in the full trace, but the layers before it
may run on the fast path (F.scaled_dot_product_attention), whose sums round differently in the last bits. So:
every layer traced is bit-for-bit the full trace; layer 0 (same input) is bit-for-bit; any other layer and the
logits agree to float32 rounding (atol 1e-5 on values of order 1); logits=False changes nothing it keeps.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_clean

from viz_model.config import ModelConfig
from viz_model.model import TinyTransformer

ATOL = 1e-5


def tiny(**kw) -> TinyTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=4, d_ff=64, max_len=64, dropout=0.0, **kw)
    return TinyTransformer(cfg).eval()


MODELS = {"learned": dict(pos_encoding="learned"),
          "rope-gqa-rmsnorm": dict(pos_encoding="rope", n_kv_heads=2, norm="rmsnorm", mlp="swiglu"),
          "post-norm-encoder": dict(pos_encoding="sinusoidal", norm_position="post", mask="bidirectional")}


@pytest.fixture(params=list(MODELS), scope="module")
def model(request):
    return tiny(**MODELS[request.param])


IDS = torch.tensor([[3, 7, 1, 9, 4, 4, 12, 30, 2, 5, 8, 6]])
KNOBS = [dict(), dict(temperature=0.5, scale_scores=False),
         dict(attn_mask=torch.ones(12, 12, dtype=torch.bool).tril(1))]


@pytest.mark.parametrize("knobs", KNOBS, ids=["plain", "temperature-unscaled", "custom-mask"])
@torch.no_grad()
def test_each_traced_layer_equals_the_full_trace(model, knobs):
    full = model(IDS, trace=True, **knobs)
    L = model.config.n_layers
    for layer in range(L):
        part = model(IDS, trace_layers=(layer,), **knobs)
        assert [i for i, lt in enumerate(part.trace.layers) if lt is not None] == [layer]
        for name in ("probs", "scores", "q", "k", "v", "head_out", "attn_out"):
            got, want = getattr(part.trace.layers[layer], name), getattr(full.trace.layers[layer], name)
            if layer == 0:
                assert torch.equal(got, want), name
            torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
        torch.testing.assert_close(part.logits, full.logits, atol=ATOL, rtol=0)
        assert len(part.trace.residual) == L


@torch.no_grad()
def test_tracing_every_layer_is_the_full_trace_bit_for_bit(model):
    full = model(IDS, trace=True)
    every = model(IDS, trace_layers=range(model.config.n_layers))
    assert torch.equal(every.logits, full.logits)
    for a, b in zip(every.trace.layers, full.trace.layers):
        assert torch.equal(a.probs, b.probs) and torch.equal(a.head_out, b.head_out)
    # trace=True with trace_layers: the list wins
    assert [lt is not None for lt in model(IDS, trace=True, trace_layers=[1]).trace.layers] == [False, True,
                                                                                                False, False]


@torch.no_grad()
def test_untraced_logits_equal_the_fast_path(model):
    """No layer traced: the plain fast pass."""
    assert torch.equal(model(IDS, trace_layers=()).logits, model(IDS).logits)


@torch.no_grad()
def test_logits_false_stops_after_the_last_traced_layer_and_keeps_its_numbers(model):
    for layers in [(0,), (2,), (1, 2), (3,)]:
        with_head = model(IDS, trace_layers=layers)
        short = model(IDS, trace_layers=layers, logits=False)
        assert short.logits is None and short.loss is None
        assert len(short.trace.layers) == len(short.trace.residual) == max(layers) + 1  # no block after it
        for layer in layers:
            assert torch.equal(short.trace.layers[layer].probs, with_head.trace.layers[layer].probs)
            assert torch.equal(short.trace.residual[layer], with_head.trace.residual[layer])
    full = model(IDS, trace=True, logits=False)  # every layer traced, only the head skipped
    assert full.logits is None and len(full.trace.layers) == model.config.n_layers


def test_bad_arguments_are_sentences(model):
    with pytest.raises(ValueError, match="trace_layers"):
        model(IDS, trace_layers=(model.config.n_layers,))
    with pytest.raises(ValueError, match="logits"):
        model(IDS, targets=IDS, logits=False)


@torch.no_grad()
def test_cached_trace_of_some_layers_matches_the_full_one():
    """The Explorer's pass (ui.cache.cached_trace with layers=...): traced layers as in the full pass, the others
    NaN, data['layers'] naming the traced ones; cached_checks on it still finds every step exact."""
    from viz_model.ui import cache

    model = tiny(**MODELS["rope-gqa-rmsnorm"])
    ids = tuple(IDS[0].tolist())
    full = cache.cached_trace(model, "partial-test", ids)
    assert full["layers"] == (0, 1, 2, 3)
    part = cache.cached_trace(model, "partial-test", ids, layers=(2, 1))
    assert part["layers"] == (1, 2)
    for name in ("q", "k", "v", "scores", "probs", "head_out", "attn_out", "x_in", "entropy"):
        np.testing.assert_allclose(part[name][[1, 2]], full[name][[1, 2]], atol=ATOL, rtol=0, err_msg=name)
        assert np.isnan(part[name][[0, 3]]).all(), name
    assert np.array_equal(part["allowed"], full["allowed"]) and part["scale"] == full["scale"]
    checks = cache.cached_checks(model, "partial-test", ids, None, True, 1.0, 2, (1, 2))
    assert max(checks.values()) < 1e-5


@torch.no_grad()
def test_start_traces_only_the_layer_on_screen(monkeypatch):
    """ui.start.attention_of: one layer's (H, T, T) weights, equal to that layer of the full trace."""
    from viz_model.checkpoint import Checkpoint
    from viz_model.ui import start

    model = tiny(**MODELS["learned"])
    ckpt = Checkpoint(model, None, {}, path="partial-test-start")
    seen = []
    real = TinyTransformer.forward

    def spy(self, *a, **kw):
        if self is model:  # this model's passes only: a thread an earlier test left running (a page's warm-up, a
            seen.append((kw.get("trace_layers"), kw.get("logits", True)))  # training job) runs its own models'
        return real(self, *a, **kw)

    monkeypatch.setattr(TinyTransformer, "forward", spy)
    full = real(model, IDS, trace=True).trace
    for layer in range(model.config.n_layers):
        probs, allowed = start.attention_of(ckpt, tuple(IDS[0].tolist()), layer)
        np.testing.assert_allclose(probs, full.layers[layer].probs[0].numpy(), atol=ATOL, rtol=0)
        assert allowed.shape == (12, 12) and allowed[0, 1] == False  # noqa: E712  (causal)
    assert seen == [((layer,), False) for layer in range(model.config.n_layers)]


def test_explorer_on_a_paged_model_traces_the_grid_page_and_the_picked_layer(model_folders, monkeypatch):
    """tiny-llama (6 layers x 4 heads, a grid page of 4 layers): opening the Explorer runs passes that trace only
    the page's layers (and stop there); picking layer 5 traces it alone; its head map equals the full trace."""
    import json

    from streamlit.testing.v1 import AppTest

    from viz_model import hf
    from viz_model.ui import models

    root = next(iter(model_folders.values())).parent
    models._read_folders.cache_clear()
    monkeypatch.setenv(hf.ENV_VAR, str(root))
    seen = []
    real = TinyTransformer.forward

    def spy(self, *a, **kw):
        if kw.get("trace") or kw.get("trace_layers") is not None:
            seen.append((None if kw.get("trace_layers") is None else tuple(kw["trace_layers"]),
                         kw.get("logits", True)))
        return real(self, *a, **kw)

    monkeypatch.setattr(TinyTransformer, "forward", spy)
    from conftest import ROOT

    titles = {e.key: e.title for e in models.available_models(("transformer",))}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["model_key"] = titles["tiny-llama"]
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    assert_clean(at)
    assert ((0, 1, 2, 3), False) in seen and all(layers is not None for layers, _ in seen)
    seen.clear()
    at.selectbox(key="explorer_layer").set_value(5).run()
    assert_clean(at)
    assert seen == [((5,), False)]
    from test_app_explorer_masks import arr, named

    shown = arr(named(json.loads(at.get_by_key("explorer_head_map").proto.spec), "attention")["z"])
    from viz_model.model_text import uses_bos
    from viz_model.ui.widgets import encode_text

    ckpt = models.load_model("tiny-llama")
    enc = encode_text(ckpt, at.text_input(key="explorer_text").value, max_len=64, bos=uses_bos(ckpt))
    with torch.no_grad():
        want = real(ckpt.model, torch.tensor([enc.ids]), trace=True).trace.layers[5].probs[0, 0].numpy()
    np.testing.assert_allclose(np.nan_to_num(shown, nan=0.0), want, atol=ATOL, rtol=0)
    models._read_folders.cache_clear()


@torch.no_grad()
def test_cached_trace_is_computed_once_and_shared_read_only(monkeypatch):
    """One cached path (#27): the second call of the same pass is served from ui.cache.cached without a forward
    pass, and its arrays are read-only, so a page that wrote into one would fail instead of changing another
    session's chart."""
    from viz_model.lessons import explorer as lesson
    from viz_model.ui import cache

    model = tiny(**MODELS["rope-gqa-rmsnorm"])
    ids = tuple(IDS[0].tolist())
    calls = []
    real = lesson.trace_arrays
    monkeypatch.setattr(lesson, "trace_arrays", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = cache.cached_trace(model, "shared-test", ids, layers=(1,))
    again = cache.cached_trace(model, "shared-test", ids, layers=(1,))
    assert len(calls) == 1
    np.testing.assert_array_equal(first["probs"], again["probs"])
    for data in (first, again):
        with pytest.raises(ValueError, match="read-only"):
            data["probs"][1, 0, 0, 0] = 0.5
    whole = cache.cached_trace(model, "shared-test", ids)
    with pytest.raises(ValueError, match="read-only"):
        whole["q"][...] = 0
    assert len(calls) == 2
