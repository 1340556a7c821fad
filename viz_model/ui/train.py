"""Train page logic: the run spec and its budget, the event source for a job, teacher forcing, checkpoints.

Events (dicts) the page consumes, in order per step:
  {"kind": "step", "step", "loss", "lr", "tokens_per_s", "grad_norm"}
  {"kind": "eval", "step", "heldout_loss"}                      every eval_every steps
  {"kind": "snapshot", "step", "probs": (L, H, T, T) ndarray, "roles": {role: (L, H) ndarray}}
  {"kind": "sample", "step", "prompt", "text"}
  {"kind": "diverged", "step", "message"}                        last event; weights restored
"""

from __future__ import annotations

import io
import os
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
from viz_model.train import AttentionSnapshot, DivergedEvent, EvalEvent, SampleEvent, StepEvent, TrainConfig, Trainer


def runs_dir() -> Path:
    """Per-server directory of trained and uploaded checkpoints (gitignored); env ATTENTION_LAB_RUNS."""
    return Path(os.environ.get("ATTENTION_LAB_RUNS", Path(__file__).resolve().parents[2] / "runs"))


TASK_LABELS = {"lm": "classroom corpus (language modelling)", "copy": "copy", "reverse": "reverse",
               "induction": "repeated random sequence (induction)"}
BUDGET = 4e12          # params x steps x batch x T: about 3x a 600-step classroom run
MAX_UPLOAD_BYTES = 32 * 2**20


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


# -- head roles on the probe (thin: heads.py scores plus two cheap probe-based ones) ------------------
def role_scores(model: TinyTransformer, tok, probs: np.ndarray, task: str) -> dict[str, np.ndarray]:
    """{role: (L, H) in 0..1}: previous-token and first-token on the probe (<bos> at 0), heads.py's others."""
    from viz_model import heads

    T = probs.shape[-1]
    out = {"previous-token": probs[:, :, np.arange(1, T), np.arange(T - 1)].mean(-1),   # attention to t-1
           "first-token": probs[:, :, 1:, 0].mean(-1),                                    # attention to <bos>
           "induction": heads.induction_scores(model, tok, n=16).numpy()}
    if task == "lm":
        out["coreference"] = heads.coreference_scores(model, tok, n=32).numpy()
    return out


