"""Real checkpoints one command away: a curated list of small Hugging Face models, fetched into models/NAME.

    python -m viz_model.models list                      # the list, each model's size, which are already here
    python -m viz_model.models download gpt2 distilgpt2  # or `all`; `make models MODELS="gpt2 distilgpt2"`

Only the instructor runs this; the app never imports this module or huggingface_hub (an import-linter contract
in pyproject.toml), so nothing a student does downloads anything. With ATTENTION_LAB_MODEL_DIRS unset the app lists
every model folder in models/ (hf.model_dirs_spec); a missing or empty models/ lists nothing.

What is fetched: config, safetensors weights and tokenizer files (ALLOW_PATTERNS), top-level only. Never a pickle
(`.bin`, `.pt`, ...), never code (`*.py`: the app's reader, viz_model.hf, never runs a model's own code). Files are
downloaded into the Hugging Face cache with `snapshot_download` (HF_HUB_CACHE / HF_HOME; HF_HUB_OFFLINE=1 uses the
cache alone), then the allowed files are placed in models/NAME (weights hard-linked where the disk allows, so the
cache and models/ share them), through a staging folder, so a half-finished download never shows in the app.
Errors (no internet, offline and not cached, no such repository) end in one sentence saying what to do, exit 1.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from viz_model import hf

ALLOW_PATTERNS = ("config.json", "generation_config.json", "*.safetensors", "model.safetensors.index.json",
                  "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json")
# Belt and braces: allow_patterns already leave these out. "*/*": nothing in a sub-folder (onnx/, original/, ...).
IGNORE_PATTERNS = ("*/*", "*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle", "*.h5", "*.msgpack", "*.py")
STAGING = ".partial"  # models/.partial/NAME while a model is being placed (two levels down: the app never lists it)
_TRUE = {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class Curated:
    """One model of the curated list. The numbers are the published ones (the Hub's file list): what the command
    and README show before anything is downloaded."""
    name: str             # the folder under models/ and the name in the app's picker
    repo_id: str
    model_type: str       # config.json's model_type (viz_model.hf reads it)
    n_params: int
    download_mb: int      # the allowed files, about (MB = 10^6 bytes)
    dtype: str            # how the weights are stored; the app holds them in float32 (4 bytes a parameter)
    note: str

    @property
    def memory_mb(self) -> int:
        return round(self.n_params * 4 / 1e6)


CURATED: tuple[Curated, ...] = (
    Curated("gpt2", "openai-community/gpt2", "gpt2", 124_439_808, 551, "float32",
            "GPT-2 small (2019): 12 layers x 12 heads, learned positions, 50k byte-level BPE"),
    Curated("distilgpt2", "distilbert/distilgpt2", "gpt2", 81_912_576, 356, "float32",
            "GPT-2 distilled to 6 layers x 12 heads: the fastest real model here"),
    Curated("SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M", "llama", 134_515_008, 273, "bfloat16",
            "Llama layout (2024): 30 layers, 9 query / 3 K/V heads (GQA), RoPE, RMSNorm, SwiGLU"),
    Curated("Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B", "qwen2", 494_032_768, 1000, "bfloat16",
            "Qwen2 layout (2024): 24 layers, 14 query / 2 K/V heads, q/k/v bias, RoPE; 151k-token vocabulary"),
)


class DownloadError(Exception):
    """What went wrong, in one sentence that says what to do."""


def names() -> list[str]:
    return [c.name for c in CURATED]


def find(name: str) -> Curated:
    """The curated model called `name` (any case); DownloadError listing the choices otherwise."""
    for c in CURATED:
        if c.name.lower() == name.strip().lower():
            return c
    raise DownloadError(f"there is no curated model called {name!r}; choose from: {', '.join(names())} (or all).")


def allowed(filename: str) -> bool:
    """A top-level file the app may take from a download: config, safetensors, tokenizer; never a pickle or code."""
    if "/" in filename or "\\" in filename:
        return False
    return (any(fnmatch.fnmatch(filename, p) for p in ALLOW_PATTERNS)
            and not any(fnmatch.fnmatch(filename, p) for p in IGNORE_PATTERNS))


def _hub_settings(env: Mapping[str, str]) -> tuple[str | None, bool]:
    """The cache folder and offline flag, read now (huggingface_hub reads them once, at its import)."""
    cache = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if not cache and env.get("HF_HOME"):
        cache = str(Path(env["HF_HOME"]).expanduser() / "hub")
    offline = any((env.get(v) or "").upper() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return cache or None, offline


def _again(c: Curated, dest: Path, env: Mapping[str, str]) -> str:
    """The command that fetches `c` into `dest` again: `make models` for the usual home, else the --dest command."""
    if dest == hf.models_home(env):
        return f"`make models MODELS={c.name}`"
    return f"`python -m viz_model.models download {c.name} --dest {dest}`"


def _sentence(c: Curated, error: BaseException, offline: bool, cache: str | None, dest: Path,
              env: Mapping[str, str]) -> str:
    """huggingface_hub's error, as one sentence for the instructor, naming the folder they asked for (dest)."""
    from huggingface_hub import errors

    again = _again(c, dest, env)
    by_hand = f"or copy a model folder (config.json, *.safetensors, tokenizer.json) into {dest / c.name} by hand"
    where = cache or "the Hugging Face cache (HF_HUB_CACHE)"
    if isinstance(error, errors.RevisionNotFoundError):
        return f"{c.name}: the Hub has no such revision of {c.repo_id}; check CURATED in viz_model/models.py."
    if isinstance(error, errors.RepositoryNotFoundError):
        return (f"{c.name}: the Hub has no public repository {c.repo_id} (renamed, removed or behind a login); "
                f"check CURATED in viz_model/models.py, {by_hand}.")
    if offline:
        return (f"{c.name} ({c.repo_id}) is not complete in {where} and HF_HUB_OFFLINE is set: unset HF_HUB_OFFLINE "
                f"on a machine with internet access and run {again} again, {by_hand}.")
    module = type(error).__module__
    if (isinstance(error, (ConnectionError, TimeoutError, errors.EntryNotFoundError, errors.OfflineModeIsEnabled))
            or module.startswith(("httpx", "httpcore", "urllib3", "requests"))):
        cause = type(error.__cause__ or error).__name__
        return (f"{c.name}: the Hugging Face Hub cannot be reached from this machine ({cause}); "
                f"connect it to the internet (or set HF_ENDPOINT to a mirror) and run {again} again, {by_hand}.")
    if isinstance(error, errors.HfHubHTTPError):
        status = getattr(getattr(error, "response", None), "status_code", "an error")
        return f"{c.name}: the Hugging Face Hub answered {status} for {c.repo_id}; try {again} again later."
    if isinstance(error, OSError):
        return f"{c.name}: could not write the files ({error.strerror or error}); free some disk space or check " \
               f"the permissions of {where} and {dest}, then run {again} again."
    return f"{c.name}: the download failed ({type(error).__name__}: {error}); run {again} again."


def _place(src: Path, dst: Path) -> None:
    """Weights hard-linked to the cache's copy where the disk allows (no second copy), everything else copied."""
    if dst.suffix == ".safetensors":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copyfile(src, dst)


def download(name: str, dest: str | Path | None = None, env: Mapping[str, str] | None = None,
             say: Callable[[str], None] = print) -> Path:
    """Fetch one curated model into dest/NAME (dest: hf.models_home(), i.e. models/) and return that folder.
    Raises DownloadError (one sentence) on any failure; an earlier models/NAME is only replaced by a complete one."""
    c = find(name)
    env = os.environ if env is None else env
    dest = Path(dest).expanduser() if dest is not None else hf.models_home(env)
    cache, offline = _hub_settings(env)
    try:
        from huggingface_hub import snapshot_download  # here, not at the top: the app never imports it
    except ImportError as e:
        raise DownloadError("huggingface_hub is not installed in this environment: run `make install` first.") from e
    say(f"{c.name}: {c.n_params / 1e6:.0f}M parameters, about {_mb(c.download_mb)} from {c.repo_id} -> {dest / c.name}")
    try:
        snapshot = Path(snapshot_download(c.repo_id, cache_dir=cache, local_files_only=offline,
                                          allow_patterns=list(ALLOW_PATTERNS), ignore_patterns=list(IGNORE_PATTERNS)))
    except Exception as e:  # every failure becomes one sentence, never a traceback
        raise DownloadError(_sentence(c, e, offline, cache, dest, env)) from e
    files = sorted(p for p in snapshot.iterdir() if p.is_file() and allowed(p.name))
    got = {p.name for p in files}
    if "config.json" not in got or not any(n.endswith(".safetensors") for n in got):
        if offline:
            raise DownloadError(_sentence(c, FileNotFoundError(snapshot), offline, cache, dest, env))
        raise DownloadError(f"{c.name}: {c.repo_id} has no config.json with safetensors weights in "
                            f"{snapshot}; delete that folder and run {_again(c, dest, env)} again.")
    try:
        return _install(c, files, dest, say, listed=dest == hf.models_home(env) and not env.get(hf.ENV_VAR))
    except OSError as e:
        raise DownloadError(_sentence(c, e, offline, cache, dest, env)) from e


def _install(c: Curated, files: list[Path], dest: Path, say: Callable[[str], None], listed: bool = True) -> Path:
    """Place the files in dest/NAME through a staging folder. `listed`: whether the app lists dest/NAME as it
    starts (it reads the models home only while ATTENTION_LAB_MODEL_DIRS is unset); if not, say how to list it."""
    staging = dest / STAGING / c.name
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for f in files:
        _place(f.resolve(), staging / f.name)
    entry = hf.describe_folder(staging, c.name)
    final, old = dest / c.name, dest / STAGING / f"{c.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    try:
        (dest / STAGING).rmdir()
    except OSError:
        pass
    if entry.problem is not None:
        say(f"{c.name} is in {final}, but the app will list it as unavailable: {entry.problem}")
    else:
        how = ("The app lists it in the model picker at its next start." if listed else
               f"The app lists it when started with {hf.ENV_VAR}={final} (the instructor chooses the folders).")
        say(f"{c.name} is in {final}: {entry.n_params or 0:,} parameters, "
            f"{hf.human_bytes(entry.size_bytes)} of weights. {how}")
    return final


def _mb(mb: int) -> str:
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb} MB"


