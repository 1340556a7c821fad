"""Encoder once, K/V reused: the source never changes while the translation is written, so the encoder and each
layer's cross-attention K/V run once; timed here against re-encoding the source at every step."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from viz_model.lessons.common import Fact
from viz_model.model import eval_mode
from viz_model.seq2seq import Seq2SeqTransformer, decode_steps, encode_source


@dataclass
class DecodeTiming:
    """The same greedy translation decoded two ways, timed on this machine."""

    tokens: int                     # target tokens decoded (each run)
    seconds_reuse: float            # encoder once, cross K/V once, decoder KV cache
    seconds_reencode: float         # the whole source encoded again at every step, no cache
    same_tokens: bool               # both ways chose the same tokens
    cross_kv_shape: tuple[int, ...]  # (B, H, T_src, d_k): K (and V) of one decoder layer, computed once

    @property
    def speedup(self) -> float:
        return self.seconds_reencode / max(self.seconds_reuse, 1e-12)

    @property
    def claim(self) -> Fact:
        return Fact(self.same_tokens, f"Both ways choose the same {self.tokens} tokens")

    @property
    def caption(self) -> str:
        note = (" Here the saving is within the per-step overhead and the timing noise of a shared server: this model "
                "and sentence are tiny." if self.speedup < 1.2 else "")
        return (f"With reuse {1000 * self.seconds_reuse:.1f} ms, re-encoding the source at every step "
                f"{1000 * self.seconds_reencode:.1f} ms: {self.speedup:.1f}× (best of 3, tracing off).{note} The work "
                "saved grows with the source length, the number of target words and the model's size; "
                "`bench/bench_seq2seq.py` measures 16 and 64 target tokens.")


def decode_timing(model: Seq2SeqTransformer, tokenizer, text: str, max_new_tokens: int = 32) -> DecodeTiming:
    """Decode `text` greedily with and without reusing the encoder (tracing off: only the arithmetic)."""
    ids, _, _ = encode_source(model, tokenizer, text)
    kw = dict(max_new_tokens=max_new_tokens, attention=False, bos_id=tokenizer.token_to_id("<bos>"),
              eos_id=tokenizer.token_to_id("<eos>"))
    with eval_mode(model):
        runs = {}
        for reuse in (True, False):
            t0 = time.perf_counter()
            steps = decode_steps(model, ids, use_cache=reuse, reuse_encoder=reuse, **kw)
            runs[reuse] = [d.step.token_id for d in steps]
            runs[reuse, "s"] = time.perf_counter() - t0
        with torch.no_grad():
            shape = tuple(model.encode(torch.tensor([ids], device=model.device)).cross_kv[0][0].shape)
    return DecodeTiming(len(runs[True]), runs[True, "s"], runs[False, "s"], runs[True] == runs[False], shape)


def best_timing(model: Seq2SeqTransformer, tokenizer, text: str, runs: int = 3) -> DecodeTiming:
    """The fastest of `runs` decode_timing runs each way (a shared server is noisy); same_tokens only if every run
    chose the same tokens both ways."""
    done = [decode_timing(model, tokenizer, text, model.config.max_len) for _ in range(runs)]
    best = min(done, key=lambda r: r.seconds_reuse)
    return DecodeTiming(best.tokens, best.seconds_reuse, min(r.seconds_reencode for r in done),
                        all(r.same_tokens for r in done), best.cross_kv_shape)


@torch.no_grad()
def decoding_tensors(model: Seq2SeqTransformer, src_ids, t_tgt: int) -> tuple[list[dict], int]:
    """(one row per tensor decoding keeps, measured on this source: encoder output, cross K/V, the decoder's cache
    for a decoder input of t_tgt tokens; the number of decoder layers that project cross K/V)."""
    cfg = model.config
    state = model.encode(torch.tensor([list(src_ids)], device=model.device))
    k, v = state.cross_kv[0]
    rows = [("encoder output (memory)", "T_src × d_model", tuple(state.memory.shape[1:]), "once per source"),
            ("cross-attention K, each decoder layer", "H × T_src × d_k", tuple(k.shape[1:]), "once per source"),
            ("cross-attention V, each decoder layer", "H × T_src × d_k", tuple(v.shape[1:]), "once per source"),
            ("decoder self-attention K and V cache, each layer", "H × T_tgt × d_k", (cfg.n_heads, t_tgt, cfg.d_k),
             "one row more per step")]
    return ([{"tensor": a, "shape": b, "here": " × ".join(map(str, c)), "computed": d} for a, b, c, d in rows],
            len(state.cross_kv))


def reuse_sentence(n_layers: int) -> str:
    return (f"The source never changes while the translation is written, so the encoder runs **once** and each of "
            f"the {n_layers} decoder layers projects its cross-attention K and V **once**. Every step then computes "
            "only the new word's query (and its own K, V for the decoder's cache).")
