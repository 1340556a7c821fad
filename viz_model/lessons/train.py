"""What the Train page shows and proves: the run spec and its budget, a Run's events, teacher forcing, the
no-mask demo, and the history of a job's events (torch/numpy only).

Events (dicts) the page consumes, in order per step:
  {"kind": "step", "step", "loss", "lr", "tokens_per_s", "grad_norm"}
  {"kind": "eval", "step", "heldout_loss"}                      every eval_every steps
  {"kind": "snapshot", "step", "probs": (L, H, T, T) ndarray, "roles": {role: (L, H) ndarray}}
  {"kind": "sample", "step", "prompt", "text"}
  {"kind": "diverged", "step", "message"}                        last event; weights restored
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from viz_model import checkpoint, heads
from viz_model.checkpoint import MODEL_KINDS, SEQ2SEQ, TRANSFORMER
from viz_model.config import POS_ENCODINGS, PRESETS, ModelConfig
from viz_model.data import TASKS, TaskData, probe_text, sample_prompt
from viz_model.device import resolve_device
from viz_model.generate import greedy_ids
from viz_model.lessons import common
from viz_model.lessons.common import Fact, TeacherForcing
from viz_model.masks import MASKS, causal_mask
from viz_model.model import TinyTransformer, eval_mode
from viz_model.rnn import RecurrentConfig
from viz_model.seq2seq import Seq2SeqConfig
from viz_model.tokenizer import encode, load_tokenizer
from viz_model.train import AttentionSnapshot, DivergedEvent, EvalEvent, SampleEvent, StepEvent, TrainConfig, Trainer

MASK_NAMES = {"causal": "causal", "bidirectional": "no mask"}  # the run labels' words; other kinds: their label
BUDGET = 4e12          # params x steps x batch x T: about 3x a 600-step classroom run
ARCHS = tuple(k for k, row in MODEL_KINDS.items() if row.on_train_form)  # "translate" makes it an encoder-decoder


@dataclass(frozen=True)
class TrainSpec:
    preset: str = "tiny"          # "tiny" | "classroom" | "custom"
    task: str = "lm"
    arch: str = TRANSFORMER       # a kind of ARCHS (checkpoint.MODEL_KINDS' rows on the Train form)
    n_layers: int = 2
    n_heads: int = 2
    d_model: int = 32
    pos_encoding: str = "rope"
    rope_base: float = 10000.0
    norm_position: str = "pre"
    mask: str = "causal"          # a kind of masks.MODEL_MASKS (the mask table's kinds a model can use)
    tie_weights: bool = True
    qkv: str = "separate"         # "separate" | "shared_qk" | "shared_kv" | "none" (the Q/K/V lesson)
    norm: str = "layernorm"       # "layernorm" | "batchnorm" | "rmsnorm"
    residual: bool = True
    warmup: bool = True           # linear learning-rate warm-up over the first tenth of the steps (at most 50)
    lr: float = 3e-3
    batch_size: int = 16
    seq_len: int = 32
    steps: int = 200
    seed: int = 0
    device: str = "auto"
    every: int = 20               # eval / snapshot / sample interval
    align_weight: float = 0.0     # translate: guided alignment on one cross-attention head (TrainConfig.align_weight)

    @property
    def causal(self) -> bool:
        """Whether the mask never lets a query read a later key (its row in masks.MASKS)."""
        return MASKS[self.mask].causal

    @property
    def kind(self) -> str:
        """The model class a run builds (checkpoint.MODEL_KINDS): translation needs an encoder-decoder."""
        return SEQ2SEQ if self.task == "translate" else self.arch

    @property
    def recurrent(self) -> bool:
        """An RNN or LSTM (its row in checkpoint.MODEL_KINDS): no attention, left to right only."""
        return MODEL_KINDS[self.kind].recurrent

    def size(self) -> dict:
        """n_layers, n_heads, d_model of the preset, or the custom choice."""
        if self.preset in PRESETS:
            return {k: PRESETS[self.preset][k] for k in ("n_layers", "n_heads", "d_model")}
        return dict(n_layers=self.n_layers, n_heads=self.n_heads, d_model=self.d_model)

    def model_config(self, vocab_size: int) -> ModelConfig | RecurrentConfig:
        """Preset or custom config (the config classes raise ValueError with a sentence if impossible). An encoder
        (masked LM) is never causal and an encoder-decoder's decoder always is, whatever the causal switch says."""
        size = self.size()
        if MODEL_KINDS[self.arch].recurrent:
            if self.task in ("mlm", "translate"):
                raise ValueError(f"an {MODEL_KINDS[self.arch].short} reads left to right: it cannot be an encoder or a "
                                 "translator here. Pick a transformer, or a next-token task.")
            return RecurrentConfig(kind=self.arch, vocab_size=vocab_size, d_model=size["d_model"],
                                   n_layers=size["n_layers"], max_len=self.seq_len)
        mask = {"mlm": "bidirectional", "translate": "causal"}.get(self.task, self.mask)
        arch = dict(pos_encoding=self.pos_encoding, rope_base=self.rope_base, norm_position=self.norm_position,
                    mask=mask, tie_weights=self.tie_weights, qkv=self.qkv, norm=self.norm,
                    residual=self.residual, vocab_size=vocab_size, max_len=self.seq_len)
        cls = Seq2SeqConfig if self.task == "translate" else ModelConfig
        if self.preset in PRESETS:
            return cls.preset(self.preset, **arch)
        return cls(**size, d_ff=4 * self.d_model, **arch)

    def label(self) -> str:
        """Names every setting that differs from the default, so the curves of a comparison are told apart."""
        if self.recurrent:
            return " · ".join([self.preset, self.task, MODEL_KINDS[self.arch].short])
        parts = [self.preset, self.task, self.pos_encoding, MASK_NAMES.get(self.mask, MASKS[self.mask].label)]
        extras = {"qkv": self.qkv != "separate", "norm": self.norm != "layernorm",
                  f"{self.norm_position}-norm": self.norm_position != "pre", "no residual": not self.residual,
                  "no warm-up": not self.warmup, f"guided ×{self.align_weight:g}": self.align_weight > 0}
        return " · ".join(parts + [(f"{k} {getattr(self, k)}" if k in ("qkv", "norm") else k)
                                   for k, on in extras.items() if on])


