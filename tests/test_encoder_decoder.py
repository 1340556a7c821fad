"""The encoder-decoder: its three attention masks, cached decoding, the toy language, the shipped translator."""

import json
import random

import pytest
import torch

from viz_model import ASSETS_DIR, checkpoint, data
from viz_model.config import ModelConfig
from viz_model.generate import Sampling
from viz_model.lessons import encoder_decoder
from viz_model.model import TinyTransformer
from viz_model.seq2seq import (
    Seq2SeqConfig,
    Seq2SeqTransformer,
    decode_steps,
    greedy_batch,
    guided_alignment_loss,
    guided_head,
    translate,
)
from viz_model.tokenizer import load_tokenizer
from viz_model.train import TrainConfig, Trainer

SHIPPED = ASSETS_DIR / "models" / "translate.safetensors"


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(vocab_size=tok.get_vocab_size(), d_model=32, n_heads=4, n_layers=2, n_encoder_layers=2,
                        d_ff=64, max_len=32, pos_encoding="rope")
    return Seq2SeqTransformer(cfg).eval()


@pytest.fixture(scope="module")
def shipped():
    return checkpoint.load_checkpoint(SHIPPED)


@pytest.fixture(scope="module")
def guided():
    return checkpoint.load_checkpoint(ASSETS_DIR / "models" / "translate-guided.safetensors")


def batch():
    src = torch.tensor([[10, 11, 12, 13, 3, 0, 0], [14, 15, 16, 17, 18, 19, 3]])  # row 0 padded at 5, 6
    tgt = torch.tensor([[2, 20, 21, 22, 23], [2, 24, 25, 26, 27]])
    return src, tgt


# -- the toy language -------------------------------------------------------------------------------------
# Expected outputs derived by hand from the grammar in viz_model/data.py: Pig Latin words, adjective after its
# noun, verb at the end of its clause, plural noun = stem + "ka".
KNOWN = {
    "The cat sat on the mat": ("ethay atcay onway ethay atmay atsay", [0, 1, 3, 4, 5, 2]),
    "the keys next to the dog are on the table":
        ("ethay eykay ka extnay otay ethay ogday onway ethay abletay areway", [0, 1, 1, 2, 3, 4, 5, 7, 8, 9, 6]),
    "the old king thanked the children when they giggled":
        ("ethay ingkay oldway ethay ildchay ka ankedthay enwhay eythay iggledgay", [0, 2, 1, 4, 5, 5, 3, 6, 7, 8]),
    "after the tall boy saw the girl , she smiled all day":
        ("afterway ethay oybay alltay ethay irlgay awsay , eshay allway ayday iledsmay",
         [0, 1, 3, 2, 5, 6, 4, 7, 8, 10, 11, 9]),
    "the queen gave the boy the apple because she waved":
        ("ethay eenquay ethay oybay ethay appleway avegay ecausebay eshay avedway", [0, 1, 3, 4, 5, 6, 2, 7, 8, 9]),
}


@pytest.mark.parametrize("source", list(KNOWN))
def test_reference_translation_of_known_sentences(source):
    assert data.reference_translation(source) == KNOWN[source]


@pytest.mark.parametrize("source, reason", [
    ("please send the report", "'please' is not a word of the toy language"),
    ("the bank by the river", "expected a verb after the subject at the end"),
    ("the cat sat on the", "expected a noun after 'the' at the end"),
    ("sat the cat", "expected 'the' at 'sat'"),
    ("the cat sat the mat the", "expected a noun after 'the' at the end"),
    ("   ", "nothing to translate"),
])
def test_reference_translation_refuses_sentences_outside_the_toy_language(source, reason):
    with pytest.raises(ValueError, match=reason):
        data.reference_translation(source)


