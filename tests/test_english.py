"""The English model (#24): a byte-level BPE that never reads <unk>, its batches, its bigram baseline, and its
measured quality recomputed here from the shipped checkpoint (and the bigram refitted from WordNet)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from viz_model import english
from viz_model.english import EnglishData, encode_lines, parse_wordnet_line, split_of
from viz_model.lessons import english as lesson
from viz_model.tokenizer import UNK, encode

HOSTILE = {
    "emoji": "the cat 🐈‍⬛ sat 👍🏽 on the mat 🧶",
    "rtl": "שלום עולם and مرحبا بالعالم",
    "zero width": "the\u200bcat\u200d sat\ufeff on the mat",
    "long word": "pneumono" + "x" * 300 + "osis",
    "html": "<b>bold</b> <script>alert(1)</script> &amp; <pad> <eos>",
    "cjk": "注意力就是你所需要的",
    "combining": "cafe\u0301 naïve Zoë",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_input_becomes_unk(english_model, name):
    enc = encode(english_model.tokenizer, HOSTILE[name])
    assert enc.ids and enc.unknown == [] and UNK not in enc.pieces
    assert english_model.tokenizer.token_to_id(UNK) not in enc.ids


def test_lecture_sentences_are_whole_words(english_model):
    """The coreference sentence the word models could not read: every word is one token (a space before it)."""
    enc = encode(english_model.tokenizer, "The animal didn't cross the street because it was too tired")
    assert [t.strip() for t in enc.tokens] == ["the", "animal", "didn", "'t", "cross", "the", "street", "because",
                                                "it", "was", "too", "tired"]


def test_the_checkpoint_is_the_recipe(english_model):
    cfg, meta = english_model.model.config, english_model.metadata
    for k, v in english.RECIPE["model"].items():
        assert getattr(cfg, k) == v, k
    assert meta["recipe"] == json.loads(json.dumps({k: english.RECIPE[k] for k in ("model", "train", "data")}))
    assert english_model.tokenizer.get_vocab_size() == english.VOCAB_SIZE
    assert meta["params"] == english_model.model.num_params()


def test_wordnet_lines_parse_into_gloss_and_examples():
    line = ('00006269 03 n 01 life 0 002 @ 00004258 n 0000 ~ 07993776 n 0000 | living things collectively; '
            '"the oceans are teeming with life"  ')
    assert parse_wordnet_line(line) == ("living things collectively", ["the oceans are teeming with life"])
    shares = [split_of(f"n{i:08d}") for i in range(20_000)]
    assert abs(shares.count("test") / 20_000 - english.TEST_SHARE) < 0.005
    assert split_of("n00006269") == split_of("n00006269")  # stable, not Python's salted hash


def test_batches_start_at_bos_and_score_repeats_from_the_second_copy(english_model):
    tok = english_model.tokenizer
    data = EnglishData(encode_lines(tok, ["a cat sat", "the dog ran far away", "a bird"]), [[2, 10, 3]], 0, 2,
                       tok.get_vocab_size(), batch_size=32, seq_len=32, repeat_fraction=0.5)
    b1, b2 = data.batch(7), data.batch(7)
    assert torch.equal(b1.ids, b2.ids) and torch.equal(b1.targets, b2.targets)  # a function of (seed, step)
    assert (b1.ids[:, 0] == 2).all() and b1.ids.shape == (32, 32)
    row, start = data._repeat_row(random.Random(3))
    n = start - 2
    assert row[1: n + 1] == row[n + 1: 2 * n + 1] and len(row) == 33


def test_kneser_ney_bigram_is_a_distribution():
    rng = random.Random(0)
    seqs = [[rng.randrange(12) for _ in range(rng.randint(2, 9))] for _ in range(200)]
    bigram = lesson.Bigram.fit(seqs, 12)
    for v in (0, 5, 11):
        total = sum(np.exp(bigram.logprobs([v, w]))[0] for w in range(12))
        assert total == pytest.approx(1.0, abs=1e-9)


@pytest.mark.slow
def test_measurements_recomputed_here_match_the_build_and_clear_the_bars(english_model):
    """Every number the Start page shows, recomputed on this CPU from the shipped model and held-out sample, and the
    bigram refitted from WordNet's training split: equal to the build's (which ran on a GPU) and past the bars."""
    meta = english_model.metadata
    heldout = english.load_heldout()
    live = lesson.measure(english_model.model, english_model.tokenizer, heldout)
    for source, rec in meta["heldout"].items():
        for k in ("perplexity", "shuffled_perplexity"):
            assert live["heldout"][source][k] == pytest.approx(rec[k], rel=2e-3), (source, k)
    assert live["induction"]["second_copy_loss"] == pytest.approx(meta["induction"]["second_copy_loss"], abs=1e-3)
    text = english.english_text()
    assert english.heldout_sample(text)["wordnet"] == heldout["wordnet"]  # the shipped sample is the test split's
    tok = english_model.tokenizer
    bigram = lesson.Bigram.fit(encode_lines(tok, text.train), tok.get_vocab_size())
    for source, texts in heldout.items():
        ppl = lesson.bigram_perplexity(bigram, encode_lines(english_model.tokenizer, texts))
        assert ppl == pytest.approx(meta["heldout"][source]["bigram_perplexity"], rel=1e-6)
        live["heldout"][source]["bigram_perplexity"] = ppl
    got = lesson.measures(live)
    assert lesson.passes("perplexity_vs_bigram", got["perplexity_vs_bigram"])             # 0.38 measured
    assert got["perplexity_vs_bigram"] < 0.5
    assert lesson.passes("order_vs_shuffled", got["order_vs_shuffled"])                   # 0.003
    assert lesson.passes("induction_second_vs_first", got["induction_second_vs_first"])   # 0.0001
    # Head roles as the real checkpoints' are measured (repeated random tokens): layer 0 copies the previous token,
    # layer 1 inducts; on held-out English text the same head puts about half its weight on the token before.
    assert lesson.passes("previous_token_head", got["previous_token_head"])               # 0.96
    best = max(live["head_roles"], key=lambda r: r["scores"]["previous-token"])
    assert best["layer"] == 0 and best["role"] == "previous-token"
    on_text = max(live["text_roles"], key=lambda r: r["scores"]["previous-token"])
    assert on_text["layer"] == 0 and 0.5 < on_text["scores"]["previous-token"] < best["scores"]["previous-token"]
    inductors = [r for r in live["head_roles"] if r["role"] == "induction"]
    assert len(inductors) >= 3 and all(r["layer"] == 1 for r in inductors)
    for got_role, want in zip(live["head_roles"], meta["head_roles"], strict=True):
        assert got_role["role"] == want["role"] and got_role["score"] == pytest.approx(want["score"], abs=1e-3)


def test_english_is_the_shipped_default():
    env = {k: v for k, v in os.environ.items() if k != "ATTENTION_LAB_DEFAULT_MODEL"}
    out = subprocess.run([sys.executable, "-c", "from viz_model.ui.models import DEFAULT_MODEL; print(DEFAULT_MODEL)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "english"


# -- the Start page's numbers, computed by the lesson (#27: lessons compute, ui shows) -------------------------
def test_start_facts_are_the_bars_on_the_recorded_numbers_and_fail_past_a_bar(english_model):
    meta = english_model.metadata
    facts = lesson.facts(meta)
    assert len(facts) == len(lesson.measures(meta)) and all(f.ok for f in facts)
    h = meta["heldout"]["wordnet"]
    times = h["bigram_perplexity"] / h["perplexity"]  # #43 (1): in a student's words, the numbers kept, no "bar ≤ 0.8"
    assert facts[0].claim.startswith(f"On text it never saw, it is {times:.1f}× less surprised than a model that only "
                                     f"looks at the previous word (perplexity {h['perplexity']:.1f} against "
                                     f"{h['bigram_perplexity']:.1f})")
    assert facts[0].claim.endswith("(goal: 1.25× or more)")
    assert facts[-1].claim.endswith("(goal: at least 0.6)") and not any("bar" in f.claim for f in facts)
    worse = json.loads(json.dumps(meta))  # the word order no better than shuffled: its goal must fail
    worse["heldout"]["wordnet"]["shuffled_perplexity"] = worse["heldout"]["wordnet"]["perplexity"]
    order = [f for f in lesson.facts(worse) if f.claim.startswith("Word order")]
    assert len(order) == 1 and not order[0].ok and order[0].claim.startswith("Word order does not help")


def test_start_quality_rows_divide_the_recorded_perplexities(english_model):
    meta = english_model.metadata
    rows = lesson.quality_rows(meta)
    assert [r["held-out text"] for r in rows] == [lesson.SOURCE_NAMES.get(s, s) for s in meta["heldout"]]
    h = meta["heldout"]["wordnet"]
    assert rows[0]["÷ shuffled"] == f"{h['perplexity'] / h['shuffled_perplexity']:.3f}"
    no_bigram = {"heldout": {"x": {k: v for k, v in h.items() if k != "bigram_perplexity"}}}
    assert lesson.quality_rows(no_bigram)[0]["÷ bigram"] == "—"
