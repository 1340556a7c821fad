"""Where trained and uploaded checkpoints live on the server: save a run, import an upload, zip for download."""

from __future__ import annotations

import io
import os
import re
import time
import zipfile
from dataclasses import asdict
from pathlib import Path

from viz_model import checkpoint
from viz_model.lessons.train import Run


def runs_dir() -> Path:
    """Per-server directory of trained and uploaded checkpoints (gitignored); env ATTENTION_LAB_RUNS."""
    return Path(os.environ.get("ATTENTION_LAB_RUNS", Path(__file__).resolve().parents[2] / "runs"))


MAX_UPLOAD_BYTES = 32 * 2**20


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