def test_every_pronoun_agreement_and_place_sentence_is_in_the_toy_language():
    rng = random.Random(3)
    for _ in range(3000):
        kind, text = data.random_sentence(rng)
        if kind in ("pronoun", "agreement", "place"):
            target, alignment = data.reference_translation(text)
            words = text.split()
            assert sorted(set(alignment)) == list(range(len(words)))  # every source word is translated
            plural = [j for j, w in enumerate(target.split()) if w == data.PLURAL_WORD]
            assert all(words[alignment[j]] in data.PLURAL_STEMS for j in plural)
            assert len(target.split()) == len(words) + len(plural)  # only plurals become two words


def test_the_alignment_is_not_the_identity():
    moved = [s for s in (data.place_sentence(random.Random(i)) for i in range(50))
             if data.reference_translation(s)[1] != list(range(len(s.split())))]
    assert len(moved) == 50  # every place sentence moves its verb past the prepositional phrase


# -- attention masks --------------------------------------------------------------------------------------
def test_encoder_attention_is_bidirectional_and_padding_keys_get_exactly_zero(model):
    src, tgt = batch()
    trace = model(src, tgt, trace=True).trace
    for lt in trace.encoder:
        probs = lt.probs  # (B, H, T_src, T_src)
        assert (probs[0, :, :, 5:] == 0).all()             # padded keys of row 0: exactly zero weight
        assert (probs[0, :, :5, :5].triu(1) > 0).any()      # real queries see later real keys
        assert torch.allclose(probs.sum(-1), torch.ones_like(probs.sum(-1)), atol=1e-6)


def test_decoder_self_attention_is_causal_and_row_t_matches_the_prefix_run(model):
    src, tgt = batch()
    full = model(src, tgt, trace=True)
    for lt in full.trace.decoder:
        assert (lt.probs.triu(1) == 0).all()
    for t in range(tgt.shape[1]):
        prefix = model(src, tgt[:, : t + 1]).logits[:, t]
        torch.testing.assert_close(prefix, full.logits[:, t], atol=1e-5, rtol=0)


@pytest.mark.parametrize("trace", [True, False])
def test_cross_attention_sums_to_one_over_real_source_and_padding_changes_nothing(model, trace):
    src, tgt = batch()
    real = src != 0
    out = model(src, tgt, src_padding_mask=real, trace=True)
    for lt in out.trace.cross:
        probs = lt.probs  # (B, H, T_tgt, T_src)
        assert probs.shape == (2, 4, tgt.shape[1], src.shape[1])
        assert (probs[0, :, :, 5:] == 0).all()
        row_sums = (probs * real[:, None, None, :]).sum(-1)
        assert torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-6)
    changed = src.clone()
    changed[0, 5:] = torch.tensor([40, 41])  # real words where row 0 has padding; the mask still says padding
    a = model(src, tgt, src_padding_mask=real, trace=trace).logits
    b = model(changed, tgt, src_padding_mask=real, trace=trace).logits
    assert (a - b).abs().max().item() == 0.0


def test_the_fast_path_matches_the_traced_path(model):
    src, tgt = batch()
    torch.testing.assert_close(model(src, tgt).logits, model(src, tgt, trace=True).logits, atol=1e-5, rtol=0)


# -- decoding ---------------------------------------------------------------------------------------------
def test_cached_and_uncached_decoding_give_identical_tokens(model, tok):
    text = "the keys near the dog are on the table"
    cached = translate(model, tok, text, max_new_tokens=12, use_cache=True)
    plain = translate(model, tok, text, max_new_tokens=12, use_cache=False)
    assert cached.tokens == plain.tokens and len(cached.tokens) == 12
    torch.testing.assert_close(cached.cross_attention, plain.cross_attention, atol=1e-5, rtol=0)
    middle = [d.step.token_id for d in decode_steps(model, cached.source_ids, max_new_tokens=12, use_cache=False,
                                                    reuse_encoder=True)]
    assert middle == cached.token_ids