LIMITS = dict(n_layers=(1, 6), n_heads=(1, 8), d_model=(16, 256), batch_size=(1, 64), seq_len=(32, 128),
              steps=(10, 5000), every=(5, 500))


def clamp_steps(steps: int) -> tuple[int, str | None]:
    """The Steps box takes any count; a run trains within LIMITS' bounds. Returns (steps, what changed or None).
    A widget maximum would refuse the typed number and keep the old one without a word (#26)."""
    lo, hi = LIMITS["steps"]
    n = min(max(int(steps), lo), hi)
    if n == steps:
        return n, None
    why = f"more than the {hi:,} this page allows on a shared server" if steps > hi else \
        f"fewer than the {lo} a run needs"
    return n, f"{int(steps):,} steps is {why}; training {n:,}."


def build_model(spec: TrainSpec, config: ModelConfig | RecurrentConfig) -> torch.nn.Module:
    """A fresh model of the spec's kind from its config (random weights from torch's current seed)."""
    return checkpoint.build_model(spec.kind, config)


def validate(spec: TrainSpec, vocab_size: int) -> tuple[ModelConfig, int]:
    """Check everything before a thread starts; returns (config, parameter count). ValueError otherwise."""
    if spec.task not in TASKS:
        raise ValueError(f"choose a task from {', '.join(TASKS)}.")
    if spec.arch not in ARCHS:
        raise ValueError(f"choose a model kind from {', '.join(ARCHS)}.")
    for name, (lo, hi) in LIMITS.items():
        v = getattr(spec, name)
        if not lo <= v <= hi:
            raise ValueError(f"{name.replace('_', ' ')} must be between {lo} and {hi}, got {v}.")
    if not (1e-5 <= spec.lr <= 0.1):
        raise ValueError(f"the learning rate must be between 0.00001 and 0.1, got {spec.lr}.")
    if spec.align_weight and spec.task != "translate":
        raise ValueError("only the translation task has a known alignment to guide a head with.")
    if not 0 <= spec.align_weight <= 1:
        raise ValueError(f"the alignment guide's weight must be between 0 and 1, got {spec.align_weight}.")
    resolve_device(spec.device)
    cfg = spec.model_config(vocab_size)
    n_params = sum(p.numel() for p in build_model(spec, cfg).parameters())
    cost = n_params * spec.steps * spec.batch_size * spec.seq_len
    if cost > BUDGET:
        raise ValueError(f"this run is too big for the shared server: {n_params:,} parameters × {spec.steps:,} "
                         f"steps × batch {spec.batch_size} × length {spec.seq_len} is {cost / BUDGET:.1f}× the "
                         "budget. Use fewer steps, a smaller batch or a smaller model.")
    return cfg, n_params


