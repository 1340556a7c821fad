"""`make models` without the network: tiny random GPT-2, Llama (as SmolLM2-135M) and Qwen2 (as Qwen2.5-0.5B) built
with transformers (tests/test_hf.py's builders), laid out as a Hugging Face cache (models--ORG--NAME/refs/main,
snapshots/<rev>/ linked to blobs/) with decoys beside them (a pickle, a model's own code, a sub-folder). With
HF_HUB_OFFLINE=1 and HF_HUB_CACHE on that cache, the command (as a function and as `python -m viz_model.models`)
places only config, safetensors and tokenizer files in models/NAME, the app lists them from models/ when
ATTENTION_LAB_MODEL_DIRS is unset, and what cannot be had (not in the cache, no internet, an unknown name) ends in one
sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch
from conftest import ROOT
from test_hf import _gpt2, _llama, _qwen2

from viz_model import hf, model_text
from viz_model import models as downloads
from viz_model.ui import models

REV = "0123456789abcdef0123456789abcdef01234567"
CACHED = {"gpt2": _gpt2, "SmolLM2-135M": _llama, "Qwen2.5-0.5B": _qwen2}  # distilgpt2 is left out of the cache
DECOYS = {"pytorch_model.bin": b"not a pickle, but named like one", "modeling_gpt2.py": b"raise SystemExit('ran')\n",
          "onnx/model.safetensors": b"a sub-folder", "README.md": b"# a model card\n"}


def _cache_repo(cache: Path, repo_id: str, folder: Path) -> Path:
    """One repository as huggingface_hub caches it: files in blobs/<sha256>, snapshots/<rev>/NAME links to them."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(REV)
    snap, blobs = repo / "snapshots" / REV, repo / "blobs"
    blobs.mkdir()
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    for name, data in {**files, **DECOYS}.items():
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snap


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    """A Hugging Face cache holding three of the four curated models, tiny and random."""
    cache = tmp_path_factory.mktemp("hf_home") / "hub"
    for i, (name, build) in enumerate(CACHED.items()):
        torch.manual_seed(i)
        folder = tmp_path_factory.mktemp(f"built-{name}")
        build(folder)
        _cache_repo(cache, downloads.find(name).repo_id, folder)
    return cache