def test_translation_shapes_and_sampling_reuse_the_generate_filters(model, tok):
    out = translate(model, tok, "the zebra sat on the mat", max_new_tokens=5)
    L, H = model.config.n_layers, model.config.n_heads
    assert out.cross_attention.shape == (L, H, len(out.tokens), 7)  # 6 words + <eos>
    assert out.unknown == ["zebra"]
    a = translate(model, tok, "the cat sat", max_new_tokens=6, strategy=Sampling(temperature=1.0, top_k=3), seed=4)
    b = translate(model, tok, "the cat sat", max_new_tokens=6, strategy=Sampling(temperature=1.0, top_k=3), seed=4)
    assert a.tokens == b.tokens
    assert all(int((d.step.filtered_probs > 0).sum()) == 3 for d in a.steps)
    with pytest.raises(ValueError, match="nothing to translate"):
        translate(model, tok, "  ")


def test_greedy_batch_equals_one_at_a_time(model, tok):
    sources = [[10, 11, 3], [12, 13, 14, 15, 3]]
    together = greedy_batch(model, sources, max_new_tokens=6)
    alone = [[d.step.token_id for d in decode_steps(model, s, max_new_tokens=6)] for s in sources]
    assert together == [row[: row.index(3)] if 3 in row else row for row in alone]


def test_alignment_accuracy_counts_rows_that_peak_on_the_aligned_word():
    cross = torch.zeros(1, 2, 3, 4)
    cross[0, 0, [0, 1, 2], [2, 0, 1]] = 1.0  # head 0 peaks on 2, 0, 1
    cross[0, 1, :, 3] = 1.0                  # head 1 always on the last token
    acc = encoder_decoder.alignment_accuracy(cross, [2, 0, 3])
    torch.testing.assert_close(acc, torch.tensor([[2 / 3, 1 / 3]]))
    with pytest.raises(ValueError):
        encoder_decoder.alignment_accuracy(cross, [0, 1, 2, 3])


def test_translate_task_batches_pair_sources_with_their_reference(tok):
    td = data.TaskData("translate", tok, seed=0, batch_size=8)
    b = td.batch(0)
    assert b.src.shape[0] == b.ids.shape[0] == 8 and (b.ids[:, 0] == tok.token_to_id("<bos>")).all()
    for i in range(8):
        src_words = [tok.id_to_token(int(t)) for t in b.src[i] if t not in (0, 3)]
        tgt_words = [tok.id_to_token(int(t)) for t in b.targets[i] if t not in (0, 3)]
        assert " ".join(tgt_words) == data.reference_translation(" ".join(src_words))[0]
    assert len(td.heldout_pairs) >= 150
    train_sources = {tuple(s) for s, _, _ in td.train_pairs}
    assert not any(tuple(s) in train_sources for s, _, _ in td.heldout_pairs)


def test_translate_batches_carry_the_alignment_of_every_target_row(tok):
    """Row j of the decoder predicts target word j: its alignment names the source word that word translates
    (its Pig Latin form, or 'ka' after a plural noun); the row predicting <eos> and padding have none."""
    b = data.TaskData("translate", tok, seed=0, batch_size=8).batch(3)
    assert b.alignment.shape == b.ids.shape
    for i in range(8):
        n = int((b.targets[i] != 0).sum()) - 1  # target words, then <eos>
        assert (b.alignment[i, n:] == -100).all() and (b.alignment[i, :n] >= 0).all()
        for j in range(n):
            source_word = tok.id_to_token(int(b.src[i, b.alignment[i, j]]))
            assert tok.id_to_token(int(b.targets[i, j])) in data.target_words(source_word)


def test_guided_alignment_loss_is_minus_log_attention_on_the_aligned_word():
    probs = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]])  # (B=1, T_tgt=3, T_src=3)
    alignment = torch.tensor([[0, 1, -100]])  # the third row translates nothing
    loss = guided_alignment_loss(probs, alignment)
    assert loss.item() == pytest.approx(-(torch.log(torch.tensor(0.5)) + torch.log(torch.tensor(0.8))).item() / 2)
    assert guided_alignment_loss(torch.eye(3)[None], torch.tensor([[0, 1, 2]])).item() == pytest.approx(0, abs=1e-6)


