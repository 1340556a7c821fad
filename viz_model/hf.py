"""Read a Hugging Face model folder (GPT-2, Llama, Mistral, Qwen2) into a TinyTransformer, with safetensors only.

    ckpt = read_hf_folder(folder)   # HFModel(model, tokenizer, metadata, path=folder)
    model_dirs_from_env()           # the folders the instructor named in ATTENTION_LAB_MODEL_DIRS at launch
                                    # (unset: models/, where `make models` downloads)

Never `transformers`, never remote code, never a pickle: config.json is mapped onto ModelConfig, the
*.safetensors tensors (sharded too) are memory-mapped and converted once, tokenizer.json (or GPT-2's
vocab.json + merges.txt) is read with `tokenizers`. Everything is checked (config, files, tokenizer, every
tensor's name, shape and dtype, memory) before any weight is read, so a bad folder loads nothing.

Conversions: GPT-2's Conv1D weights are stored (in, out) and are transposed; Llama's q/k/v become our one
fused attn.qkv. Llama rotates half-split pairs (i, i + d_k/2) while we rotate interleaved pairs (2i, 2i+1),
so each head's q and k rows are reordered: ours[2i] = theirs[i], ours[2i+1] = theirs[i + d_k/2]. Scores,
attention and logits are unchanged; trace.q / trace.k are in the interleaved order.

Pad id (ModelConfig.pad_id; only a mask/loss convention, a real model never needs to pad): the tokenizer's
own pad token when it has one; else an embedding row no token uses (vocab_size - 1, when the model's table
is larger than the tokenizer); else the end token, as Hugging Face does for GPT-2 (never id 0: that is "!").
metadata["special_tokens"]["pad"]["source"] says which; the loss then ignores targets equal to that id.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from safetensors import SafetensorError, safe_open
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
from torch.overrides import TorchFunctionMode

from viz_model.config import MAX_VOCAB, ModelConfig
from viz_model.model import TinyTransformer
from viz_model.rope import SCALINGS, validate_scaling

ENV_VAR = "ATTENTION_LAB_MODEL_DIRS"
HOME_VAR = "ATTENTION_LAB_MODELS_HOME"  # where `make models` puts models (default: models/ in the repository)
MODELS_HOME = Path(__file__).resolve().parent.parent / "models"
MAX_CONFIG_BYTES = 1 * 2**20          # config.json, tokenizer_config.json, ...
MAX_INDEX_BYTES = 16 * 2**20          # model.safetensors.index.json
MAX_TOKENIZER_BYTES = 64 * 2**20      # tokenizer.json (Llama 3: 9 MB, Gemma: 33 MB)
USABLE_MEMORY = 0.9                   # the weights may take this share of the available memory
_FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}
_GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_ROLES = ("bos", "eos", "pad", "unk")


# -- small readers ------------------------------------------------------------------------------
def read_json(path: Path, limit: int, required: bool = True) -> dict[str, Any]:
    """A JSON object from path, or {} when optional and absent; anything else is a ValueError."""
    if not path.is_file():
        if required:
            raise ValueError(f"{path.name} is missing from the model folder {path.parent.name}.")
        return {}
    if path.stat().st_size > limit:
        raise ValueError(f"{path.name} is larger than {limit // 2**20} MB; that is not a model description.")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path.name} is not valid JSON ({e.__class__.__name__}).") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path.name} must hold a JSON object.")
    return doc


def _int(hf: Mapping[str, Any], key: str, default: Any = None) -> int:
    value = hf.get(key)
    value = default if value is None else value  # null in config.json means "the default", as in transformers
    if value is None:
        raise ValueError(f"config.json has no '{key}'.")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config.json's '{key}' must be a whole number >= 1, got {value!r}.")
    return value


def _number(hf: Mapping[str, Any], key: str, default: float) -> float:
    value = hf.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"config.json's '{key}' must be a number, got {value!r}.")
    return float(value)


# -- config.json -> ModelConfig -----------------------------------------------------------------
def hf_config(hf: Mapping[str, Any]) -> ModelConfig:
    """The ModelConfig that reproduces a config.json of a supported model_type (ValueError otherwise)."""
    family = family_of(hf)
    vocab = hf.get("vocab_size")
    if isinstance(vocab, int) and vocab > MAX_VOCAB:
        raise ValueError(f"the model's vocabulary has {vocab:,} tokens; the app reads models with at most "
                         f"{MAX_VOCAB:,}.")
    fields = family.fields(hf)
    try:
        return ModelConfig(**fields)
    except ValueError as e:
        raise ValueError(f"config.json describes a model this app cannot build: {e}") from None


def _gpt2_fields(hf: Mapping[str, Any]) -> dict[str, Any]:
    act = hf.get("activation_function", "gelu_new")
    if act not in _GPT2_ACTIVATIONS:
        raise ValueError(f"this GPT-2 uses the activation {act!r}; the app has {', '.join(_GPT2_ACTIVATIONS)}.")
    if hf.get("scale_attn_by_inverse_layer_idx") or not hf.get("scale_attn_weights", True):
        raise ValueError("this GPT-2 variant scales attention scores differently from 1/sqrt(d_k); "
                         "the app does not model that.")
    if hf.get("add_cross_attention"):
        raise ValueError("this GPT-2 has cross-attention (an encoder-decoder); the app reads decoder-only GPT-2.")
    d = _int(hf, "n_embd")
    return dict(vocab_size=_int(hf, "vocab_size"), d_model=d, n_heads=_int(hf, "n_head"),
                n_layers=_int(hf, "n_layer"), d_ff=_int(hf, "n_inner", 4 * d), max_len=_int(hf, "n_positions"),
                pos_encoding="learned", norm_eps=_number(hf, "layer_norm_epsilon", 1e-5),
                mlp=_GPT2_ACTIVATIONS[act], embed_scale=False, tie_weights=bool(hf.get("tie_word_embeddings", True)))


def _llama_fields(hf: Mapping[str, Any]) -> dict[str, Any]:
    """llama / mistral / qwen2: RMSNorm, SwiGLU, RoPE, grouped-query attention."""
    d, heads = _int(hf, "hidden_size"), _int(hf, "num_attention_heads")
    head_dim = hf.get("head_dim")
    if head_dim is not None and head_dim * heads != d:
        raise ValueError(f"this model's heads are {head_dim} wide, but hidden_size / num_attention_heads = "
                         f"{d / heads:g}; head_dim != hidden_size / num_attention_heads is not supported.")
    if hf.get("hidden_act", "silu") != "silu":
        raise ValueError(f"this model's MLP uses {hf.get('hidden_act')!r}; the app's SwiGLU uses 'silu'.")
    kv = _int(hf, "num_key_value_heads", heads)
    theta, scaling = rope_from_hf(hf)
    bias = bool(hf.get("attention_bias", False))
    biases = dict(attn_bias=bias, out_bias=bias, mlp_bias=bool(hf.get("mlp_bias", False)))
    return dict(vocab_size=_int(hf, "vocab_size"), d_model=d, n_heads=heads, n_kv_heads=None if kv == heads else kv,
                n_layers=_int(hf, "num_hidden_layers"), d_ff=_int(hf, "intermediate_size"), max_len=_context(hf),
                pos_encoding="rope", rope_base=theta, rope_scaling=scaling, norm="rmsnorm",
                norm_eps=_number(hf, "rms_norm_eps", 1e-6), mlp="swiglu", embed_scale=False,
                **{**biases, **FAMILIES[hf.get("model_type")].biases},
                tie_weights=bool(hf.get("tie_word_embeddings", False)))


def _context(hf: Mapping[str, Any]) -> int:
    """max_position_embeddings, capped at the sliding window where one applies: within the window, sliding-window
    attention is plain causal attention (query i sees keys j > i - window), and the app has no sliding window."""
    n, window = _int(hf, "max_position_embeddings"), hf.get("sliding_window")
    if FAMILIES[hf.get("model_type")].slides(hf) and window is not None:
        return min(n, _int(hf, "sliding_window"))
    return n


def rope_from_hf(hf: Mapping[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(rope_base, rope_scaling) from transformers 5's `rope_parameters` or the older rope_theta + rope_scaling."""
    params = hf.get("rope_parameters")
    params = dict(hf.get("rope_scaling") or {}) if params is None else params
    if not isinstance(params, dict) or any(isinstance(v, dict) for v in params.values()):
        raise ValueError("config.json's RoPE parameters must be one JSON object (per-layer RoPE is not supported).")
    params = {k: v for k, v in params.items() if v is not None}
    theta = _number({"rope_theta": params.pop("rope_theta", hf.get("rope_theta", 10000.0))}, "rope_theta", 1e4)
    kind = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    if params.pop("partial_rotary_factor", 1.0) != 1.0 or hf.get("partial_rotary_factor", 1.0) != 1.0:
        raise ValueError("this model rotates only part of each head (partial_rotary_factor); not supported.")
    rows = {s.hf_name: s for s in SCALINGS.values() if s.hf_name}  # transformers' names: "default" is no scaling
    if kind not in rows:
        raise ValueError(f"this model uses the RoPE scaling {kind!r}; the app knows {', '.join(rows)}.")
    if not rows[kind].params:
        return theta, None
    kind, params = rows[kind].name, rows[kind].from_hf(params, hf, _int(hf, "max_position_embeddings"))
    try:
        return theta, validate_scaling({"type": kind, **params})
    except ValueError as e:
        raise ValueError(f"config.json's RoPE scaling: {e}") from None


