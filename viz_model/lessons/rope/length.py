"""The length experiment: held-out loss at 1×, 2× and 4× a model's training length, the RoPE model under
every scaling (same weights), the other position encodings as trained, on the same held-out tokens."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pandas as pd
import torch

from viz_model import rope
from viz_model.data import corpus_split
from viz_model.lessons.rope.extension import scaling_for
from viz_model.model import TinyTransformer
from viz_model.tokenizer import special_ids


def scaled_copy(model: TinyTransformer, **changes) -> TinyTransformer:
    """Same weights, different position settings (RoPE and the sinusoidal table have no parameters)."""
    copy = TinyTransformer(dataclasses.replace(model.config, **changes)).to(model.device).eval()
    copy.load_state_dict(model.state_dict())
    return copy.requires_grad_(False)


MAX_EXPERIMENT_TOKENS = 4096  # longest window the length experiment runs on a shared 2-core server


def heldout_windows(ids: Sequence[Sequence[int]], length: int, total: int
                    ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The first `total` held-out tokens (sentences packed end to end) cut into windows of `length`.

    Every length scores the same tokens, so losses at 1x, 2x, 4x differ only by how much context each
    prediction sees. Returns (inputs, targets), each (total/length, length); None if there is too little text.
    """
    flat = [t for seq in ids for t in seq]
    if total % length or len(flat) < total + 1:
        return None
    x = torch.tensor(flat[: total + 1], dtype=torch.long)
    return x[:-1].view(-1, length), x[1:].view(-1, length)


def experiment_tokens(train_len: int, multiples: Sequence[int], budget: int = 1024) -> int:
    """Tokens scored per cell: a multiple of the longest window, about `budget` (at least one window)."""
    longest = max(multiples) * train_len
    return longest * max(1, budget // longest)


@torch.no_grad()
def length_losses(model: TinyTransformer, heldout_ids: Sequence[Sequence[int]], multiples: Sequence[int],
                  total: int | None = None, progress: Callable[[float, str], None] | None = None) -> pd.DataFrame:
    """Held-out next-token loss at m x the training length, under every scaling (RoPE) or as is (others)."""
    cfg = model.config
    L = cfg.max_len
    total = total or experiment_tokens(L, multiples)
    methods = list(rope.SCALINGS) if cfg.pos_encoding == "rope" else ["none"]
    rows, jobs = [], [(m, meth) for m in multiples for meth in methods]
    for j, (m, method) in enumerate(jobs):
        if progress:
            progress(j / len(jobs), f"{m}× context, {rope.SCALINGS[method].label}")
        row = {"method": method, "multiple": m, "length": m * L, "loss": float("nan"), "note": ""}
        windows = heldout_windows(heldout_ids, m * L, total)
        if m == 1 and rows and rows[0]["multiple"] == 1:
            row["loss"] = rows[0]["loss"]  # factor 1: every scaling is plain RoPE (tested), so reuse the pass
        elif m * L > MAX_EXPERIMENT_TOKENS:
            row["note"] = f"windows longer than {MAX_EXPERIMENT_TOKENS:,} tokens are not run on this server"
        elif windows is None:
            row["note"] = "not enough held-out text"
        elif cfg.pos_encoding == "learned" and m * L > L:
            row["note"] = f"a learned table has only {L} rows, so it cannot read {m * L} positions"
        else:
            scaled = model if method == "none" else scaled_copy(
                model, rope_scaling=scaling_for(method, max(m, 1), L))
            x, y = (w.to(model.device) for w in windows)
            row["loss"] = float(scaled(x, targets=y).loss)
        rows.append(row)
    if progress:
        progress(1.0, "done")
    return pd.DataFrame(rows)


LENGTH_MULTIPLES = (1, 2, 4)  # windows of 1x, 2x, 4x each model's training length


TOKEN_BUDGET = 1024  # held-out tokens scored per (method, length) cell: well under a second on 2 cores


def heldout_ids(tokenizer) -> list[list[int]]:
    """The held-out corpus sentences as <bos> ... <eos> id lists of this tokenizer."""
    sp = special_ids(tokenizer)
    return [[sp["<bos>"], *e.ids, sp["<eos>"]] for e in tokenizer.encode_batch(corpus_split().heldout)]


def length_cell(model: TinyTransformer, tokenizer, multiple: int) -> pd.DataFrame:
    """Held-out losses of one model at one multiple of its training length, every method (length_losses)."""
    total = experiment_tokens(model.config.max_len, LENGTH_MULTIPLES, TOKEN_BUDGET)
    return length_losses(model, heldout_ids(tokenizer), [multiple], total=total)


COMPARED = ("enc-sinusoidal", "enc-learned")  # trained like "enc-rope": only the position encoding differs


def experiment_models(installed: Sequence[str], rope_key: str | None) -> tuple[list[str], list[str]]:
    """The models the length experiment compares (the RoPE model first, when there is one) and the shipped ones
    it leaves out because they are not installed."""
    keys = [k for k in (rope_key, *COMPARED) if k and (k == rope_key or k in installed)]
    return keys, [k for k in COMPARED if k not in installed]


def length_experiment(keys: Sequence[str], cell: Callable[[str, int], pd.DataFrame],
                      progress: Callable[[float, str], None]) -> pd.DataFrame:
    """Every model at every multiple (cell(key, multiple): length_cell of that model), in one table; a model that
    cannot be run gets a note instead of hiding the others."""
    frames, jobs = [], [(k, m) for k in keys for m in LENGTH_MULTIPLES]
    for j, (key, m) in enumerate(jobs):
        progress(j / len(jobs), f"{key}: {m}× the training length")
        try:
            frames.append(cell(key, m).assign(model=key))
        except ValueError as err:  # one unreadable model should not hide the others
            frames.append(failed_cell(key, m, err))
    progress(1.0, "done")
    return pd.concat(frames, ignore_index=True)


def failed_cell(model_key: str, multiple: int, err: Exception) -> pd.DataFrame:
    """The row of a model that could not be run: one unreadable model should not hide the others."""
    return pd.DataFrame([{"model": model_key, "method": "none", "multiple": multiple, "length": None,
                          "loss": float("nan"), "note": f"could not be run ({err})"}])


def length_intro(keys: Sequence[str]) -> str:
    return ("Held-out loss of " + ", ".join(f"“{k}”" for k in keys) + " on the same held-out tokens, cut into "
            f"windows of {', '.join(f'{m}×' for m in LENGTH_MULTIPLES)} each model's training length. The RoPE "
            "model is run under every scaling (same weights: RoPE has no parameters); at 1× every scaling has "
            "factor 1, so they coincide there.")


def length_notes(table: pd.DataFrame) -> list[str]:
    """The notes of the cells that were not run, one per (model, note)."""
    return sorted({f"{r.model}: {r.note}" for r in table.itertuples() if r.note})


def length_table(table: pd.DataFrame) -> pd.DataFrame:
    """Loss per (model, method) and length, three decimals, "—" where a cell was not run; a model run under one
    method only is "as trained (not RoPE)"."""
    is_rope = table.groupby("model")["method"].transform("nunique") > 1
    labels = table["method"].map(rope.scaling_labels()).where(is_rope, "as trained (not RoPE)")
    wide = table.assign(method=labels).pivot_table(index=["model", "method"], columns="length", values="loss",
                                                   sort=False)
    return wide.map(lambda v: "—" if pd.isna(v) else f"{v:.3f}")
