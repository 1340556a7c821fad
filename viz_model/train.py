"""A small Trainer that yields events (minGPT's trainer, turned into a generator for a live UI).

    trainer = Trainer(model, tokenizer, TrainConfig(task="lm", steps=500, seed=0))
    for event in trainer:              # or trainer.run(stop_event), or trainer.step() one at a time
        if isinstance(event, StepEvent): ...

Determinism: the batch for step s depends only on (seed, s) and dropout is seeded per step, so the weights
after n steps are the same whether the run was paused (and even rebuilt from `state_dict()`) or not.

    python -m viz_model.train --preset classroom --out runs/classroom.safetensors
"""

from __future__ import annotations

import argparse
import math
import random
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from viz_model import checkpoint
from viz_model.checkpoint import SEQ2SEQ, TRANSFORMER
from viz_model.config import POS_ENCODINGS
from viz_model.data import (
    GRAMMAR_POOL,
    SENTENCE_TASKS,
    TASKS,
    Batch,
    TaskData,
    probe_text,
    recall_example,
    reference_translation,
    sample_prompt,
)
from viz_model.device import resolve_device
from viz_model.generate import greedy_ids
from viz_model.mlm import fill_mask
from viz_model.model import TinyTransformer, eval_mode
from viz_model.rnn import LSTM, RNN
from viz_model.seq2seq import (
    Seq2SeqTransformer,
    encode_source,
    guided_alignment_loss,
    guided_head,
    translate,
)


@dataclass
class TrainConfig:
    task: str = "lm"                # "lm" | "copy" | "reverse" | "induction"
    steps: int = 1000
    batch_size: int = 32
    lr: float = 3e-3                # peak learning rate (after warmup)
    min_lr_ratio: float = 0.1       # cosine decays to lr * min_lr_ratio
    warmup_steps: int = 50
    weight_decay: float = 0.01
    grad_clip: float = 1.0          # clip the global grad norm to this
    seed: int = 0
    eval_every: int = 100           # held-out loss every N steps (0 = only at the end)
    snapshot_every: int = 50        # attention of the probe every N steps (0 = never)
    sample_every: int = 200         # greedy sample every N steps (0 = never)
    sample_tokens: int = 8
    max_grad_norm: float = 1e4      # divergence guard: a grad norm above this stops training
    good_every: int = 10            # keep a copy of the last good weights every N steps
    device: str = "cpu"
    amp: bool = True                # bf16/fp16 autocast, used only on CUDA
    align_weight: float = 0.0       # translate: weight of the guided-alignment loss on one cross-attention head
                                    # (seq2seq.guided_head); 0 = every head finds its own way
    grammar_size: int = GRAMMAR_POOL  # mlm / translate: sentences of the toy grammar's sampler beside the corpus
                                      # (data.sentence_pool); 0 = the corpus templates alone

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}.")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch size must be at least 1.")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"the learning rate must be a positive number, got {self.lr}.")
        if not (self.align_weight >= 0 and math.isfinite(self.align_weight)):
            raise ValueError(f"the alignment guide's weight must be 0 or more, got {self.align_weight}.")
        if not (isinstance(self.grammar_size, int) and self.grammar_size >= 0):
            raise ValueError(f"the number of grammar sentences must be a whole number, 0 or more, got "
                             f"{self.grammar_size}.")
        if self.align_weight and self.task != "translate":
            raise ValueError("only translation has a known alignment to guide a head with.")