# -- the event source -------------------------------------------------------------------------------
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
    """What a job's worker owns: the Trainer (model, optimiser, data). Pages read it under job.model_lock."""

    def __init__(self, spec: TrainSpec):
        self.spec = spec
        self.tok = load_tokenizer("word")
        self.config, self.n_params = validate(spec, self.tok.get_vocab_size())
        torch.manual_seed(spec.seed)
        model = TinyTransformer(self.config)
        cfg = TrainConfig(task=spec.task, steps=spec.steps, batch_size=spec.batch_size, lr=spec.lr, seed=spec.seed,
                          warmup_steps=max(1, min(50, spec.steps // 10)), eval_every=spec.every,
                          snapshot_every=spec.every, sample_every=spec.every, good_every=min(10, spec.every),
                          device=spec.device, sample_tokens=10)
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
            elif isinstance(ev, AttentionSnapshot):
                probs = torch.stack(ev.probs).numpy()  # (L, H, T, T)
                yield {"kind": "snapshot", "step": ev.step, "tokens": ev.tokens, "probs": probs,
                       "roles": role_scores(self.model, self.tok, probs, self.spec.task)}
            elif isinstance(ev, SampleEvent):
                yield {"kind": "sample", "step": ev.step, "prompt": ev.prompt, "text": ev.text}
            elif isinstance(ev, DivergedEvent):
                yield {"kind": "diverged", "step": ev.restored_step, "message": ev.message}


def make_events(spec: TrainSpec, process: bool | None = None):
    """Factory for JobRegistry.submit, called in the registry's worker thread (never on the page).

    process=True (the default, see train_process.use_processes): the Run lives in a child process, out of the
    server's GIL; job.result is a ProcessRun whose model copy follows the child's. False: the Run trains in the
    worker thread itself and job.result is the Run.
    """
    from viz_model.ui import train_process

    in_child = train_process.use_processes() if process is None else process

    def start(job):
        if in_child:
            return train_process.ChildEvents(job, spec)
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


def save_run(run: Run, name: str, owner: str, root: Path | None = None) -> Path:
    """Save under a fresh versioned stem, then drop older versions: an interrupted save leaves them intact."""
    folder = (root or runs_dir()) / safe_name(owner[:12])
    stem = safe_name(name)
    old = sorted(folder.glob(f"{stem}--*.safetensors"))
    path = folder / f"{stem}--{time.time_ns()}.safetensors"
    meta = {"title": stem, "description": f"trained in the app: {run.spec.label()}, {run.step} steps",
            "train_spec": asdict(run.spec), "steps": run.step}
    try:
        checkpoint.save(run.model, run.tok, path, metadata=meta)
    except BaseException:
        path.unlink(missing_ok=True)
        checkpoint.json_path(path).unlink(missing_ok=True)
        raise
    for p in old:
        checkpoint.json_path(p).unlink(missing_ok=True)
        p.unlink(missing_ok=True)
    return path


def model_key(path: Path) -> str:
    return path.stem.split("--")[0]


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


# -- reading a job's events (pure) ------------------------------------------------------------------
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
    tokens: list[str] | None = None         # the probe's token labels

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
            h.tokens = e.get("tokens")
            for role, v in e["roles"].items():
                role_rows.setdefault(role, []).append(v)
        elif k == "sample":
            h.samples.append({"step": e["step"], "prompt": e["prompt"], "greedy continuation": e["text"]})
        elif k == "diverged":
            h.diverged = e["message"]
    h.roles = {r: np.stack(v) for r, v in role_rows.items()}
    return h


def prefix_check(model: TinyTransformer, tok, text: str) -> float:
    """Max |logit difference| between the one-pass prediction at t and running the prefix 0..t alone."""
    ids = encode(tok, text, max_len=model.config.max_len, bos=True).ids
    with torch.no_grad():
        full = model(torch.tensor([ids], device=model.device)).logits[0].float()  # (T, V)
        err = 0.0
        for t in range(len(ids)):
            alone = model(torch.tensor([ids[: t + 1]], device=model.device)).logits[0, -1].float()
            err = max(err, float((alone - full[t]).abs().max()))
    return err


@torch.no_grad()
def mask_demo(run_masked: Run, run_free: Run) -> dict:
    """Held-out loss of the no-mask model with the future visible vs hidden, next to the causal model."""
    T = run_free.config.max_len
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return {"causal": heldout_loss(run_masked.model, run_masked.data),
            "free_peeking": heldout_loss(run_free.model, run_free.data),
            "free_no_future": heldout_loss(run_free.model, run_free.data, attn_mask=causal),
            "sample_causal": greedy(run_masked.model, run_masked.tok, sample_prompt(run_masked.spec.task)),
            "sample_free": greedy(run_free.model, run_free.tok, sample_prompt(run_free.spec.task))}


# -- page sections (Streamlit) ----------------------------------------------------------------------
JOB_KEY, ABLATION_KEY, WAS_ACTIVE_KEY = "train_job_id", "train_ablation_ids", "train_was_active"


def config_form() -> TrainSpec:
    """Widgets -> TrainSpec (validated later, before anything starts)."""
    import streamlit as st

    from viz_model.config import POS_ENCODINGS
    from viz_model.device import available_devices

    c1, c2, c3 = st.columns(3)
    preset = c1.selectbox("Model", ["tiny", "classroom", "custom"], key="train_preset",
                          help="tiny trains in seconds; classroom is the lecture model; custom lets you pick.")
    task = c2.selectbox("Task", list(TASK_LABELS), format_func=TASK_LABELS.get, key="train_task")
    device = c3.selectbox("Device", ["auto", *available_devices()], key="train_device")
    arch = {}
    if preset == "custom":
        a1, a2, a3 = st.columns(3)
        arch = dict(n_layers=a1.slider("Layers", 1, 6, 2, key="train_layers"),
                    n_heads=a2.slider("Heads", 1, 8, 2, key="train_heads"),
                    d_model=a3.select_slider("d_model", [16, 24, 32, 48, 64, 96, 128, 192, 256], 64,
                                             key="train_dmodel"))
    p1, p2, p3, p4 = st.columns(4)
    pos = p1.selectbox("Positional encoding", POS_ENCODINGS, index=3, key="train_pos")
    base = p2.number_input("RoPE base", 2.0, 1e6, 10000.0, key="train_base", disabled=pos != "rope")
    norm = p3.radio("LayerNorm", ["pre", "post"], horizontal=True, key="train_norm")
    causal = p4.toggle("Causal mask", True, key="train_causal")
    tie = p4.toggle("Tie input/output weights", True, key="train_tie")
    h1, h2, h3, h4, h5, h6 = st.columns(6)
    lr = h1.select_slider("Learning rate", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1], 3e-3, key="train_lr")
    batch = h2.select_slider("Batch", [1, 4, 8, 16, 32, 64], 16 if preset == "tiny" else 32, key="train_batch")
    seq = h3.select_slider("Context length", [32, 48, 64, 96, 128], 32 if preset == "tiny" else 64, key="train_seq")
    steps = h4.number_input("Steps", 10, 5000, 200 if preset == "tiny" else 600, 10, key="train_steps")
    seed = h5.number_input("Seed", 0, 10_000, 0, key="train_seed")
    every = h6.number_input("Snapshot every", 5, 500, 20, 5, key="train_every",
                            help="Held-out loss, attention snapshot and a greedy sample every N steps.")
    return TrainSpec(preset=preset, task=task, pos_encoding=pos, rope_base=float(base), norm_position=norm,
                     causal=causal, tie_weights=tie, lr=float(lr), batch_size=int(batch), seq_len=int(seq),
                     steps=int(steps), seed=int(seed), device=device, every=int(every), **arch)


def start_run(reg, owner: str, spec: TrainSpec, vocab_size: int) -> str:
    _, n_params = validate(spec, vocab_size)  # a clear message before any thread starts
    job = reg.submit(owner, spec.label(), spec.steps, make_events(spec), meta={"spec": spec, "params": n_params})
    return job.id


def status_line(job, reg) -> None:
    """Progress bar with step/total, ETA, tokens/s, queue position, and the job's message."""
    import streamlit as st

    from viz_model.ui import jobs as J

    events = job.events_since(max(0, len(job.events) - 50))
    tps = next((e["tokens_per_s"] for e in reversed(events) if e.get("kind") == "step"), 0.0)
    eta = job.eta_seconds()
    text = f"{job.title} — step {job.step:,}/{job.total:,} · {job.status}"
    if job.status == J.RUNNING:
        text += f" · {job.steps_per_second():.1f} steps/s · {tps:,.0f} tokens/s"
        text += f" · about {eta:.0f} s left" if eta is not None else ""
    st.progress(min(job.step / max(job.total, 1), 1.0), text=text)
    if job.status == J.QUEUED:
        pos = reg.queue_position(job.id)
        st.info(f"Waiting in the queue: position {pos}. The server trains {reg.slots} runs at a time; "
                "yours starts automatically.", icon=":material/hourglass_top:")
    elif job.status == J.DIVERGED:
        st.error(job.message)
    elif job.status in (J.FAILED, J.RECLAIMED):
        st.warning(job.message)
    elif job.status == J.DONE:
        st.success(f"Finished {job.step:,} steps in {job.runtime():.0f} s ({job.steps_per_second():.1f} steps/s).")


def live_curves(job) -> None:
    """Loss (train + held-out) and the learning-rate schedule."""
    import streamlit as st

    from viz_model.figures.train import loss_curves, lr_curve
    from viz_model.ui import chart

    h = history(job.events_since())
    if not h.steps:
        st.caption("The charts appear with the first training step.")
        return
    c1, c2 = st.columns([3, 2])
    chart.show(loss_curves({job.title: h.curve()}, title="Loss: train (solid) and held-out (dashed)",
                                total=job.total),
                                key="train_loss_chart", name="train_loss", container=c1, exports=False)
    chart.show(lr_curve(h.steps, h.lr, total=job.total),
               key="train_lr_chart", name="train_lr", container=c2, exports=False)


def live_attention(job) -> None:
    """The latest probe attention, per-head role scores over time, and the greedy samples so far."""
    import pandas as pd
    import streamlit as st

    from viz_model.figures.train import attention_now, role_timeline
    from viz_model.ui import chart

    h = history(job.events_since())
    if h.snaps:
        d1, d2 = st.columns(2)
        chart.show(attention_now(h.snaps[-1], h.tokens, title=f"Probe attention now (step {h.snap_steps[-1]})"),
                   key="train_attn_now", name="train_attention", container=d1, exports=False)
        role = d2.selectbox("Head role", list(h.roles), key="train_role",
                            index=list(h.roles).index("induction") if "induction" in h.roles else 0)
        chart.show(role_timeline(h.snap_steps, h.roles[role], role, h.steps, h.loss),
                   key="train_roles", name="train_roles", container=d2, exports=False)
    if h.samples:
        st.dataframe(pd.DataFrame(h.samples[::-1][:12]), hide_index=True, key="train_samples")


def teacher_forcing_section(job) -> None:
    import pandas as pd
    import streamlit as st

    st.markdown("One forward pass over a sentence gives a prediction at **every** position at once: the causal "
                "mask only restricts what each position may read.")
    run = job.result if job is not None else None
    default = "the cat sat on the mat" if run is None or run.spec.task == "lm" else probe_text(run.spec.task)
    text = st.text_input("Training sentence", default, max_chars=300, key="train_tf_text")
    if not text.strip():
        st.warning("Type at least one word.")
        return
    if run is None:
        st.info("Start a run first: the table uses the model being trained.")
        return
    with job.model_lock:  # the worker mutates the model between steps; read a consistent copy
        rows = teacher_forcing(run.model, run.tok, text)
        err = prefix_check(run.model, run.tok, text) if run.config.causal else None
    st.dataframe(pd.DataFrame(rows).round({"p(target)": 3, "loss": 3}), hide_index=True, key="train_tf_table")
    mean = sum(r["loss"] for r in rows) / len(rows)
    st.caption(f"{len(rows)} predictions from one pass; mean loss {mean:.3f} nats.")
    if err is None:
        st.warning("This model has no causal mask: position t reads the word it must predict, so this table "
                   "flatters it (see the ablation tab).")
    elif err < 1e-4:
        st.success(f"✓ Each row equals running its prefix alone (max logit difference {err:.1e}).")
    else:
        st.error(f"✗ One-pass predictions differ from prefix runs by {err:.1e}.")


def ablation_section(reg, owner: str, spec: TrainSpec, vocab_size: int) -> None:
    import streamlit as st

    from viz_model.figures.train import loss_curves
    from viz_model.ui import chart
    from viz_model.ui import jobs as J

    kind = st.radio("Vary", ["positional encoding", "causal mask"], horizontal=True, key="train_ablation_kind")
    specs = ablation_specs(spec, kind)
    st.caption(f"Runs {len(specs)} copies of the setup above (same data, seed and steps), "
               f"{reg.slots} at a time; the rest wait in the queue.")
    if st.button(f"Run {len(specs)} side by side", key="train_ablation_start", icon=":material/compare:"):
        try:
            for s in specs:
                validate(s, vocab_size)
        except ValueError as e:
            st.warning(f"Not started: {e}")
        else:
            for old in st.session_state.get(ABLATION_KEY, []):
                reg.remove(old)
            st.session_state[ABLATION_KEY] = [start_run(reg, owner, s, vocab_size) for s in specs]
            st.rerun()
    jobs = [j for j in (reg.get(i) for i in st.session_state.get(ABLATION_KEY, [])) if j is not None]
    if not jobs:
        return
    for j in jobs:
        pos = reg.queue_position(j.id)
        st.progress(min(j.step / max(j.total, 1), 1.0), text=f"{j.title}: {j.status}"
                    + (f" (queue position {pos})" if pos else f", step {j.step}/{j.total}"))
    curves = {j.title: history(j.events_since()).curve() for j in jobs}
    chart.show(loss_curves(curves, title="Same setup, one thing changed", total=max(j.total for j in jobs)),
               key="train_ablation_chart", name="train_ablation")
    done = [j for j in jobs if j.status == J.DONE]
    if kind == "causal mask" and len(done) == 2:
        masked, free = sorted(done, key=lambda j: not j.meta["spec"].causal)
        with masked.model_lock, free.model_lock:
            d = mask_demo(masked.result, free.result)
        st.markdown("**Why the no-mask curve falls so fast.** Without the mask, position *t* can read token "
                    "*t + 1* — the very word it must predict — so training turns into copying. At generation "
                    "time the future does not exist yet, and the trick fails.")
        ok = d["free_no_future"] > d["free_peeking"] + 0.5
        msg = (f"No-mask model: held-out loss {d['free_peeking']:.2f} when it may read the future, "
               f"{d['free_no_future']:.2f} when it may not (causal model: {d['causal']:.2f}).")
        if ok:
            st.success("✓ " + msg)
        else:
            st.error("✗ " + msg + " The gap is not clear yet: train longer (300+ steps on the tiny model).")
        st.table({"model": ["causal mask", "no mask"], "greedy continuation": [d["sample_causal"], d["sample_free"]]})


def checkpoint_section(job, owner: str) -> None:
    import streamlit as st

    from viz_model.ui import jobs as J
    from viz_model.ui.models import register_user_model

    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Save the trained model**")
        if job is None or job.result is None or job.step == 0:
            st.caption("Train a model first.")
        else:
            name = st.text_input("Name", f"my-{job.meta['spec'].task}-model", max_chars=40, key="train_ckpt_name")
            if st.button("Save checkpoint", key="train_save", disabled=job.status == J.RUNNING,
                         help="Pause or finish the run first." if job.status == J.RUNNING else None):
                with job.model_lock:
                    path = save_run(job.result, name, owner)
                register_user_model(model_key(path), path)
                st.session_state["train_saved"] = str(path)
            saved = st.session_state.get("train_saved")
            if saved and Path(saved).exists():
                key = model_key(Path(saved))
                st.success(f"Saved as **{key}**: pick it in the sidebar's Model menu on any page.")
                st.download_button("Download (.zip: safetensors + json)", checkpoint_zip(Path(saved)),
                                   f"{key}.zip", "application/zip", key="train_download")
    with c2:
        st.markdown("**Upload a checkpoint**")
        files = st.file_uploader("A .zip, or the .safetensors and .json pair", ["zip", "safetensors", "json"],
                                 accept_multiple_files=True, key="train_upload")
        if files and st.button("Check and add", key="train_upload_go"):
            dest = runs_dir() / safe_name(owner[:12]) / "uploads"
            ckpt = import_upload([(f.name, f.getvalue()) for f in files], dest)
            register_user_model(ckpt.path.stem, ckpt.path)
            st.success(f"✓ {ckpt.path.stem}: valid safetensors, config and shapes check out "
                       f"({ckpt.model.num_params():,} parameters). Pick it in the sidebar.")
