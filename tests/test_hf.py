"""The Hugging Face folder reader against transformers itself (a test-only dependency, never used at run time):
tiny random GPT-2, Llama (GQA, Llama 3 RoPE scaling), Qwen2 (q/k/v bias, tied head, YaRN) and Mistral (linear
scaling) built from configs, saved with save_pretrained, read back with viz_model.hf; hostile folders refused
before any weight is read; the instructor's folder list."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import torch
import transformers as tf
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from viz_model import checkpoint, hf, rope
from viz_model.generate import generate
from viz_model.lessons import real_models

TEXT = ["the cat sat on the mat", "the dog ate the bone because it was hungry", "she gave him the book",
        "send the report before the slides", "a bank by the river", "i like cats and dogs, not rats"] * 3
PROMPT_LEN, NEW_TOKENS = 6, 12
# initializer_range 0.15 (GPT-2: 0.2) makes attention sharp (rows peak at 0.64-0.99) yet leaves the float32 error
# well inside 1e-6 (measured 1.5e-7..4.8e-7 over seeds 0-3; at 0.2 the RoPE models reach 1.2e-6 because transformers
# computes RoPE angles in float32 and we in float64: run both in float64 and the gap stays ~5e-7, GPT-2's 8e-16).
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=64, max_position_embeddings=64, initializer_range=0.15)


def _bpe(specials: list[str], extra: list[str] = ()) -> Tokenizer:
    """A tiny byte-level BPE (~100 tokens) trained in milliseconds; `extra` specials go at the end (as GPT-2's)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=120, special_tokens=specials))
    if extra:
        tok.add_special_tokens(list(extra))
    return tok


def _save(model, folder: Path, tok: Tokenizer | None = None, **specials) -> Path:
    model.save_pretrained(folder)
    if tok is not None:
        tf.PreTrainedTokenizerFast(tokenizer_object=tok, **specials).save_pretrained(folder)
    return folder


def _gpt2(folder: Path):
    """GPT-2's own layout: vocab.json + merges.txt, <|endoftext|> the last id, no pad token, tied head."""
    tok = _bpe([], ["<|endoftext|>"])
    eot = tok.token_to_id("<|endoftext|>")
    cfg = tf.GPT2Config(vocab_size=tok.get_vocab_size(), n_embd=32, n_layer=2, n_head=4, n_positions=64,
                        bos_token_id=eot, eos_token_id=eot, initializer_range=0.2,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = tf.GPT2LMHeadModel._from_config(cfg, attn_implementation="eager").eval()
    _save(model, folder)
    tok.model.save(str(folder))  # vocab.json (without the added token) + merges.txt
    (folder / "vocab.json").write_text(json.dumps(tok.get_vocab(with_added_tokens=True)))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
         "model_max_length": 64, "tokenizer_class": "GPT2Tokenizer"}))
    return model