# -- which tensor of ours comes from which tensors of theirs -------------------------------------
@dataclass(frozen=True)
class Source:
    names: tuple[str, ...]                # their tensors, concatenated along dim 0 in this order
    shapes: tuple[tuple[int, ...], ...]   # the shape each must have in the file
    how: str = "copy"                     # "copy" | "transpose" (GPT-2 Conv1D) | "qkv" (Llama q|k|v, RoPE rows)


def weight_plan(cfg: ModelConfig, kind: str, names: set[str]) -> dict[str, Source]:
    """Our state_dict name -> its Source, for a GPT-2 or Llama-family checkpoint with these tensor names."""
    family = FAMILIES[kind]
    prefix = family.prefix
    if not any(n.startswith(prefix) for n in names):
        prefix = ""  # GPT2Model / LlamaModel saved without the LM head wrapper
    plan = family.plan(cfg, prefix)
    if not cfg.tie_weights:
        plan["head.weight"] = Source(("lm_head.weight",), ((cfg.vocab_size, cfg.d_model),))
    return plan


def _gpt2_plan(cfg: ModelConfig, p: str) -> dict[str, Source]:
    d, f = cfg.d_model, cfg.d_ff
    plan = {"tok_emb.weight": Source((f"{p}wte.weight",), ((cfg.vocab_size, d),)),
            "pos_emb.weight": Source((f"{p}wpe.weight",), ((cfg.max_len, d),)),
            "ln_f.weight": Source((f"{p}ln_f.weight",), ((d,),)), "ln_f.bias": Source((f"{p}ln_f.bias",), ((d,),))}
    for i in range(cfg.n_layers):
        h, b = f"{p}h.{i}.", f"blocks.{i}."
        pairs = {"ln1": ("ln_1", d, None), "ln2": ("ln_2", d, None), "attn.qkv": ("attn.c_attn", 3 * d, d),
                 "attn.out": ("attn.c_proj", d, d), "mlp.0": ("mlp.c_fc", f, d), "mlp.2": ("mlp.c_proj", d, f)}
        for ours, (theirs, n_out, n_in) in pairs.items():
            if n_in is None:  # LayerNorm: weight and bias, both (d,)
                plan[f"{b}{ours}.weight"] = Source((f"{h}{theirs}.weight",), ((n_out,),))
            else:  # Conv1D stores (in, out): y = x W + b
                plan[f"{b}{ours}.weight"] = Source((f"{h}{theirs}.weight",), ((n_in, n_out),), "transpose")
            plan[f"{b}{ours}.bias"] = Source((f"{h}{theirs}.bias",), ((n_out,),))
    return plan