def test_a_guided_run_adds_the_guide_to_what_it_minimises_and_shows_the_translation_loss(tok):
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(vocab_size=tok.get_vocab_size(), d_model=32, n_heads=4, n_layers=2, n_encoder_layers=1,
                        d_ff=64, max_len=32)
    trainer = Trainer(Seq2SeqTransformer(cfg), tok, TrainConfig(task="translate", batch_size=8, align_weight=0.5,
                                                                eval_every=0, snapshot_every=0, sample_every=0))
    batch = trainer.data.batch(0)
    total, shown = trainer._loss(batch)
    out = trainer.model(batch.src, batch.ids, targets=batch.targets, trace=True)
    layer, head = guided_head(cfg)
    guide = guided_alignment_loss(out.trace.cross[layer].probs[:, head], batch.alignment)
    assert shown.item() == pytest.approx(out.loss.item(), rel=1e-5)
    assert total.item() == pytest.approx(out.loss.item() + 0.5 * guide.item(), rel=1e-5) and guide.item() > 0.5
    with pytest.raises(ValueError, match="known alignment"):
        TrainConfig(task="lm", align_weight=0.1)
    with pytest.raises(ValueError, match="0 or more"):
        TrainConfig(task="translate", align_weight=-1)


# -- checkpoints and the shipped model --------------------------------------------------------------------
def test_checkpoint_round_trip_keeps_each_model_kind(model, tok, tmp_path):
    src, tgt = batch()
    path = checkpoint.save(model, tok, tmp_path / "s2s.safetensors", {"task": "translate"})
    assert json.loads(path.with_suffix(".json").read_text())["kind"] == "seq2seq"
    back = checkpoint.load_checkpoint(path)
    assert isinstance(back.model, Seq2SeqTransformer) and back.model.config == model.config
    torch.testing.assert_close(back.model(src, tgt).logits, model(src, tgt).logits, atol=0, rtol=0)
    old = TinyTransformer(ModelConfig.preset("tiny", vocab_size=tok.get_vocab_size()))
    old_path = checkpoint.save(old, tok, tmp_path / "old.safetensors")
    doc = json.loads(old_path.with_suffix(".json").read_text())
    del doc["kind"]  # a checkpoint written before kinds existed
    old_path.with_suffix(".json").write_text(json.dumps(doc))
    assert type(checkpoint.load_checkpoint(old_path).model) is TinyTransformer


def test_shipped_translator_meets_its_bars_on_heldout_sentences(shipped):
    fresh = encoder_decoder.heldout_metrics(shipped.model, shipped.tokenizer)
    meta = shipped.metadata
    assert fresh["exact_match"] == pytest.approx(meta["exact_match"], abs=1e-9)
    assert fresh["best_alignment_head"] == pytest.approx(meta["best_alignment_head"], abs=1e-4)
    assert fresh["exact_match"] >= 0.95
    # No head of this translator is told to align: it aligns every noun, adjective and pronoun, but a 'the' may land
    # on another 'the' (the output is the same; structural_metrics counts it, copy-aware) and an adverb or 'after'
    # is often read elsewhere. The >= 0.80 bar on the corpus is the guided translator's
    # (test_the_guided_translator_aligns_its_guided_head_and_translates_as_well).
    assert fresh["best_alignment_head"]["accuracy"] >= 0.70
    by_class = fresh["best_head_by_class"]
    assert all(by_class[c][0] >= 0.95 for c in ("NOUN", "ADJ", "PRON"))
    assert by_class == meta["best_head_by_class"]
    assert meta["n_sentences"] == fresh["n_sentences"] >= 300
    train = {s for s in data.corpus_split().train}
    assert not set(data.heldout_sentences(400, seed=1, translatable=True)) & train  # never trained on


