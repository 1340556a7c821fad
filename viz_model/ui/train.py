"""Train page logic: the run spec and its budget, the event source for a job, teacher forcing, checkpoints.

Events (dicts) the page consumes, in order per step:
  {"kind": "step", "step", "loss", "lr", "tokens_per_s", "grad_norm"}
  {"kind": "eval", "step", "heldout_loss"}                      every eval_every steps
  {"kind": "snapshot", "step", "probs": (L, H, T, T) ndarray, "roles": {role: (L, H) ndarray}}
  {"kind": "sample", "step", "prompt", "text"}
  {"kind": "diverged", "step", "message"}                        last event; weights restored
"""

from __future__ import annotations

import copy
import io
import math
import re
import time
import zipfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from viz_model import checkpoint
from viz_model.config import ModelConfig
from viz_model.data import TASKS, TaskData, probe_text, sample_prompt
from viz_model.device import resolve_device
from viz_model.model import TinyTransformer
from viz_model.tokenizer import encode, load_tokenizer

RUNS_DIR = Path("runs")
TASK_LABELS = {"lm": "classroom corpus (language modelling)", "copy": "copy", "reverse": "reverse",
               "induction": "repeated random sequence (induction)"}
BUDGET = 4e12          # params x steps x batch x T: about 3x a 600-step classroom run
MAX_UPLOAD_BYTES = 32 * 2**20
GUARD_GRAD_NORM = 1e4  # a gradient norm above this (before clipping) counts as exploding


@dataclass(frozen=True)
class TrainSpec:
    preset: str = "tiny"          # "tiny" | "classroom" | "custom"
    task: str = "lm"
    n_layers: int = 2
    n_heads: int = 2
    d_model: int = 32
    pos_encoding: str = "rope"
    rope_base: float = 10000.0
    norm_position: str = "pre"
    causal: bool = True
    tie_weights: bool = True
    lr: float = 3e-3
    batch_size: int = 16
    seq_len: int = 32
    steps: int = 200
    seed: int = 0
    device: str = "auto"
    every: int = 20               # eval / snapshot / sample interval

    def model_config(self, vocab_size: int) -> ModelConfig:
        """Preset or custom config (ModelConfig raises ValueError with a sentence if impossible)."""
        arch = dict(pos_encoding=self.pos_encoding, rope_base=self.rope_base, norm_position=self.norm_position,
                    causal=self.causal, tie_weights=self.tie_weights, vocab_size=vocab_size, max_len=self.seq_len)
        if self.preset in ("tiny", "classroom"):
            return ModelConfig.preset(self.preset, **arch)
        return ModelConfig(n_layers=self.n_layers, n_heads=self.n_heads, d_model=self.d_model,
                           d_ff=4 * self.d_model, **arch)

    def label(self) -> str:
        mask = "causal" if self.causal else "no mask"
        return f"{self.preset} · {self.task} · {self.pos_encoding} · {mask}"


LIMITS = dict(n_layers=(1, 6), n_heads=(1, 8), d_model=(16, 256), batch_size=(1, 64), seq_len=(32, 128),
              steps=(10, 5000), every=(5, 500))


def validate(spec: TrainSpec, vocab_size: int) -> tuple[ModelConfig, int]:
    """Check everything before a thread starts; returns (config, parameter count). ValueError otherwise."""
    if spec.task not in TASKS:
        raise ValueError(f"choose a task from {', '.join(TASKS)}.")
    for name, (lo, hi) in LIMITS.items():
        v = getattr(spec, name)
        if not lo <= v <= hi:
            raise ValueError(f"{name.replace('_', ' ')} must be between {lo} and {hi}, got {v}.")
    if not (1e-5 <= spec.lr <= 0.1):
        raise ValueError(f"the learning rate must be between 0.00001 and 0.1, got {spec.lr}.")
    resolve_device(spec.device)
    cfg = spec.model_config(vocab_size)
    n_params = sum(p.numel() for p in TinyTransformer(cfg).parameters())
    cost = n_params * spec.steps * spec.batch_size * spec.seq_len
    if cost > BUDGET:
        raise ValueError(f"this run is too big for the shared server: {n_params:,} parameters × {spec.steps:,} "
                         f"steps × batch {spec.batch_size} × length {spec.seq_len} is {cost / BUDGET:.1f}× the "
                         "budget. Use fewer steps, a smaller batch or a smaller model.")
    return cfg, n_params