@pytest.fixture
def offline(hub, tmp_path, monkeypatch) -> Path:
    """Offline, on the test cache; models home a fresh temp folder; ATTENTION_LAB_MODEL_DIRS unset."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HOME", str(hub.parent))
    monkeypatch.setenv(hf.HOME_VAR, str(tmp_path / "models"))
    monkeypatch.delenv(hf.ENV_VAR, raising=False)
    models._read_folders.cache_clear()
    yield tmp_path / "models"
    models._read_folders.cache_clear()


def _expected_files(name: str, hub: Path) -> set[str]:
    snap = hub / f"models--{downloads.find(name).repo_id.replace('/', '--')}" / "snapshots" / REV
    return {p.name for p in snap.iterdir() if p.is_file() and downloads.allowed(p.name)}


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz_model.models", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


# -- the list -----------------------------------------------------------------------------------------------------
def test_the_curated_list_is_data_with_each_models_size():
    assert downloads.names() == ["gpt2", "distilgpt2", "SmolLM2-135M", "Qwen2.5-0.5B"]
    assert downloads.find("smollm2-135m").repo_id == "HuggingFaceTB/SmolLM2-135M"
    assert downloads.find("Qwen2.5-0.5B").repo_id == "Qwen/Qwen2.5-0.5B"
    for c in downloads.CURATED:
        assert c.n_params > 50e6 and c.download_mb > 100 and c.model_type in hf.SUPPORTED_TYPES
    text = downloads.table(Path("/nowhere"))
    for line, c in zip(text.splitlines()[1:], downloads.CURATED):
        assert line.startswith(c.name) and f"{c.n_params / 1e6:.0f}M" in line and c.repo_id in line
    assert "about 551 MB" in text and "about 1.0 GB" in text
    readme = (ROOT / "README.md").read_text()
    for c in downloads.CURATED:  # README: one line per model, its size, where it goes
        line = next(ln for ln in readme.splitlines() if f"models/{c.name}" in ln)
        assert f"{c.n_params / 1e6:.0f}M" in line and downloads._mb(c.download_mb) in line


def test_only_config_safetensors_and_tokenizer_files_are_fetched(hub, offline, monkeypatch):
    for ok in ("config.json", "generation_config.json", "model.safetensors", "model-00001-of-00002.safetensors",
               "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
               "special_tokens_map.json"):
        assert downloads.allowed(ok), ok
    for no in ("pytorch_model.bin", "model.pt", "tf_model.h5", "flax_model.msgpack", "modeling_qwen.py",
               "onnx/model.safetensors", "README.md", "model.safetensors.bin", "../config.json"):
        assert not downloads.allowed(no), no
    import huggingface_hub

    asked = {}
    real = huggingface_hub.snapshot_download

    def spy(repo_id, **kw):
        asked.update(kw, repo_id=repo_id)
        return real(repo_id, **kw)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", spy)
    downloads.download("gpt2", say=lambda s: None)
    assert asked["repo_id"] == "openai-community/gpt2"
    assert asked["allow_patterns"] == list(downloads.ALLOW_PATTERNS)
    assert not any(p.endswith((".bin", ".py", ".pt")) for p in asked["allow_patterns"])
    assert {"*/*", "*.bin", "*.py"} <= set(asked["ignore_patterns"])
    assert asked["local_files_only"] is True and asked["cache_dir"] == str(hub)


# -- offline, from the cache ----------------------------------------------------------------------------------------
def test_download_places_only_the_allowed_files_in_models(hub, offline):
    said = []
    folder = downloads.download("gpt2", say=said.append)
    assert folder == offline / "gpt2"
    got = {p.relative_to(folder).as_posix() for p in folder.rglob("*")}
    assert got == _expected_files("gpt2", hub) == {"config.json", "generation_config.json", "model.safetensors",
                                                   "tokenizer_config.json", "vocab.json", "merges.txt"}
    assert not (folder / "pytorch_model.bin").exists() and not (folder / "modeling_gpt2.py").exists()
    assert all(not p.is_symlink() for p in folder.iterdir())  # real files: the folder outlives the cache
    snap = hub / "models--openai-community--gpt2" / "snapshots" / REV
    assert (folder / "model.safetensors").read_bytes() == (snap / "model.safetensors").read_bytes()
    entry = hf.describe_folder(folder)
    assert entry.problem is None and entry.model_type == "gpt2"
    assert said[-1].startswith("gpt2 is in") and f"{entry.n_params:,} parameters" in said[-1]
    assert "124M parameters, about 551 MB" in said[0]
    # again: replaced whole, nothing left behind
    (folder / "stray.txt").write_text("from before")
    assert downloads.download("GPT2", say=said.append) == folder
    assert {p.name for p in folder.iterdir()} == _expected_files("gpt2", hub)
    assert sorted(p.name for p in offline.iterdir()) == ["gpt2"]


def test_the_app_lists_downloaded_models_from_models_when_the_variable_is_unset(hub, offline):
    for name in CACHED:
        downloads.download(name, say=lambda s: None)
    keys = {e.key: e for e in models.available_models()}
    for name in CACHED:
        entry = keys[name]
        assert entry.folder and entry.problem is None and entry.path == str(offline / name)
        kind = downloads.find(name).model_type
        assert entry.title.startswith(f"{name} · {kind} · ") and " params · " in entry.title
    assert not models.available_models()[0].folder  # a downloaded model never becomes the default
    ckpt = models.load_model("SmolLM2-135M")
    assert model_text.is_folder_model(ckpt)
    assert ckpt.metadata["n_params"] == hf.prepare(offline / "SmolLM2-135M").n_params
    # the instructor still decides: set but empty means no folders at all; set means only those folders
    os.environ[hf.ENV_VAR] = ""
    try:
        assert models.folder_models() == [] and hf.model_dirs_from_env() == []
        os.environ[hf.ENV_VAR] = str(offline / "gpt2")
        assert [e.key for e in models.folder_models()] == ["gpt2"]
    finally:
        del os.environ[hf.ENV_VAR]


def test_a_missing_or_empty_models_folder_lists_nothing_and_reads_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(hf.ENV_VAR, raising=False)
    monkeypatch.setattr(hf, "describe_folder", lambda *a, **k: pytest.fail("read a folder"))
    for home in (tmp_path / "missing", tmp_path):
        monkeypatch.setenv(hf.HOME_VAR, str(home))
        models._read_folders.cache_clear()
        assert hf.model_dirs_spec() == str(home)
        assert models.folder_models() == []
        assert models.RANDOM_MODEL in [e.key for e in models.available_models()]
    monkeypatch.delenv(hf.HOME_VAR)
    assert hf.models_home() == ROOT / "models"  # the default: models/ in the repository, git-ignored
    assert hf.model_dirs_spec({}) == str(ROOT / "models") and hf.model_dirs_spec({hf.ENV_VAR: ""}) == ""
    models._read_folders.cache_clear()


def test_the_command_downloads_gpt2_offline(hub, offline):
    run = _cli("download", "gpt2")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert {p.name for p in (offline / "gpt2").iterdir()} == _expected_files("gpt2", hub)
    assert "gpt2 is in" in run.stdout and str(offline / "gpt2") in run.stdout
    listed = _cli("list")
    assert listed.returncode == 0 and f"yes ({offline / 'gpt2'})" in listed.stdout


def test_a_model_not_in_the_offline_cache_is_one_clear_sentence(hub, offline):
    with pytest.raises(downloads.DownloadError, match="HF_HUB_OFFLINE"):
        downloads.download("distilgpt2", say=lambda s: None)
    run = _cli("download", "distilgpt2")
    assert run.returncode == 1
    assert "Traceback" not in run.stderr + run.stdout
    error = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert len(error) == 1 and "distilgpt2" in error[0] and "unset HF_HUB_OFFLINE" in error[0]
    assert "models/distilgpt2" in error[0]
    assert not (offline / "distilgpt2").exists()
    # one missing model does not stop the others, and the exit code still says so
    run = _cli("download", "distilgpt2", "gpt2")
    assert run.returncode == 1 and (offline / "gpt2" / "config.json").is_file()


def test_a_download_elsewhere_names_that_folder_in_every_sentence(hub, offline, tmp_path):
    """#43: `download NAME --dest DIR` said "copy ... into models/NAME", "run `make models`" and "the app lists it at
    its next start", none of them true of DIR."""
    elsewhere = tmp_path / "elsewhere"
    run = _cli("download", "distilgpt2", "--dest", str(elsewhere))  # not in the offline cache
    error = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert run.returncode == 1 and len(error) == 1, run.stderr
    assert f"into {elsewhere / 'distilgpt2'} by hand" in error[0]
    assert f"download distilgpt2 --dest {elsewhere}" in error[0] and "make models" not in error[0]
    run = _cli("download", "gpt2", "--dest", str(elsewhere))
    assert run.returncode == 0 and (elsewhere / "gpt2" / "config.json").is_file(), run.stderr
    assert f"{hf.ENV_VAR}={elsewhere / 'gpt2'}" in run.stdout and "at its next start" not in run.stdout
    run = _cli("download", "gpt2")  # the usual home is still listed at the next start
    assert run.returncode == 0 and "at its next start" in run.stdout


