"""What the Masks page proves: additive -inf vs multiplied masks, padding invisibility, causal = prefix runs,
the dependency map, and permutation equivariance without positions."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.lessons.common import Claim, Fact, WrongWay, prefix_check, row_sum_error
from viz_model.masks import bidirectional_mask, causal_mask
from viz_model.model import TinyTransformer
from viz_model.tokenizer import PAD

POSITION_MODELS = ("enc-none", "enc-sinusoidal", "enc-learned", "enc-rope")  # the permutation table's models


def _ids2d(ids) -> torch.Tensor:
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids[None] if ids.ndim == 1 else ids  # (B, T)


# -- masks --------------------------------------------------------------------------------------
@dataclass
class MaskEffects:
    additive: torch.Tensor          # (T, T) 0 / -inf
    masked_scores: torch.Tensor     # (T, T) S + M
    probs: torch.Tensor             # (T, T) softmax(S + M): blocked cells exactly 0
    probs_multiplied: torch.Tensor  # (T, T) softmax(S) * mask: blocked cells 0 but rows no longer sum to 1
    row_sums: torch.Tensor          # (T,)
    row_sums_multiplied: torch.Tensor  # (T,)


def mask_effects(scores, allowed) -> MaskEffects:
    """Apply a boolean mask (True = may attend) to one head's scores (tensors or arrays) both ways."""
    scores, allowed = (x.detach().clone() if torch.is_tensor(x) else torch.from_numpy(np.array(x))  # writable copies
                       for x in (scores, allowed))
    additive = torch.zeros_like(scores).masked_fill(~allowed, float("-inf"))
    masked = scores + additive
    empty = ~allowed.any(-1, keepdim=True)  # a row with no allowed key: softmax of all -inf is NaN
    probs = torch.softmax(masked.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    multiplied = torch.softmax(scores, dim=-1) * allowed
    return MaskEffects(additive, masked, probs, multiplied, probs.sum(-1), multiplied.sum(-1))


# -- padding ------------------------------------------------------------------------------------
@dataclass
class PaddingCheck:
    key_mask: torch.Tensor   # (B, T) True = real token (keys that may be attended)
    loss_mask: torch.Tensor  # (B, T-1) True = the target at t+1 is real and counts in the loss
    max_diff: float          # max |logits(pads) - logits(other ids in pad slots)| at real positions
    n_real: int


@torch.no_grad()
def padding_check(model: TinyTransformer, ids, pad_id: int, replacement: int) -> PaddingCheck:
    """Run the padded batch, then again with every pad replaced by `replacement`: real positions must agree."""
    ids = _ids2d(ids).to(model.device)
    real = ids != pad_id                                                    # (B, T)
    a = model(ids, key_padding_mask=real).logits
    b = model(ids.masked_fill(~real, replacement), key_padding_mask=real).logits
    diff = (a - b).abs().amax(-1)[real]                                     # (n_real,)
    return PaddingCheck(real.cpu(), real[:, 1:].cpu(), diff.max().item(), int(real.sum()))


# -- what depends on what -------------------------------------------------------------------------
def dependency_map(model: TinyTransformer, ids, attn_mask: torch.Tensor | None = None,
                   chunk: int = 512) -> torch.Tensor:
    """(T, T) Frobenius norms ||d h_t / d e_s||, h = final_hidden, e = the token embedding fed in.

    A private copy of the (shared, read-only) model gets a forward hook on its token embedding, so the
    embeddings can be fed in and differentiated without touching model.py. Exact: one backward per
    output coordinate, batched.
    """
    ids = _ids2d(ids)[:1].to(model.device)
    T, d = ids.shape[1], model.config.d_model
    twin = copy.deepcopy(model).eval().requires_grad_(False)
    with torch.no_grad():
        emb0 = twin.tok_emb(ids)                                            # (1, T, d)
    fed: dict[str, torch.Tensor] = {}
    twin.tok_emb.register_forward_hook(lambda mod, inp, out: fed["e"])
    hidden: dict[str, torch.Tensor] = {}
    twin.ln_f.register_forward_hook(lambda mod, inp, out: hidden.__setitem__("h", out))
    mask = attn_mask.bool() if attn_mask is not None else None
    sq = torch.zeros(T, T, dtype=torch.float64)
    coords = [(t, i) for t in range(T) for i in range(d)]                   # one backward per (t, i)
    for start in range(0, len(coords), chunk):
        part = coords[start: start + chunk]
        e = emb0.repeat(len(part), 1, 1).requires_grad_(True)               # (N, T, d)
        fed["e"] = e
        twin(ids.repeat(len(part), 1), attn_mask=mask)
        t_idx = torch.tensor([c[0] for c in part])
        i_idx = torch.tensor([c[1] for c in part])
        picked = hidden["h"][torch.arange(len(part)), t_idx, i_idx]          # (N,)
        (grad,) = torch.autograd.grad(picked.sum(), e)                      # (N, T, d)
        sq.index_add_(0, t_idx, grad.pow(2).sum(-1).double().cpu())         # rows: output position t
    return sq.sqrt().float()


# -- permutation ----------------------------------------------------------------------------------
@torch.no_grad()
def final_hidden(model: TinyTransformer, ids, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(T, d_model) final hidden state: the last block's output after the final LayerNorm (what the head reads)."""
    out = model(_ids2d(ids).to(model.device), trace=True, attn_mask=attn_mask)
    return model.ln_f(out.trace.residual[-1])[0].cpu()


def match_positions(ids_a: list[int], ids_b: list[int]) -> list[tuple[int, int]]:
    """Pair each position of a with the same token in b (k-th occurrence with k-th occurrence)."""
    if sorted(ids_a) != sorted(ids_b):
        raise ValueError("the two sentences must contain the same tokens in a different order.")
    used: set[int] = set()
    pairs = []
    for i, tid in enumerate(ids_a):
        j = next(j for j, u in enumerate(ids_b) if u == tid and j not in used)
        used.add(j)
        pairs.append((i, j))
    return pairs


def permutation_distances(model: TinyTransformer, ids_a: list[int], ids_b: list[int],
                          attn_mask: bool = False) -> torch.Tensor:
    """(T,) ||h_a[i] - h_b[perm(i)]|| for each token of a; attn_mask False = no mask, True = causal."""
    T = len(ids_a)
    mask = causal_mask(T) if attn_mask else bidirectional_mask(T)
    ha, hb = final_hidden(model, ids_a, mask), final_hidden(model, ids_b, mask)
    pairs = match_positions(ids_a, ids_b)
    return torch.stack([(ha[i] - hb[j]).norm() for i, j in pairs])


def report_distance(model: TinyTransformer, ids_a: list[int], ids_b: list[int], report_id: int | None,
                    masked: bool) -> float:
    """Distance between the final vectors of 'report' in the two orders (the middle token if it is not a word)."""
    i = ids_a.index(report_id) if report_id in ids_a else len(ids_a) // 2
    return permutation_distances(model, ids_a, ids_b, attn_mask=masked)[i].item()


# -- what the page shows: claims and tables from the numbers above -----------------------------------------
def gallery_claims(probs: np.ndarray, allowed: np.ndarray) -> list[Claim]:
    """One head's traced weights (T, T) under the mask the model used: blocked cells exactly 0, rows summing to 1."""
    blocked = float(np.abs(np.where(allowed, 0.0, probs)).max())
    rows = row_sum_error(probs)
    return [Fact(blocked == 0.0 and rows < 1e-5, f"Blocked cells get weight exactly {blocked:g}; every row still "
                                                 f"sums to 1 (max error {rows:.0e}).")]


def effects_claims(eff: MaskEffects, allowed: np.ndarray) -> tuple[list[Claim], str | None]:
    """(claims, a note in place of the last claim): additive −∞ keeps rows summing to 1; multiplying the softmax by
    the 0/1 mask loses the blocked weight (nothing to lose when the mask blocks nothing)."""
    add_err = float((eff.row_sums - 1).abs().max())
    out: list[Claim] = [Fact(add_err < 1e-5, f"Additive −∞ before softmax: rows sum to 1 (max error {add_err:.0e}), "
                                             "blocked weight is exactly 0.")]
    if allowed.all():
        return out, ("This mask blocks nothing, so multiplying changes nothing. Pick the causal mask to see the "
                     "difference.")
    mul_min = float(eff.row_sums_multiplied.min())
    out.append(WrongWay(abs(mul_min - 1) >= 1e-5, "Multiplying softmax(S) by the 0/1 mask also zeroes blocked "
                                                   "cells, but the rows no longer sum to 1 (smallest row sum "
                                                   f"{mul_min:.3f}): the weight that leaked to the future is simply "
                                                   "lost."))
    return out, None


def padding_note(no_pad: bool, pad_id: int, pad_name: str) -> str | None:
    """What the Padding mask shows on a sentence without a pad (None: the sentence has one)."""
    if no_pad and pad_name == PAD:
        return ("No `<pad>` in this sentence: type one (e.g. the example *send report <PAD> <PAD>*) to see its column "
                "blocked.")
    if no_pad:
        return (f"No pad in this sentence: this model pads with `{pad_name}` (id {pad_id}). The Padding tab below "
                "pads a batch with it.")
    return None


@dataclass
class PaddingTables:
    key_rows: dict[str, dict[str, str]]   # "sentence n" -> column j: "✓ token" (a key that may be read) or "✗ <pad>"
    loss_rows: dict[str, dict[str, str]]  # "sentence n" -> column "t→t+1": whether that next-token target counts
    claims: list[Claim]


def padding_tables(model: TinyTransformer, seqs: list[tuple[list[int], list[str]]], pad_id: int,
                   pad_name: str) -> PaddingTables:
    """The sentences (ids, tokens) padded into one batch with `pad_id`: its key and loss masks as table rows, and the
    check that pads are invisible (every pad replaced by another id leaves the real positions' logits unchanged)."""
    T, vocab_size = max(len(ids) for ids, _ in seqs), model.config.vocab_size
    batch = torch.tensor([[*ids, *[pad_id] * (T - len(ids))] for ids, _ in seqs])  # (B, T)
    replacement = next(i for i in range(5, vocab_size) if i != pad_id) if vocab_size > 5 else 1
    chk = padding_check(model, batch, pad_id, replacement)
    labels = [[*tokens, *[pad_name] * (T - len(ids))] for ids, tokens in seqs]
    key = {f"sentence {n + 1}": {f"{j}": ("✓ " if m else "✗ ") + t for j, (m, t) in enumerate(zip(row, lab))}
           for n, (row, lab) in enumerate(zip(chk.key_mask.tolist(), labels))}
    loss = {f"sentence {n + 1}": {f"{t}→{t + 1}": f"{lab[t]} → {lab[t + 1]}: " + ("counts" if m else "ignored")
                                  for t, m in enumerate(row)}
            for n, (row, lab) in enumerate(zip(chk.loss_mask.tolist(), labels))}
    claim = Fact(chk.max_diff < 1e-5, f"Replacing every `{pad_name}` by another token id ({replacement}) changes the "
                                      f"logits at the {chk.n_real} real positions by at most {chk.max_diff:.1e}: pads "
                                      "are invisible to real tokens.")
    return PaddingTables(key, loss, [claim])


def prefix_runs(model: TinyTransformer, ids: list[int], masked: bool) -> np.ndarray:
    """prefix_check under the model's causal mask (masked) or none: (T,) max |full pass - prefix alone|."""
    T = len(ids)
    return prefix_check(model, list(ids), None if masked else bidirectional_mask(T)).numpy()


def prefix_columns(tokens: list[str], causal: np.ndarray, free: np.ndarray) -> dict[str, list]:
    """The prefix table's columns: position, token and the two runs' differences."""
    return {"position": list(range(len(tokens))), "token": tokens,
            "causal: max |full − prefix|": [f"{x:.1e}" for x in causal],
            "no mask: max |full − prefix|": [f"{x:.1e}" for x in free]}


def prefix_claims(causal: np.ndarray, free: np.ndarray) -> tuple[list[Claim], str | None]:
    """(claims, a note in place of the second): causal equals the prefix runs; without a mask early positions differ
    (the last sees everything anyway)."""
    out: list[Claim] = [Fact(float(causal.max()) < 1e-4, "Causal: one pass gives the same logits as running each "
                                                         f"prefix alone (max |difference| {causal.max():.1e} over "
                                                         f"{len(causal)} positions).")]
    bad = free[:-1].max() if len(free) > 1 else 0.0
    if bad < 1e-4:
        return out, "Without the mask this sentence happens to give the same outputs (are all its tokens alike?)."
    out.append(WrongWay(bad >= 1e-4, f"Without the mask, one pass no longer equals the prefix runs: max "
                                     f"|difference| {bad:.2f}. Early positions read the future; only the last "
                                     "position, which sees everything anyway, agrees."))
    return out, None


def dependency_runs(model: TinyTransformer, ids: list[int], masked: bool) -> np.ndarray:
    """dependency_map under the causal mask (masked) or none, as an array (T, T)."""
    mask = causal_mask(len(ids)) if masked else bidirectional_mask(len(ids))
    return dependency_map(model, list(ids), mask).numpy()


def future_dependence(jac: np.ndarray) -> float:
    """The largest dependence of an output on a later input: jac's cells the causal mask blocks (0.0 for T = 1)."""
    return float(jac[~causal_mask(len(jac)).numpy()].max()) if len(jac) > 1 else 0.0


def causal_dependence(jac: np.ndarray) -> Claim:
    """Under the causal mask no output depends on a later input: the largest such dependence is exactly 0."""
    upper = future_dependence(jac)
    return Fact(upper == 0.0, f"Causal: every output depends only on inputs at or before it (largest future "
                              f"dependence {upper:g}).")


def free_dependence(jac: np.ndarray) -> str:
    upper = future_dependence(jac)
    return f"No mask: outputs depend on later inputs too (largest future dependence {upper:.3g})."


MAX_DEP_PARAMS = 5_000_000  # T * d_model backward passes through the whole model: real checkpoints are too big


def dependency_cost(model: TinyTransformer, T: int) -> str | None:
    """Why the dependency map does not run on this model (None: it does)."""
    n_params = model.num_params()
    if n_params <= MAX_DEP_PARAMS:
        return None
    return (f"The dependency map needs {T * model.config.d_model:,} backward passes through all {n_params:,} "
            "parameters: too much for a shared server with a model this size, so it runs on the app's own models only "
            "(pick one in the sidebar).")


def permutation_rows(distances: dict[str, dict[bool, float]]) -> list[dict[str, str]]:
    """One row per position model and mask ({model: {masked: distance}}; a model missing from it is not installed)."""
    rows = []
    for key in POSITION_MODELS:
        if key not in distances:
            rows.append({"model": key, "mask": "—", "distance of 'report'": "model not installed",
                         "same vector in both orders?": "—"})
        for masked, d in distances.get(key, {}).items():
            rows.append({"model": key, "mask": "causal" if masked else "none", "distance of 'report'": f"{d:.2e}",
                         "same vector in both orders?": "✓ yes (≈ 0)" if d < 1e-4 else "✗ no"})
    return rows


def permutation_claims(distances: dict[str, dict[bool, float]]) -> tuple[list[Claim], str | None]:
    """(claims, a warning in their place): without positions or a mask, 'report' gets the same vector in both
    orders."""
    if False not in distances.get("enc-none", {}):
        return [], "The position-free model `enc-none` is not installed, so the permutation proof cannot run here."
    d = float(f"{distances['enc-none'][False]:.2e}")  # the distance as its table row shows it
    return [Fact(d < 1e-4, f"No positions, no mask: 'report' gets the same output vector in both orders (distance "
                           f"{d:.1e}). Self-attention alone is a bag of tokens.")], None


def quiz_answer(n: int, picked: int) -> Fact:
    """The verdict on answer `picked` (an index into its options) to question n of QUIZ, and why."""
    _, _, right, why = QUIZ[n]
    return Fact(picked == right, f"Right. {why}" if picked == right else f"Not quite. {why} Try another answer.")


# -- what the page says ----------------------------------------------------------------------------------
CUSTOM_EDITOR = ("Tick a cell to let query *i* (row) read key *j* (column). A row with no tick would have no key to "
                 "read; the model then lets that query see itself so its softmax is defined.")
PADDING_NOTE = ("Here the pads come last, so in a causal model the causal mask alone already hides them from real "
                "tokens; the key mask is what protects encoders (bidirectional) and left-padded batches.")
MASK_VS_POSITION = ("A causal mask changes *what each token may read*, so distances appear, but it does not tell a "
                    "token where it is. A position signal (sinusoidal, learned, RoPE) encodes location itself.")
QUIZ = [
    ("Which change makes position explicit?",
     ["Adding a causal mask", "Adding positional encodings (sinusoidal, learned or RoPE)", "Scaling by 1/√d_k"], 1,
     "A mask only restricts which tokens may be read; a position signal tells each token where it is."),
    ("Can one forward pass score all shifted targets?",
     ["Yes — with a causal mask, position t's prediction equals running the prefix alone",
      "No — we must run the model once per position"], 0,
     "Teacher forcing: the causal mask makes all T predictions in one pass; the prefix table in the tab "
     "**Causal ≠ sequential** proves it."),
    ("Which change would let an early prediction read its future target?",
     ["Removing the causal mask", "Adding padding", "Lowering the attention temperature"], 0,
     "Without the mask, position t can attend to t+1 — its own answer. The “no mask” row of the table in the tab "
     "**Causal ≠ sequential** shows it, and so does the “no mask” map in the tab **Dependency map**."),
]
