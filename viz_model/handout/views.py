"""Which charts a lecture step shows in the handout: one function per page, (the step's params, the models) -> figures.

Each function does what the page's ui module does for its main chart(s), without Streamlit: the page's own lesson
computes, the page's own figure factory draws, with the page's defaults for every setting the link leaves out. A
view that needs a click, a long measurement or a widget the link cannot carry (a training run, the Cost page's
timing, the custom mask editor) is not drawn: `NotInHandout` says why, and the handout links to the view instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from viz_model import generate as G
from viz_model import masks
from viz_model.checkpoint import Checkpoint
from viz_model.figures import attribution as attr_figs
from viz_model.figures import generate as gen_figs
from viz_model.figures import lens as lens_figs
from viz_model.figures import recurrence as rec_figs
from viz_model.figures import rope as rope_figs
from viz_model.figures import sinks as sinks_figs
from viz_model.figures import sinusoidal as sin_figs
from viz_model.figures.attention import attention_grid, attention_heatmap
from viz_model.figures.common import COLORWAY, escape
from viz_model.figures.encoder import fill_in_bars, look_ahead_bars, masked_attention_grid
from viz_model.figures.encoder_decoder import THREE_PARTS, alignment_map, three_attentions
from viz_model.figures.explorer import value_mix
from viz_model.figures.masks import mask_panels
from viz_model.figures.normalization import (
    KIND_NAMES,
    loss_chart,
    norm_groups,
    padding_bars,
    per_layer_chart,
    sample_matrices,
)
from viz_model.figures.qkv import lookup_bars, pair_cosine_bars, score_panels, self_attention_bars
from viz_model.figures.real_models import attention_grid_page
from viz_model.lecture import EXAMPLES, LECTURE_SENTENCES, PROMPTS
from viz_model.lessons import attribution as attr_lesson
from viz_model.lessons import common as common_lesson
from viz_model.lessons import encoder as enc_lesson
from viz_model.lessons import encoder_decoder as ed_lesson
from viz_model.lessons import explorer as exp_lesson
from viz_model.lessons import generate as gen_lesson
from viz_model.lessons import lens as lens_lesson
from viz_model.lessons import normalization as norm_lesson
from viz_model.lessons import qkv as qkv_lesson
from viz_model.lessons import recurrence as rec_lesson
from viz_model.lessons import rope as rope_lesson
from viz_model.lessons import sinks as sinks_lesson
from viz_model.lessons import sinusoidal as sin_lesson
from viz_model.model_text import (
    encode_for,
    is_folder_model,
    pad_token,
    sequence_texts,
    start_token,
    token_id,
    token_texts,
    uses_bos,
)
from viz_model.tokenizer import MASK, PAD, encode, load_tokenizer

SENTENCE = "The cat sat on the mat"  # the default text of Masks, Q/K/V, Encoder and Normalization
FOLDER_VIEW_TOKENS = 64              # ui.widgets.FOLDER_VIEW_TOKENS: a real model's views read at most this many


class NotInHandout(Exception):
    """A view the handout does not draw; the message says why (the handout links to the view instead)."""


@dataclass(frozen=True)
class Models:
    """The lecture's model (`main`, called `key`) and a loader for the other shipped models some pages use (the
    encoder, the translator, the Q/K/V variants): ui.models.load_model in the app, checkpoint files from the CLI."""

    key: str
    main: Checkpoint
    load: Callable[[str], Checkpoint]

    def of_step(self, params: Params) -> Models:
        """The models of a step whose view names its own model (`model_key`, as the lecture's `model:` applies)."""
        key = params.get("model_key")
        if not isinstance(key, str) or key == self.key:
            return self
        return Models(key, self.load(key), self.load)


Params = dict[str, str | list[str]]
Figures = dict[str, go.Figure]  # by the key the page gives each chart (ui.chart.show(fig, key=...)), in its order


# -- reading a step's settings (a link's values are strings; a range repeats its name) --------------------------
def _str(p: Params, name: str, default: str) -> str:
    value = p.get(name, default)
    return value[0] if isinstance(value, list) else value


def _int(p: Params, name: str, default: int, low: int | None = None, high: int | None = None) -> int:
    try:  # a picker labelled "3 · sat" is in the link by its label: its number comes first
        value = int(float((_str(p, name, str(default)).split() or [""])[0]))
    except ValueError:
        value = default
    return min(max(value, low if low is not None else value), high if high is not None else value)


def _float(p: Params, name: str, default: float) -> float:
    try:
        return float(_str(p, name, str(default)))
    except ValueError:
        return default


def _bool(p: Params, name: str, default: bool) -> bool:
    return _str(p, name, str(default)).lower() == "true"


def _tab(p: Params, name: str, tabs: tuple[str, ...]) -> str:
    tab = _str(p, name, tabs[0])
    if tab not in tabs:
        raise NotInHandout(f"its tab “{tab}” is only in the app")
    return tab


def _sentence(ckpt: Checkpoint, p: Params, name: str, default: str, max_tokens: int | None = None,
              specials: tuple[str, ...] = ()):
    """widgets.sentence_input without the widgets: the model's own start token in front, cut to the view's limit."""
    cfg = ckpt.model.config
    limit = min(cfg.max_len, max_tokens or cfg.max_len)
    if is_folder_model(ckpt):
        limit = min(limit, FOLDER_VIEW_TOKENS)
    enc = encode_for(ckpt, _str(p, name, default), max_len=limit, bos=uses_bos(ckpt), specials=specials)
    if len(enc.ids) <= int(uses_bos(ckpt)):
        raise NotInHandout("the step's text is empty")
    return enc


def _layer_head(p: Params, prefix: str, cfg, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    return (_int(p, f"{prefix}_layer", default[0], 0, cfg.n_layers - 1),
            _int(p, f"{prefix}_head", default[1], 0, cfg.n_heads - 1))


# -- Attention -----------------------------------------------------------------------------------------------------
def start(p: Params, m: Models) -> Figures:
    """ui.start.attention_view: one head's attention weights on the typed sentence."""
    ckpt = m.main
    cfg = ckpt.model.config
    bos = _bool(p, "start_bos", uses_bos(ckpt)) and start_token(ckpt) is not None
    limit = min(cfg.max_len, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt) else cfg.max_len
    enc = encode_for(ckpt, _str(p, "start_text", SENTENCE), max_len=limit, bos=bos)
    if len(enc.ids) <= int(bos):
        raise NotInHandout("the step's text is empty")
    layer, head = _layer_head(p, "start", cfg)
    probs, allowed = common_lesson.layer_attention(ckpt.model, tuple(enc.ids), layer)
    return {"start_heatmap": attention_heatmap(probs[head], enc.tokens, allowed=allowed,
                                               title=f"Layer {layer} · head {head}: attention weights")}


def explorer(p: Params, m: Models) -> Figures:
    """The Explorer's grid of every head and the chosen head large, under the step's scale, temperature and mask."""
    ckpt = m.main
    cfg = ckpt.model.config
    enc = _sentence(ckpt, p, "explorer_text", EXAMPLES[1])
    T = len(enc.ids)
    kind = _str(p, "explorer_mask", cfg.mask)  # the picker's short name ("sliding window"); an unknown one: the model's
    kind = next((k for k in masks.MODEL_MASKS if kind in (k, masks.short_name(k))), cfg.mask)
    mask = torch.from_numpy(exp_lesson.knob_mask(kind, T)[0])
    data = exp_lesson.trace_arrays(ckpt.model, tuple(enc.ids), mask, _bool(p, "explorer_scale", True),
                                   _float(p, "explorer_temp", 1.0))
    probs, tokens, allowed = data["probs"], enc.tokens, data["allowed"]
    roles = exp_lesson.head_roles(ckpt.metadata or {}, cfg.n_layers, cfg.n_heads)
    if exp_lesson.grid_page_size(cfg) == (cfg.n_layers, cfg.n_heads) and exp_lesson.kv_group(cfg) == 1:
        grid = attention_grid(probs, tokens, roles=roles, title=f"{cfg.n_layers} layers × {cfg.n_heads} heads",
                              allowed=allowed)
    else:  # the grid's first page, as the page opens
        layers, heads, title = exp_lesson.grid_page(cfg, 0, 0)
        grid = attention_grid_page(probs, tokens, layers, heads, roles=roles, kv_group=exp_lesson.kv_group(cfg),
                                   title=title, allowed=allowed)
    layer, head = _layer_head(p, "explorer", cfg)
    average = _bool(p, "explorer_avg", False)
    big = probs[layer].mean(0) if average else probs[layer, head]
    title = f"Layer {layer}, average of {cfg.n_heads} heads" if average else f"Layer {layer}, head {head}"
    return {"explorer_grid": grid, "explorer_head_map": attention_heatmap(big, tokens, allowed=allowed, title=title)}


def masks_view(p: Params, m: Models) -> Figures:
    """The Masks gallery: the chosen mask on the live model, its four panels for one head."""
    ckpt = m.main
    cfg = ckpt.model.config
    enc = _sentence(ckpt, p, "masks_text", SENTENCE, max_tokens=16, specials=(PAD,))
    ids, tokens, T = enc.ids, enc.tokens, len(enc.ids)
    kind = _str(p, "masks_kind", "causal")  # the link names a kind by its label ("Causal (decoder)")
    kind = next((k for k, r in masks.MASKS.items() if kind in (k, r.label)), kind)
    row = masks.MASKS.get(kind)
    if row is None or row.needs == "cells":
        raise NotInHandout("a mask drawn by hand in the page's editor is not in the link")
    inputs = {q.name: _int(p, f"masks_{q.key}", min(q.default, T), q.low, T) for q in row.params}
    if row.needs == "real":
        from viz_model.model_text import pad_token
        inputs["real"] = np.array(ids) != pad_token(ckpt)[0]
    allowed = masks.build_mask(kind, T, **inputs)
    data = exp_lesson.trace_arrays(ckpt.model, tuple(ids), allowed)
    layer, head = _layer_head(p, "masks", cfg)
    return {"masks_panels": mask_panels(data["allowed"], data["scores"][layer, head], data["probs"][layer, head],
                                        tokens, title=f"{row.label} mask, layer {layer} head {head}")}


def qkv(p: Params, m: Models) -> Figures:
    """Q, K and V's database lookup (one query scored against every key, and the values it mixes), the four shipped
    variants' score matrices, or a minimal pair on each variant."""
    tab = _tab(p, "qkv_tab", ("Database lookup", "Four variants", "Minimal pairs"))
    ckpt = m.load("classroom") if is_folder_model(m.main) else m.main
    enc = _sentence(ckpt, p, "qkv_text", SENTENCE, max_tokens=16)
    text = qkv_lesson.lesson_text(enc, _str(p, "qkv_text", SENTENCE))
    if tab != "Database lookup":
        return (_qkv_variants if tab == "Four variants" else _qkv_pairs)(p, _variants(m), text)
    cfg = ckpt.model.config
    ids, tokens = qkv_lesson.encode_sentence(ckpt.model, ckpt.tokenizer, text)
    layer, head = _layer_head(p, "qkv", cfg)
    query = _int(p, "qkv_query", qkv_lesson.default_query(tokens), 0, len(ids) - 1)
    lk = qkv_lesson.lookup(ckpt.model, ckpt.tokenizer, text, layer, head, query)
    q, ok = tokens[query], lk.allowed
    bars = lookup_bars(lk.scores, lk.probs, lk.allowed, lk.tokens, query,
                       title=f"Layer {layer}, head {head}: the lookup of query {query} ({q})")
    return {"qkv_lookup_chart": bars,
            "qkv_mix_chart": value_mix(lk.probs[ok], lk.v[ok], [t for t, o in zip(lk.tokens, ok) if o], q)}


def _variants(m: Models) -> dict[str, Checkpoint]:
    """The shipped model of each Q/K/V variant that is installed (ui.qkv.variant_models)."""
    out = {}
    for variant, key in qkv_lesson.SHIPPED.items():
        try:
            out[variant] = m.load(key)
        except (OSError, ValueError):
            continue
    if not out:
        raise NotInHandout("the shipped Q, K and V models are not installed")
    return out


def _qkv_variants(p: Params, models: dict[str, Checkpoint], text: str) -> Figures:
    ckpt = next(iter(models.values()))
    layer, head = _layer_head(p, "qkv_var", ckpt.model.config)
    rows = [qkv_lesson.variant_scores({v: c.model}, c.tokenizer, text, layer, head)[0] for v, c in models.items()]
    titles = [f"{qkv_lesson.label(r.variant)} · asym {qkv_lesson.asym_text(r.asymmetry)}" for r in rows]
    return {"qkv_panels_chart": score_panels([r.scores for r in rows], titles, rows[0].tokens,
                                             title=f"Score matrix S = QKᵀ/√d_k of layer {layer}, head {head}, "
                                                   "before the mask"),
            "qkv_self_chart": self_attention_bars(
                [qkv_lesson.label(r.variant) for r in rows], [r.self_share for r in rows],
                [r.diag_max_rate for r in rows], rows[0].chance_share,
                title="How much each token attends to itself (after the mask)")}


def _qkv_pairs(p: Params, models: dict[str, Checkpoint], text: str) -> Figures:
    options = [f"{a} / {b}" for a, b in qkv_lesson.MINIMAL_PAIRS]
    choice = _str(p, "qkv_pair", options[0])
    a, b = (qkv_lesson.MINIMAL_PAIRS[options.index(choice)] if choice in options
            else (_str(p, "qkv_pair_a", "the cat sat"), _str(p, "qkv_pair_b", "the dog sat")))
    res = [qkv_lesson.minimal_pair({v: c.model}, c.tokenizer, a, b) for v, c in models.items()]
    word, names = res[0].word, [qkv_lesson.label(v) for v in models]
    attn, hidden = [r.attn_cos[v] for r, v in zip(res, models)], [r.hidden_cos[v] for r, v in zip(res, models)]
    return {"qkv_pairs_chart": pair_cosine_bars(names, attn, hidden, word,
                                                title=f"cos('{word}' in “{a}”, '{word}' in “{b}”)")}


# -- Position ------------------------------------------------------------------------------------------------------
SIN_TABS = ("Curves", "Table & binary analogy", "Shift matrix M_k", "Similarity", "Inside the model")


def sinusoidal(p: Params, m: Models) -> Figures:
    """The Sinusoidal page's open tab, for the step's d_model, number of positions and base (no model)."""
    tab = _tab(p, "sinusoidal_tab", SIN_TABS)
    d = _int(p, "sinusoidal_d", 64, 4, 1024) // 2 * 2
    n_pos, base = _int(p, "sinusoidal_npos", 128, 8, 8192), _float(p, "sinusoidal_base", 10000.0)
    if tab == "Inside the model":
        return _positions_inside(m)
    pe = sin_lesson.read_only_pe(n_pos, d, base)
    if tab == "Curves":
        dims = p.get("sinusoidal_dims")
        dims = [int(j) for j in (dims if isinstance(dims, list) else [dims])] if dims else sin_lesson.default_dims(d)
        small, _, _ = sin_lesson.d4_view(base)
        return {"sinusoidal_curves": sin_figs.pe_curves(pe, [j for j in dims if j < d], "PE value against position"),
                "sinusoidal_slices": sin_figs.pe_slices(small, [0, 2, 5], "d = 4: slices at positions 0, 2 and 5")}
    if tab == "Table & binary analogy":
        n_bits = _int(p, "sinusoidal_bits", 16, 8, 64)
        return {"sinusoidal_heatmap": sin_figs.table_heatmap(pe, sin_lesson.decimate(n_pos, 256),
                                                             sin_lesson.decimate(d, 256)),
                "sinusoidal_binary": sin_figs.bits_vs_signs(*sin_lesson.binary_view(
                    sin_lesson.read_only_pe(n_bits, d, base)))}
    if tab == "Shift matrix M_k":
        k = _int(p, "sinusoidal_k", 3, 1, 64)
        check, matrix, title = sin_lesson.shift_view(d, k, base, sin_lesson.shift_positions(n_pos, k))
        return dict(zip(("sinusoidal_mk", "sinusoidal_shift_err"), sin_figs.shift_figures(check, matrix, title)))
    si = sin_lesson.decimate(n_pos, 256)
    t0 = _int(p, "sinusoidal_t0", min(10, max(1, n_pos // 2)), 1, max(1, n_pos // 2))
    a, b, _, _ = sin_lesson.offset_view(pe, t0)
    return {"sinusoidal_sim": sin_figs.similarity_heatmap(sin_lesson.gram(pe, si), None,
                                                          "P·Pᵀ: dot products of positions", "P·Pᵀ", labels=si),
            "sinusoidal_dot": sin_figs.dot_vs_offset({"t = 0": a, f"t = {t0}": b}, "Dot product against offset")}


def _model_with(m: Models, encoding: str, preferred: tuple[str, ...]) -> Checkpoint | None:
    """ui.sidebar.model_with: the lecture's model if it uses `encoding`, else the first shipped one that does."""
    for ckpt in (m.main, *(_try_load(m, key) for key in preferred)):
        if ckpt is not None and ckpt.model.config.pos_encoding == encoding:
            return ckpt
    return None


def _try_load(m: Models, key: str) -> Checkpoint | None:
    try:
        return m.load(key)
    except (OSError, ValueError):
        return None


def _positions_inside(m: Models) -> Figures:
    """ui.sinusoidal's model views: one token at two positions in a sinusoidal model, and a learned position table."""
    figs: Figures = {}
    ckpt = _model_with(m, "sinusoidal", ("enc-sinusoidal",))
    tid = token_id(ckpt, "the") if ckpt is not None else None
    if tid is not None:
        view = sin_lesson.same_token_view(ckpt.model, tid)
        figs["sinusoidal_same_token"] = sin_figs.vector_rows(view.vectors, view.dims, view.title)
    learned_model = _model_with(m, "learned", ("enc-learned",))
    if learned_model is not None:
        learned, sims = sin_lesson.learned_view(learned_model.model)
        for key, (title, sim) in zip(("sinusoidal_learned_sim", "sinusoidal_sin_sim"), sims.items()):
            figs[key] = sin_figs.similarity_heatmap(sim, None, title, "cosine")
        figs["sinusoidal_learned_table"] = sin_figs.pe_heatmap(
            learned, title=f"The learned position table ({len(learned)} × {learned.shape[1]})", name="learned")
    if not figs:
        raise NotInHandout("the shipped position models are not installed")
    return figs


def rope(p: Params, m: Models) -> Figures:
    """The RoPE page's worked example, angle table or relative scores, at the d_k and base the page uses."""
    tab = _tab(p, "rope_tab", ("Worked example", "Pair rotation", "Angles", "Relative scores"))
    d_k, base, _ = rope_lesson.live_settings(m.main.model.config)
    if tab == "Pair rotation":
        pair = _int(p, "rope_pair", 0, 0, d_k // 2 - 1)
        now, _ = rope_lesson.pair_shift(d_k, base, pair, _int(p, "rope_t", 3, 0, 64), _int(p, "rope_s", 5, 0, 64),
                                        _int(p, "rope_shift", 0, 0, 1000))
        return {"rope_pair_fig": rope_figs.pair_arrows(now["arrows"], f"Pair {pair}: θ_{pair} = {now['theta']:.4g} "
                                                                      "rad per position")}
    if tab == "Worked example":
        frame = rope_lesson.q_frame()
        ex = rope_lesson.worked_example(rope_lesson.parse_matrix(frame.to_numpy(dtype=float), (3, 8)))
        return {"rope_worked_fig": rope_figs.pair_arrows(rope_lesson.worked_arrows(ex, frame.index),
                                                         rope_lesson.WORKED_ARROWS)}
    if tab == "Angles":
        ctx = _int(p, "rope_ctx", 512, 16, 8192)
        angles, wl = rope_lesson.angle_view(d_k, base, ctx)
        return {"rope_angle_table": rope_figs.angle_heatmap(angles, common_lesson.decimate(ctx, 256),
                                                            f"t·θ_i mod 2π, t < {ctx:,}"),
                "rope_wavelengths": rope_figs.wavelength_bars(wl, ctx, "Wavelength of each pair")}
    curves = rope_lesson.random_distance_curves(d_k, base, _int(p, "rope_maxdist", 128, 16, 1024))
    return {"rope_dist_random": rope_figs.scores_vs_distance(curves,
                                                             "Score against relative distance (random vectors)")}


# -- Architectures -------------------------------------------------------------------------------------------------
def encoder(p: Params, m: Models) -> Figures:
    """The Encoder's fill-ins: the default blank (or the link's) filled from both sides, and every head."""
    tab = _tab(p, "encoder_tab", ("Fill in the blanks", "The bank by the river"))
    ckpt = _encoder_model(_str(p, "encoder_model", enc_lesson.ENGLISH), m)
    if tab != "Fill in the blanks":
        return _bank(p, ckpt, _try_load(m, enc_lesson.decoder_for(_key_of(ckpt, m))))
    cfg = ckpt.model.config
    limit = cfg.max_len - 1 if uses_bos(ckpt) else cfg.max_len - 2
    enc = _sentence(ckpt, p, "encoder_text", SENTENCE, max_tokens=limit, specials=(MASK,))
    start_at = 1 if enc.pieces[:1] == ["<bos>"] and uses_bos(ckpt) else 0
    ids, words, pieces = enc.ids[start_at:], enc.tokens[start_at:], enc.pieces[start_at:]
    picked = next((v for k, v in p.items() if k.startswith("encoder_masked_")), None)
    picked = ([int(i) for i in (picked if isinstance(picked, list) else [picked])] if picked is not None
              else [] if MASK in pieces else enc_lesson.default_masks(words))
    b = enc_lesson.blanks(ckpt.tokenizer, ids, words, pieces, sorted(i for i in picked if i < len(ids)))
    if not b.answers:
        raise NotInHandout("no word is hidden in the step's sentence")
    run = enc_lesson.masked_ids_run(ckpt.model, ckpt.tokenizer, b, enc_lesson.MAX_TOP_K)
    top_k = _int(p, "encoder_topk", 5, 1, enc_lesson.MAX_TOP_K)
    a = run["attention"]
    return {"encoder_fills": fill_in_bars([f[:top_k] for f in run["fills"]], run["positions"], list(b.answers),
                         title=f"Top {top_k} fill-ins of each {escape(MASK)}"),
            "encoder_grid": masked_attention_grid(
                a, run["tokens"], run["positions"],
                title=f"{a.shape[0]} layers × {a.shape[1]} heads, no mask: every cell can be read")}


def _bank(p: Params, enc: Checkpoint, dec: Checkpoint | None) -> Figures:
    """ui.encoder.look_ahead: what "bank" reads in "The bank by the river", on the encoder and on a causal decoder."""
    if dec is None:
        raise NotInHandout("the shipped decoder to compare with is not installed")
    sides, text = {"encoder": enc, "decoder": dec}, enc_lesson.BANK
    runs = {tag: enc_lesson.bank_ids(ck.tokenizer, text) for tag, ck in sides.items()}
    L = min(ck.model.config.n_layers for ck in sides.values())
    H = min(ck.model.config.n_heads for ck in sides.values())
    looks = {tag: enc_lesson.attention_weight(ck.model, ck.tokenizer, text, enc_lesson.QUERY, enc_lesson.KEY)
             for tag, ck in sides.items()}
    best = enc_lesson.best_head(looks["encoder"], L, H)
    layer = _int(p, "encoder_bank_layer", best[0], 0, L - 1)
    head_raw = _str(p, "encoder_bank_head", str(best[1]))
    head = "mean" if head_raw in ("mean", "mean of the heads") else _int(p, "encoder_bank_head", best[1], 0, H - 1)
    rows = {}
    for tag, ck in sides.items():
        tr = exp_lesson.trace_arrays(ck.model, tuple(runs[tag][0]))
        rows[tag] = enc_lesson.query_row(tr["probs"][layer], tr["allowed"], looks[tag].query_index, head)
    top = enc_lesson.y_top(rows.values())
    figs = {}
    for tag in sides:
        (weights, allowed), look = rows[tag], looks[tag]
        which, _ = enc_lesson.shown_weight(look, layer, head)
        figs[f"encoder_bank_{tag}"] = look_ahead_bars(
            weights, runs[tag][1], look.query_index, look.key_index, allowed=allowed, ymax=top,
            title=f"What “{enc_lesson.QUERY}” reads, layer {layer}, {which}")
    return figs


def _key_of(ckpt: Checkpoint, m: Models) -> str:
    """The shipped key of a loaded encoder."""
    return next((k for k in (enc_lesson.ENGLISH, enc_lesson.SHIPPED) if _try_load(m, k) is ckpt), enc_lesson.ENGLISH)


def _encoder_model(picked: str, m: Models) -> Checkpoint:
    """The encoder the link names, by its key or by the picker's label (lessons.encoder.encoder_name)."""
    for key in dict.fromkeys((picked, enc_lesson.ENGLISH, enc_lesson.SHIPPED)):
        try:
            ckpt = m.load(key)
        except (OSError, ValueError):
            continue
        title = (ckpt.metadata or {}).get("title", key)
        if picked in (key, enc_lesson.encoder_name(key, title, ckpt.tokenizer)):
            return ckpt
    raise NotInHandout(f"the encoder “{picked[:40]}” is not installed here")


def encoder_decoder(p: Params, m: Models) -> Figures:
    """The translator's three attentions (encoder self, decoder self, cross) for one head, the translation as the
    page opens (step mode: its first word; run mode: all of it)."""
    tab = _tab(p, "ed_tab", ("Three attentions", "Alignment"))
    ckpt = m.load(_str(p, "ed_model", "translate"))
    cfg, tok = ckpt.model.config, ckpt.tokenizer
    enc = encode(tok, _str(p, "ed_text", ed_lesson.EXAMPLES[0]), max_len=cfg.max_len - 1)
    src = ed_lesson.source_of(tok, enc)
    strategy = G.GREEDY if _str(p, "ed_kind", "greedy") == "greedy" else G.Sampling(_float(p, "ed_temperature", 1.0))
    steps = ed_lesson.decode_views(ckpt.model, tok, src.ids, strategy, _int(p, "ed_seed", 0))
    steps = steps if _str(p, "ed_mode", "step") == "run" else steps[:1]  # step mode opens on the first word
    if tab == "Alignment":
        return _alignment(p, ckpt, src, steps)
    layer, head = _layer_head(p, "ed_three", cfg)
    pad = ed_lesson.N_PAD if _bool(p, "ed_pad", False) and len(src.ids) + 2 <= cfg.max_len else 0
    tgt_ids, fed, tgt_labels = ed_lesson.decoder_input(tok, steps)
    run = ed_lesson.three_attentions(ckpt.model, src.ids, tuple(tgt_ids), pad)
    panels, enc_layer = ed_lesson.three_panels(run, layer, head, [*src.labels, *[PAD] * pad], tgt_labels, fed)
    figs = three_attentions(panels, titles=ed_lesson.three_titles(enc_layer, layer, head))
    return {f"ed_three_{part}": fig for part, fig in zip(THREE_PARTS, figs)}


def _alignment(p: Params, ckpt: Checkpoint, src, steps) -> Figures:
    """ui.encoder_decoder.alignment: one head's cross-attention, the known alignment on top where there is one."""
    cfg = ckpt.model.config
    if src.reference is None:
        layer, head = _layer_head(p, "ed_align", cfg)
        ids, _, labels = ed_lesson.decoder_input(ckpt.tokenizer, steps)
        cp = ed_lesson.three_attentions(ckpt.model, src.ids, tuple(ids), 0)["cross"][0]
        return {"ed_align_chart": alignment_map(cp[layer, head], src.labels, labels, None,
                                                title=f"Cross-attention, layer {layer}, head {head}: "
                                                      f"{len(labels)} × {len(src.labels)}")}
    tf = ed_lesson.teacher_forced(ckpt.model, ckpt.tokenizer, src.text)
    acc = ed_lesson.alignment_accuracy(tf.cross_attention, list(src.alignment)).numpy()
    layer, head = _layer_head(p, "ed_align", cfg, ed_lesson.shown_head(ckpt.metadata, acc))
    return {"ed_align_chart": alignment_map(tf.cross_attention[layer, head].numpy(), src.labels, tf.target_tokens,
                                            src.alignment, title=f"Cross-attention, layer {layer}, head {head}: "
                                                                 "□ known alignment, • the row's peak")}


# -- Why it trains -------------------------------------------------------------------------------------------------
def recurrence(p: Params, m: Models) -> Figures:
    """RNN vs Transformer: the graph depth against T, or the trained models' gradient by distance."""
    tab = _tab(p, "recurrence_tab", ("1 · Sequential dependency", "2 · Gradient by distance",
                                     "3 · Recall by distance"))
    if tab.startswith("1"):
        T = _int(p, "recurrence_T", 64, 1, 1024)
        return {"recurrence_depth_chart": rec_figs.depth_chart(rec_lesson.depth_lines(T), T,
                                                               title="Longest chain of operations")}
    if tab.startswith("3"):  # the accuracy saved in each model's file (the page evaluates it again on a click)
        saved = rec_lesson.saved_accuracy(rec_lesson.load_shipped("cpu", read_only=True))
        return {"recurrence_accuracy_chart": rec_figs.accuracy_chart(
            rec_lesson.accuracy_lines(saved, "saved when trained"), rec_lesson.CHANCE,
            title="Recall accuracy against distance")}
    distance = _int(p, "recurrence_distance", 40, rec_lesson.DISTANCES.start, rec_lesson.DISTANCES.stop - 1)
    relative = _bool(p, "recurrence_relative", True)
    cs = rec_lesson.distance_curves(rec_lesson.load_shipped("cpu", read_only=True), distance)
    lines = [rec_lesson.curve_line(c, f"{rec_lesson.name(k)} · ×{c.factor_per_step:.2f} per step", relative)
             for k, c in cs.items()]
    return {"recurrence_gradient_chart": rec_figs.gradient_chart(
        lines, marker_distance=distance, marker_text="the key ", title="How far back the gradient reaches")}


def normalization(p: Params, m: Models) -> Figures:
    """Which axis each norm normalises, on the page's seeded random batch (LayerNorm, BatchNorm, RMSNorm); or the
    12-block stack trained with and without its residual path (a few seconds on a CPU)."""
    tab = _tab(p, "norm_tab", ("Which axis", "Four reasons", "Residual connections", "The batch dimension"))
    if tab == "Residual connections":
        return _residuals(_int(p, "norm_res_steps", 30, 10, 120))
    if tab == "The batch dimension":
        return _batch(p, m.main)
    x = norm_lesson.random_batch(_int(p, "norm_N", 3, 2, 4), _int(p, "norm_T", 4, 2, 6), _int(p, "norm_d", 8, 4, 16),
                                 _int(p, "norm_seed", 0, 0, 9999))
    if tab == "Four reasons":
        n_pad = _int(p, "norm_pad", min(2, x.shape[1]), 1, x.shape[1])
        pad = norm_lesson.padding_effect(x, n_pad)
        return {"norm_padding_chart": padding_bars(pad.bn_mean[0], pad.bn_mean[1], pad.bn_var[0], pad.bn_var[1],
                                                   n_pad=n_pad, title="BatchNorm's statistics, with and without "
                                                                      "padding in sample 2")}
    return {f"norm_groups_{s.kind}": norm_groups(s.output, s.kind, norm_lesson.group_stats(s),
                                                 title=f"{KIND_NAMES[s.kind]} output")
            for s in norm_lesson.all_norms(x).values()}


def _batch(p: Params, ckpt: Checkpoint) -> Figures:
    """ui.normalization.batch_view: two sentences in one batch, each its own T x T matrix."""
    cfg = ckpt.model.config
    enc = _sentence(ckpt, p, "norm_text", SENTENCE, max_tokens=12)
    others = [s for s in LECTURE_SENTENCES if s != _str(p, "norm_text", SENTENCE)]
    other = _str(p, "norm_other", others[min(5, len(others) - 1)])
    ids, tokens = norm_lesson.batch_ids(ckpt.tokenizer, enc, other, cfg.pad_id, min(12, cfg.max_len), uses_bos(ckpt))
    f = norm_lesson.batch_facts(ckpt.model, tuple(map(tuple, ids)))
    layer, head = _layer_head(p, "norm_batch", cfg)
    title = f"Each sample its own T×T matrix (layer {layer}, head {head})"
    return {"norm_batch_matrices": sample_matrices(f["probs"][layer, :, head], tokens, ["sample 1", "sample 2"],
                                                   title=title)}


def _residuals(steps: int) -> Figures:
    """ui.normalization.residual_view's gradient at init and training loss, with and without x + F(x)."""
    with_res, without = norm_lesson.residual_comparison(load_tokenizer("word"), steps=steps, lr=1e-2)
    grads = per_layer_chart([dict(name="with the residual x + F(x)", y=with_res.gradients.stream, color=COLORWAY[2]),
                             dict(name="without it: F(x) only", y=without.gradients.stream, color=COLORWAY[3])],
                            y_title="‖∂L/∂x‖ per token", title="Gradient of the stream entering each block, at init")
    loss = loss_chart([dict(name="with the residual", y=with_res.losses, color=COLORWAY[2]),
                       dict(name="without it", y=without.losses, color=COLORWAY[3])],
                      title="Training loss, same seed and data")
    return {"norm_res_stream": grads, "norm_res_loss": loss}


# -- Lab -----------------------------------------------------------------------------------------------------------
def generate(p: Params, m: Models) -> Figures:
    """Generate: the continuation as the page opens (step mode: its first token; run mode: all of it), the last
    step's next-token bars and each step's attention row."""
    ckpt = m.main
    cfg = ckpt.model.config
    if not cfg.causal:
        raise NotInHandout("the lecture's model attends both ways and cannot generate")
    bos = gen_lesson.prompt_bos(ckpt)
    limit = min(cfg.max_len - 1, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt) else cfg.max_len - 1
    enc = encode_for(ckpt, _str(p, "generate_text", PROMPTS[0]), max_len=limit, bos=bos)
    s = _generate_settings(p, cfg)
    steps = gen_lesson.step_views(ckpt.model, enc.ids, s, gen_lesson.eos_id(ckpt), gen_lesson.end_ids(ckpt),
                                  lambda ids: token_texts(ckpt, ids), ckpt.tokenizer,
                                  sequence=lambda ids: sequence_texts(ckpt, ids))
    steps = steps if _str(p, "generate_mode", "step") == "run" else steps[:1]  # step mode opens on one token
    if not steps:
        raise NotInHandout("the prompt already ends")
    v = steps[-1]
    bars = gen_figs.next_token_bars(v.labels, v.p, v.q, v.chosen, strategy=s.strategy.describe())
    layer, head = _layer_head(p, "generate", cfg)
    labels = [*enc.tokens, *[st.token for st in steps]]
    rows = [np.asarray(st.attention[layer, head]) for st in steps]
    attn = gen_figs.attention_rows(rows, labels[:steps[-1].position], [st.position - 1 for st in steps],
                                   [st.token for st in steps], n_prompt=len(enc.ids),
                                   title=f"Layer {layer} · head {head}: attention of each step")
    out = {"generate_bars": bars, "generate_attention": attn}
    if _str(p, "generate_tab", "") == "Branches":  # a step on the Branches tab: its branches, as the tab opens
        out["generate_branch_grid"] = _branches(p, ckpt, enc.ids, s)
    return out


def _branches(p: Params, ckpt: Checkpoint, ids: list[int], s: gen_lesson.Settings) -> go.Figure:
    """ui.generate.branches without its widgets: the link's branches (temperature and seed each), none forced."""
    L, n = gen_lesson, _int(p, "generate_branch_n", 3, 2, 3)
    picks = [(_float(p, f"generate_branch_t{i}", L.BRANCH_TEMPERATURES[i]), _int(p, f"generate_branch_seed{i}",
                                                                             L.BRANCH_SEEDS[i], 0, 2**31 - 1))
             for i in range(n)]
    runs = L.branch_runs(ckpt.model, list(ids), picks, s.max_new, s.stop_at_eos, L.eos_id(ckpt),
                         lambda t: token_texts(ckpt, t))
    diverge = L.first_divergence([b.ids for b in runs])
    return gen_figs.branch_grid([b.tokens for b in runs], [b.p for b in runs], [b.q for b in runs],
                                [b.label for b in runs], start=len(ids), diverge=diverge, forced=None,
                                title="Branches · colour = the model's p")


def _generate_settings(p: Params, cfg) -> gen_lesson.Settings:
    """ui.generate.controls' values from the link."""
    k = _int(p, "generate_k", 5, 1, 100) if _bool(p, "generate_use_k", False) else None
    top_p = _float(p, "generate_p", 0.9) if _bool(p, "generate_use_p", False) else None
    strategy = (G.GREEDY if _str(p, "generate_kind", "greedy") == "greedy"
                else G.Sampling(_float(p, "generate_temperature", 1.0), k, top_p))
    max_new = _int(p, "generate_max_new", min(12, cfg.max_len - 1), 1, min(128, cfg.max_len - 1))
    return gen_lesson.Settings(strategy, max_new, _bool(p, "generate_stop_eos", True), _int(p, "generate_seed", 0),
                               _str(p, "generate_mode", "step") == "step")


def sinks(p: Params, m: Models) -> Figures:
    """The Attention sinks page's charts: the first-token map and the losses on held-out text, and the streaming caches
    at the view's cache sizes (several seconds a size on a CPU; none for a model whose positions cannot stream)."""
    ckpt, L = m.main, sinks_lesson
    L.check_model(ckpt.model)
    v = L.view_of(p, ckpt.model.config.max_len)
    seqs = L.heldout_ids(ckpt, v.source)
    out = {"sinks_share_chart": sinks_figs.share_heatmap(L.first_token_share(ckpt.model, seqs),
                                                         L.first_label(ckpt, seqs), L.SHARE_TITLE),
           "sinks_loss_chart": sinks_figs.loss_bars(L.loss_table(L.loss_comparison(ckpt.model, seqs)), L.LOSS_TITLE)}
    if L.streams_positions(ckpt.model):
        ids = L.stream_ids(ckpt, v.source, v.kind, v.n_tokens)
        results = [L.stream_experiment(ckpt.model, ids, w, v.sinks) for w in v.windows]
        out["sinks_stream_chart"] = sinks_figs.stream_lines(results, L.running_k(v.n_tokens), L.STREAM_TITLE)
    return out


# -- Inside the model (#40) -------------------------------------------------------------------------------------------
def lens(p: Params, m: Models) -> Figures:
    """The Logit lens: the top-token map of every layer, and the final prediction's rank at the view's position."""
    ckpt, L = m.main, lens_lesson
    enc = _sentence(ckpt, p, "lens_text", EXAMPLES[1], max_tokens=L.max_tokens(ckpt.model))
    view, T = L.lens_view(ckpt.model, enc.ids), len(enc.ids)
    rows = L.row_names(view.n_rows - 1)
    pos = _int(p, "lens_pos", T - 1, 0, T - 1)
    label = token_texts(ckpt, [int(view.final_ids[pos])])[0]
    return {"lens_map": lens_figs.top_token_map(view.top_p, L.top_texts(view, lambda ids: token_texts(ckpt, ids)),
                                                enc.tokens, rows, "The top next-token at each layer and position"),
            "lens_rank": lens_figs.rank_curve(view.final_rank[:, pos], view.final_p[:, pos], rows, label,
                                              f"“{enc.tokens[pos].strip() or enc.tokens[pos]}” ({pos})",
                                              ckpt.model.config.vocab_size)}


def attribution(p: Params, m: Models) -> Figures:
    """Attention vs attribution at the view's target, layer and head: the methods' scores and their agreement."""
    ckpt, L = m.main, attr_lesson
    cfg = ckpt.model.config
    if not cfg.causal:
        raise NotInHandout("the lesson reads a decoder's next-token prediction")
    enc = _sentence(ckpt, p, "attribution_text", L.DEFAULT_TEXT, max_tokens=L.MAX_TOKENS)
    ids, start, base = tuple(enc.ids), int(uses_bos(ckpt)), pad_token(ckpt)
    top = L.top_next(ckpt.model, ids)
    rank = _int(p, "attribution_target", 0, 0, len(top) - 1)
    layer = _int(p, "attribution_layer", cfg.n_layers - 1, 0, cfg.n_layers - 1)
    head = _int(p, "attribution_head", 0, 0, cfg.n_heads - 1)
    tid = top[rank][0]
    res = L.attribution_of(L.passes(ckpt.model, ids, tid, start=start, baseline=base[0]), ids, enc.tokens,
                           layer=layer, head=head, target=tid, start=start, baseline=base,
                           target_text=token_texts(ckpt, [tid])[0])
    names, short = L.method_names(layer, head), L.method_names(layer, head, short=True)
    return {"attribution_methods": attr_figs.methods_heatmap(res.scores, names, short, res.tokens, res.positions),
            "attribution_agreement": attr_figs.agreement_matrix(res.rho, list(names.values()), list(short.values()))}


def not_drawn(why: str) -> Callable[[Params, Models], Figures]:
    def view(p: Params, m: Models) -> Figures:
        raise NotInHandout(why)
    return view


# The page table: a lecture step's page -> its handout view (viz_model.lectures.PAGE_PARAMS names the same pages)
VIEWS: dict[str, Callable[[Params, Models], Figures]] = {
    "start": start,
    "explorer": explorer,
    "masks": masks_view,
    "qkv": qkv,
    "sinusoidal": sinusoidal,
    "rope": rope,
    "encoder": encoder,
    "encoder-decoder": encoder_decoder,
    "recurrence": recurrence,
    "normalization": normalization,
    "train": not_drawn("training runs live in the app"),
    "generate": generate,
    "cost": not_drawn("its timings are measured on the server that runs the app"),
    "logit-lens": lens,
    "attribution": attribution,
    "sinks": sinks,
}


def figures_for(page: str, params: Params, models: Models) -> Figures:
    """The step's charts by their keys on the page; NotInHandout (with the reason) for a view the handout links to
    instead."""
    return VIEWS[page](params, models)
