"""Questions on encoders: which word the masked-LM encoder writes in a blank (Encoder), and which source
word the translator reads writing its first word (Encoder–decoder)."""

from __future__ import annotations

from viz_model.lessons import encoder as encoder_lesson
from viz_model.lessons.presets.base import MAX_CHOICES, Inputs, Preset, _argmax_all, _encode, _picked, _tok
from viz_model.model_text import uses_bos
from viz_model.seq2seq import translate
from viz_model.tokenizer import MASK

KEPT_MASKS = "encoder_kept_masks"  # ui.encoder.KEPT_MASKS: {sentence digest: the hidden words}, one entry


def encoder_fill(inp: Inputs) -> Preset:
    """Which word the encoder writes in the view's first blank: its top fill-in, by one masked pass now."""
    s = inp.settings
    ckpt = _picked(inp, "encoder_model", encoder_lesson.ENGLISH)
    bos = uses_bos(ckpt)
    limit = ckpt.model.config.max_len - (1 if bos else 2)
    enc = _encode(ckpt, s.get("encoder_text", "The cat sat on the mat"), bos, limit=limit, specials=(MASK,),
                  least=1 + int(bos), page="the Encoder page")
    start = 1 if bos and enc.pieces[:1] and enc.pieces[0] != MASK and len(enc.ids) > 1 else 0
    ids, words, pieces = enc.ids[start:], enc.tokens[start:], enc.pieces[start:]
    kept = next(iter((s.get(KEPT_MASKS) or {}).values()), None)
    typed = [i for i, p in enumerate(pieces) if p == MASK]
    picked = [i for i in (kept if kept is not None else ([] if typed else encoder_lesson.default_masks(words)))
              if i < len(ids)]
    b = encoder_lesson.blanks(ckpt.tokenizer, ids, words, pieces, picked)
    if not b.answers:
        raise ValueError("Hide a word on the Encoder page first: there is no blank to fill.")
    run = encoder_lesson.masked_ids_run(ckpt.model, ckpt.tokenizer, b, 8)
    fills = [(_tok(t), float(p)) for t, p in run["fills"][0]]
    options = sorted({t for t, _ in fills} | ({_tok(b.answers[0])} if b.answers[0] else set()), key=str.lower)
    best = max(fills, key=lambda f: f[1])
    correct = [options.index(best[0])]
    text = b.text if len(b.text) <= 100 else b.text[:99] + "…"
    prompt = f"Which word will the encoder write in the first blank of “{text}”?"
    why = ("Its top fill-ins: " + ", ".join(f"“{t}” {p:.0%}" for t, p in fills[:4]) + "."
           + (f" The hidden word was “{_tok(b.answers[0])}”." if b.answers[0] else ""))
    return Preset("encoder", prompt, options[:MAX_CHOICES], {"correct": correct, "why": why})


def translator_looks(inp: Inputs) -> Preset:
    """Writing its first word, which source word the translator's last layer (mean of its heads) reads most."""
    from viz_model import generate as G

    s = inp.settings
    ckpt = _picked(inp, "ed_model", "translate")
    text = str(s.get("ed_text", "The cat sat on the mat") or "")
    if not text.strip():
        raise ValueError("Type a sentence to translate on the Encoder–decoder page first.")
    strategy = G.GREEDY if s.get("ed_kind", "greedy") == "greedy" else G.Sampling(float(s.get("ed_temperature", 1.0)))
    tr = translate(ckpt.model, ckpt.tokenizer, text, max_new_tokens=ckpt.model.config.max_len - 1, strategy=strategy,
                   seed=int(s.get("ed_seed", 0)))
    if not tr.tokens:
        raise ValueError("The translator wrote no word for this sentence: there is nothing to ask about.")
    row = tr.cross_attention[-1, :, 0].float().mean(0).cpu().numpy()  # (T_src,) last layer, first target word
    keys = list(range(min(len(row), MAX_CHOICES)))
    correct = _argmax_all(row[keys])
    top = keys[correct[0]]
    labels = [_tok(t) for t in tr.source_tokens]
    prompt = (f"Writing its first word “{_tok(tr.tokens[0])}”, which source word does the translator's last layer "
              "read most (mean of its heads)?")
    why = (f"Cross-attention of the last layer from “{_tok(tr.tokens[0])}”: {row[top]:.0%} on “{labels[top]}” "
           f"(source token {top}), the most of the {len(keys)} source tokens.")
    return Preset("encoder-decoder", prompt, [f"{k} {labels[k]}" for k in keys], {"correct": correct, "why": why})
