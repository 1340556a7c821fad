"""Architecture options (qkv, norm, residual, mlp, GQA, embed_scale, biases, norm_eps): defaults change nothing,
and every variant keeps traced == fast, cached == full, save/load exact, and trains."""

import glob
import itertools
import json
from pathlib import Path

import pytest
import torch

from viz_model import checkpoint
from viz_model.config import MLPS, NORMS, POS_ENCODINGS, QKV_MODES, ModelConfig
from viz_model.data import TaskData
from viz_model.model import TinyTransformer
from viz_model.tokenizer import load_tokenizer
from viz_model.train import TrainConfig, Trainer

torch.set_num_threads(1)

# state_dict keys of ModelConfig.preset("tiny") as built before the options existed (printed at commit 3b9053a)
TINY_KEYS = [
    "tok_emb.weight",
    *(f"blocks.{i}.{name}" for i in range(2) for name in (
        "ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "attn.qkv.weight", "attn.qkv.bias",
        "attn.out.weight", "attn.out.bias", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias")),
    "ln_f.weight", "ln_f.bias", "head.weight",
]
VOCAB = load_tokenizer("word").get_vocab_size()  # the Trainer's data and a saved checkpoint must fit it
IDS = torch.tensor([[1, 5, 9, 3, 7, 2, 11, 4, 8, 6], [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]])  # (2, 10)


def _cases() -> list[dict]:
    """Every qkv x pos_encoding x GQA that makes sense (24), with norm, mlp, residual, norm_position, biases,
    embed_scale and tie_weights cycled so that every norm x mlp pair and every value of each switch occurs."""
    cases = []
    combos = [(q, p, g) for q, p, g in itertools.product(QKV_MODES, POS_ENCODINGS, (False, True))
              if not (g and q in ("shared_qk", "none"))]
    for i, (qkv, pos, gqa) in enumerate(combos):
        cases.append(dict(
            qkv=qkv, pos_encoding=pos, n_kv_heads=2 if gqa else None, norm=NORMS[i % 3], mlp=MLPS[(i // 3) % 3],
            residual=i % 2 == 0, norm_position="post" if i % 5 == 4 else "pre", attn_bias=i % 4 != 1,
            out_bias=i % 4 != 2, mlp_bias=i % 4 != 3, embed_scale=i % 3 != 2, tie_weights=i % 2 == 1,
            norm_eps=1e-6 if i % 2 else 1e-5))
    return cases


CASES = _cases()


def _ids(case: dict) -> str:
    return "-".join(f"{v}" for v in (case["qkv"], case["pos_encoding"], case["n_kv_heads"] or "mha", case["norm"],
                                     case["mlp"], "res" if case["residual"] else "nores", case["norm_position"]))


def build(seed: int = 0, **kw) -> TinyTransformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=16, n_heads=4, n_layers=2, d_ff=24, max_len=40, **kw)
    model = TinyTransformer(cfg).eval()
    with torch.no_grad():  # non-trivial norm and bias parameters, so that a wrong formula shows
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.fixture(scope="module")
def copy_data(tok):
    return TaskData("copy", tok, seed=0, batch_size=4, heldout_size=8)


def test_default_tiny_model_keeps_its_state_dict_keys():
    model = TinyTransformer(ModelConfig.preset("tiny"))
    assert list(model.state_dict()) == TINY_KEYS


def test_default_options_give_identical_logits_for_the_same_weights():
    """An explicit spelling of every default builds the same model: same keys, bitwise-equal logits."""
    torch.manual_seed(0)
    a = TinyTransformer(ModelConfig.preset("tiny")).eval()
    explicit = dict(qkv="separate", n_kv_heads=None, norm="layernorm", norm_eps=1e-5, residual=True, mlp="gelu",
                    embed_scale=True, attn_bias=True, out_bias=True, mlp_bias=True)
    b = TinyTransformer(ModelConfig.preset("tiny", **explicit)).eval()
    b.load_state_dict(a.state_dict())
    assert torch.equal(a(IDS).logits, b(IDS).logits)
    assert b.config.n_kv_heads is None and b.config.kv_heads == b.config.n_heads


def _decoder_checkpoints() -> list[str]:
    """The shipped TinyTransformer checkpoints (the encoder-decoder has its own traced-vs-fast test)."""
    return [p for p in sorted(glob.glob("assets/models/*.safetensors"))
            if json.loads(Path(p).with_suffix(".json").read_text()).get("kind", "transformer") == "transformer"]


@pytest.mark.parametrize("path", _decoder_checkpoints())
def test_every_shipped_checkpoint_loads_and_traced_equals_fast(path):
    model, _ = checkpoint.load(path)
    ids = IDS % model.config.vocab_size
    with torch.no_grad():
        fast, traced = model(ids).logits, model(ids, trace=True).logits
    torch.testing.assert_close(traced, fast, atol=1e-5, rtol=1e-5)  # trained logits reach ~30: float32 ulps


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_traced_equals_fast_and_cached_equals_full(case):
    model = build(**case)
    pad = torch.ones_like(IDS, dtype=torch.bool)
    pad[1, -3:] = False  # a padded second row: the general-mask path
    with torch.no_grad():
        for kw in ({}, {"key_padding_mask": pad}):
            fast = model(IDS, **kw).logits
            traced = model(IDS, trace=True, **kw)
            torch.testing.assert_close(traced.logits, fast, atol=1e-5, rtol=0)
            assert traced.trace.layers[0].probs.shape == (2, 4, 10, 10)  # H = n_heads query heads
        full = model(IDS).logits                                     # (2, 10, vocab)
        out = model(IDS[:, :6], use_cache=True)
        steps = [out.logits]
        for t in range(6, 10):
            out = model(IDS[:, t:t + 1], past=out.cache, use_cache=True, trace=t == 9)
            steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)
    assert out.cache[0][0].shape == (2, model.config.kv_heads, 10, 4)  # the cache keeps n_kv_heads heads


@pytest.mark.parametrize("case", CASES[::3], ids=_ids)
def test_checkpoint_round_trip_and_one_trainer_step(case, tok, copy_data, tmp_path):
    model = build(**case)
    path = checkpoint.save(model, tok, tmp_path / "m.safetensors")
    loaded, _ = checkpoint.load(path)
    assert loaded.config == model.config
    with torch.no_grad():
        assert torch.equal(loaded(IDS).logits, model(IDS).logits)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = TrainConfig(task="copy", steps=2, batch_size=4, warmup_steps=1, eval_every=0, snapshot_every=0,
                      sample_every=0)
    events = Trainer(model, tok, cfg, data=copy_data).step()
    assert torch.isfinite(torch.tensor(events[0].loss))
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items() if v.is_floating_point())


def test_batchnorm_state_round_trips_with_its_integer_counter(tok, tmp_path):
    model = build(norm="batchnorm").train()
    model(IDS)  # updates running statistics and num_batches_tracked (an int64 buffer)
    model.eval()
    path = checkpoint.save(model, tok, tmp_path / "bn.safetensors")
    loaded, _ = checkpoint.load(path)
    assert int(loaded.blocks[0].ln1.num_batches_tracked) == 1
    assert torch.equal(loaded.blocks[0].ln1.running_mean, model.blocks[0].ln1.running_mean)
    assert torch.equal(loaded(IDS).logits, model(IDS).logits)


@pytest.mark.parametrize("qkv", ["shared_qk", "none"])
@pytest.mark.parametrize("pos", ["none", "rope"])
def test_shared_qk_and_none_give_symmetric_scores(qkv, pos):
    model = build(qkv=qkv, pos_encoding=pos, mask="bidirectional")
    with torch.no_grad():
        tr = model(IDS, trace=True).trace
    for layer in tr.layers:
        s = layer.scores                                              # (B, H, T, T) before the mask
        assert (s - s.transpose(-1, -2)).norm() <= 1e-6 * s.norm()
    sep = build(qkv="separate", pos_encoding=pos, mask="bidirectional")
    with torch.no_grad():
        s = sep(IDS, trace=True).trace.layers[0].scores
    assert (s - s.transpose(-1, -2)).norm() > 1e-2 * s.norm()  # separate W_Q, W_K: not symmetric


@pytest.mark.parametrize("pos", ["none", "learned"])
def test_shared_kv_head_out_is_probs_times_keys(pos):
    with torch.no_grad():
        lt = build(qkv="shared_kv", pos_encoding=pos).forward(IDS, trace=True).trace.layers[1]
        assert torch.equal(lt.k, lt.v)
        torch.testing.assert_close(lt.head_out, lt.probs @ lt.k, atol=1e-6, rtol=0)
        sep = build(qkv="separate", pos_encoding=pos).forward(IDS, trace=True).trace.layers[1]
    torch.testing.assert_close(sep.head_out, sep.probs @ sep.v, atol=1e-6, rtol=0)
    assert (sep.head_out - sep.probs @ sep.k).abs().max() > 1e-3


def test_shared_kv_with_rope_values_are_the_unrotated_keys():
    model = build(qkv="shared_kv", pos_encoding="rope")
    with torch.no_grad():
        lt = model(IDS, trace=True).trace.layers[0]
        x = model.blocks[0].ln1(model.tok_emb(IDS) * 4.0)             # layer 0's attention input, sqrt(16) = 4
        _, k_raw, _ = model.blocks[0].attn.project(x)                 # (B, H, T, d_k) before RoPE
    torch.testing.assert_close(lt.v, k_raw, atol=1e-6, rtol=0)
    assert (lt.k - lt.v).abs().max() > 1e-3                           # K rotated, V not


def test_none_uses_the_block_input_as_q_k_and_v():
    model = build(qkv="none", pos_encoding="none")
    assert not any(n.startswith("blocks.0.attn.") and "out" not in n for n, _ in model.named_parameters())
    with torch.no_grad():
        lt = model(IDS, trace=True).trace.layers[0]
        x = model.blocks[0].ln1(model.tok_emb(IDS) * 4.0)             # (B, T, d_model)
    heads = x.view(2, 10, 4, 4).transpose(1, 2)                       # (B, H, T, d_k)
    for t in (lt.q, lt.k, lt.v):
        torch.testing.assert_close(t, heads, atol=1e-6, rtol=0)


@pytest.mark.parametrize("qkv", ["separate", "shared_kv"])
def test_gqa_cache_holds_kv_heads_and_each_group_sees_the_same_keys(qkv):
    model = build(qkv=qkv, n_kv_heads=2)
    with torch.no_grad():
        out = model(IDS, trace=True, use_cache=True)
    assert out.cache[0][0].shape == out.cache[0][1].shape == (2, 2, 10, 4)
    lt = out.trace.layers[0]
    assert lt.k.shape == lt.v.shape == lt.q.shape == (2, 4, 10, 4)
    for a, b in ((0, 1), (2, 3)):                                     # heads 0,1 share K/V head 0; 2,3 share 1
        assert torch.equal(lt.k[:, a], lt.k[:, b]) and torch.equal(lt.v[:, a], lt.v[:, b])
    assert not torch.equal(lt.k[:, 1], lt.k[:, 2])
    assert not torch.equal(lt.q[:, 0], lt.q[:, 1])                    # query heads stay distinct
    torch.testing.assert_close(out.cache[0][0], lt.k[:, ::2], atol=0, rtol=0)
    params = dict(model.named_parameters())
    width = {"separate": ("blocks.0.attn.qkv.weight", 16 + 2 * 8), "shared_kv": ("blocks.0.attn.kv.weight", 8)}[qkv]
    assert params[width[0]].shape == (width[1], 16)


def test_parameter_names_of_each_variant():
    names = {q: {n.split("attn.")[1] for n in build(qkv=q).state_dict() if n.startswith("blocks.0.attn.")}
             for q in QKV_MODES}
    assert names == {"separate": {"qkv.weight", "qkv.bias", "out.weight", "out.bias"},
                     "shared_qk": {"qk.weight", "qk.bias", "v.weight", "v.bias", "out.weight", "out.bias"},
                     "shared_kv": {"q.weight", "q.bias", "kv.weight", "kv.bias", "out.weight", "out.bias"},
                     "none": {"out.weight", "out.bias"}}
    llama = build(norm="rmsnorm", mlp="swiglu", attn_bias=False, out_bias=False, mlp_bias=False, tie_weights=False)
    assert {n for n in llama.state_dict() if n.startswith("blocks.0.")} == {
        f"blocks.0.{n}" for n in ("ln1.weight", "ln2.weight", "attn.qkv.weight", "attn.out.weight",
                                  "mlp.gate.weight", "mlp.up.weight", "mlp.down.weight")}
    assert "ln_f.weight" in llama.state_dict() and llama.head.weight is not llama.tok_emb.weight
    gpt2 = build(mlp="gelu_tanh")
    assert [n for n in gpt2.state_dict() if n.startswith("blocks.0.mlp")] == [
        "blocks.0.mlp.0.weight", "blocks.0.mlp.0.bias", "blocks.0.mlp.2.weight", "blocks.0.mlp.2.bias"]
    assert gpt2.blocks[0].mlp[1].approximate == "tanh"


def test_rmsnorm_rows_are_x_over_rms_times_weight():
    model = build(norm="rmsnorm", norm_eps=1e-6)
    ln = model.blocks[0].ln1
    x = torch.randn(2, 5, 16) * 3 + 1
    manual = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * ln.weight  # (B, T, d)
    torch.testing.assert_close(ln(x), manual, atol=1e-5, rtol=1e-5)


def test_batchnorm_normalises_each_feature_over_batch_and_time():
    model = build(norm="batchnorm").train()
    bn = model.blocks[0].ln1
    x = torch.randn(3, 7, 16) * 2 + 0.5
    flat = x.reshape(-1, 16)                                          # (N*T, d)
    manual = (x - flat.mean(0)) / torch.sqrt(flat.var(0, unbiased=False) + bn.eps) * bn.weight + bn.bias
    torch.testing.assert_close(bn(x), manual, atol=1e-5, rtol=1e-5)


def test_batchnorm_train_mode_on_one_token_raises_torchs_own_error():
    model = build(norm="batchnorm").train()
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        model(torch.tensor([[3]]))
    model.eval()
    assert model(torch.tensor([[3]])).logits.shape == (1, 1, VOCAB)  # eval mode uses running statistics


def test_layernorm_is_unchanged_and_uses_norm_eps():
    model = build(norm_eps=1e-3)
    ln = model.blocks[0].ln1
    assert isinstance(ln, torch.nn.LayerNorm) and ln.eps == 1e-3
    x = torch.randn(2, 5, 16)
    manual = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-3)
    torch.testing.assert_close(ln(x), manual * ln.weight + ln.bias, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_residual_false_changes_logits(norm_position):
    a = build(norm_position=norm_position)
    b = build(norm_position=norm_position, residual=False)
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        assert (a(IDS).logits - b(IDS).logits).abs().max() > 1e-2


def test_embed_scale_false_leaves_embeddings_unscaled():
    a, b = build(), build(embed_scale=False)
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        ea, eb = a(IDS, trace=True).trace.embeddings, b(IDS, trace=True).trace.embeddings
    assert torch.equal(eb, b.tok_emb(IDS))
    torch.testing.assert_close(ea, eb * 4.0, atol=0, rtol=0)          # sqrt(d_model = 16)


def test_bias_switches_remove_exactly_their_biases():
    def biases(**kw):
        return {n.split(".", 2)[2] for n in build(**kw).state_dict() if n.startswith("blocks.0.") and "bias" in n
                and "ln" not in n}
    assert biases() == {"attn.qkv.bias", "attn.out.bias", "mlp.0.bias", "mlp.2.bias"}
    assert biases(attn_bias=False) == {"attn.out.bias", "mlp.0.bias", "mlp.2.bias"}
    assert biases(out_bias=False, mlp_bias=False) == {"attn.qkv.bias"}  # Qwen2's pattern


def test_rope_table_is_capped_for_a_long_context_and_computed_beyond():
    short = build(pos_encoding="rope")
    torch.manual_seed(0)
    long = TinyTransformer(ModelConfig(vocab_size=VOCAB, d_model=16, n_heads=4, n_layers=1, d_ff=24,
                                       max_len=131_072, pos_encoding="rope"))
    assert long.rope_cos.shape == (4096, 2)
    pos = torch.tensor([0, 7, 4095, 4096, 100_000])
    cos, sin = long.rope_cos_sin(pos)
    angles = pos[:, None].double() * long._current_inv_freq(131_072).double()[None]  # (5, 2)
    torch.testing.assert_close(cos.double(), angles.cos(), atol=1e-6, rtol=0)
    torch.testing.assert_close(sin.double(), angles.sin(), atol=1e-6, rtol=0)
    torch.testing.assert_close(short.rope_cos_sin(pos[:2])[0], cos[:2], atol=0, rtol=0)


def test_limits_admit_gpt2_medium_and_a_1b_llama():
    ModelConfig(vocab_size=50_257, d_model=1024, n_heads=16, n_layers=24, d_ff=4096, max_len=1024,
                pos_encoding="learned", mlp="gelu_tanh", embed_scale=False)
    ModelConfig(vocab_size=128_256, d_model=2048, n_heads=32, n_kv_heads=8, n_layers=16, d_ff=8192,
                max_len=131_072, norm="rmsnorm", mlp="swiglu", attn_bias=False, out_bias=False, mlp_bias=False,
                embed_scale=False, tie_weights=True, rope_base=500_000.0)
    ModelConfig(vocab_size=262_144, d_model=4096, n_heads=64, n_layers=48, d_ff=32_768)


@pytest.mark.parametrize("kw, match", [
    (dict(qkv="foo"), "qkv must be one of"),
    (dict(norm="groupnorm"), "norm must be one of"),
    (dict(mlp="relu"), "mlp must be one of"),
    (dict(n_kv_heads=3), "n_heads \\(4\\) must be a multiple of n_kv_heads \\(3\\)"),
    (dict(n_kv_heads=8), "n_kv_heads must be between 1 and 4"),
    (dict(n_kv_heads=0), "n_kv_heads must be between 1 and 4"),
    (dict(qkv="none", n_kv_heads=2), "as many key heads as query heads"),
    (dict(qkv="shared_qk", n_kv_heads=1), "as many key heads as query heads"),
    (dict(norm_eps=0), "norm_eps must be a small positive number"),
    (dict(norm_eps=1.0), "norm_eps must be a small positive number"),
    (dict(norm_eps=float("nan")), "norm_eps must be a small positive number"),
    (dict(residual="yes"), "residual must be True or False"),
    (dict(embed_scale=1), "embed_scale must be True or False"),
    (dict(d_model=2048, pos_encoding="sinusoidal"), "sinusoidal encoding is available up to d_model 1024"),
    (dict(d_model=8192), "d_model must be between 2 and 4096"),
])
def test_bad_option_values_are_refused_with_a_sentence(kw, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**{"n_heads": 4, **kw})


def test_old_json_without_the_new_fields_loads_with_defaults():
    old = {k: v for k, v in ModelConfig.preset("tiny").to_dict().items()
           if k not in ("qkv", "n_kv_heads", "norm", "norm_eps", "residual", "mlp", "embed_scale",
                        "attn_bias", "out_bias", "mlp_bias")}
    assert ModelConfig.from_dict(old) == ModelConfig.preset("tiny")
    cfg = ModelConfig.preset("tiny", qkv="shared_kv", n_kv_heads=1, norm="rmsnorm", mlp="swiglu")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