def table(dest: Path | None = None) -> str:
    """The curated list with each model's size, and whether it is already in models/."""
    dest = hf.models_home() if dest is None else dest
    rows = [("name", "parameters", "download", "memory in the app", "repository", "here")]
    for c in CURATED:
        here = f"yes ({dest / c.name})" if (dest / c.name / "config.json").is_file() else "no"
        rows.append((c.name, f"{c.n_params / 1e6:.0f}M", f"about {_mb(c.download_mb)}", _mb(c.memory_mb),
                     c.repo_id, here))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    total = sum(c.download_mb for c in CURATED)
    lines.append(f"all four: about {_mb(total)}; they go to {dest}/NAME and the app lists them when "
                 f"{hf.ENV_VAR} is unset.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz_model.models",
                                     description="Fetch real checkpoints (safetensors only) into models/.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the curated models, their sizes, which are here")
    get = sub.add_parser("download", help="fetch models into models/NAME")
    get.add_argument("names", nargs="+", metavar="NAME", help=f"{', '.join(names())} or all")
    for p in sub.choices.values():
        p.add_argument("--dest", type=Path, default=None, help=f"instead of models/ (or ${hf.HOME_VAR})")
    args = parser.parse_args(argv)
    dest = args.dest if args.dest is not None else hf.models_home()
    if args.command == "list":
        print(table(dest))
        return 0
    wanted = names() if [n.lower() for n in args.names] == ["all"] else args.names
    try:
        chosen = list(dict.fromkeys(find(n).name for n in wanted))  # every name checked before anything is fetched
    except DownloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    failed = 0
    for name in chosen:
        try:
            download(name, dest)
        except DownloadError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
        except KeyboardInterrupt:
            print(f"error: {name}: interrupted; {dest / name} is unchanged.", file=sys.stderr)
            return 130
    return 1 if failed else 0


__all__ = ["ALLOW_PATTERNS", "CURATED", "Curated", "DownloadError", "IGNORE_PATTERNS", "allowed", "download",
           "find", "main", "names", "table"]

if __name__ == "__main__":
    sys.exit(main())