def test_no_internet_is_one_clear_sentence(hub, offline):
    with socket.socket() as s:  # a port nothing listens on: the connection is refused at once, nothing leaves
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_HUB_ETAG_TIMEOUT": "2",
           "HF_HUB_DOWNLOAD_TIMEOUT": "2", "NO_PROXY": "*", "HTTPS_PROXY": "", "HTTP_PROXY": ""}
    run = _cli("download", "distilgpt2", env=env)
    assert run.returncode == 1, run.stdout
    assert "Traceback" not in run.stderr + run.stdout
    error = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert len(error) == 1 and "cannot be reached" in error[0] and "make models MODELS=distilgpt2" in error[0]


def test_an_unknown_name_lists_the_choices_and_fetches_nothing(hub, offline):
    run = _cli("download", "gpt2", "gpt5")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "'gpt5'" in run.stderr and all(n in run.stderr for n in downloads.names())
    assert not offline.exists()  # gpt2 was valid, but nothing is fetched before every name is checked


def test_the_app_never_imports_the_downloader():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    rule = next(c for c in contracts if "huggingface_hub" in c.get("forbidden_modules", []))
    assert {"app_pages", "viz_model.ui"} <= set(rule["source_modules"])
    assert "viz_model.models" in rule["forbidden_modules"]
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("huggingface_hub") for d in deps)
    check = "import sys, viz_model.models, viz_model.ui.models; assert 'huggingface_hub' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", check], cwd=ROOT, timeout=120).returncode == 0  # imported lazily


def test_the_sidebar_lists_a_model_from_models(hub, offline, app_test):
    downloads.download("gpt2", say=lambda s: None)
    at = app_test()
    picker = at.sidebar.selectbox(key="model_key")
    assert any(o.startswith("gpt2 · gpt2 · ") for o in picker.options), picker.options
    assert not picker.value.startswith("gpt2")  # listed, not chosen: the default stays the default