def test_the_guided_translator_aligns_its_guided_head_and_translates_as_well(guided):
    """The bar (best head >= 80 % of target words) is met by the head training guided toward the alignment; the
    best head that found its own way is reported beside it. Recomputed here on 400 held-out sentences."""
    fresh = encoder_decoder.heldout_metrics(guided.model, guided.tokenizer, guided=True)
    meta = guided.metadata
    assert meta["train_config"]["align_weight"] == 0.05
    assert encoder_decoder.guided_of(meta, guided.model.config) == guided_head(guided.model.config) == (1, 0)
    assert fresh["exact_match"] == meta["exact_match"] >= 0.95
    assert fresh["guided_head"] == pytest.approx(meta["guided_head"], abs=1e-4)
    assert fresh["guided_head"]["accuracy"] >= 0.80
    assert fresh["best_alignment_head"] == pytest.approx(meta["best_alignment_head"], abs=1e-4)
    assert fresh["best_unguided_head"] == pytest.approx(meta["best_unguided_head"], abs=1e-4)
    assert (fresh["best_unguided_head"]["layer"], fresh["best_unguided_head"]["head"]) != (1, 0)


def test_best_head_leaves_out_the_guided_one():
    acc = torch.tensor([[0.2, 0.5], [0.9, 0.4]])
    assert encoder_decoder.best_head(acc) == (1, 0)
    assert encoder_decoder.best_head(acc, exclude=(1, 0)) == (0, 1)
    assert encoder_decoder.guided_of({"train_config": {"align_weight": 0.0}}, None) is None
    assert encoder_decoder.guided_of(None, None) is None
    cfg = Seq2SeqConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=3, max_len=8)
    saved_run = {"train_spec": {"task": "translate", "align_weight": 0.2}}  # a Train page run (runtime.runs)
    assert encoder_decoder.guided_of(saved_run, cfg) == (2, 0) and encoder_decoder.guide_weight(saved_run) == 0.2


def test_shipped_translator_translates_the_lecture_sentence(shipped):
    out = translate(shipped.model, shipped.tokenizer, "The cat sat on the mat")
    assert out.text == "ethay atcay onway ethay atmay atsay" and out.stop_reason == "eos"
    acc = encoder_decoder.alignment_accuracy(out.cross_attention, KNOWN["The cat sat on the mat"][1])
    meta = shipped.metadata["best_alignment_head"]
    assert acc[meta["layer"], meta["head"]] >= 0.8


# -- #26 finding 4: what the page may say about a sentence and the training data ---------------------------------
SHIPPED_META = json.loads(SHIPPED.with_suffix(".json").read_text())["metadata"]  # its recipe: seed, steps, batch, pool


def test_the_training_replay_draws_the_sentences_task_data_batches_hold():
    """training_membership replays TaskData.batch; the replay's pool and draws must be the real ones."""
    tok = load_tokenizer("word")
    task = data.TaskData("translate", tok, seed=3, batch_size=8)
    counts, pool = encoder_decoder._training_draws(3, 5, 8)
    drawn = set()
    for step in range(5):
        src = task.batch(step).src  # (B, T_src) ids, <eos> then pads
        for row in src.tolist():
            words = [tok.id_to_token(i) for i in row if i not in (task.pad_id, task.eos_id)]
            drawn.add(" ".join(words))
    assert drawn == set(counts) and drawn <= pool
    assert pool == {" ".join(tok.id_to_token(i) for i in src[:-1]) for src, _, _ in task.train_pairs}


@pytest.mark.parametrize("text, side", [
    ("the old king thanked the children when they giggled", "not in the corpus"),  # the page's own example
    ("the cat sat on the mat", "trained"),
])
def test_a_sentence_that_is_not_held_out_is_called_trained_only_when_a_batch_held_it(text, side):
    assert not data.is_heldout(text)
    m = encoder_decoder.training_membership(text, SHIPPED_META)
    assert m.side == side
    assert ("In the training set" in m.caption) == (side == "trained")
    assert "A training sentence" not in m.caption