def role_scores(model: TinyTransformer, tok, probs: np.ndarray, task: str) -> dict[str, np.ndarray]:
    """{role: (L, H) in 0..1}: previous-token and first-token measured on the probe (<bos> at 0) the way heads.py
    measures them on held-out text, plus heads.py's induction (and, for the corpus, coreference) scores."""
    on_probe = heads.positional_scores(torch.from_numpy(probs)[:, None], [probs.shape[-1]])  # probs: (L, H, T, T)
    out = {r: on_probe[r].numpy() for r in ("previous-token", "first-token")}
    out["induction"] = heads.induction_scores(model, tok, n=16).numpy()
    if task == "lm":
        out["coreference"] = heads.coreference_scores(model, tok, n=32).numpy()
    return out


def greedy(model: TinyTransformer, tok, prompt: str, n: int = 12) -> str:
    """The greedy continuation of `prompt` as text (generate.greedy_ids: works for the no-mask model too)."""
    ids = encode(tok, prompt, bos=True).ids
    return " ".join(tok.id_to_token(i) for i in ids[1:] + greedy_ids(model, ids, n, tok.token_to_id("<eos>")))


@torch.no_grad()
def heldout_loss(model: TinyTransformer, data: TaskData, attn_mask: torch.Tensor | None = None) -> float:
    total, n = 0.0, 0
    with eval_mode(model):
        for b in data.heldout_batches(128)[:2]:
            ids, tg = b.ids.to(model.device), b.targets.to(model.device)
            mask = attn_mask[: ids.shape[1], : ids.shape[1]] if attn_mask is not None else None
            total += float(model(ids, targets=tg, attn_mask=mask).loss) * len(ids)
            n += len(ids)
    return total / max(n, 1)


