"""The English masked-LM encoder (#43 item 4): BERT's masking on WordNet's text with the English model's own BPE, a
bidirectional encoder, a loss that runs the LM head only where it is scored, the build recipe on a small WordNet,
and the shipped model's held-out fill-in accuracy recomputed here and against the unigram baseline."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from viz_model import ASSETS_DIR, checkpoint, english
from viz_model.config import ModelConfig
from viz_model.english import EnglishMaskedData
from viz_model.lessons import encoder as lesson
from viz_model.mlm import N_SPECIAL, mask_tokens, masked_lm_loss, run_masked
from viz_model.model import TinyTransformer
from viz_model.tokenizer import MASK, UNK, encode

SHIPPED = ASSETS_DIR / "models" / "english-encoder.safetensors"
ROOT = ASSETS_DIR.parent


@pytest.fixture(scope="module")
def shipped():
    assert SHIPPED.exists(), "the English encoder is tracked in assets/models"
    return checkpoint.load_checkpoint(SHIPPED)


@pytest.fixture(scope="module")
def english_tok():
    return english.english_tokenizer()


# -- the recipe's parts ---------------------------------------------------------------------------------------
def test_the_encoder_reads_the_english_models_own_tokenizer_with_its_ids(english_model, english_tok):
    assert english_tok.get_vocab() == english_model.tokenizer.get_vocab()  # the decoder's ids, unchanged
    assert english_tok.token_to_id(MASK) == 4 and english_tok.get_vocab_size() == english.VOCAB_SIZE


def test_masked_lm_loss_is_the_full_heads_loss(tok):
    """The LM head run only at the scored positions gives the loss of the whole (B, T, V) head."""
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=tok.get_vocab_size(), mask="bidirectional")).eval()
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(N_SPECIAL, tok.get_vocab_size(), (6, 20), generator=gen)
    ids[:, 0], ids[3, 12:] = 2, 0  # <bos>, and a padded row
    inputs, targets = mask_tokens(ids, mask_id=4, vocab_size=tok.get_vocab_size(), p=0.3, generator=gen)
    pad = ids != 0
    full = model(inputs, key_padding_mask=pad, targets=targets).loss
    part = masked_lm_loss(model, inputs, targets, pad)
    torch.testing.assert_close(part, full, rtol=1e-4, atol=1e-5)  # two kernels (gather first or last): float32 noise
    # and the gradients agree too
    g_full = torch.autograd.grad(model(inputs, key_padding_mask=pad, targets=targets).loss, model.tok_emb.weight)[0]
    g_part = torch.autograd.grad(masked_lm_loss(model, inputs, targets, pad), model.tok_emb.weight)[0]
    torch.testing.assert_close(g_part, g_full, rtol=1e-4, atol=1e-5)


def _data(**kw) -> EnglishMaskedData:
    rng = torch.Generator().manual_seed(0)
    texts = [[2, *torch.randint(N_SPECIAL, 500, (int(n),), generator=rng).tolist(), 3]
             for n in torch.randint(3, 30, (200,), generator=rng)]
    texts.append([2, *range(10, 110), 3])  # a text longer than a row: cut
    return EnglishMaskedData(texts, texts[:40], pad_id=0, mask_id=4, vocab_size=500, **kw)


def test_masked_batches_pack_whole_texts_and_hide_fifteen_percent_of_ordinary_tokens():
    data = _data(batch_size=64, seq_len=64)
    b = data.batch(5)
    real = b.key_padding_mask
    assert b.ids.shape[1] <= 64 and bool((b.ids[:, 0] == 2).all())  # every row starts at a text's <bos>
    assert bool(((b.ids == 0) == ~real).all())  # padding (only) is masked out of attention
    scored = b.targets != 0
    assert not bool((scored & ~real).any())
    originals = torch.where(scored, b.targets, b.ids)
    assert bool((originals[scored] >= N_SPECIAL).all())  # <bos>, <eos> and <pad> are never hidden
    share = scored.sum() / (real & (originals >= N_SPECIAL)).sum()
    assert 0.11 < float(share) < 0.19
    assert 0.7 < float((b.ids[scored] == 4).float().mean()) < 0.9  # BERT's 80 % <mask>
    again = data.batch(5)
    assert torch.equal(again.ids, b.ids) and torch.equal(again.targets, b.targets)  # a function of (seed, step)
    assert not torch.equal(data.batch(6).ids[:, :8], b.ids[:, :8])
    held = data.heldout_batches()
    assert held is data.heldout_batches() and held[0].ids.shape[0] == 40  # one text per row, the same masks


def test_unigram_ranks_ordinary_tokens_by_count_and_fill_in_blanks_are_reproducible(english_tok):
    uni = lesson.Unigram.fit([[2, 9, 9, 9, 7, 7, 3], [2, 9, 8, 3]], 20)
    assert uni.ranked[:3] == [9, 7, 8] and float(uni.probs[:N_SPECIAL].sum()) == 0.0
    assert float(uni.probs.sum()) == pytest.approx(1.0)
    texts = english.load_heldout()["wordnet"][:50]
    a = lesson.fill_in_items(english_tok, texts, 64)
    assert a == lesson.fill_in_items(english_tok, texts, 64)
    assert all(hidden and all(ids[t] >= N_SPECIAL for t in hidden) and len(ids) <= 64 for ids, hidden in a)
    share = sum(len(h) for _, h in a) / sum(len(ids) - 2 for ids, _ in a)
    assert 0.12 < share < 0.3  # 15 %, and at least one per (short) text


def _build_assets():
    spec = importlib.util.spec_from_file_location("build_assets", ROOT / "scripts" / "build_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_recipe_trains_saves_and_measures_an_encoder(tmp_path, monkeypatch):
    """`build_assets.py english-encoder --steps 2` on a small WordNet folder: a bidirectional encoder with the
    recipe's shape and the English tokenizer, its held-out fill-in numbers and build time in the metadata."""
    wordnet = tmp_path / "wordnet"
    wordnet.mkdir()
    for i, name in enumerate(english.WORDNET_FILES):
        lines = [f"{10_000_000 + 100 * i + k:08d} 03 n 01 word 0 000 | a gloss number {k} about the {name[5:]}; "
                 f'"the {name[5:]} example {k} is here"' for k in range(60)]
        (wordnet / name).write_text("  licence header\n" + "\n".join(lines) + "\n", encoding="latin-1")
    monkeypatch.setitem(english.ENCODER_RECIPE, "train", {**english.ENCODER_RECIPE["train"], "batch_size": 4})
    out = tmp_path / "enc.safetensors"
    meta = _build_assets().build_english_encoder(out, device="auto", steps=2, wordnet=wordnet, log=lambda *_: None)
    ckpt = checkpoint.load_checkpoint(out)
    assert ckpt.model.config.causal is False and ckpt.metadata["steps"] == 2
    recipe = english.ENCODER_RECIPE["model"]
    assert {k: getattr(ckpt.model.config, k) for k in recipe} == recipe
    assert ckpt.tokenizer.get_vocab() == english.english_tokenizer().get_vocab()
    assert meta["params"] == ckpt.model.num_params() and meta["build_seconds"] >= meta["train_seconds"] > 0
    assert meta["n_texts"] > 300 and meta["n_masked"] > meta["n_texts"]
    assert meta["device"] == "cpu" or meta["device"].startswith("cuda")  # --device auto
    live = lesson.fill_in_metrics(ckpt.model, ckpt.tokenizer, meta)
    assert live["fill_top1"] == pytest.approx(meta["fill_top1"], abs=1e-9)  # a ratio of counts, same process


