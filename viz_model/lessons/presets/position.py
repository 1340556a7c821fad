"""Questions on position: which RoPE method keeps every angle in the trained range (Context extension),
which ALiBi head reads furthest back (ALiBi), which position a sinusoidal vector is (Sinusoidal)."""

from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np

from viz_model import rope
from viz_model.lecture import ROPE_SENTENCE
from viz_model.lessons import alibi as alibi_lesson
from viz_model.lessons import rope as rope_lesson
from viz_model.lessons.presets.base import Inputs, Preset, _argmax_all, _encode, _picked
from viz_model.positional import sinusoidal_encoding

# The RoPE page's context-extension settings a question reads: rope_question's `extra` name -> widget key
ROPE_EXTRA_KEYS = {"beta_fast": "rope_ext_bf", "beta_slow": "rope_ext_bs", "low_freq_factor": "rope_ext_lo",
                   "high_freq_factor": "rope_ext_hi"}


def rope_question(d_k: int, base: float, train_len: int, target_len: int, extra: dict | None = None) -> Preset:
    """"Which RoPE method keeps every angle within the trained range?" at these context-extension settings; the
    answer is every method whose angles at L′ stay within those seen over L for every pair (angle_coverage)."""
    if target_len < train_len:
        raise ValueError("The target length L′ is shorter than the training length L: there is nothing to extend.")
    table = rope_lesson.scaling_table(d_k, base, train_len, target_len, extra)
    theta = rope.default_inv_freq(d_k, base).numpy()
    methods = list(table)
    outside = {}
    for m in methods:
        ratio, _ = table[m]
        seen, needed = rope_lesson.angle_coverage(theta, theta * ratio, train_len, target_len)
        outside[m] = int((needed > seen + 1e-9).sum())
    labels = [rope.ROPE_SCALING_LABELS[m] for m in methods]
    correct = [i for i, m in enumerate(methods) if outside[m] == 0]
    counts = "; ".join(f"{rope.ROPE_SCALING_LABELS[m]}: {outside[m]}" for m in methods)
    why = (f"Of the {d_k // 2} pairs, how many reach angles at L′ = {target_len:,} that training (L = {train_len:,}, "
           f"base {base:,.0f}) never produced: {counts}.")
    prompt = f"Which RoPE method keeps every angle within the trained range at L′ = {target_len:,} (L = {train_len:,})?"
    return Preset("rope", prompt, labels, {"correct": correct, "why": why})


def rope_preset(config, settings: Mapping) -> Preset:
    """The RoPE page's question at its context-extension settings (`settings`: its widget values by key; a setting
    not drawn yet takes the page's default, lessons.rope.panel_defaults)."""
    d = rope_lesson.panel_defaults(config)
    L, Lp = int(settings.get("rope_ext_L", d["L"])), int(settings.get("rope_ext_Lp", d["Lp"]))
    extra = {name: float(settings[key]) for name, key in ROPE_EXTRA_KEYS.items() if key in settings}
    return rope_question(int(settings.get("rope_ext_dk", d["d_k"])), float(settings.get("rope_ext_base", d["base"])),
                         L, Lp, extra)


def rope_extension(inp: Inputs) -> Preset:
    return rope_preset(inp.ckpt.model.config, inp.settings)


def rope_alibi_reach(inp: Inputs) -> Preset:
    """"Which ALiBi head reads furthest back?": layer 0 of the sidebar's ALiBi model (else the shipped enc-alibi) on
    the ALiBi tab's sentence; the answer is each head's measured mean distance attended (lessons.alibi.reach_rows)."""
    ckpt = inp.ckpt if inp.ckpt.model.config.pos_encoding == "alibi" else _picked(inp, "", "enc-alibi")
    if ckpt.model.config.pos_encoding != "alibi":
        raise ValueError("The ALiBi question needs a model trained with ALiBi (the shipped “enc-alibi”).")
    ids = _encode(ckpt, ROPE_SENTENCE, False, page="the ALiBi tab").ids
    on, _ = alibi_lesson.alibi_on_off(ckpt.model, ids)
    rows = alibi_lesson.reach_rows(ckpt.model, on)
    reach = rows["mean distance attended"].tolist()
    choices = [f"head {h} (m = {m})" for h, m in zip(rows["head"], rows["slope m"])]
    prompt = (f"An ALiBi model's layer 0 reads “{ROPE_SENTENCE}”. Which head reaches furthest back on average? "
              "(m: its slope; a larger m penalises distance more)")
    why = ("Mean distance attended, measured now: " + ", ".join(f"head {h} {r:.2f}" for h, r in enumerate(reach))
           + " tokens. The slope caps how far a head can look; what it looks at is learned.")
    return Preset("rope", prompt, choices, {"correct": _argmax_all(reach), "why": why})


def sinusoidal_position(inp: Inputs) -> Preset:
    """"Which position is this vector?": a position drawn from the view's settings (the same view asks the same
    question), shown by its fastest and slowest (sin, cos) pairs; the answer is the nearest row of the table."""
    s = inp.settings
    d, n_pos, base = int(s.get("sinusoidal_d", 64)), int(s.get("sinusoidal_npos", 128)), float(
        s.get("sinusoidal_base", 10000.0))
    if d < 4 or d % 2 or n_pos < 8:
        raise ValueError("The question needs an even d_model of at least 4 and at least 8 positions.")
    rng = random.Random(f"{d}|{n_pos}|{base}")
    options = sorted(rng.sample(range(n_pos), 8))
    p = options[rng.randrange(len(options))]
    pe = sinusoidal_encoding(n_pos, d, base=base).double().numpy()
    v = pe[p]
    dist = np.linalg.norm(pe[options] - v, axis=1)
    correct = [int(np.argmin(dist))]
    prompt = (f"A position vector P[p] (d_model {d}, base {base:,.0f}) starts ({v[0]:.2f}, {v[1]:.2f}) and ends "
              f"({v[-2]:.2f}, {v[-1]:.2f}). Which position p is it?")
    second = sorted(range(len(options)), key=lambda i: dist[i])[1]
    why = (f"P[{options[correct[0]]}] is that vector exactly (distance {dist[correct[0]]:.1e}); the next nearest "
           f"choice, P[{options[second]}], is {dist[second]:.2f} away. The fast first pair pins p down within each "
           "turn of its clock, the slow last pair says which turn.")
    return Preset("sinusoidal", prompt, [str(o) for o in options], {"correct": correct, "why": why})