def _llama_plan(cfg: ModelConfig, p: str) -> dict[str, Source]:
    d, f, d_kv = cfg.d_model, cfg.d_ff, cfg.kv_heads * cfg.d_k
    plan = {"tok_emb.weight": Source((f"{p}embed_tokens.weight",), ((cfg.vocab_size, d),)),
            "ln_f.weight": Source((f"{p}norm.weight",), ((d,),))}
    for i in range(cfg.n_layers):
        h, b = f"{p}layers.{i}.", f"blocks.{i}."
        plan[f"{b}ln1.weight"] = Source((f"{h}input_layernorm.weight",), ((d,),))
        plan[f"{b}ln2.weight"] = Source((f"{h}post_attention_layernorm.weight",), ((d,),))
        qkv = tuple(f"{h}self_attn.{x}_proj" for x in "qkv")
        plan[f"{b}attn.qkv.weight"] = Source(tuple(f"{n}.weight" for n in qkv), ((d, d), (d_kv, d), (d_kv, d)), "qkv")
        if cfg.attn_bias:
            plan[f"{b}attn.qkv.bias"] = Source(tuple(f"{n}.bias" for n in qkv), ((d,), (d_kv,), (d_kv,)), "qkv")
        plan[f"{b}attn.out.weight"] = Source((f"{h}self_attn.o_proj.weight",), ((d, d),))
        if cfg.out_bias:
            plan[f"{b}attn.out.bias"] = Source((f"{h}self_attn.o_proj.bias",), ((d,),))
        for ours, theirs, shape in (("gate", "gate_proj", (f, d)), ("up", "up_proj", (f, d)),
                                    ("down", "down_proj", (d, f))):
            plan[f"{b}mlp.{ours}.weight"] = Source((f"{h}mlp.{theirs}.weight",), (shape,))
            if cfg.mlp_bias:
                plan[f"{b}mlp.{ours}.bias"] = Source((f"{h}mlp.{theirs}.bias",), ((shape[0],),))
    return plan


