"""ALiBi (Press et al., 2022) as a position method: the per-head slopes against the paper's formula, the reference
code and Hugging Face's BLOOM, the bias matrix, attention by hand, the KV cache, padding, extrapolation, training and
checkpoints."""

import dataclasses
import json
import math

import pytest
import torch

from viz_model import checkpoint, generate
from viz_model.config import ModelConfig
from viz_model.lessons import train as train_lesson
from viz_model.model import TinyTransformer
from viz_model.positional import alibi_bias, alibi_slopes
from viz_model.seq2seq import Seq2SeqConfig, Seq2SeqTransformer

torch.set_num_threads(1)
IDS = torch.tensor([[1, 5, 9, 3, 7, 2, 11, 4, 8, 6], [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]])  # (2, 10)


def reference_slopes(n: int) -> list[float]:
    """get_slopes of ofirpress/attention_with_linear_biases (fairseq/models/transformer.py), written out again."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + reference_slopes(2 * closest)[0::2][: n - closest]


def build(seed: int = 0, **kw) -> TinyTransformer:
    torch.manual_seed(seed)
    cfg = dict(vocab_size=32, d_model=16, n_heads=4, n_layers=2, d_ff=32, max_len=16, pos_encoding="alibi")
    model = TinyTransformer(ModelConfig(**{**cfg, **kw})).eval()
    with torch.no_grad():  # non-trivial biases, so a wrong formula shows
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


# -- slopes -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", range(1, 17))
def test_slopes_match_the_reference_code_for_1_to_16_heads(n):
    torch.testing.assert_close(alibi_slopes(n), torch.tensor(reference_slopes(n), dtype=torch.float64),
                               atol=0, rtol=1e-14)


@pytest.mark.parametrize("n", [8, 16])
def test_slopes_are_the_papers_geometric_sequence_from_2_to_the_minus_8_over_n(n):
    start = 2 ** (-8 / n)
    expected = [start ** (h + 1) for h in range(n)]  # 8 heads: 1/2, 1/4, ..., 1/256
    torch.testing.assert_close(alibi_slopes(n), torch.tensor(expected, dtype=torch.float64), atol=0, rtol=1e-14)
    if n == 8:
        assert alibi_slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]


@pytest.mark.parametrize("n", range(1, 17))
def test_slopes_match_hugging_face_bloom(n):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # test-only reference

    ones = torch.ones(1, 3)
    hf = build_alibi_tensor(ones, n, torch.float32).view(n, 3)  # slope_h * key position (0, 1, 2)
    torch.testing.assert_close(hf[:, 1], alibi_slopes(n).float(), atol=0, rtol=1e-6)


def test_slopes_refuse_a_head_count_below_one():
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="whole number of heads"):
            alibi_slopes(bad)


# -- the bias matrix ----------------------------------------------------------------------------------------
def test_bias_is_minus_slope_times_distance_entry_by_entry():
    slopes = alibi_slopes(4)
    bias = alibi_bias(slopes, torch.arange(3, 7), torch.arange(7))  # queries 3..6 after 3 cached keys
    assert bias.shape == (4, 4, 7)
    for h in range(4):
        for qi, i in enumerate(range(3, 7)):
            for j in range(7):
                assert bias[h, qi, j].item() == -slopes[h].item() * abs(i - j)
    assert not torch.signbit(bias[:, 0, 3]).any()  # the diagonal is +0, not -0


def test_model_bias_follows_absolute_positions_after_a_cache():
    model = build()
    full = model.position_bias(torch.arange(10))                       # (1, H, 10, 10)
    tail = model.position_bias(torch.arange(6, 10), 10)                # the last 4 queries after 6 cached keys
    assert full.shape == (1, 4, 10, 10) and torch.equal(tail, full[:, :, 6:])
    assert build(pos_encoding="rope").position_bias(torch.arange(4)) is None


# -- attention by hand ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [True, False])
def test_attention_with_alibi_equals_a_hand_computation(causal):
    """Layer 0 of a tiny model by hand: LN, W_qkv, QK^T/sqrt(d_k) - m_h |i - j|, the mask, softmax, V, W_O."""
    model = build(n_layers=1, mask="causal" if causal else "bidirectional")
    ids = IDS[:1, :6]
    with torch.no_grad():
        out = model(ids, trace=True)
        lt = out.trace.layers[0]
        x = model.blocks[0].ln1(model.tok_emb(ids) * 4.0)           # sqrt(d_model) = 4; nothing added for position
        q, k, v = (t.view(1, 6, 4, 4).transpose(1, 2) for t in model.blocks[0].attn.qkv(x).split(16, dim=-1))
        m = [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8]                       # 4 heads: 2^(-8/4) and its powers
        scores = torch.empty(1, 4, 6, 6)
        for h in range(4):
            for i in range(6):
                for j in range(6):
                    s = float(q[0, h, i] @ k[0, h, j]) / 2.0 - m[h] * abs(i - j)
                    scores[0, h, i, j] = s if (j <= i or not causal) else float("-inf")
        probs = torch.softmax(scores, -1)
        attn_out = model.blocks[0].attn.out((probs @ v).transpose(1, 2).reshape(1, 6, 16))
        fast = model(ids).logits
    torch.testing.assert_close(lt.probs, probs, atol=1e-6, rtol=0)
    torch.testing.assert_close(lt.attn_out, attn_out, atol=1e-6, rtol=0)
    torch.testing.assert_close(lt.scores - (lt.q @ lt.k.transpose(-2, -1)) / 2.0, lt.bias.expand_as(lt.scores),
                               atol=1e-6, rtol=0)                      # the traced scores carry the bias
    torch.testing.assert_close(fast, out.logits, atol=1e-5, rtol=0)   # SDPA with the bias = the traced path


def test_causal_alibi_gives_blooms_weights_too():
    """BLOOM adds m_h * j (the key's position) instead of -m_h (i - j): per row they differ by the constant m_h * i,
    which the softmax removes, so the attention weights are the same."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    model = build(n_layers=1)
    with torch.no_grad():
        lt = model(IDS[:1], trace=True).trace.layers[0]
        bloom = build_alibi_tensor(torch.ones(1, 10), 4, torch.float32).view(1, 4, 1, 10)
        raw = (lt.q @ lt.k.transpose(-2, -1)) / 2.0
        probs = torch.softmax(raw + bloom + lt.mask, -1)
    torch.testing.assert_close(probs, lt.probs, atol=1e-6, rtol=0)


def test_no_position_vector_is_added_to_the_input():
    model = build()
    with torch.no_grad():
        tr = model(IDS, trace=True).trace
    assert torch.equal(tr.positional, torch.zeros(10, 16))
    assert not any("pos" in name or "alibi" in name for name in model.state_dict())  # nothing learned or saved


def test_padding_mask_with_alibi_leaves_real_tokens_as_an_unpadded_run():
    model = build()
    padded = IDS.clone()
    padded[1, 7:] = 0
    keep = torch.ones_like(IDS, dtype=torch.bool)
    keep[1, 7:] = False
    with torch.no_grad():
        both = model(padded, key_padding_mask=keep).logits
        alone = model(IDS[1:, :7]).logits
        traced = model(padded, key_padding_mask=keep, trace=True).logits
    torch.testing.assert_close(both[1, :7], alone[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(traced, both, atol=1e-5, rtol=0)


# -- the KV cache and longer inputs ---------------------------------------------------------------------------
def test_kv_cache_generation_equals_full_recompute():
    model = build(max_len=32)
    prompt = [2, 5, 9, 7]
    with torch.no_grad():  # stop_at_eos=False: twelve steps whatever the random model picks
        cached = list(generate.generate(model, prompt, strategy="greedy", max_new_tokens=12, use_cache=True,
                                        stop_at_eos=False))
        full = list(generate.generate(model, prompt, strategy="greedy", max_new_tokens=12, use_cache=False,
                                      stop_at_eos=False))
    assert [s.token_id for s in cached] == [s.token_id for s in full] and len(cached) == 12
    for a, b in zip(cached, full):
        torch.testing.assert_close(a.probs, b.probs, atol=1e-5, rtol=0)
        torch.testing.assert_close(a.attention, b.attention, atol=1e-5, rtol=0)


def test_runs_beyond_the_trained_length_and_stays_causal():
    """Trained (built) for 16 positions, read at 48: nothing to look up, so it runs, and each row still equals the
    run of its prefix alone (the bias depends on distances only)."""
    model = build(max_len=16)
    ids = torch.randint(0, 32, (1, 48), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        long = model(ids).logits
        prefix = model(ids[:, :20]).logits
        traced = model(ids, trace=True)
    assert long.shape == (1, 48, 32) and torch.isfinite(long).all()
    torch.testing.assert_close(long[:, :20], prefix, atol=1e-5, rtol=0)
    assert traced.trace.layers[0].bias.shape == (1, 4, 48, 48)
    with pytest.raises(ValueError, match="learned positions"):
        build(pos_encoding="learned")(ids)  # a learned table cannot go there


def test_encoder_decoder_with_alibi_decodes_with_the_cache_as_without():
    torch.manual_seed(0)
    model = Seq2SeqTransformer(Seq2SeqConfig(vocab_size=32, d_model=16, n_heads=4, n_layers=2, d_ff=32, max_len=16,
                                             pos_encoding="alibi", n_encoder_layers=2)).eval()
    src, tgt = IDS[:1, :7], IDS[1:, :6]
    with torch.no_grad():
        full = model(src, tgt).logits
        state = model.encode(src)
        out = model.decode(tgt[:, :3], state, use_cache=True)
        rest = model.decode(tgt[:, 3:], state, past=out.cache, use_cache=True)
        enc = model(src, tgt, trace=True).trace.encoder[0]
    torch.testing.assert_close(torch.cat([out.logits, rest.logits], 1), full, atol=1e-5, rtol=0)
    assert enc.bias[0, 0, 1, 4].item() == enc.bias[0, 0, 4, 1].item() < 0  # the encoder's bias is symmetric


# -- training and checkpoints ---------------------------------------------------------------------------------
def test_the_train_page_offers_alibi_and_a_short_run_with_it_learns():
    specs = train_lesson.ablation_specs(train_lesson.TrainSpec(), "position")
    assert [s.pos_encoding for s in specs] == ["none", "sinusoidal", "learned", "rope", "alibi"]
    spec = dataclasses.replace(specs[-1], task="copy", steps=60, every=20, lr=1e-2, seq_len=32)
    run = train_lesson.Run(spec)
    assert run.model.config.pos_encoding == "alibi"
    losses = [e["loss"] for e in run.events() if e["kind"] == "step"]
    assert len(losses) == 60 and all(math.isfinite(x) for x in losses)
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.8 * first, (first, last)


def test_checkpoint_with_alibi_round_trips(tok, tmp_path):
    model = build(vocab_size=tok.get_vocab_size())
    ids = IDS % model.config.vocab_size
    path = checkpoint.save(model, tok, tmp_path / "alibi.safetensors")
    saved = json.loads(path.with_suffix(".json").read_text())
    assert saved["config"]["pos_encoding"] == "alibi"
    loaded, _ = checkpoint.load(path)
    assert loaded.config == model.config
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, model(ids).logits)
        assert torch.equal(loaded(torch.cat([ids, ids], 1)).logits, model(torch.cat([ids, ids], 1)).logits)


def test_a_config_written_before_alibi_still_loads(tok, tmp_path):
    """An old checkpoint's JSON (the shipped enc-rope, and one with no pos_encoding field at all) loads as before."""
    old = json.loads(open("assets/models/enc-rope.json").read())
    assert ModelConfig.from_dict(old["config"]).pos_encoding == "rope"
    fields = {k: v for k, v in old["config"].items() if k != "pos_encoding"}
    assert ModelConfig.from_dict(fields).pos_encoding == "rope"  # the default
    model, _ = checkpoint.load("assets/models/enc-rope.safetensors")
    assert model.config.pos_encoding == "rope" and not hasattr(model, "alibi_slopes")


def test_the_explorers_pipeline_check_passes_on_an_alibi_model():
    """The Explorer recomputes S = Q·Kᵀ·scale from the trace: with ALiBi it adds the model's bias, so every step
    still checks (within float32 rounding)."""
    from viz_model.lessons import explorer

    model = build()
    with torch.no_grad():
        tr = model(IDS[:1], trace=True).trace
        errors = explorer.pipeline_check(model, tr, 1, explorer.score_scale(model))
    assert max(errors.values()) < 1e-5, errors


def test_the_class_question_names_the_head_whose_attention_reaches_furthest_back():
    """The preset 'rope_alibi_reach' on the shipped enc-alibi: its answer is the head with the largest mean |i - j|
    under layer 0's attention, recomputed here from a plain traced pass."""
    from viz_model.lecture import ROPE_SENTENCE
    from viz_model.lessons import presets
    from viz_model.model_text import encode_for

    model, tok = checkpoint.load("assets/models/enc-alibi.safetensors")
    ckpt = checkpoint.load_checkpoint("assets/models/enc-alibi.safetensors")
    p = presets.compute("rope_alibi_reach", presets.Inputs(ckpt, {}))
    ids = encode_for(ckpt, ROPE_SENTENCE, max_len=64).ids
    with torch.no_grad():
        probs = model.eval()(torch.tensor([ids]), trace=True).trace.layers[0].probs[0]  # (H, T, T)
    T = len(ids)
    reach = [sum(float(probs[h, i, j]) * abs(i - j) for i in range(T) for j in range(T)) / T for h in range(4)]
    best = max(range(4), key=reach.__getitem__)
    assert p.answer["correct"] == [best] and p.choices[best].startswith(f"head {best} (m = ")
    assert f"head {best} {reach[best]:.2f}" in p.answer["why"]