def test_a_held_out_sentence_and_a_model_without_a_recipe_are_said_as_known():
    held = data.heldout_sentences(1, translatable=True)[0]
    assert encoder_decoder.training_membership(held, SHIPPED_META).caption.startswith("Held out:")
    assert encoder_decoder.training_membership(held, None).side == "held out"  # the split is by content hash
    unknown = encoder_decoder.training_membership("the cat sat on the mat", {"title": "someone's model"})
    assert unknown.side == "unknown" and "may or may not be" in unknown.caption


def test_a_pool_sentence_no_batch_drew_is_never_drawn():
    counts, pool = encoder_decoder._training_draws(0, 3, 4)  # 12 draws from the pool: almost every sentence missed
    missed = next(s for s in sorted(pool) if s not in counts)
    meta = {"steps": 3, "train_config": {"task": "translate", "batch_size": 4, "seed": 0,
                                         "grammar_size": data.GRAMMAR_POOL}}
    m = encoder_decoder.training_membership(missed, meta)
    assert m.side == "never drawn" and "never trained on this sentence" in m.caption


def test_the_alignment_map_labels_its_words_at_the_text_size_upright_where_they_fit():
    """#26 finding 13: the axis words were 10 px (about 9 on screen), theme grey and always turned by 45°."""
    from viz_model.figures.common import FONT
    from viz_model.figures.encoder_decoder import alignment_map

    src, (target, alignment) = ["the", "cat", "sat", "<eos>"], data.reference_translation("the cat sat")
    tgt = target.split()
    fig = alignment_map(torch.full((len(tgt), len(src)), 0.25), src, tgt, alignment)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.tickfont.size >= 12 and axis.tickfont.size == FONT["size"]
    assert fig.layout.xaxis.tickangle in (None, "auto")  # Plotly turns them only where they would overlap


# -- #25: the grammar, not the templates ------------------------------------------------------------------------
def test_copy_aware_alignment_counts_a_peak_on_an_identical_copy_of_the_aligned_word():
    cross = torch.zeros(1, 1, 3, 5)  # source "the cat the mat <eos>" = ids 5 6 5 7 3
    cross[0, 0, 0, 2] = cross[0, 0, 1, 1] = cross[0, 0, 2, 0] = 1.0  # peaks: the second 'the', 'cat', the first 'the'
    alignment = [0, 1, 3]  # 'the' -> 0, 'cat' -> 1, 'mat' -> 3
    assert encoder_decoder.alignment_accuracy(cross, alignment).item() == pytest.approx(1 / 3)
    copy_aware = encoder_decoder.alignment_accuracy(cross, alignment, [5, 6, 5, 7, 3])
    assert copy_aware.item() == pytest.approx(2 / 3)  # 'mat' peaking on a 'the' is still a miss
    assert encoder_decoder.alignment_hits(cross, alignment, [5, 6, 5, 7]).tolist() == [[[True, True, False]]]


def test_a_sentence_of_a_held_out_skeleton_is_said_so_for_any_model(shipped):
    text = data.structural_sentences(1, "unseen")[0]
    for meta in (shipped.metadata, None, {"title": "someone's model"}):
        m = encoder_decoder.shape_membership(text, meta)
        assert m.side == "held out" and m.skeleton == data.skeleton(text) and m.skeleton in m.caption
    unknown = encoder_decoder.shape_membership("the cat sat on the mat", None)
    assert unknown.side == "unknown" and "does not say" in unknown.caption


def test_the_shape_of_a_training_sentence_is_in_training_with_the_count_the_replay_gives(shipped):
    meta = shipped.metadata
    cfg = meta["train_config"]
    counts, _ = encoder_decoder._training_draws(cfg["seed"], meta["steps"], cfg["batch_size"], cfg["grammar_size"])
    text = next(iter(counts))
    expected = sum(data.skeleton(s) == data.skeleton(text) for s in counts)
    m = encoder_decoder.shape_membership(text, meta)
    assert m.side == "trained" and m.sentences == expected >= 1
    tiny = {"steps": 1, "train_config": {"task": "translate", "batch_size": 1, "seed": 0, "grammar_size": 100}}
    drawn = next(iter(encoder_decoder._training_draws(0, 1, 1, 100)[0]))
    missed = next(t for t in data.grammar_pool(100) if data.skeleton(t) != data.skeleton(drawn))
    assert encoder_decoder.shape_membership(missed, tiny).side == "never drawn"