def _layer_types_slide(hf: Mapping[str, Any]) -> bool:
    return "sliding_attention" in (hf.get("layer_types") or [])


def _qwen2_slides(hf: Mapping[str, Any]) -> bool:
    return _layer_types_slide(hf) if hf.get("layer_types") else bool(hf.get("use_sliding_window"))


@dataclass(frozen=True)
class Family:
    """One model family the app reads: how its config.json becomes ModelConfig fields and where its tensors are."""
    fields: Callable[[Mapping[str, Any]], dict[str, Any]]    # config.json -> ModelConfig keyword arguments
    plan: Callable[[ModelConfig, str], dict[str, Source]]     # our state_dict name -> their tensors, given a prefix
    prefix: str                                              # the LM wrapper's prefix of their tensor names
    slides: Callable[[Mapping[str, Any]], bool] = _layer_types_slide  # whether `sliding_window` applies
    biases: dict[str, bool] = field(default_factory=dict)   # bias flags the family fixes, whatever config.json says


# The single list of families: hf_config, weight_plan and the "which models" messages iterate it. A new family is one
# row (with its fields and plan functions) plus its tests.
FAMILIES: dict[str, Family] = {
    "gpt2": Family(_gpt2_fields, _gpt2_plan, "transformer."),
    "llama": Family(_llama_fields, _llama_plan, "model."),
    "mistral": Family(_llama_fields, _llama_plan, "model.", slides=lambda hf: True),
    "qwen2": Family(_llama_fields, _llama_plan, "model.", slides=_qwen2_slides,
                    biases=dict(attn_bias=True, out_bias=False, mlp_bias=False)),
}
SUPPORTED_TYPES = tuple(FAMILIES)


def family_of(hf: Mapping[str, Any]) -> Family:
    """The family row of a config.json's model_type (ValueError naming the families the app reads)."""
    kind = hf.get("model_type")
    if kind not in FAMILIES:
        raise ValueError(f"this folder holds a {kind!r} model; the app reads only "
                         f"{', '.join(SUPPORTED_TYPES[:-1])} and {SUPPORTED_TYPES[-1]} checkpoints.")
    return FAMILIES[kind]


def _ignorable(name: str, cfg: ModelConfig) -> bool:
    """Tensors a checkpoint may carry that the model rebuilds itself: GPT-2's causal-mask buffers, old Llama
    rotary tables, and a tied head stored a second time."""
    return (name.endswith((".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq"))
            or (cfg.tie_weights and name == "lm_head.weight"))


