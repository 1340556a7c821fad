"""Hugging Face folders: load time and peak memory of viz_model.hf against safetensors' load_file, and a traced
forward at T = 32 against the classroom model's. Not CI (needs transformers, minutes and a few GB of RAM).

Two random-weight models are built from configs with transformers and saved in HF layout to a temp dir (deleted
at the end): GPT-2 small (124M, float32 on disk, as the hub's) and a ~0.5B Llama-shaped model with Qwen2.5-0.5B's
dimensions (d 896, 24 layers, 14 heads / 2 KV heads, SwiGLU 4864, vocab 151,936, tied; bfloat16 on disk, as the
hub's). Every measurement runs in a fresh child process (median of --repeats), with the file already in the page
cache, so each loader sees the same warm file; peak RSS is the child's VmHWM minus its VmRSS after imports; CPU
is the child's process time (steadier than wall time on a shared machine).
Run: nice -n 5 .venv/bin/python bench/bench_hf.py [--repeats 3] [--only gpt2|llama]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASSROOM = ROOT / "assets" / "models" / "classroom.safetensors"
T = 32


def _status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process. Not ru_maxrss: Linux carries the parent's peak across
    fork + exec into it, so every child would report the parent's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- building the folders (parent process) --------------------------------------------------------
def build(kind: str, folder: Path) -> None:
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    torch.manual_seed(0)
    if kind == "gpt2":
        cfg = tf.GPT2Config()  # 124M: d 768, 12 layers, 12 heads, 1024 positions, vocab 50,257
        model, dtype = tf.GPT2LMHeadModel(cfg), torch.float32
    else:
        cfg = tf.LlamaConfig(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                             intermediate_size=4864, vocab_size=151936, max_position_embeddings=32768,
                             rope_theta=1e6, tie_word_embeddings=True, bos_token_id=0, eos_token_id=1)
        model, dtype = tf.LlamaForCausalLM(cfg), torch.bfloat16
    model.to(dtype).save_pretrained(folder)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(["the cat sat on the mat", "a bank by the river"] * 20,
                            trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>"]))
    tok.save(str(folder / "tokenizer.json"))
    del model


# -- one measurement (child process) --------------------------------------------------------------
def child(task: str, folder: Path) -> dict:
    import torch

    torch.set_num_threads(1)
    from safetensors.torch import load_file

    from viz_model import checkpoint, hf

    files = sorted(folder.glob("*.safetensors"))
    base = _status_mb("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    if task == "load_file":
        state = {k: v for f in files for k, v in load_file(f).items()}
    elif task == "load_file_f32":  # the same end product as ours: every value read, float32, owned
        state = {k: v.to(torch.float32, copy=True) for f in files for k, v in load_file(f).items()}
    elif task == "ours":
        ckpt = hf.read_hf_folder(folder)
    elif task == "forward":
        return _forward(hf.read_hf_folder(folder), checkpoint.load(CLASSROOM)[0])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = sum(v.numel() for v in state.values()) if task != "ours" else ckpt.metadata["n_params"]
    return {"seconds": seconds, "cpu": cpu, "peak_mb": _status_mb("VmHWM") - base, "n": n}


def _median_ms(fn, repeats: int = 7) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def _forward(ckpt, classroom) -> dict:
    import torch

    from viz_model.lessons.real_models import real_head_roles

    model = ckpt.model
    ids = torch.randint(0, classroom.config.vocab_size, (1, T))  # (1, T): ids both vocabularies have
    out = {}
    with torch.no_grad():
        for name, m in (("real", model), ("classroom", classroom)):
            out[f"{name}_traced_ms"] = _median_ms(lambda m=m: m(ids, trace=True))
            out[f"{name}_fast_ms"] = _median_ms(lambda m=m: m(ids))
    t0 = time.perf_counter()
    real_head_roles(model, ckpt.tokenizer, n_sequences=8, half=16)
    out["roles_s"] = time.perf_counter() - t0
    return out


# -- orchestration --------------------------------------------------------------------------------
def run_child(task: str, folder: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", task, str(folder)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if res.returncode:
        raise RuntimeError(f"{task} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(kind: str, folder: Path, repeats: int) -> dict:
    for f in folder.glob("*.safetensors"):  # warm the page cache: every loader reads the same cached file
        f.read_bytes()
    row = {"model": kind, "disk_mb": sum(f.stat().st_size for f in folder.glob("*.safetensors")) / 2**20}
    for task in ("load_file", "load_file_f32", "ours"):
        runs = [run_child(task, folder) for _ in range(repeats)]
        row[task] = statistics.median(r["seconds"] for r in runs)
        row[f"{task}_cpu"] = statistics.median(r["cpu"] for r in runs)
        row[f"{task}_mb"] = statistics.median(r["peak_mb"] for r in runs)
        row["n_params"] = runs[0]["n"] if task == "ours" else row.get("n_params")
    row.update(run_child("forward", folder))
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| model | params | on disk | load_file (lazy) | load_file + copy to float32 | ours "
        "| ours / (load_file + copy) | peak RSS: load_file / + copy / ours "
        "| traced T=32: real / classroom | fast T=32: real / classroom | head roles (8 x 33 tokens) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['n_params'] / 1e6:.0f}M | {r['disk_mb']:.0f} MB | {r['load_file']:.2f} s | "
            f"{r['load_file_f32']:.2f} s (CPU {r['load_file_f32_cpu']:.2f}) | "
            f"{r['ours']:.2f} s (CPU {r['ours_cpu']:.2f}) | "
            f"{r['ours'] / r['load_file_f32']:.2f}x (CPU {r['ours_cpu'] / r['load_file_f32_cpu']:.2f}x) | "
            f"{r['load_file_mb']:.0f} / {r['load_file_f32_mb']:.0f} / {r['ours_mb']:.0f} MB | "
            f"{r['real_traced_ms']:.1f} / {r['classroom_traced_ms']:.2f} ms "
            f"({r['real_traced_ms'] / r['classroom_traced_ms']:.0f}x) | "
            f"{r['real_fast_ms']:.1f} / {r['classroom_fast_ms']:.2f} ms "
            f"({r['real_fast_ms'] / r['classroom_fast_ms']:.0f}x) | {r['roles_s']:.2f} s |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("gpt2", "llama"))
    ap.add_argument("--child", nargs=2, metavar=("TASK", "FOLDER"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_hf_"))
    rows = []
    try:
        for kind in ("gpt2", "llama") if args.only is None else (args.only,):
            t0 = time.perf_counter()
            build(kind, tmp / kind)
            print(f"built {kind} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            rows.append(measure(kind, tmp / kind, args.repeats))
            shutil.rmtree(tmp / kind)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(table(rows))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