class Run:
    """What a job's worker owns: the Trainer (model, optimiser, data). Pages read it under job.model_lock."""

    def __init__(self, spec: TrainSpec):
        self.spec = spec
        self.tok = load_tokenizer("word")
        self.config, self.n_params = validate(spec, self.tok.get_vocab_size())
        torch.manual_seed(spec.seed)
        model = build_model(spec, self.config)
        cfg = TrainConfig(task=spec.task, steps=spec.steps, batch_size=spec.batch_size, lr=spec.lr, seed=spec.seed,
                          warmup_steps=max(1, min(50, spec.steps // 10)) if spec.warmup else 0,
                          eval_every=spec.every,
                          snapshot_every=spec.every, sample_every=spec.every, good_every=min(10, spec.every),
                          device=spec.device, sample_tokens=10, align_weight=spec.align_weight)
        self.trainer = Trainer(model, self.tok, cfg)
        self.model, self.data = self.trainer.model, self.trainer.data

    @property
    def step(self) -> int:
        return self.trainer.step_count

    def events(self):
        """The Trainer's events as plain dicts (what the page and the tests read)."""
        for ev in self.trainer.run():
            if isinstance(ev, StepEvent):
                yield {"kind": "step", "step": ev.step, "loss": ev.loss, "lr": ev.lr, "grad_norm": ev.grad_norm,
                       "tokens_per_s": ev.tokens_per_s}
            elif isinstance(ev, EvalEvent):
                yield {"kind": "eval", "step": ev.step, "heldout_loss": ev.heldout_loss, "accuracy": ev.accuracy}
            elif isinstance(ev, AttentionSnapshot) and ev.probs:  # an RNN has no attention to snapshot
                probs = torch.stack(ev.probs).numpy()  # (L, H, T, T); translate: cross-attention (L, H, Tt, Ts)
                roles = role_scores(self.model, self.tok, probs, self.spec.task) if self.spec.kind == TRANSFORMER \
                    else {}
                yield {"kind": "snapshot", "step": ev.step, "tokens": ev.tokens, "probs": probs, "roles": roles,
                       "query_tokens": ev.query_tokens}
            elif isinstance(ev, SampleEvent):
                yield {"kind": "sample", "step": ev.step, "prompt": ev.prompt, "text": ev.text}
            elif isinstance(ev, DivergedEvent):
                yield {"kind": "diverged", "step": ev.restored_step, "message": ev.message}


def _kinds(spec: TrainSpec) -> list[TrainSpec]:
    if spec.task in ("mlm", "translate"):
        raise ValueError("an RNN cannot be an encoder or a translator here: pick a next-token task (recall "
                         "shows where each model kind stops remembering).")
    return [replace(spec, arch=a) for a in ARCHS]


@dataclass(frozen=True)
class Ablation:
    """One comparison of the Compare setups tab, keyed by name: its label under Vary, and the copies of a spec it
    trains (same data, seed and steps; they differ in one thing). any_kind: it varies the model kind itself, so
    it runs from any setup; the others vary a part of a transformer."""
    name: str
    label: str
    variants: Callable[[TrainSpec], list[TrainSpec]]
    any_kind: bool = False


ABLATIONS: dict[str, Ablation] = {a.name: a for a in (
    Ablation("position", "positional encoding",  # none, sinusoidal, learned, rope, alibi
             lambda s: [replace(s, pos_encoding=p) for p in POS_ENCODINGS]),
    Ablation("mask", "causal mask", lambda s: [replace(s, mask="causal"), replace(s, mask="bidirectional")]),
    Ablation("qkv", "Q, K and V", lambda s: [replace(s, qkv=q) for q in QKV_LABELS]),
    Ablation("norm_warmup", "pre/post-norm × warm-up",
             lambda s: [replace(s, norm_position=n, warmup=w) for n in ("pre", "post") for w in (True, False)]),
    Ablation("norm", "norm kind", lambda s: [replace(s, norm=n) for n in ("layernorm", "batchnorm", "rmsnorm")]),
    Ablation("residual", "residual", lambda s: [replace(s, residual=True), replace(s, residual=False)]),
    Ablation("kind", "RNN vs LSTM vs transformer", _kinds, any_kind=True),
    # #40: ALiBi beside RoPE, the two relative position methods, in two runs (Press et al.'s comparison)
    Ablation("rope_alibi", "RoPE vs ALiBi", lambda s: [replace(s, pos_encoding=p) for p in ("rope", "alibi")]),
)}


def ablation_specs(spec: TrainSpec, name: str) -> list[TrainSpec]:
    """Copies of `spec` that differ in one thing (same data, seed and steps), for the compare-setups tab: the
    variants of ABLATIONS[name]."""
    if name not in ABLATIONS:
        raise ValueError(f"unknown ablation {name!r}; choose one of {', '.join(ABLATIONS)}.")
    row = ABLATIONS[name]
    if spec.recurrent and not row.any_kind:
        raise ValueError(f"“{row.label}” varies a part of a transformer; this setup is an "
                         f"{MODEL_KINDS[spec.arch].short}.")
    return row.variants(spec)


def forcing_rows(run: Run, tf: TeacherForcing, text: str) -> list[dict]:
    """teacher_forcing_check's table: one prediction per position of '<bos> text'."""
    tokens = encode(run.tok, text, max_len=run.model.config.max_len, bos=True).tokens
    return [{"position": t, "prefix": " ".join(tokens[: t + 1]), "target": tokens[t + 1],
             "prediction": run.tok.id_to_token(tf.top[t]), "p(target)": float(tf.forced[t].exp()),
             "loss": float(-tf.forced[t])} for t in range(len(tf.top))]


@dataclass
class History:
    steps: list[int]
    loss: list[float]
    lr: list[float]
    tokens_per_s: list[float]
    eval_steps: list[int]
    heldout: list[float]
    snap_steps: list[int]
    snaps: list[np.ndarray]                 # each (L, H, T, T)
    roles: dict[str, np.ndarray]            # role -> (S, L, H)
    samples: list[dict]
    diverged: str | None = None
    tokens: list[str] | None = None         # the probe's token labels (a translation's source: the keys)
    query_tokens: list[str] | None = None   # a translation's target tokens: the rows of its cross-attention

    def curve(self) -> dict:
        return {"steps": self.steps, "loss": self.loss, "eval_steps": self.eval_steps, "heldout": self.heldout}


def history(events: list[dict]) -> History:
    h = History([], [], [], [], [], [], [], [], {}, [])
    role_rows: dict[str, list] = {}
    for e in events:
        k = e.get("kind")
        if k == "step":
            h.steps.append(e["step"])
            h.loss.append(e["loss"])
            h.lr.append(e["lr"])
            h.tokens_per_s.append(e["tokens_per_s"])
        elif k == "eval":
            h.eval_steps.append(e["step"])
            h.heldout.append(e["heldout_loss"])
        elif k == "snapshot":
            h.snap_steps.append(e["step"])
            h.snaps.append(e["probs"])
            h.tokens, h.query_tokens = e.get("tokens"), e.get("query_tokens")
            for role, v in e["roles"].items():
                role_rows.setdefault(role, []).append(v)
        elif k == "sample":
            h.samples.append({"step": e["step"], "prompt": e["prompt"], "greedy continuation": e["text"]})
        elif k == "diverged":
            h.diverged = e["message"]
    h.roles = {r: np.stack(v) for r, v in role_rows.items()}
    return h


def prefix_check(model: TinyTransformer, tok, text: str) -> float:
    """Max |logit difference| between the one-pass prediction at t and running the prefix 0..t alone, in eval mode
    as teacher_forcing_check runs (a BatchNorm model in training mode refuses the one-token prefix)."""
    with eval_mode(model):
        return float(common.prefix_check(model, encode(tok, text, max_len=model.config.max_len, bos=True).ids).max())


@torch.no_grad()
def mask_demo(run_masked: Run, run_free: Run) -> dict:
    """Held-out loss of the no-mask model with the future visible vs hidden, next to the causal model."""
    T = run_free.config.max_len
    return {"causal": heldout_loss(run_masked.model, run_masked.data),
            "free_peeking": heldout_loss(run_free.model, run_free.data),
            "free_no_future": heldout_loss(run_free.model, run_free.data, attn_mask=causal_mask(T)),
            "sample_causal": greedy(run_masked.model, run_masked.tok, sample_prompt(run_masked.spec.task)),
            "sample_free": greedy(run_free.model, run_free.tok, sample_prompt(run_free.spec.task))}


# -- what the page shows: the form's kinds, a run's progress line, teacher forcing's claim, the no-mask demo -------
# What a size preset sets in the form besides the model's shape (tiny: seconds; classroom: the lecture model).
PRESET_FORM = {"tiny": {"train_batch": 16, "train_seq": 32, "train_steps": 200},
               "classroom": {"train_batch": 32, "train_seq": 64, "train_steps": 600},
               "custom": {"train_batch": 32, "train_seq": 64, "train_steps": 600}}
ARCH_LABELS = {k: MODEL_KINDS[k].label for k in ARCHS}  # the Model kind box's words (checkpoint.MODEL_KINDS)
QKV_LABELS = {"separate": "separate W_Q, W_K, W_V", "shared_qk": "shared Q = K", "shared_kv": "shared K = V",
              "none": "none (raw XXᵀ)"}
GUIDE_WEIGHTS, GUIDE_WEIGHT = [0.01, 0.05, 0.2, 1.0], 0.05  # 0.05: the "translate-guided" recipe (and Garg et al.)
PREFIX_TOL = 1e-4   # max |logit difference| between the one-pass row and its prefix run (float32 rounding)
MASK_GAP = 0.5      # nats: hiding the future must raise the no-mask model's held-out loss by more than this


def spec_summary(spec: TrainSpec, cfg, n_params: int) -> str:
    """The form's one-line summary of what Start would train."""
    heads_ = f" × {cfg.n_heads} heads" if hasattr(cfg, "n_heads") else f" of {MODEL_KINDS[spec.arch].short}"
    return (f"{n_params:,} parameters · {cfg.n_layers} layers{heads_} · d_model {cfg.d_model}"
            f" · {spec.steps * spec.batch_size:,} sequences seen.")


def progress_text(job, running: bool) -> str:
    """The progress bar's line for a job (runtime.jobs.Job): step/total and status; while running, its speed in
    steps/s and in tokens/s (the latest step's) and the time left."""
    events = job.events_since(max(0, len(job.events) - 50))
    tps = next((e["tokens_per_s"] for e in reversed(events) if e.get("kind") == "step"), 0.0)
    eta = job.eta_seconds()
    text = f"{job.title} — step {job.step:,}/{job.total:,} · {job.status}"
    if running:
        text += f" · {job.steps_per_second():.1f} steps/s · {tps:,.0f} tokens/s"
        text += f" · about {eta:.0f} s left" if eta is not None else ""
    return text


def evolution_notes(spec: TrainSpec, n_snaps: int, active: bool, translation: bool) -> list[str]:
    """The captions above the attention player: what it shows, and for a translator which head was guided."""
    notes = [f"{n_snaps} snapshots of the probe “{probe_text(spec.task)}”: drag the slider or press play."
             + (" New snapshots join the player as the run takes them." if active else "")]
    if translation:
        notes.append("A translation model: each frame is the probe's cross-attention, target words (rows) reading "
                     "source words (columns). Watch it go from uniform to the word alignment."
                     + (f" Head 0 of the last layer is guided toward the alignment (weight {spec.align_weight:g}): "
                        "compare it with the heads that find their own way." if spec.align_weight else ""))
    return notes


def teacher_forcing_check(run: Run, text: str) -> TeacherForcing:
    """Teacher forcing on the run's model (one pass over '<bos> text'), and the claim that one pass gives what T
    prefix runs give (check None: no causal mask, nothing to check). Read it under the job's model_lock."""
    ids = encode(run.tok, text, max_len=run.model.config.max_len, bos=True).ids
    if len(ids) < 2:
        raise ValueError("type at least one word to predict.")
    tf = TeacherForcing.of(run.model, ids[:1], ids[1:])
    recurrent = run.spec.recurrent  # measured too: an RNN's ✓ was once a 0.0 nobody computed
    tf.check = prefix_claim(prefix_check(run.model, run.tok, text)) if recurrent or run.config.causal else None
    return tf


def prefix_claim(err: float) -> Fact:
    """One pass gives what the T prefix runs give: err is prefix_check's max |logit difference|."""
    if err < PREFIX_TOL:
        return Fact(True, f"Each row equals running its prefix alone (max logit difference {err:.1e}).")
    return Fact(False, f"One-pass predictions differ from prefix runs by {err:.1e}.")


def mask_demo_claim(d: dict) -> Fact:
    """mask_demo's verdict: the no-mask model does worse once the future is hidden (it learned to copy)."""
    ok = d["free_no_future"] > d["free_peeking"] + MASK_GAP
    msg = (f"No-mask model: held-out loss {d['free_peeking']:.2f} when it may read the future, "
           f"{d['free_no_future']:.2f} when it may not (causal model: {d['causal']:.2f}).")
    return Fact(ok, msg if ok else msg + " The gap is not clear yet: train longer (300+ steps on the tiny model).")


def mask_demo_rows(d: dict) -> dict[str, list[str]]:
    return {"model": ["causal mask", "no mask"], "greedy continuation": [d["sample_causal"], d["sample_free"]]}


def no_attention(arch: str) -> str:
    return (f"An {MODEL_KINDS[arch].short} has no attention to watch: everything it knows about the past is squeezed "
            "into one hidden state, handed from step to step.")


# -- what the page says -------------------------------------------------------------------------------------------
_MASK_DEFAULTS = {p.name: p for row in MASKS.values() if row.model for p in row.params}.values()
MASK_HELP = ("Which keys each query may read: a kind of the mask table (the Masks page draws each one), with its "
             "default parameters (" + ", ".join(f"{p.label.lower()} {p.default}" for p in _MASK_DEFAULTS) + "). "
             "A masked-LM encoder is always bidirectional and a translator's decoder always causal.")
TF_INTRO = ("One forward pass over a sentence gives a prediction at **every** position at once: the causal mask only "
            "restricts what each position may read.")
TF_NOT_NEXT_TOKEN = ("This table is for next-token models. A masked-LM encoder predicts hidden words from both sides, "
                     "and a translator is teacher-forced on the target sentence: see the Encoder and Encoder–decoder "
                     "pages.")
TF_NO_MASK = ("This model has no causal mask: position t reads the word it must predict, so this table flatters it "
              "(see the ablation tab).")
NO_MASK_WHY = ("**Why the no-mask curve falls so fast.** Without the mask, position *t* can read token *t + 1* — the "
               "very word it must predict — so training turns into copying. At generation time the future does not "
               "exist yet, and the trick fails.")