def half_to_interleaved(t: torch.Tensor, n_heads: int, d_k: int) -> torch.Tensor:
    """Reorder each head's rows (dim 0) from half-split RoPE pairs to interleaved ones.
    (n_heads * d_k, ...) -> same shape; ours[2i] = theirs[i], ours[2i+1] = theirs[i + d_k/2]."""
    order = torch.arange(d_k).view(2, d_k // 2).t().reshape(-1)  # [0, d/2, 1, d/2+1, ...]
    return t.reshape(n_heads, d_k, *t.shape[1:])[:, order].reshape(t.shape)


def _convert(src: Source, parts: list[torch.Tensor], cfg: ModelConfig) -> torch.Tensor:
    if src.how == "transpose":
        return parts[0].t()  # (in, out) -> (out, in)
    if src.how == "qkv":
        q = half_to_interleaved(parts[0], cfg.n_heads, cfg.d_k)    # (d_model, ...)
        k = half_to_interleaved(parts[1], cfg.kv_heads, cfg.d_k)   # (d_kv, ...)
        return torch.cat([q, k, parts[2]], dim=0)                   # (d_model + 2 d_kv, ...)
    return parts[0]


# -- the folder's files ---------------------------------------------------------------------------
def weight_files(folder: Path) -> list[Path]:
    """The safetensors files holding the weights: the index's shards, model.safetensors, or every *.safetensors."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = read_json(index, MAX_INDEX_BYTES).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ValueError(f"{index.name} has no weight_map.")
        names = sorted({str(v) for v in weight_map.values()})
        for name in names:
            if Path(name).name != name or name.startswith(".") or not name.endswith(".safetensors"):
                raise ValueError(f"{index.name} names a shard {name!r} outside the folder; only plain "
                                 f"*.safetensors file names are read.")
            if not (folder / name).is_file():
                raise ValueError(f"the shard {name} named in {index.name} is missing.")
        return [folder / n for n in names]
    files = [folder / "model.safetensors"] if (folder / "model.safetensors").is_file() else sorted(
        p for p in folder.glob("*.safetensors") if p.is_file())
    if files:
        return files
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix in _PICKLE_SUFFIXES)
    if pickles:
        raise ValueError(
            f"{pickles[0]} is a PyTorch pickle; the app never opens pickles, because loading one can run any code. "
            f"Convert it once to safetensors on a machine where you trust the file, e.g. `python -c \"from "
            f"transformers import AutoModelForCausalLM as M; m = M.from_pretrained('path/to/{folder.name}'); "
            f"m.save_pretrained('path/to/{folder.name}')\"` (it writes model.safetensors beside it), then offer "
            f"the folder again.")
    raise ValueError(f"the model folder {folder.name} has no model.safetensors (nor sharded *.safetensors).")


@dataclass(frozen=True)
class StoredTensor:
    file: Path
    shape: tuple[int, ...]
    dtype: str  # safetensors' name: "F32", "BF16", ...


def read_headers(files: list[Path]) -> dict[str, StoredTensor]:
    """Every tensor's name, shape and dtype from the safetensors headers (no weight is read)."""
    out: dict[str, StoredTensor] = {}
    for path in files:
        with open(path, "rb") as f:
            head = f.read(9)
        if head[:1] == b"\x80" or head[:2] == b"PK":
            raise ValueError(f"{path.name} looks like a pickle / torch.save file; only safetensors are read.")
        if head[8:9] != b"{":
            raise ValueError(f"{path.name} is not a valid safetensors file (no JSON header).")
        try:
            with safe_open(str(path), framework="pt", device="cpu") as st:
                for name in st.keys():
                    sl = st.get_slice(name)
                    if name in out:
                        raise ValueError(f"the tensor {name} is stored twice ({out[name].file.name}, {path.name}).")
                    out[name] = StoredTensor(path, tuple(sl.get_shape()), sl.get_dtype())
        except (SafetensorError, OSError, RuntimeError) as e:
            raise ValueError(f"{path.name} is not a valid safetensors file ({str(e)[:120]}).") from None
    return out


def check_tensors(plan: dict[str, Source], stored: dict[str, StoredTensor], cfg: ModelConfig) -> int:
    """Every tensor the plan needs exists with its shape and a float dtype, nothing unknown is left over;
    returns the parameter count."""
    needed = [n for src in plan.values() for n in src.names]
    missing = [n for n in needed if n not in stored]
    if missing:
        raise ValueError(f"the weights lack {len(missing)} tensor(s) that config.json needs, e.g. "
                         f"{', '.join(missing[:3])}.")
    n_params = 0
    for src in plan.values():
        for name, shape in zip(src.names, src.shapes):
            t = stored[name]
            if t.shape != shape:
                raise ValueError(f"weight {name} has shape {t.shape} but config.json needs {shape}.")
            if t.dtype not in _FLOAT_DTYPES:
                raise ValueError(f"weight {name} is stored as {t.dtype}; the app reads float16/bfloat16/float32 "
                                 f"weights only (not quantized ones).")
            n_params += int(torch.Size(shape).numel())
    used = set(needed)
    extra = sorted(n for n in stored if n not in used and not _ignorable(n, cfg))
    if extra:
        raise ValueError(f"the weights hold {len(extra)} tensor(s) this architecture does not use, e.g. "
                         f"{', '.join(extra[:3])}: config.json may not describe these weights.")
    return n_params


# -- memory ---------------------------------------------------------------------------------------
def available_bytes(device: torch.device) -> int | None:
    """Free memory where the weights will live: CUDA's free memory, else /proc/meminfo's MemAvailable."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(n_params: int, dtype: torch.dtype, device: torch.device) -> int:
    """Refuse (ValueError) when n_params weights of this dtype do not fit; returns the bytes they need."""
    need = n_params * dtype.itemsize
    free = available_bytes(device)
    if free is not None and need > USABLE_MEMORY * free:
        raise ValueError(f"this model has {n_params:,} parameters: {human_bytes(need)} in "
                         f"{str(dtype).removeprefix('torch.')}, but only {human_bytes(free)} of memory is free on "
                         f"{device.type.upper()}. Pick a smaller model, or free memory and try again.")
    return need


def human_bytes(n: int) -> str:
    """1536 -> '1.5 KB', 5e8 -> '476.8 MB' (powers of 1024, as the picker shows sizes)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


# -- tokenizer and special tokens -----------------------------------------------------------------
def read_tokenizer(folder: Path) -> Tokenizer:
    """tokenizer.json, else GPT-2's vocab.json + merges.txt as a byte-level BPE."""
    path, vocab, merges = folder / "tokenizer.json", folder / "vocab.json", folder / "merges.txt"
    for p in (path, vocab, merges):
        if p.is_file() and p.stat().st_size > MAX_TOKENIZER_BYTES:
            raise ValueError(f"{p.name} is larger than {MAX_TOKENIZER_BYTES // 2**20} MB; that is not a tokenizer.")
    try:
        if path.is_file():
            return Tokenizer.from_file(str(path))
        if vocab.is_file() and merges.is_file():
            tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = decoders.ByteLevel()
            tok.post_processor = processors.ByteLevel(trim_offsets=False)
            return tok
    except Exception as e:  # tokenizers raises its own Exception types for bad files
        raise ValueError(f"the model's tokenizer could not be read ({str(e)[:120]}).") from None
    if (folder / "tokenizer.model").is_file():
        raise ValueError("this folder has only a SentencePiece tokenizer.model; the app reads tokenizer.json "
                         "(transformers' tokenizer.save_pretrained writes it).")
    raise ValueError(f"the model folder {folder.name} has no tokenizer.json (nor GPT-2's vocab.json + merges.txt).")


def _named_specials(folder: Path) -> tuple[dict[str, str], list[str]]:
    """role -> token text from special_tokens_map.json, then tokenizer_config.json (the tokenizer's own, wins)."""
    named: dict[str, str] = {}
    extra: list[str] = []
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        doc = read_json(folder / name, MAX_TOKENIZER_BYTES, required=False)
        for role in _ROLES:
            value = doc.get(f"{role}_token")
            value = value.get("content") if isinstance(value, dict) else value
            if isinstance(value, str) and value:
                named[role] = value
        listed = doc.get("additional_special_tokens") or doc.get("extra_special_tokens") or []
        for value in listed.values() if isinstance(listed, dict) else listed:  # transformers 5: {name: token}
            value = value.get("content") if isinstance(value, dict) else value
            if isinstance(value, str):
                extra.append(value)
    return named, extra


def _ids(value: Any) -> list[int]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def special_tokens(folder: Path, hf: Mapping[str, Any], tok: Tokenizer, cfg: ModelConfig
                   ) -> tuple[dict[str, dict[str, Any] | None], list[int]]:
    """({role: {"id", "token", "source"} or None} for bos/eos/pad/unk, every end-of-text id), from the tokenizer's
    own files first, then config.json / generation_config.json ids. "pad" is always filled (see the module doc)."""
    named, _ = _named_specials(folder)
    gen = read_json(folder / "generation_config.json", MAX_CONFIG_BYTES, required=False)
    out: dict[str, dict[str, Any] | None] = {}
    for role in _ROLES:
        tid, source = (tok.token_to_id(named[role]), "tokenizer") if role in named else (None, "")
        if tid is None:
            found = _ids(hf.get(f"{role}_token_id")) + _ids(gen.get(f"{role}_token_id"))
            tid, source = (found[0], "config.json / generation_config.json") if found else (None, "")
        ok = tid is not None and 0 <= tid < cfg.vocab_size
        out[role] = {"id": tid, "token": tok.id_to_token(tid), "source": source} if ok else None
    eos = [out["eos"]["id"]] if out["eos"] else []
    eos_ids = sorted({i for i in eos + _ids(hf.get("eos_token_id")) + _ids(gen.get("eos_token_id"))
                      if 0 <= i < cfg.vocab_size})
    if out["pad"] is None:
        out["pad"] = _fallback_pad(tok, cfg, out["eos"])
    return out, eos_ids


def adds_bos(tok: Tokenizer, bos: dict[str, Any] | None) -> bool:
    """Whether encode(text) (add_special_tokens=True) starts with the model's <bos> (Llama: yes; GPT-2, Qwen2: no)."""
    ids = tok.encode("a").ids
    return bos is not None and bool(ids) and ids[0] == bos["id"]


def _fallback_pad(tok: Tokenizer, cfg: ModelConfig, eos: dict[str, Any] | None) -> dict[str, Any]:
    used = max(tok.get_vocab(with_added_tokens=True).values(), default=-1) + 1
    if used < cfg.vocab_size:
        return {"id": cfg.vocab_size - 1, "token": None, "source": "an embedding row no token uses"}
    if eos is not None:
        return {**eos, "source": "the end token (the tokenizer has no pad token)"}
    return {"id": cfg.vocab_size - 1, "token": tok.id_to_token(cfg.vocab_size - 1),
            "source": "the last token (the tokenizer has no pad or end token)"}


def _register_specials(folder: Path, tok: Tokenizer) -> None:
    """vocab.json + merges.txt carry <|endoftext|> as a plain entry: make the named specials whole tokens."""
    named, extra = _named_specials(folder)
    known = {t.content for t in tok.get_added_tokens_decoder().values()}
    todo = [t for t in dict.fromkeys([*named.values(), *extra]) if t not in known and tok.token_to_id(t) is not None]
    if todo:
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in todo])