def test_the_shipped_translator_knows_the_grammar_not_only_its_templates(shipped):
    """The bars of #25, recomputed: exact match >= 0.98 on new sentences of shapes it trained on and >= 0.95 on
    shapes kept out of training; the metadata holds the same numbers."""
    fresh = encoder_decoder.structural_metrics(shipped.model, shipped.tokenizer)
    assert fresh == shipped.metadata["structural"]  # rounded to 4 places, deterministic on a CPU
    assert fresh["seen"]["exact_match"] >= 0.98 and fresh["unseen"]["exact_match"] >= 0.95
    assert fresh["seen"]["n_sentences"] == fresh["unseen"]["n_sentences"] == 200


def test_the_shipped_translators_decode_the_same_with_and_without_the_caches(shipped, guided):
    """#25: on sentences of unseen skeletons, the decoder's KV cache and the reused encoder change no word."""
    for ck in (shipped, guided):
        for text in data.structural_sentences(12, "unseen", seed=5):
            cached = translate(ck.model, ck.tokenizer, text, ck.model.config.max_len, use_cache=True)
            plain = translate(ck.model, ck.tokenizer, text, ck.model.config.max_len, use_cache=False)
            assert cached.tokens == plain.tokens and cached.stop_reason == plain.stop_reason == "eos"
            assert cached.text == data.reference_translation(text)[0]


# -- #27: the page's claims, computed by the lesson ---------------------------------------------------------------
def lecture_source(ckpt, text: str = "The cat sat on the mat") -> encoder_decoder.Source:
    from viz_model.tokenizer import encode

    return encoder_decoder.source_of(ckpt.tokenizer, encode(ckpt.tokenizer, text, max_len=ckpt.model.config.max_len))


def test_the_source_carries_its_reference_or_why_it_has_none(shipped):
    src = lecture_source(shipped)
    assert src.labels[-1] == "<eos>" and len(src.ids) == len(src.labels) == 7
    assert (src.reference, list(src.alignment)) == KNOWN["The cat sat on the mat"] and src.reason is None
    outside = lecture_source(shipped, "The bank by the river")
    assert outside.reference is None and outside.alignment is None and outside.reason


def test_the_three_attention_claims_hold_on_the_translator_and_fail_on_a_broken_pass(shipped):
    src = lecture_source(shipped)
    steps = encoder_decoder.decode_views(shipped.model, shipped.tokenizer, src.ids, Sampling(), 0)
    assert " ".join(v.token for v in steps[:-1]) == src.reference and steps[-1].stop_reason == "eos"
    assert all(v.labels[v.chosen] == v.token for v in steps)  # the chosen bar is the chosen word
    tgt = encoder_decoder.decoder_input(shipped.tokenizer, steps)[0]
    plain = encoder_decoder.three_attentions(shipped.model, src.ids, tgt)
    padded = encoder_decoder.three_attentions(shipped.model, src.ids, tgt, pad=2)
    for run, pad in ((plain, 0), (padded, 2)):
        claims = encoder_decoder.three_claims(run, len(src.ids), pad, steps, plain["cross"][0])
        assert len(claims) == 3 + (pad > 0) and all(c.ok for c in claims), claims
    broken = {**padded, "cross": (padded["cross"][0].copy(), padded["cross"][1])}
    broken["cross"][0][..., len(src.ids) - 1] += 0.01  # more weight on <eos>: rows sum to 1.01, unlike the decoding's
    assert [c.ok for c in encoder_decoder.three_claims(broken, len(src.ids), 2, steps, plain["cross"][0])] == [
        False, True, False, False]
    broken["cross"][0][..., -1] = 0.01  # weight on a padded key
    assert not encoder_decoder.three_claims(broken, len(src.ids), 2, steps, plain["cross"][0])[1].ok