def lr_at(step: int, total: int, peak: float) -> float:
    """Linear warm-up over the first 10% of steps, then cosine decay to 10% of the peak."""
    warm = max(1, total // 10)
    if step <= warm:
        return peak * step / warm
    t = (step - warm) / max(1, total - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


# -- head roles on the probe (thin: per-head scores a teacher can name) ------------------------------
def role_scores(probs: np.ndarray, task: str) -> dict[str, np.ndarray]:
    """probs (L, H, T, T) with <bos> at 0 -> {"previous token", "first token", "induction"}: (L, H) in 0..1."""
    L, H, T, _ = probs.shape
    prev = probs[:, :, np.arange(1, T), np.arange(T - 1)].mean(-1)         # attention to t-1
    first = probs[:, :, 1:, 0].mean(-1)                                       # attention to <bos>
    out = {"previous token": prev, "first token": first}
    if task in ("induction", "copy"):
        n = (T - 1) // 2                                                      # <bos> x1..xn [:] x1..xn
        off = n + (1 if task == "copy" else 0)                                # query t looks at t - off + 1
        qs = np.arange(off + 1, T)
        out["induction"] = probs[:, :, qs, qs - off + 1].mean(-1) if len(qs) else np.zeros((L, H))
    return out


# -- the event source -------------------------------------------------------------------------------
def _probe_ids(tok, task: str) -> list[int]:
    return encode(tok, probe_text(task), bos=True).ids


@torch.no_grad()
def _snapshot(model: TinyTransformer, ids: list[int], task: str) -> tuple[np.ndarray, dict]:
    was = model.training
    model.eval()
    out = model(torch.tensor([ids], device=model.device), trace=True)
    model.train(was)
    probs = torch.stack([lt.probs[0] for lt in out.trace.layers]).float().cpu().numpy()  # (L, H, T, T)
    return probs, role_scores(probs, task)


@torch.no_grad()
def greedy(model: TinyTransformer, tok, prompt: str, n: int = 12) -> str:
    ids = encode(tok, prompt, bos=True).ids
    was = model.training
    model.eval()
    eos = tok.token_to_id("<eos>")
    for _ in range(n):
        if len(ids) >= model.config.max_len:
            break
        logits = model(torch.tensor([ids], device=model.device)).logits[0, -1]
        nxt = int(torch.argmax(logits))
        if nxt == eos:
            break
        ids.append(nxt)
    model.train(was)
    return " ".join(tok.id_to_token(i) for i in ids[1:])


@torch.no_grad()
def heldout_loss(model: TinyTransformer, data: TaskData, attn_mask: torch.Tensor | None = None) -> float:
    was = model.training
    model.eval()
    total, n = 0.0, 0
    for b in data.heldout_batches(128)[:2]:
        ids, tg = b.ids.to(model.device), b.targets.to(model.device)
        mask = attn_mask[: ids.shape[1], : ids.shape[1]] if attn_mask is not None else None
        total += float(model(ids, targets=tg, attn_mask=mask).loss) * len(ids)
        n += len(ids)
    model.train(was)
    return total / max(n, 1)


class Run:
    """What a job's worker owns: model, optimiser, data. The page reads it only under job.model_lock."""

    def __init__(self, spec: TrainSpec):
        self.spec = spec
        self.tok = load_tokenizer("word")
        self.config, self.n_params = validate(spec, self.tok.get_vocab_size())
        self.device = resolve_device(spec.device)
        torch.manual_seed(spec.seed)
        self.model = TinyTransformer(self.config).to(self.device).train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=spec.lr, weight_decay=0.01)
        self.data = TaskData(spec.task, self.tok, seed=spec.seed, batch_size=spec.batch_size)
        self.step = 0

    def events(self):
        spec, model = self.spec, self.model
        probe = _probe_ids(self.tok, spec.task)[: self.config.max_len]
        good = copy.deepcopy(model.state_dict()), copy.deepcopy(self.opt.state_dict())
        amp = self.device.type == "cuda"
        t_last = time.perf_counter()
        while self.step < spec.steps:
            step = self.step + 1
            b = self.data.batch(step)
            ids, tg = b.ids[:, : self.config.max_len].to(self.device), b.targets[:, : self.config.max_len].to(self.device)
            lr = lr_at(step, spec.steps, spec.lr)
            for g in self.opt.param_groups:
                g["lr"] = lr
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=amp):
                loss = model(ids, targets=tg).loss
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            lv = loss.item()
            if not math.isfinite(lv) or not math.isfinite(gn) or gn > GUARD_GRAD_NORM:
                model.load_state_dict(good[0])
                self.opt.load_state_dict(good[1])
                why = "the loss became NaN/infinite" if not math.isfinite(lv) else \
                    f"the gradient exploded (norm {gn:.3g})"
                yield {"kind": "diverged", "step": self.step,
                       "message": f"Training stopped at step {step}: {why}. The last good weights (step "
                                  f"{self.step}) were restored; try a smaller learning rate."}
                return
            self.opt.step()
            self.step = step
            now = time.perf_counter()
            yield {"kind": "step", "step": step, "loss": lv, "lr": lr, "grad_norm": gn,
                   "tokens_per_s": int((tg != self.config.pad_id).sum()) / max(now - t_last, 1e-9)}
            t_last = time.perf_counter()
            if step % spec.every == 0 or step == spec.steps:
                good = copy.deepcopy(model.state_dict()), copy.deepcopy(self.opt.state_dict())
                yield {"kind": "eval", "step": step, "heldout_loss": heldout_loss(model, self.data)}
                probs, roles = _snapshot(model, probe, spec.task)
                yield {"kind": "snapshot", "step": step, "probs": probs, "roles": roles}
                prompt = sample_prompt(spec.task)
                yield {"kind": "sample", "step": step, "prompt": prompt, "text": greedy(model, self.tok, prompt)}
                t_last = time.perf_counter()