# -- the reader -----------------------------------------------------------------------------------
@dataclass
class _Prepared:
    hf: dict[str, Any]
    config: ModelConfig
    tokenizer: Tokenizer
    files: list[Path]
    stored: dict[str, StoredTensor]
    plan: dict[str, Source]
    n_params: int


def prepare(folder: str | Path) -> _Prepared:
    """Every check that needs no weight data: config, files, tokenizer, tensor names/shapes/dtypes."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder.name} is not a model folder.")
    hf = read_json(folder / "config.json", MAX_CONFIG_BYTES)
    cfg = hf_config(hf)
    files = weight_files(folder)
    stored = read_headers(files)
    plan = weight_plan(cfg, hf["model_type"], set(stored))
    n_params = check_tensors(plan, stored, cfg)
    tok = read_tokenizer(folder)
    if not (folder / "tokenizer.json").is_file():
        _register_specials(folder, tok)
    n_tok = max(tok.get_vocab(with_added_tokens=True).values(), default=-1) + 1
    if n_tok > cfg.vocab_size:
        raise ValueError(f"the tokenizer has token ids up to {n_tok - 1} but the model has only "
                         f"{cfg.vocab_size} embedding rows.")
    return _Prepared(hf, cfg, tok, files, stored, plan, n_params)


def _load_tensors(p: _Prepared, dtype: torch.dtype, device: torch.device) -> dict[str, torch.Tensor]:
    """Read (memory-mapped), convert and place every tensor once."""
    state: dict[str, torch.Tensor] = {}
    with ExitStack() as stack:
        handles = {f: stack.enter_context(safe_open(str(f), framework="pt", device="cpu")) for f in p.files}
        for name, src in p.plan.items():
            parts = [handles[p.stored[n].file].get_tensor(n) for n in src.names]
            t = _convert(src, parts, p.config).to(device=device, dtype=dtype).contiguous()  # (a view when transposed)
            if not torch.isfinite(t.sum(dtype=torch.float32)):  # NaN/inf propagate into the sum; no T-sized mask
                raise ValueError(f"weight {src.names[0]} contains NaN or infinite values.")
            state[name] = t
    return state


class HFModel(NamedTuple):
    """What a folder holds; checkpoint.load_checkpoint(folder) hands it out as a Checkpoint."""
    model: TinyTransformer
    tokenizer: Tokenizer
    metadata: dict
    path: Path


class _SkipParameterInit(TorchFunctionMode):
    """Skip torch.nn.init while a model is built (thread-local, unlike patching torch.nn.init): its parameters
    are allocated but never filled nor touched, since the checkpoint's tensors replace them at once. Building a
    0.5B model then takes ~0.2 s instead of ~10 s of random numbers (and the meta device, whose normal_ imports
    torch._dynamo: ~3 s more)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__module__", None) == "torch.nn.init":
            return args[0] if args else kwargs.get("tensor")
        return func(*args, **kwargs)