def _llama(folder: Path, **overrides):
    tok = _bpe(["<s>", "</s>", "<unk>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16}
    cfg = tf.LlamaConfig(**{**SMALL, "vocab_size": tok.get_vocab_size() + 8, "bos_token_id": 0, "eos_token_id": 1,
                            "rope_scaling": scaling, **overrides})
    model = tf.LlamaForCausalLM._from_config(cfg, attn_implementation="eager").eval()
    _save(model, folder, tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    return model


def _qwen2(folder: Path):
    tok = _bpe(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}
    cfg = tf.Qwen2Config(**{**SMALL, "vocab_size": tok.get_vocab_size(), "tie_word_embeddings": True,
                            "rope_scaling": scaling, "eos_token_id": 2})
    model = tf.Qwen2ForCausalLM._from_config(cfg, attn_implementation="eager").eval()
    _save(model, folder, tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    return model


def _mistral(folder: Path):
    tok = _bpe(["<s>", "</s>"])
    cfg = tf.MistralConfig(**{**SMALL, "vocab_size": tok.get_vocab_size(), "num_key_value_heads": 1,
                              "rope_scaling": {"rope_type": "linear", "factor": 2.0}, "rope_theta": 500.0})
    model = tf.MistralForCausalLM._from_config(cfg, attn_implementation="eager").eval()
    _save(model, folder, tok, bos_token="<s>", eos_token="</s>")
    return model


BUILDERS = {"gpt2": _gpt2, "llama": _llama, "qwen2": _qwen2, "mistral": _mistral}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> dict[str, tuple[torch.nn.Module, Path]]:
    out = {}  # on the suite's torch threads (tests/conftest.py; setting 1 here left later tests on 1 under 2: #38)
    for i, (name, build) in enumerate(BUILDERS.items()):
        torch.manual_seed(i)
        folder = tmp_path_factory.mktemp(name)
        out[name] = (build(folder), folder)
    return out


@pytest.fixture(scope="module")
def loaded(zoo):
    return {name: hf.read_hf_folder(folder) for name, (_, folder) in zoo.items()}


def _ids(vocab: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, (2, 24), generator=torch.Generator().manual_seed(seed))  # (B, T)


@pytest.mark.parametrize("name", BUILDERS)
def test_logits_match_transformers_on_traced_and_fast_paths(zoo, loaded, name):
    ref_model, _ = zoo[name]
    model = loaded[name].model
    ids = _ids(model.config.vocab_size)
    with torch.no_grad():
        ref = ref_model(ids).logits
        traced, fast = model(ids, trace=True).logits, model(ids).logits
    assert (traced - ref).abs().max() <= 1e-5
    assert (fast - ref).abs().max() <= 1e-5
    assert ref.abs().max() > 1.0  # the random weights give logits far from zero, so the bound means something


@pytest.mark.parametrize("name", BUILDERS)
def test_every_layer_attention_matches_eager_output_attentions(zoo, loaded, name):
    ref_model, _ = zoo[name]
    model = loaded[name].model
    ids = _ids(model.config.vocab_size, seed=1)
    with torch.no_grad():
        ref = ref_model(ids, output_attentions=True).attentions
        ours = model(ids, trace=True).trace.layers
    assert len(ref) == len(ours) == model.config.n_layers
    for a, layer in zip(ref, ours):
        assert layer.probs.shape == a.shape  # (B, H, T, T): one matrix per query head, GQA or not
        assert (layer.probs - a).abs().max() <= 1e-6
    assert max(float(a[..., 4:, :].max()) for a in ref) > 0.6  # sharp rows (past the first few), not uniform ones


@pytest.mark.parametrize("name", BUILDERS)
def test_greedy_generation_matches_hf_generate_with_and_without_cache(zoo, loaded, name):
    ref_model, _ = zoo[name]
    model = loaded[name].model
    ref_model.generation_config.eos_token_id = None  # run all NEW_TOKENS steps on both sides
    seen = set()
    for prompt in _ids(model.config.vocab_size, seed=2)[:, :PROMPT_LEN]:
        x = prompt[None]  # (1, PROMPT_LEN)
        with torch.no_grad():  # an explicit mask: without one, transformers masks every generated pad_token_id
            ref = ref_model.generate(x, attention_mask=torch.ones_like(x), do_sample=False,
                                     max_new_tokens=NEW_TOKENS, pad_token_id=0)[0, PROMPT_LEN:].tolist()
        runs = {cache: [s.token_id for s in generate(model, prompt.tolist(), strategy="greedy", use_cache=cache,
                                                     max_new_tokens=NEW_TOKENS, stop_at_eos=False, attention=False)]
                for cache in (True, False)}
        assert runs[True] == runs[False] == ref
        seen |= set(ref)
    assert len(seen) > 4  # not a constant run (a tied random model often repeats its last token)


def test_gpt2_port_is_exact_in_float64(zoo):
    """No approximation in the GPT-2 mapping: in float64 the logits agree to rounding (RoPE models keep a ~5e-7
    gap there, since transformers builds its cos/sin in float32 whatever the model's dtype)."""
    ref_model, folder = zoo["gpt2"]
    model = hf.read_hf_folder(folder, dtype=torch.float64).model
    ids = _ids(model.config.vocab_size, seed=7)
    with torch.no_grad():
        gap = (model(ids, trace=True).logits - copy.deepcopy(ref_model).double()(ids).logits).abs().max()
    assert gap <= 1e-12


def test_wrong_rope_pair_order_breaks_parity(zoo, monkeypatch):
    """Without the per-head q/k row reordering, Llama's half-split pairs are rotated as interleaved ones."""
    ref_model, folder = zoo["llama"]
    monkeypatch.setattr(hf, "half_to_interleaved", lambda t, n_heads, d_k: t)
    model = hf.read_hf_folder(folder).model
    ids = _ids(model.config.vocab_size, seed=3)
    with torch.no_grad():
        ref = ref_model(ids, output_attentions=True).attentions
        ours = model(ids, trace=True).trace.layers
    assert max(float((layer.probs - a).abs().max()) for a, layer in zip(ref, ours)) > 1e-2


def test_sharded_save_loads_the_same_model(zoo, loaded, tmp_path):
    ref_model, folder = zoo["llama"]
    shutil.copytree(folder, tmp_path / "sharded")
    (tmp_path / "sharded" / "model.safetensors").unlink()
    ref_model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    shards = sorted(p.name for p in (tmp_path / "sharded").glob("*.safetensors"))
    assert len(shards) > 1 and (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    ckpt = hf.read_hf_folder(tmp_path / "sharded")
    assert ckpt.metadata["files"] == shards
    ids = _ids(ckpt.model.config.vocab_size, seed=4)
    with torch.no_grad():
        assert torch.equal(ckpt.model(ids).logits, loaded["llama"].model(ids).logits)


def test_bfloat16_weights_are_read_as_float32(zoo, tmp_path):
    _, folder = zoo["mistral"]
    shutil.copytree(folder, tmp_path / "bf16")
    tf.MistralForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).save_pretrained(tmp_path / "bf16")
    ref_model = tf.MistralForCausalLM.from_pretrained(tmp_path / "bf16", dtype=torch.float32).eval()  # local folder
    ckpt = hf.read_hf_folder(tmp_path / "bf16")
    assert ckpt.metadata["stored_dtypes"] == ["BF16"] and ckpt.model.tok_emb.weight.dtype == torch.float32
    ids = _ids(ckpt.model.config.vocab_size, seed=5)
    with torch.no_grad():
        assert (ckpt.model(ids).logits - ref_model(ids).logits).abs().max() <= 1e-5


@pytest.mark.parametrize("scaling", [
    None,
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0},
    {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "beta_fast": 16.0},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256, "mscale": 0.7,
     "mscale_all_dim": 0.5},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8192},
])
def test_rope_scaling_from_config_matches_rope_init_functions(scaling):
    cfg = tf.LlamaConfig(hidden_size=512, num_attention_heads=4, max_position_embeddings=4096,
                         rope_theta=500000.0, rope_scaling=scaling)
    hf_dict = json.loads(cfg.to_json_string())
    base, ours = hf.rope_from_hf(hf_dict)
    assert base == 500000.0 and (ours is None) == (scaling is None)
    seq_len = 3 * 4096  # dynamic NTK only changes beyond max_position_embeddings
    kind = "default" if scaling is None else scaling["rope_type"]
    if kind == "default":
        ref_freq, ref_factor = tf.models.llama.modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters(cfg)
    else:
        extra = {"seq_len": seq_len} if kind == "dynamic" else {}
        ref_freq, ref_factor = ROPE_INIT_FUNCTIONS[kind](cfg, "cpu", **extra)
    freq, factor = rope.inv_freq(128, base, ours, seq_len=seq_len)
    assert torch.allclose(freq.float(), ref_freq.float(), rtol=2e-6, atol=0)
    assert factor == pytest.approx(ref_factor, rel=1e-7)


def test_tokenizers_match_transformers_on_both_layouts(zoo, loaded):
    text = "the cat sat on the river bank<|endoftext|> i like dogs"
    for name in ("gpt2", "llama"):
        ref = tf.AutoTokenizer.from_pretrained(zoo[name][1])
        assert loaded[name].tokenizer.encode(text).ids == ref(text)["input_ids"]
    assert loaded["llama"].tokenizer.encode("the cat").ids[0] == 0  # the <s> its post-processor adds
    eot = loaded["gpt2"].tokenizer.token_to_id("<|endoftext|>")
    assert eot in loaded["gpt2"].tokenizer.encode(text).ids  # one whole special token, not BPE pieces


def test_special_tokens_come_from_the_tokenizer_config_and_pad_is_never_a_real_first_token(loaded):
    g = loaded["gpt2"]
    eot = g.tokenizer.token_to_id("<|endoftext|>")
    st = g.metadata["special_tokens"]
    assert st["bos"]["token"] == st["eos"]["token"] == "<|endoftext|>" and st["eos"]["id"] == eot
    assert st["pad"]["id"] == eot == g.model.config.pad_id != 0  # GPT-2 has no pad; id 0 is a real token
    assert "end token" in st["pad"]["source"]
    ll = loaded["llama"].metadata["special_tokens"]
    assert (ll["bos"]["token"], ll["eos"]["token"], ll["unk"]["token"]) == ("<s>", "</s>", "<unk>")
    assert ll["pad"]["id"] == loaded["llama"].model.config.vocab_size - 1 > max(
        loaded["llama"].tokenizer.get_vocab().values())  # a row no token uses
    assert [loaded[n].metadata["adds_bos"] for n in ("gpt2", "llama", "qwen2")] == [False, True, False]
    q = loaded["qwen2"].metadata
    assert q["special_tokens"]["pad"]["token"] == "<|endoftext|>" and q["special_tokens"]["bos"] is None
    assert q["special_tokens"]["eos"]["token"] == "<|im_end|>" and q["eos_ids"] == [2]


def test_configs_map_onto_the_architecture_options(loaded):
    g, ll, q, m = (loaded[n].model.config for n in ("gpt2", "llama", "qwen2", "mistral"))
    assert (g.pos_encoding, g.mlp, g.embed_scale, g.tie_weights, g.norm) == ("learned", "gelu_tanh", False, True,
                                                                              "layernorm")
    assert (ll.norm, ll.mlp, ll.n_kv_heads, ll.tie_weights, ll.attn_bias, ll.embed_scale) == (
        "rmsnorm", "swiglu", 2, False, False, False)
    assert ll.rope_scaling["type"] == "llama3" and q.rope_scaling["type"] == "yarn"
    assert (q.attn_bias, q.out_bias, q.mlp_bias, q.tie_weights) == (True, False, False, True)
    assert (m.n_kv_heads, m.rope_base, m.rope_scaling) == (1, 500.0, {"type": "linear", "factor": 2.0})


def test_load_checkpoint_accepts_a_model_folder(zoo, loaded):
    ckpt = checkpoint.load_checkpoint(zoo["qwen2"][1])
    ids = _ids(ckpt.model.config.vocab_size, seed=6)
    with torch.no_grad():
        assert torch.equal(ckpt.model(ids).logits, loaded["qwen2"].model(ids).logits)
    assert ckpt.metadata["source"] == "huggingface" and ckpt.path == zoo["qwen2"][1]


def test_context_is_capped_at_a_sliding_window():
    base = {"model_type": "mistral", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 1,
            "intermediate_size": 64, "vocab_size": 100, "max_position_embeddings": 4096}
    assert hf.hf_config({**base, "sliding_window": 16}).max_len == 16
    assert hf.hf_config({**base, "sliding_window": None}).max_len == 4096
    qwen = {**base, "model_type": "qwen2", "sliding_window": 16}
    assert hf.hf_config({**qwen, "use_sliding_window": False}).max_len == 4096
    assert hf.hf_config({**qwen, "layer_types": ["sliding_attention"]}).max_len == 16


# -- hostile folders ------------------------------------------------------------------------------
def _config(folder: Path, **changes) -> None:
    doc = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**doc, **changes}))


