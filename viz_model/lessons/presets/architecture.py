"""Questions on the architecture: which model recalls at a distance (RNN vs Transformer), which norm padding
changes (Normalization), how weight tying changes the parameter count (Train)."""

from __future__ import annotations

from viz_model import masks
from viz_model.config import NORMS, POS_ENCODINGS, QKV_MODES
from viz_model.data import TASK_LABELS
from viz_model.lessons import normalization as norm_lesson
from viz_model.lessons import recurrence as rec_lesson
from viz_model.lessons import train as train_lesson
from viz_model.lessons.presets.base import Inputs, Preset, _flag, _option
from viz_model.tokenizer import load_tokenizer

RECALL_BAR = 0.9          # "recalls": at least this share of the held-out inputs answered right


def recurrence_recall(inp: Inputs) -> Preset:
    """"Which model recalls the key at distance D?" (at least RECALL_BAR right), from the page's own accuracy: the
    evaluation run on this server if someone ran it, else the accuracy saved in each model when it was trained."""
    from viz_model.train import RECALL_DISTANCES

    models = inp.cached("recurrence_shipped", ("cpu",), lambda: rec_lesson.load_shipped("cpu", read_only=True))
    slider = int(inp.settings.get("recurrence_distance", 40))
    D = max([d for d in RECALL_DISTANCES if d <= slider] or [RECALL_DISTANCES[0]])
    live = inp.cached("recurrence_accuracy_store", ("store",), dict).get(128)
    acc = {r.kind: r.accuracy for r in live} if live else rec_lesson.saved_accuracy(models)
    kinds = [k for k in rec_lesson.KINDS if D in acc.get(k, {})]
    if len(kinds) < 2:
        raise ValueError(f"The recall accuracy at distance {D} is not known for these models.")
    correct = [i for i, k in enumerate(kinds) if acc[k][D] >= RECALL_BAR]
    choices = [rec_lesson.name(k) for k in kinds] + ["none of them"]
    prompt = f"Which model recalls the key at distance {D} (at least {RECALL_BAR:.0%} of inputs right)?"
    why = (f"Recall accuracy at distance {D} ({'evaluated on this server' if live else 'saved when trained'}): "
           + ", ".join(f"{rec_lesson.name(k)} {acc[k][D]:.0%}" for k in kinds)
           + f"; chance is {rec_lesson.CHANCE:.0%}.")
    return Preset("recurrence", prompt, choices, {"correct": correct or [len(kinds)], "why": why})


NORM_NAMES = {"layernorm": "LayerNorm", "batchnorm": "BatchNorm", "rmsnorm": "RMSNorm"}


def norm_padding(inp: Inputs) -> Preset:
    """Padding sample 2 of the view's random batch: which norm changes sample 1's outputs (measured)."""
    s = inp.settings
    N, T, d = int(s.get("norm_N", 3)), int(s.get("norm_T", 4)), int(s.get("norm_d", 8))
    n_pad = min(max(int(s.get("norm_pad", min(2, T))), 1), T)
    x = norm_lesson.random_batch(N, T, d, int(s.get("norm_seed", 0)))
    change = norm_lesson.padding_effect(x, n_pad).sample1_change
    kinds = [k for k in NORM_NAMES if k in change]
    correct = [i for i, k in enumerate(kinds) if change[k] > 1e-6]
    choices = [NORM_NAMES[k] for k in kinds] + ["none of them"]
    prompt = (f"The last {n_pad} position(s) of sample 2 become padding (zeros). Which norm changes sample 1's "
              "outputs, whose tokens are untouched?")
    why = ("Largest change of sample 1's outputs: " + ", ".join(f"{NORM_NAMES[k]} {change[k]:.2g}" for k in kinds)
           + ". A per-token norm never looks at another sample.")
    return Preset("normalization", prompt, choices, {"correct": correct or [len(kinds)], "why": why})


def train_tying(inp: Inputs) -> Preset:
    """How the parameter count of the form's set-up changes when "Tie input/output weights" is switched: both
    models built now and counted."""
    from dataclasses import replace

    s = inp.settings
    preset = str(s.get("train_preset", "tiny"))
    form = {**train_lesson.PRESET_FORM.get(preset, {}), **{k: v for k, v in s.items() if str(k).startswith("train_")}}
    f = form.get
    spec = train_lesson.TrainSpec(
        preset=preset, task=_option(f("train_task", next(iter(TASK_LABELS))), TASK_LABELS),
        arch=_option(f("train_arch", "transformer"), train_lesson.ARCH_LABELS),
        pos_encoding=str(f("train_pos", POS_ENCODINGS[3])), rope_base=float(f("train_base", 10000.0)),
        mask=masks.kind_named(str(f("train_mask", "causal"))), tie_weights=_flag(f("train_tie", True)),
        qkv=_option(f("train_qkv", QKV_MODES[0]), train_lesson.QKV_LABELS), norm=str(f("train_norm_kind", NORMS[0])),
        norm_position=str(f("train_norm", "pre")), residual=_flag(f("train_residual", True)),
        n_layers=int(f("train_layers", 2)), n_heads=int(f("train_heads", 2)), d_model=int(f("train_dmodel", 64)),
        seq_len=int(f("train_seq", 64)))
    if spec.arch != "transformer":
        raise ValueError("Weight tying is a transformer setting: pick the Model kind “transformer” to ask.")
    vocab = load_tokenizer("word").get_vocab_size()
    _, now = train_lesson.validate(spec, vocab)
    _, other = train_lesson.validate(replace(spec, tie_weights=not spec.tie_weights), vocab)
    diff, step = other - now, vocab * spec.size()["d_model"]
    options = sorted({0, step, -step, 2 * step, -2 * step, diff})
    fmt = {v: ("no change" if v == 0 else f"{v:+,}") for v in options}
    prompt = (f"This set-up has {now:,} parameters. Switch “Tie input/output weights” "
              f"{'off' if spec.tie_weights else 'on'}: how does the count change?")
    why = (f"Built both now: {now:,} → {other:,} ({diff:+,}). One embedding matrix is vocabulary {vocab:,} × d_model "
           f"{spec.size()['d_model']} = {step:,} numbers; tying makes the output layer reuse it.")
    return Preset("train", prompt, [fmt[v] for v in options], {"correct": [options.index(diff)], "why": why})