def read_hf_folder(folder: str | Path, device: torch.device | str = "cpu", *,
                   dtype: torch.dtype = torch.float32) -> HFModel:
    """A Hugging Face folder's model (eval mode, on `device`), tokenizer and metadata; any problem is a
    ValueError, raised before any weight is read."""
    folder, device = Path(folder), torch.device(device)
    p = prepare(folder)
    need = check_memory(p.n_params, dtype, device)
    specials, eos_ids = special_tokens(folder, p.hf, p.tokenizer, p.config)
    p.config = dataclasses.replace(p.config, pad_id=specials["pad"]["id"])
    with _SkipParameterInit():
        model = TinyTransformer(p.config)  # parameters allocated, never initialised: replaced just below
    state = _load_tensors(p, dtype, device)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if unexpected or set(missing) - ({"head.weight"} if p.config.tie_weights else set()):
        raise RuntimeError(f"weight plan and model disagree: {missing[:3]} {unexpected[:3]}")
    if p.config.tie_weights:
        model.head.weight = model.tok_emb.weight  # one matrix for input and output, as in the checkpoint
    model.to(device).eval()
    archs = p.hf.get("architectures")
    metadata = {
        "source": "huggingface", "model_type": p.hf["model_type"], "name": folder.name,
        "architecture": archs[0] if isinstance(archs, list) and archs else None,
        "n_params": p.n_params, "memory_bytes": need, "disk_bytes": sum(f.stat().st_size for f in p.files),
        "dtype": str(dtype).removeprefix("torch."),
        "stored_dtypes": sorted({p.stored[n].dtype for s in p.plan.values() for n in s.names}),
        "files": [f.name for f in p.files], "special_tokens": specials, "eos_ids": eos_ids,
        "adds_bos": adds_bos(p.tokenizer, specials["bos"]),
        "context": p.config.max_len, "context_in_config": p.hf.get("max_position_embeddings", p.hf.get("n_positions")),
    }
    return HFModel(model, p.tokenizer, metadata, folder)