def clone_tree(obj: Any) -> Any:
    """A copy of a state dict: tensors cloned, dicts and lists rebuilt, the rest (numbers, strings, tuples of
    numbers) shared. About 7x cheaper than copy.deepcopy, which walks every tensor through its memo machinery."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: clone_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone_tree(v) for v in obj]
    return obj


# -- events ------------------------------------------------------------------------------------------
@dataclass
class StepEvent:
    step: int             # 1-based: the number of optimizer steps done
    loss: float           # train loss of this step's batch
    lr: float
    grad_norm: float      # before clipping
    tokens_per_s: float
    elapsed_s: float      # training time so far (excluding evaluation)


@dataclass
class EvalEvent:
    step: int
    heldout_loss: float
    accuracy: float       # next-token accuracy on held-out scored tokens


@dataclass
class AttentionSnapshot:
    step: int
    tokens: list[str]     # labels of the probe's tokens (with <bos>); translate: the source (keys)
    probs: list[torch.Tensor] = field(default_factory=list)  # per layer: (H, T, T) CPU float tensors
    query_tokens: list[str] | None = None  # translate: row labels of the cross-attention (H, T_tgt, T_src)


@dataclass
class SampleEvent:
    step: int
    prompt: str
    text: str             # the greedy continuation only


@dataclass
class DivergedEvent:
    step: int
    message: str          # a sentence for the student
    restored_step: int    # weights (and optimizer) are back to this step


@dataclass
class DoneEvent:
    step: int
    reason: str           # "finished" | "stopped" | "diverged"
    train_seconds: float


Event = StepEvent | EvalEvent | AttentionSnapshot | SampleEvent | DivergedEvent | DoneEvent


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to cfg.lr, then cosine down to cfg.lr * min_lr_ratio at cfg.steps (step is 0-based)."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


class Trainer:
    """Trains `model` on `config.task`; iterate it for events. Call `stop()` (or set a threading.Event)."""

    def __init__(self, model: TinyTransformer, tokenizer, config: TrainConfig | None = None,
                 data: TaskData | None = None):
        self.config = cfg = config or TrainConfig()
        self.device = resolve_device(cfg.device)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        self.data = data or TaskData(cfg.task, tokenizer, seed=cfg.seed, batch_size=cfg.batch_size,
                                     grammar_size=cfg.grammar_size)
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "emb" not in n]
        no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "emb" not in n)]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.lr, betas=(0.9, 0.98))
        self.step_count = 0           # optimizer steps done
        self.train_seconds = 0.0
        self.last_loss = float("nan")
        self.stopped = False
        self.finished_reason: str | None = None
        self._good = self._copy_state()
        self._amp_dtype = self._pick_amp()
        self._scaler = torch.amp.GradScaler("cuda") if self._amp_dtype == torch.float16 else None

    # -- state ------------------------------------------------------------------------------------
    def _pick_amp(self) -> torch.dtype | None:
        if not (self.config.amp and self.device.type == "cuda"):
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    def _copy_state(self) -> dict[str, Any]:
        return {"step": self.step_count, "model": clone_tree(self.model.state_dict()),
                "optimizer": clone_tree(self.optimizer.state_dict())}

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: weights, optimizer, step, config (data is a function of step)."""
        return {**self._copy_state(), "config": asdict(self.config), "train_seconds": self.train_seconds}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step_count = int(state["step"])
        self.train_seconds = float(state.get("train_seconds", 0.0))
        self._good = self._copy_state()

    def stop(self) -> None:
        self.stopped = True

    # -- one step ---------------------------------------------------------------------------------
    def _train_step(self) -> StepEvent | DivergedEvent:
        cfg, s = self.config, self.step_count
        batch = self.data.batch(s)
        lr = lr_at(s, cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        if not self.model.training:  # snapshots and evaluation switch to eval(); train() walks every module
            self.model.train()
        with torch.random.fork_rng(devices=[] if self.device.type != "cuda" else [self.device]):
            # Dropout masks depend only on (seed, step). Not torch.manual_seed: it also records a stack trace
            # for lazy CUDA seeding on every call (~1 ms, 10% of a tiny model's step).
            torch.default_generator.manual_seed(cfg.seed * 1_000_003 + s)
            if self.device.type == "cuda":
                torch.cuda.manual_seed(cfg.seed * 1_000_003 + s)
            with torch.autocast(self.device.type, dtype=self._amp_dtype, enabled=self._amp_dtype is not None):
                loss, shown = self._loss(batch)
            self.optimizer.zero_grad(set_to_none=True)
            if self._scaler is not None:
                self._scaler.scale(loss).backward()
                self._scaler.unscale_(self.optimizer)
            else:
                loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip))
        loss_value = shown.item()
        problem = self._check(loss.item(), grad_norm)
        if problem:
            return self._restore(problem)
        if self._scaler is not None:
            self._scaler.step(self.optimizer)
            self._scaler.update()
        else:
            self.optimizer.step()
        dt = time.perf_counter() - t0
        self.train_seconds += dt
        self.step_count += 1
        self.last_loss = loss_value
        if self.step_count % cfg.good_every == 0:
            # Bad weights show up as a non-finite loss on the next step; checking them only here, before they
            # become the restore point, keeps the per-step cost low.
            if not all(torch.isfinite(p).all() for p in self.model.parameters()):
                return self._restore("the weights became NaN or infinite")
            self._good = self._copy_state()
        n_tokens = int((batch.targets != self.model.config.pad_id).sum())
        return StepEvent(self.step_count, loss_value, lr, grad_norm, n_tokens / max(dt, 1e-9), self.train_seconds)

    def _loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(what the optimizer minimises, the task's own loss the charts show): the same tensor unless a head is
        guided toward the alignment, whose term is added to the first only."""
        if not (self.config.align_weight and batch.alignment is not None):
            loss = model_output(self.model, batch, self.device).loss
            return loss, loss
        dev = self.device
        out = self.model(batch.src.to(dev), batch.ids.to(dev), targets=batch.targets.to(dev), trace=True)
        layer, head = guided_head(self.model.config)
        guide = guided_alignment_loss(out.trace.cross[layer].probs[:, head], batch.alignment.to(dev))
        return out.loss + self.config.align_weight * guide, out.loss

    def _check(self, loss: float, grad_norm: float) -> str | None:
        if not math.isfinite(loss):
            return f"the loss became {loss}"
        if not math.isfinite(grad_norm) or grad_norm > self.config.max_grad_norm:
            return f"the gradient norm exploded ({grad_norm:.3g})"
        return None

    def _restore(self, problem: str) -> DivergedEvent:
        good = self._good
        self.model.load_state_dict(good["model"])
        self.optimizer.load_state_dict(good["optimizer"])
        failed_at = self.step_count + 1
        self.step_count = good["step"]
        self.finished_reason = "diverged"
        msg = (f"Training diverged at step {failed_at}: {problem}. The weights from step {good['step']} were "
               f"restored. Try a smaller learning rate (now {self.config.lr:g}).")
        return DivergedEvent(failed_at, msg, good["step"])

    # -- iteration --------------------------------------------------------------------------------
    def step(self) -> list[Event]:
        """One optimizer step and the periodic events due after it (empty once finished)."""
        if self.finished_reason:
            return []
        if self.stopped:
            self.finished_reason = "stopped"
            return [DoneEvent(self.step_count, "stopped", self.train_seconds)]
        event = self._train_step()
        if isinstance(event, DivergedEvent):
            return [event, DoneEvent(self.step_count, "diverged", self.train_seconds)]
        events: list[Event] = [event]
        cfg, s = self.config, self.step_count
        last = s >= cfg.steps
        if (cfg.eval_every and s % cfg.eval_every == 0) or last:
            events.append(EvalEvent(s, *evaluate(self.model, self.data)))
        if cfg.snapshot_every and (s % cfg.snapshot_every == 0 or last):
            events.append(self.snapshot())
        if cfg.sample_every and (s % cfg.sample_every == 0 or last):
            prompt = sample_prompt(cfg.task)
            events.append(SampleEvent(s, prompt, self._sample_text(prompt)))
        if last:
            self.finished_reason = "finished"
            events.append(DoneEvent(s, "finished", self.train_seconds))
        return events

    def run(self, stop_event: threading.Event | None = None) -> Iterator[Event]:
        """Yield events until cfg.steps, a divergence, stop(), or stop_event.set()."""
        while not self.finished_reason:
            if stop_event is not None and stop_event.is_set():
                self.stop()
            yield from self.step()

    def __iter__(self) -> Iterator[Event]:
        return self.run()

    def _sample_text(self, prompt: str) -> str:
        """Progress in words: a greedy continuation; the encoder's top fill-in per <mask>; a translation."""
        if self.config.task == "mlm":
            return " ".join(fills[0][0] for fills in fill_mask(self.model, self.tokenizer, prompt, top_k=1))
        if self.config.task == "translate":
            return translate(self.model, self.tokenizer, prompt, self.model.config.max_len).text
        return greedy_text(self.model, self.tokenizer, prompt, self.config.sample_tokens)

    def snapshot(self) -> AttentionSnapshot:
        if self.config.task == "translate":
            return cross_attention_snapshot(self.model, self.tokenizer, probe_text("translate"), self.step_count)
        ids, labels = encode_words(self.tokenizer, probe_text(self.config.task))
        trace = run_traced(self.model, ids)
        # a recurrent model's trace has no attention layers: an empty list
        return AttentionSnapshot(self.step_count, labels, [lt.probs[0].detach().float().cpu() for lt in trace.layers])


# -- helpers shared with heads.py and the build script ----------------------------------------------
def model_output(model: torch.nn.Module, batch: Batch, device: torch.device | str, targets: bool = True):
    """The model's output on a batch of any task: decoder (ids), encoder (ids + padding mask), or
    encoder-decoder (source, then decoder input); with the loss when `targets`."""
    tgt = batch.targets.to(device) if targets else None
    if batch.src is not None:  # the source padding mask defaults to src != pad_id
        return model(batch.src.to(device), batch.ids.to(device), targets=tgt)
    if batch.key_padding_mask is not None:
        return model(batch.ids.to(device), key_padding_mask=batch.key_padding_mask.to(device), targets=tgt)
    return model(batch.ids.to(device), targets=tgt)


@torch.no_grad()
def cross_attention_snapshot(model: Seq2SeqTransformer, tokenizer, source: str, step: int) -> AttentionSnapshot:
    """The probe's cross-attention under teacher forcing with its reference translation: per decoder layer
    (H, T_tgt, T_src); query_tokens label each row by the target token it predicts, tokens the source."""
    src, labels, _ = encode_source(model, tokenizer, source)
    target = [tokenizer.token_to_id(w) for w in reference_translation(source)[0].split()]
    bos, eos = tokenizer.token_to_id("<bos>"), tokenizer.token_to_id("<eos>")
    with eval_mode(model):
        out = model(torch.tensor([src], device=model.device), torch.tensor([[bos, *target]], device=model.device),
                    trace=True)
    rows = [tokenizer.id_to_token(i) for i in (*target, eos)]
    return AttentionSnapshot(step, labels, [lt.probs[0].float().cpu() for lt in out.trace.cross], query_tokens=rows)


def encode_words(tokenizer, text: str, bos: bool = True) -> tuple[torch.Tensor, list[str]]:
    """(1, T) ids with <bos> first, and their labels."""
    enc = tokenizer.encode(text, add_special_tokens=False)
    ids = ([tokenizer.token_to_id("<bos>")] if bos else []) + list(enc.ids)
    return torch.tensor([ids]), [tokenizer.id_to_token(i) for i in ids]


@torch.no_grad()
def run_traced(model: TinyTransformer, ids: torch.Tensor):
    with eval_mode(model):
        out = model(ids.to(model.device), trace=True)
    return out.trace


@torch.no_grad()
def evaluate(model: TinyTransformer, data: TaskData) -> tuple[float, float]:
    """(mean held-out loss per scored token, next-token accuracy) — deterministic for a model."""
    with eval_mode(model):
        total, correct, count = 0.0, 0, 0
        pad = model.config.pad_id
        for batch in data.heldout_batches():
            targets = batch.targets.to(model.device)
            logits = model_output(model, batch, model.device, targets=False).logits.float()
            keep = targets != pad
            lp = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
            total += float(-lp[keep].sum())
            correct += int((logits.argmax(-1) == targets)[keep].sum())
            count += int(keep.sum())
    return total / max(count, 1), correct / max(count, 1)


@torch.no_grad()
def accuracy_by_distance(model: torch.nn.Module, tokenizer, distances: Sequence[int], n: int = 128,
                         seed: int = 0) -> dict[int, float]:
    """Recall accuracy at each distance: n held-out 'key filler.. : ?' inputs per distance, the share whose
    last prediction is the key (chance 1/16). Deterministic for (distances, n, seed)."""
    with eval_mode(model):
        out = {}
        for d in distances:
            rng = random.Random(20_000 + 1_009 * seed + int(d))  # never the training stream's seeds
            exs = [recall_example(rng, int(d)) for _ in range(n)]
            ids = torch.tensor([[tokenizer.token_to_id(w) for w in ("<bos>", *ex.words[:-1])] for ex in exs])
            keys = torch.tensor([tokenizer.token_to_id(ex.words[-1]) for ex in exs])      # (n,)
            guess = model(ids.to(model.device)).logits[:, -1].argmax(-1).cpu()             # (n,)
            out[int(d)] = float((guess == keys).float().mean())
    return out


RECALL_DISTANCES = (1, 2, 4, 8, 16, 24, 32, 48, 60)  # up to data.RECALL_MAX_DISTANCE


def greedy_text(model: TinyTransformer, tokenizer, prompt: str, max_new_tokens: int = 8) -> str:
    """Greedy continuation (stops at <eos>), without the prompt."""
    ids = encode_words(tokenizer, prompt)[0][0].tolist()
    return " ".join(tokenizer.id_to_token(i) for i in greedy_ids(model, ids, max_new_tokens,
                                                                  tokenizer.token_to_id("<eos>")))


# -- recipes: how each shipped model is trained --------------------------------------------------------
SMALL = dict(d_model=64, n_heads=4, n_layers=2, d_ff=256, max_len=64)
RECIPES: dict[str, dict[str, Any]] = {
    "classroom": dict(preset="classroom", model=dict(pos_encoding="rope"), task="lm", steps=2500, lr=2e-3,
                      batch_size=48, title="Classroom model (RoPE, 186 words)",
                      description="2 layers x 4 heads, RoPE, trained on the classroom corpus: it knows that corpus's "
                                  "186 words (the coreference, agreement and recall lessons are built on them); any "
                                  "other word is <unk>."),
    "induction": dict(preset="tiny", model=dict(SMALL, pos_encoding="rope"), task="induction", steps=10000,
                      lr=3e-3, batch_size=32, title="Induction heads",
                      description="Continues repeated random letters: attention jumps back to the earlier copy."),
}
for _enc in ("none", "sinusoidal", "learned", "rope", "alibi"):
    RECIPES[f"enc-{_enc}"] = dict(
        preset="tiny", model=dict(SMALL, pos_encoding=_enc), task="lm", steps=1000, lr=3e-3, batch_size=32,
        title="Small model, no position encoding" if _enc == "none" else f"Small model, {_enc} positions",
        description=f"2 layers x 4 heads, d_model 64, positional encoding '{_enc}' (for comparing encodings).")
# Why it trains: an RNN, an LSTM and a transformer on the long-dependency recall task (assets/models/recurrence/).
_RECALL = dict(preset="tiny", task="recall", lr=3e-3, batch_size=32)  # the same 2000 steps for each kind
RECIPES["recurrence/rnn"] = dict(
    _RECALL, kind=RNN, model=dict(d_model=64, n_layers=1), steps=2000, title="RNN on recall",
    description="One tanh RNN layer (torch's nn.RNN, d 64) recalling a noun across 1-60 filler letters.")
RECIPES["recurrence/lstm"] = dict(
    _RECALL, kind=LSTM, model=dict(d_model=64, n_layers=1), steps=2000, title="LSTM on recall",
    description="One LSTM layer (torch's nn.LSTM, d 64) recalling a noun across 1-60 filler letters.")
RECIPES["recurrence/transformer"] = dict(
    _RECALL, model=dict(SMALL, pos_encoding="rope"), steps=2000, title="Transformer on recall",
    description="2 layers x 4 heads, d_model 64, RoPE, recalling a noun across 1-60 filler letters.")
# The Q, K and V page: the classroom recipe with Q = K, K = V or raw X ("separate" is the classroom model itself).
_QKV_TITLES = {"shared_qk": "shared Q = K", "shared_kv": "shared K = V", "none": "no projections (Q = K = V = X)"}
for _mode, _title in _QKV_TITLES.items():
    RECIPES[f"qkv-{_mode}"] = dict(
        RECIPES["classroom"], model=dict(RECIPES["classroom"]["model"], qkv=_mode),
        title=f"Classroom recipe, {_title}",
        description=f"The classroom model's size, seed and steps with qkv='{_mode}' (for comparing how Q, K and V "
                    "are made).")
# The Architectures section: an encoder trained with masked LM, and an encoder-decoder on the toy translation.
RECIPES["encoder-mlm"] = dict(
    preset="tiny", model=dict(SMALL, causal=False, pos_encoding="rope"), task="mlm", steps=6000, lr=3e-3,
    batch_size=64, title="Encoder (masked LM)",
    description="2 layers x 4 heads, d_model 64, bidirectional attention, trained like BERT: 15% of the words "
                "hidden and predicted from both sides; the corpus and 40,000 sentences of the toy grammar.")
RECIPES["translate"] = dict(
    preset="tiny", kind=SEQ2SEQ, model=dict(SMALL, n_encoder_layers=2, max_len=32, pos_encoding="learned"),
    task="translate", steps=5000, lr=3e-3, batch_size=64, title="Encoder-decoder (toy translation)",
    description="Translates sentences of the toy grammar into the toy language (adjectives after nouns, verbs "
                "last): the corpus's sentences and 40,000 drawn from every rule of the grammar.")
# The same translator with head 0 of its last decoder layer guided toward the known alignment (Garg et al. 2019):
# beside the first, it shows that translating perfectly does not make any head align on its own.
RECIPES["translate-guided"] = dict(
    RECIPES["translate"], train=dict(align_weight=0.05), title="Encoder-decoder, one head guided to align",
    description="The toy translator's recipe plus guided alignment: a small extra loss (weight 0.05) pulls head 0 "
                "of the last decoder layer toward the known word alignment; the other heads learn on their own.")


def build_model(preset: str, tokenizer, kind: str = TRANSFORMER, **overrides: Any) -> torch.nn.Module:
    """A fresh model of a checkpoint.MODEL_KINDS kind from a size preset (a recurrent model uses none) and overrides."""
    config = checkpoint.model_kind_row(kind).preset_config(preset, tokenizer.get_vocab_size(), **overrides)
    return checkpoint.build_model(kind, config)


def train_and_save(out: str | Path, *, preset: str = "classroom", model_overrides: dict | None = None,
                   train: TrainConfig, title: str = "", description: str = "", log=print,
                   kind: str = TRANSFORMER, metrics=None) -> dict[str, Any]:
    """Train a fresh model, score its heads, and save it with full metadata. Returns the metadata.

    metrics: optional (model, tokenizer) -> dict of held-out measurements merged into the metadata (the build
    script passes the lesson's, e.g. viz_model.lessons.encoder.heldout_metrics)."""
    from viz_model import heads
    from viz_model.tokenizer import load_tokenizer

    tokenizer = load_tokenizer("word")
    torch.manual_seed(train.seed)
    model = build_model(preset, tokenizer, kind, **(model_overrides or {}))
    trainer = Trainer(model, tokenizer, train)
    log(f"training {model.num_params():,} parameters on task {train.task!r} for {train.steps} steps")
    for ev in trainer:
        if isinstance(ev, StepEvent) and (ev.step % 50 == 0 or ev.step == 1):
            log(f"step {ev.step:5d}  loss {ev.loss:.4f}  lr {ev.lr:.2e}  grad {ev.grad_norm:.2f}  "
                f"{ev.tokens_per_s:,.0f} tok/s")
        elif isinstance(ev, EvalEvent):
            log(f"step {ev.step:5d}  held-out loss {ev.heldout_loss:.4f}  accuracy {ev.accuracy:.3f}")
        elif isinstance(ev, SampleEvent):
            log(f"step {ev.step:5d}  sample: {ev.prompt} | {ev.text}")
        elif isinstance(ev, DivergedEvent):
            log(ev.message)
    model = trainer.model.to("cpu").eval()
    heldout_loss, accuracy = evaluate(model, TaskData(train.task, tokenizer, seed=train.seed,
                                                      grammar_size=train.grammar_size))
    meta = {
        "title": title or f"{preset} ({getattr(model.config, 'pos_encoding', kind)})",
        "description": description or f"{preset} model trained on {train.task}",
        "task": train.task, "pos_encoding": getattr(model.config, "pos_encoding", "none"), "kind": kind,
        "steps": trainer.step_count,
        "seed": train.seed, "train_loss": round(trainer.last_loss, 5), "heldout_loss": heldout_loss,
        "next_token_accuracy": accuracy, "train_seconds": round(trainer.train_seconds, 1),
        "params": model.num_params(), "tokenizer": "word", "bos": True,
        "train_config": asdict(replace(train, device="cpu")),
        "head_roles": (heads.head_roles(model, tokenizer, train.task)
                       if kind == TRANSFORMER and train.task not in SENTENCE_TASKS else []),
    }
    if train.task == "recall":  # where each model kind stops remembering: the lesson's table
        meta["accuracy_by_distance"] = {str(d): a for d, a in
                                        accuracy_by_distance(model, tokenizer, RECALL_DISTANCES).items()}
    if metrics is not None:
        meta.update(metrics(model, tokenizer))
    checkpoint.save(model, tokenizer, out, meta)
    log(f"saved {out}: held-out loss {heldout_loss:.4f}, accuracy {accuracy:.3f}, "
        f"{trainer.train_seconds:.0f}s training")
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Train an Attention Lab model and save it as safetensors + JSON.")
    p.add_argument("--recipe", choices=sorted(RECIPES), help="a shipped model's full recipe (overrides defaults)")
    p.add_argument("--preset", default="classroom", help="model size preset: tiny | classroom")
    p.add_argument("--pos-encoding", choices=POS_ENCODINGS, default=None)
    p.add_argument("--task", choices=TASKS, default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | mps")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads (1 is fastest for these small matrices, especially on a busy machine)")
    p.add_argument("--out", default=None, help="output .safetensors path (default runs/NAME.safetensors)")
    args = p.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    name = args.recipe or (args.preset if args.preset in RECIPES else None)
    recipe = dict(RECIPES.get(name, {"preset": args.preset, "model": {}, "task": "lm", "steps": 1000, "lr": 3e-3,
                                     "batch_size": 32}))
    if args.pos_encoding:
        recipe["model"] = {**recipe["model"], "pos_encoding": args.pos_encoding}
    for key in ("task", "steps", "lr", "batch_size"):
        if getattr(args, key) is not None:
            recipe[key] = getattr(args, key)
    train_cfg = TrainConfig(task=recipe["task"], steps=recipe["steps"], lr=recipe["lr"], seed=args.seed,
                            batch_size=recipe["batch_size"], device=args.device, sample_every=500, snapshot_every=0,
                            eval_every=250, **recipe.get("train", {}))
    out = args.out or f"runs/{name or args.preset}.safetensors"
    train_and_save(out, preset=recipe["preset"], model_overrides=recipe["model"], train=train_cfg,
                   title=recipe.get("title", ""), description=recipe.get("description", ""),
                   kind=recipe.get("kind", TRANSFORMER))


if __name__ == "__main__":
    main()
