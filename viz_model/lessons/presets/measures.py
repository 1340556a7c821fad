"""Questions answered by a measurement: the T × T scores' memory (Cost), the layer where the final prediction
first comes top (Logit lens), the token occlusion says matters most (Attribution), the best KV cache (Sinks)."""

from __future__ import annotations

from viz_model.lecture import EXAMPLES
from viz_model.lessons import attribution as attribution_lesson
from viz_model.lessons import cost as cost_lesson
from viz_model.lessons import lens as lens_lesson
from viz_model.lessons import sinks as sinks_lesson
from viz_model.lessons.presets.base import (
    MAX_TOKEN_CHOICES,
    Inputs,
    Preset,
    _encode,
    _index,
    _layer_head,
    _short,
    _size_choices,
    _tok,
)
from viz_model.model_text import pad_token, token_texts, uses_bos


def cost_scores(inp: Inputs) -> Preset:
    """How much memory one layer's float32 (1, H, T, T) score matrix takes at the sweep's longest T (the Cost
    lesson's count; tests/test_presets.py checks it against a traced pass's own score tensor)."""
    s = inp.settings
    lo, hi = s.get("cost_cpu_T", (64, 2048))
    T, H = int(hi), int(s.get("cost_cpu_heads", 4))
    n = cost_lesson.score_matrix_bytes(T, n_heads=H)
    choices, correct = _size_choices(n, cost_lesson.size_text)
    prompt = (f"The traced path keeps each head's T × T score matrix. At T = {T:,} with {H} head(s), how much memory "
              "do one layer's float32 scores take?")
    why = (f"{H} × {T:,} × {T:,} scores × 4 bytes = {cost_lesson.size_text(n)}; doubling T quadruples it "
           f"({cost_lesson.size_text(4 * n)} at T = {2 * T:,}). SDPA never stores the matrix.")
    return Preset("cost", prompt, choices, {"correct": correct, "why": why})


def lens_first_top(inp: Inputs) -> Preset:
    """"At which layer does the model's final prediction first become the lens's top token?" at the view's position
    (default the last) of the view's sentence; answered by the lens now (lessons.lens.lens_view, first_top)."""
    s, ckpt = inp.settings, inp.ckpt
    bos = uses_bos(ckpt)
    enc = _encode(ckpt, s.get("lens_text", EXAMPLES[1]), bos, limit=lens_lesson.max_tokens(ckpt.model),
                  least=1 + int(bos), page="the Logit lens page")
    view = lens_lesson.lens_view(ckpt.model, enc.ids)
    T = len(enc.ids)
    pos = min(_index(s.get("lens_pos", T - 1), T - 1), T - 1)
    groups = lens_lesson.row_groups(view.n_rows)
    first = lens_lesson.first_top(view, pos)
    final = _tok(token_texts(ckpt, [int(view.final_ids[pos])])[0])
    prompt = (f"At which layer does the model's final prediction “{final}” first become the lens's top token after "
              f"“{_tok(enc.tokens[pos])}” (position {pos})?")
    names = lens_lesson.row_names(view.n_rows - 1)
    why = (f"Rank of “{final}” in each layer's lens, measured now: "
           + ", ".join(f"{n} {int(r):,}" for n, r in zip(names, view.final_rank[:, pos])) + ".")
    return Preset("lens", prompt, [g[0] for g in groups],
                  {"correct": [i for i, (_, rows) in enumerate(groups) if first in rows], "why": why})


def attribution_occlusion(inp: Inputs) -> Preset:
    """"Which token matters most for this prediction, measured by occlusion?" over the view's sentence (its last 16
    typed tokens), for the view's target (the picked one of the model's top 5): the largest drop in log p when the
    token is replaced by the padding token, measured now (lessons.attribution); the why names the view's head's own
    top token, so the class can compare it with what the attention map suggested."""
    s, ckpt = inp.settings, inp.ckpt
    model = ckpt.model
    if not model.config.causal:
        raise ValueError(attribution_lesson.NOT_CAUSAL)
    bos = uses_bos(ckpt)
    enc = _encode(ckpt, s.get("attribution_text", attribution_lesson.DEFAULT_TEXT), bos,
                  limit=attribution_lesson.MAX_TOKENS, page="the Attention vs attribution page")
    if len(enc.ids) - int(bos) < attribution_lesson.MIN_WORDS:
        raise ValueError(attribution_lesson.ONE_TOKEN)
    top = attribution_lesson.top_next(model, enc.ids)
    target = top[min(attribution_lesson.rank_of(s.get("attribution_target", 0)), len(top) - 1)][0]
    layer, head = _layer_head(model.config, {"attribution_layer": model.config.n_layers - 1, **s}, "attribution")
    res = attribution_lesson.attribute(model, enc.ids, enc.tokens, layer=layer, head=head, target=target,
                                       start=int(bos), baseline=pad_token(ckpt),
                                       target_text=token_texts(ckpt, [target])[0])
    choices, correct, why = attribution_lesson.occlusion_answer(res, MAX_TOKEN_CHOICES)
    prompt = (f"Which token matters most for predicting “{_tok(res.target)}” after “{_short(enc, 90, int(bos))}”, "
              "measured by occlusion?")
    return Preset("attribution", prompt, choices, {"correct": correct, "why": why})


def sinks_stream_best(inp: Inputs) -> Preset:
    """"Which KV cache keeps perplexity lowest?": the streaming view's first cache size, answered by the measured
    perplexities (lessons.sinks.stream_experiment, the same cached run the page shows)."""
    model = inp.ckpt.model
    sinks_lesson.check_model(model)
    if not sinks_lesson.streams_positions(model):
        raise ValueError(sinks_lesson.NO_STREAM_POSITIONS.format(pos=sinks_lesson.POS_NAMES[model.config.pos_encoding]))
    v = sinks_lesson.view_of(inp.settings, model.config.max_len)
    ids = sinks_lesson.stream_ids(inp.ckpt, v.source, v.kind, v.n_tokens)
    r = inp.cached("sinks_stream", sinks_lesson.stream_key(inp.ckpt, v.source, v.kind, v.n_tokens, v.window, v.sinks),
                   lambda: sinks_lesson.stream_experiment(model, ids, v.window, v.sinks))
    prompt, choices, correct, why = sinks_lesson.stream_question(r, v.n_tokens, v.kind)
    return Preset("sinks", prompt, choices, {"correct": correct, "why": why})