def _weights(folder: Path, edit) -> None:
    from safetensors.torch import load_file
    state = load_file(folder / "model.safetensors")
    edit(state)
    save_file(state, folder / "model.safetensors")


def _index_outside(folder: Path) -> None:
    (folder / "model.safetensors").rename(folder.parent / "stolen.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"x": "../stolen.safetensors"}}))


HOSTILE = {
    "no config": (lambda f: (f / "config.json").unlink(), "config.json is missing"),
    "config not JSON": (lambda f: (f / "config.json").write_text("{'model_type': gpt2"), "not valid JSON"),
    "unsupported architecture": (lambda f: _config(f, model_type="bert"), "'bert' model"),
    "huge vocabulary": (lambda f: _config(f, vocab_size=10**7), "10,000,000 tokens"),
    "pickle only": (lambda f: ((f / "model.safetensors").unlink(), (f / "pytorch_model.bin").write_bytes(
        b"\x80\x04\x95 pickle")), "Convert it once to safetensors"),
    "pickle named safetensors": (lambda f: (f / "model.safetensors").write_bytes(b"PK\x03\x04 zip"), "pickle"),
    "mismatched shapes": (lambda f: _config(f, n_inner=96), "has shape"),
    "missing tensor": (lambda f: _weights(f, lambda s: s.pop("transformer.h.1.mlp.c_proj.bias")), "lack 1 tensor"),
    "unknown tensor": (lambda f: _weights(f, lambda s: s.update(extra=torch.zeros(2))), "does not use"),
    "quantized weights": (lambda f: _weights(f, lambda s: s.update(
        {"transformer.h.0.ln_1.bias": torch.zeros(32, dtype=torch.int8)})), "not quantized"),
    "no tokenizer": (lambda f: (f / "vocab.json").unlink(), "no tokenizer.json"),
    "shard outside the folder": (_index_outside, "outside the folder"),
    "head_dim": (lambda f: _config(f, model_type="llama", hidden_size=32, num_attention_heads=4, head_dim=16,
                                   num_hidden_layers=2, intermediate_size=64, vocab_size=100,
                                   max_position_embeddings=64), "head_dim != hidden_size / num_attention_heads"),
    "longrope": (lambda f: _config(f, model_type="llama", hidden_size=32, num_attention_heads=4,
                                   num_hidden_layers=2, intermediate_size=64, vocab_size=100,
                                   max_position_embeddings=64, rope_scaling={"rope_type": "longrope"}), "'longrope'"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_folder_is_refused_before_any_weight_is_read(zoo, tmp_path, monkeypatch, case):
    folder = tmp_path / "m"
    shutil.copytree(zoo["gpt2"][1], folder)
    break_it, message = HOSTILE[case]
    break_it(folder)
    monkeypatch.setattr(hf, "_load_tensors", lambda *a: pytest.fail("weights were read from a bad folder"))
    with pytest.raises(ValueError, match=message):
        hf.read_hf_folder(folder)


def test_too_large_for_memory_is_refused_with_the_sizes(zoo, monkeypatch):
    monkeypatch.setattr(hf, "available_bytes", lambda device: 50_000)
    monkeypatch.setattr(hf, "_load_tensors", lambda *a: pytest.fail("weights were read although they do not fit"))
    with pytest.raises(ValueError, match=r"parameters: \d+\.\d KB in float32, but only 48\.8 KB of memory is free"):
        hf.read_hf_folder(zoo["gpt2"][1])


def test_memory_check_uses_meminfo_on_the_cpu():
    free = hf.available_bytes(torch.device("cpu"))
    assert free is not None and free > 2**20
    with pytest.raises(ValueError, match="Pick a smaller model"):
        hf.check_memory(free, torch.float32, torch.device("cpu"))  # 4 bytes per parameter > what is free


# -- the instructor's list ------------------------------------------------------------------------
def test_model_dirs_from_env_lists_folders_without_reading_weights(zoo, loaded, tmp_path, monkeypatch):
    root = tmp_path / "models"
    for name in ("gpt2", "qwen2"):
        shutil.copytree(zoo[name][1], root / name)
    shutil.copytree(zoo["gpt2"][1], root / "bert-like")
    _config(root / "bert-like", model_type="bert")
    (root / "notes").mkdir()  # no config.json: not a model folder
    monkeypatch.setattr(hf, "_load_tensors", lambda *a: pytest.fail("the listing read weights"))
    env = {hf.ENV_VAR: f"{root}:{zoo['llama'][1]}:{root / 'gpt2'}:/does/not/exist:"}
    entries = hf.model_dirs_from_env(env)
    assert [e.name for e in entries] == ["bert-like", "gpt2", "qwen2", zoo["llama"][1].name]
    by = {e.name: e for e in entries}
    assert "'bert' model" in by["bert-like"].problem and by["bert-like"].model_type == "bert"
    for name in ("gpt2", "qwen2"):
        e = by[name]
        assert e.problem is None and e.model_type == name
        assert e.size_bytes == (root / name / "model.safetensors").stat().st_size
        assert e.n_params == loaded[name].metadata["n_params"]
    assert hf.find_model_dir("qwen2", env) == root / "qwen2"
    with pytest.raises(ValueError, match="no model named '/etc'"):
        hf.find_model_dir("/etc", env)
    assert hf.model_dirs_from_env({hf.ENV_VAR: ""}) == []  # set but empty: no folders at all
    assert hf.model_dirs_from_env({hf.HOME_VAR: str(tmp_path / "none")}) == []  # unset: models home, missing


# -- head roles with the model's own vocabulary ---------------------------------------------------
def test_head_scores_on_uniform_attention_equal_their_formulas(loaded):
    """Zero Q/K weights make every causal row uniform: query t gives 1/(t+1) to each key, so each score is a
    known mean over the queries it averages."""
    ckpt = loaded["qwen2"]
    model = hf.read_hf_folder(ckpt.path).model
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight[: 32 + 16].zero_()  # the Q rows (d_model 32) and K rows (d_kv 16): scores 0
            block.attn.qkv.bias[: 32 + 16].zero_()
    half, bos = 5, 7
    ids = real_models.repeated_random_ids(ckpt.tokenizer, model.config.vocab_size, n_sequences=3, half=half,
                                          bos_id=bos)
    assert ids.shape == (3, 1 + 2 * half) and (ids[:, 0] == bos).all()
    assert torch.equal(ids[:, 1:1 + half], ids[:, 1 + half:])
    scores = real_models.role_scores_on_ids(model, ids, half)
    t = torch.arange(1, 1 + 2 * half, dtype=torch.float64)
    q = torch.arange(1 + half, 1 + 2 * half, dtype=torch.float64)
    for role, expected in (("previous-token", (1 / (t + 1)).mean()), ("first-token", (1 / (t + 1)).mean()),
                           ("self", (1 / (t + 1)).mean()), ("induction", (1 / (q + 1)).mean())):
        assert torch.allclose(scores[role].double(), expected.expand(2, 4), atol=1e-6), role


def test_random_head_sequences_use_only_ordinary_tokens(loaded):
    for name in ("gpt2", "qwen2"):
        tok = loaded[name].tokenizer
        ids = real_models.repeated_random_ids(tok, loaded[name].model.config.vocab_size, n_sequences=16, half=20)
        specials = set(tok.get_added_tokens_decoder())
        assert specials and not specials & set(ids.flatten().tolist())
        assert len(set(ids.flatten().tolist())) > 50  # really random over the vocabulary
    roles = real_models.real_head_roles(loaded["gpt2"].model, loaded["gpt2"].tokenizer, n_sequences=4)
    assert len(roles) == 2 * 4 and all(0 <= s <= 1 for r in roles for s in r["scores"].values())
    assert set(roles[0]["scores"]) == set(real_models.REAL_ROLES)