# -- the shipped English encoder --------------------------------------------------------------------------------
def test_shipped_encoder_recomputes_its_recorded_fill_in_accuracy_and_beats_the_unigram(shipped):
    meta = shipped.metadata
    live = lesson.fill_in_metrics(shipped.model, shipped.tokenizer, meta)
    for key, base, _ in lesson.FILL_METRICS:
        assert live[key] == pytest.approx(meta[key], abs=lesson.FILL_TOL), key
        assert live[base] == pytest.approx(meta[base], abs=1e-9)  # the same blanks, the same unigram guesses
        assert live[key] > 2 * live[base], (key, live[key], live[base])
    assert (live["n_texts"], live["n_masked"]) == (meta["n_texts"], meta["n_masked"])
    assert meta["fill_loss"] < meta["unigram_loss"]
    assert all(f.ok for f in lesson.fill_facts(meta, live))


def test_shipped_encoder_is_the_recipe_small_and_never_saw_its_held_out_texts(shipped, english_tok):
    meta, cfg = shipped.metadata, shipped.model.config
    assert cfg.causal is False
    assert {k: getattr(cfg, k) for k in english.ENCODER_RECIPE["model"]} == english.ENCODER_RECIPE["model"]
    assert meta["recipe"] == json.loads(json.dumps({k: english.ENCODER_RECIPE[k] for k in ("model", "train", "data")}))
    assert meta["params"] == shipped.model.num_params() and meta["build_seconds"] > meta["train_seconds"] > 0
    assert shipped.tokenizer.get_vocab() == english_tok.get_vocab()
    size = sum(p.stat().st_size for p in SHIPPED.parent.glob("english-encoder.*"))
    assert size < 15 * 2**20
    texts = lesson.heldout_fill_texts(meta["heldout_excluded"])
    assert len(texts) + len(meta["heldout_excluded"]) == len(english.load_heldout()["wordnet"])


def test_a_students_sentence_has_no_unk_and_gets_word_fill_ins(shipped):
    text = lesson.STUDENT_SENTENCE
    assert encode(shipped.tokenizer, text, specials=(MASK,)).unknown == []
    run = run_masked(shipped.model, shipped.tokenizer, text, top_k=5, trace=False)
    assert UNK not in run.tokens and len(run.fills) == 2
    for fills in run.fills:  # each blank's best guesses are words, not special tokens or punctuation
        assert sum(t.strip().isalpha() for t, _ in fills) >= 4, fills