def test_the_translation_claim_compares_word_for_word():
    reference = KNOWN["The cat sat on the mat"][0]
    assert encoder_decoder.translation_claim(reference.split(), reference).ok
    claim = encoder_decoder.translation_claim(reference.split()[:-1], reference)
    assert not claim.ok and claim.claim == "The translation differs from the reference."


def test_the_held_out_claims_check_the_metadata_against_the_bars(shipped, guided):
    meta = guided.metadata
    g = encoder_decoder.guided_of(meta, guided.model.config)
    claims = encoder_decoder.heldout_claims(meta, g) + encoder_decoder.structural_claims(meta["structural"], g)
    assert all(c.ok for c in claims), claims
    assert "(guided in training)" in claims[1].claim and "best head not guided's" in claims[3].claim
    worse = {**meta, "exact_match": 0.9, "best_alignment_head": {**meta["best_alignment_head"], "accuracy": 0.5}}
    assert [c.ok for c in encoder_decoder.heldout_claims(worse, None)] == [False, False]
    assert encoder_decoder.structural_claims({}, None) == []
    # the unguided translator's best head copy-aware alignment on unseen skeletons, against the same 80 % bar
    unseen = shipped.metadata["structural"]["unseen"]
    claims = encoder_decoder.structural_claims(shipped.metadata["structural"], None)
    assert claims[1].ok == (unseen["best_head"]["copy_aware_alignment"] >= 0.80)


def test_the_metadata_tables_have_one_row_per_split_and_one_column_per_split(guided):
    structural = guided.metadata["structural"]
    rows = encoder_decoder.structural_rows(structural)
    assert [r["n"] for r in rows] == [structural[s]["n_sentences"] for s in encoder_decoder.STRUCTURAL_SPLITS]
    columns = encoder_decoder.by_class_columns(structural)
    assert list(columns) == ["seen skeletons", "unseen skeletons"]
    assert columns["unseen skeletons"]["NOUN"].endswith(f" of {structural['unseen']['best_head_by_class']['NOUN'][1]}")


def test_decoding_keeps_the_encoder_output_and_cross_kv_of_the_source(shipped):
    src = lecture_source(shipped)
    rows, n_layers = encoder_decoder.decoding_tensors(shipped.model, src.ids, 5)
    cfg = shipped.model.config
    assert n_layers == cfg.n_layers
    assert [r["here"] for r in rows] == [f"7 × {cfg.d_model}", *[f"{cfg.n_heads} × 7 × {cfg.d_k}"] * 2,
                                         f"{cfg.n_heads} × 5 × {cfg.d_k}"]


def test_both_decodings_choose_the_same_tokens_and_a_mismatch_is_a_failed_claim(shipped):
    t = encoder_decoder.best_timing(shipped.model, shipped.tokenizer, "the cat sat on the mat", runs=1)
    assert t.claim.ok and t.claim.claim == "Both ways choose the same 7 tokens"  # 6 words and <eos>
    assert not encoder_decoder.DecodeTiming(7, 1.0, 1.0, False, t.cross_kv_shape).claim.ok


def test_crossings_name_each_reordered_word_and_each_word_that_becomes_two():
    src, (target, alignment) = ["the", "dogs", "sat", "<eos>"], ("ethay ogday ka atsay", [0, 1, 1, 2])
    assert encoder_decoder.crossings(alignment, src, target.split()) == ["“dogs” becomes two words: “ogday ka”"]
    moved = encoder_decoder.crossings([0, 2, 1], ["the", "cat", "sat"], ["ethay", "atsay", "atcay"])
    assert moved == ["“atcay” (source word 1 “cat”) comes after “atsay” (source word 2 “sat”)"]