def make_events(spec: TrainSpec):
    """Factory for JobRegistry.submit: builds the Run inside the worker thread (never on the page)."""
    def start(job):
        run = Run(spec)
        job.result = run
        return run.events()
    return start


def ablation_specs(spec: TrainSpec, kind: str) -> list[TrainSpec]:
    if kind == "positional encoding":
        return [replace(spec, pos_encoding=p) for p in ("none", "sinusoidal", "learned", "rope")]
    if kind == "causal mask":
        return [replace(spec, causal=True), replace(spec, causal=False)]
    raise ValueError(f"unknown ablation {kind!r}.")


# -- teacher forcing --------------------------------------------------------------------------------
@torch.no_grad()
def teacher_forcing(model: TinyTransformer, tok, text: str) -> list[dict]:
    """One forward pass over '<bos> text' gives T next-token predictions at once."""
    enc = encode(tok, text, max_len=model.config.max_len, bos=True)
    if len(enc.ids) < 2:
        raise ValueError("type at least one word to predict.")
    was = model.training
    model.eval()
    ids = torch.tensor([enc.ids], device=model.device)
    logp = torch.log_softmax(model(ids).logits[0].float(), -1).cpu()  # (T, V)
    model.train(was)
    rows = []
    for t in range(len(enc.ids) - 1):
        target = enc.ids[t + 1]
        rows.append({"position": t, "prefix": " ".join(enc.tokens[: t + 1]), "target": enc.tokens[t + 1],
                     "prediction": tok.id_to_token(int(logp[t].argmax())),
                     "p(target)": float(logp[t, target].exp()), "loss": float(-logp[t, target])})
    return rows


# -- checkpoints ------------------------------------------------------------------------------------
def safe_name(name: str) -> str:
    name = re.sub(r"[^a-z0-9_-]+", "-", (name or "").strip().lower()).strip("-")[:40]
    if not name:
        raise ValueError("give the model a name made of letters, digits, - or _.")
    return name


def save_run(run: Run, name: str, owner: str, runs_dir: Path = RUNS_DIR) -> Path:
    path = runs_dir / re.sub(r"[^a-z0-9-]", "", owner.lower())[:12] / f"{safe_name(name)}.safetensors"
    meta = {"title": safe_name(name), "description": f"trained in the app: {run.spec.label()}, "
            f"{run.step} steps", "train_spec": asdict(run.spec)}
    return checkpoint.save(run.model, run.tok, path, metadata=meta)


def checkpoint_zip(path: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, path.name)
        z.write(checkpoint.json_path(path), checkpoint.json_path(path).name)
    return buf.getvalue()


def import_upload(files: list[tuple[str, bytes]], dest_dir: Path) -> checkpoint.Checkpoint:
    """(name, bytes) of a .zip or a .safetensors + .json pair -> validated Checkpoint saved in dest_dir."""
    if sum(len(b) for _, b in files) > MAX_UPLOAD_BYTES:
        raise ValueError(f"the upload is larger than {MAX_UPLOAD_BYTES // 2**20} MB; a classroom model is a few MB.")
    if len(files) == 1 and files[0][0].lower().endswith(".zip"):
        try:
            with zipfile.ZipFile(io.BytesIO(files[0][1])) as z:
                infos = [i for i in z.infolist() if not i.is_dir()]
                if sum(i.file_size for i in infos) > MAX_UPLOAD_BYTES or len(infos) > 4:
                    raise ValueError("the zip is too large or holds too many files.")
                files = [(Path(i.filename).name, z.read(i)) for i in infos]
        except zipfile.BadZipFile:
            raise ValueError("that file is not a valid zip archive.") from None
    weights = [(n, b) for n, b in files if n.lower().endswith(".safetensors")]
    docs = [(n, b) for n, b in files if n.lower().endswith(".json")]
    if len(weights) != 1 or len(docs) != 1:
        raise ValueError("upload one .safetensors file and its .json file (or a zip holding both).")
    stem = safe_name(Path(weights[0][0]).stem)
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"{stem}.safetensors"
    tmp = dest_dir / f".upload-{stem}"
    tmp.mkdir(exist_ok=True)
    (tmp / "m.safetensors").write_bytes(weights[0][1])
    (tmp / "m.json").write_bytes(docs[0][1])
    try:
        ckpt = checkpoint.load_checkpoint(tmp / "m.safetensors")  # validates format, config, shapes, values
        (tmp / "m.safetensors").replace(path)
        (tmp / "m.json").replace(checkpoint.json_path(path))
    finally:
        for f in tmp.glob("*"):
            f.unlink()
        tmp.rmdir()
    ckpt.path = path
    return ckpt