# -- the instructor's folders ---------------------------------------------------------------------
@dataclass(frozen=True)
class ModelDir:
    name: str                # what the picker shows (unique in the listing)
    path: Path
    model_type: str | None
    size_bytes: int          # bytes of the weight files on disk
    n_params: int | None     # from the safetensors headers (no weight read)
    problem: str | None      # None = loadable; else the sentence saying why not


def describe_folder(folder: Path, name: str | None = None) -> ModelDir:
    """One folder's entry for the picker: all header-level checks, no weight data read."""
    model_type, size, n_params, problem = None, 0, None, None
    try:
        model_type = read_json(folder / "config.json", MAX_CONFIG_BYTES).get("model_type")
        model_type = str(model_type) if model_type is not None else None
        files = weight_files(folder)
        size = sum(f.stat().st_size for f in files)
        n_params = prepare(folder).n_params
    except ValueError as e:
        problem = str(e)
    return ModelDir(name or folder.name, folder, model_type, size, n_params, problem)


def _candidates(root: Path) -> list[Path]:
    if (root / "config.json").is_file():
        return [root]
    try:
        return sorted(c for c in root.iterdir() if c.is_dir() and (c / "config.json").is_file())
    except OSError:
        return []


def models_home(env: Mapping[str, str] | None = None) -> Path:
    """The folder `make models` downloads into: ATTENTION_LAB_MODELS_HOME, else models/ in the repository."""
    return Path((os.environ if env is None else env).get(HOME_VAR) or MODELS_HOME).expanduser()


def model_dirs_spec(env: Mapping[str, str] | None = None) -> str:
    """The folder list the app reads: ATTENTION_LAB_MODEL_DIRS when it is set (set but empty: no folders at all),
    else models_home() (a missing or empty folder lists nothing)."""
    e = os.environ if env is None else env
    return e[ENV_VAR] if ENV_VAR in e else str(models_home(e))


def model_dirs_from_env(env: Mapping[str, str] | None = None) -> list[ModelDir]:
    """Every model folder named in ATTENTION_LAB_MODEL_DIRS (colon-separated; each a model folder or a folder of
    model folders; unset: models_home()), in order, each once. The only way a folder enters the app: the instructor
    names or downloads it; students never type a path."""
    raw = model_dirs_spec(env)
    out: list[ModelDir] = []
    seen: set[Path] = set()
    for part in raw.split(":"):
        root = Path(part.strip()).expanduser()
        if not part.strip() or not root.is_dir():
            continue
        for folder in _candidates(root):
            real = folder.resolve()
            if real in seen:
                continue
            seen.add(real)
            names = {d.name for d in out}
            name = folder.name if folder.name not in names else f"{folder.parent.name}/{folder.name}"
            out.append(describe_folder(folder, name))
    return out


def find_model_dir(name: str, env: Mapping[str, str] | None = None) -> Path:
    """The folder the picker listed under `name` (ValueError if it is not in the instructor's list)."""
    for entry in model_dirs_from_env(env):
        if entry.name == name:
            return entry.path
    raise ValueError(f"no model named {name!r} is offered; the instructor lists folders in {ENV_VAR} at launch.")


__all__ = ["ENV_VAR", "FAMILIES", "Family", "HFModel", "HOME_VAR", "MODELS_HOME", "ModelDir", "SUPPORTED_TYPES",
           "Source", "StoredTensor", "adds_bos", "available_bytes", "check_memory", "describe_folder", "family_of",
           "find_model_dir", "half_to_interleaved", "hf_config", "human_bytes", "model_dirs_from_env",
           "model_dirs_spec", "models_home", "prepare", "read_hf_folder", "read_headers", "read_tokenizer",
           "rope_from_hf", "special_tokens", "weight_files", "weight_plan"]
