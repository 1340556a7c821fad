"""The seeded corpus, its held-out split, the toy tasks and batching."""

import random

import torch

from viz_model import data
from viz_model.tokenizer import load_tokenizer


def test_corpus_is_deterministic_for_a_seed():
    assert data.generate_corpus(200, seed=3) == data.generate_corpus(200, seed=3)
    assert data.generate_corpus(200, seed=3) != data.generate_corpus(200, seed=4)


def test_heldout_split_is_disjoint_from_train():
    split = data.corpus_split()
    assert len(split.heldout) >= 100
    assert not set(split.train) & set(split.heldout)
    assert all(data.is_heldout(s) for s in split.heldout)


def test_pronoun_examples_point_at_the_antecedent_that_matches_the_pronoun():
    exs = data.pronoun_examples(50)
    assert len(exs) == 50 and all(data.is_heldout(ex.text) for ex in exs)
    for ex in exs:
        pron, ante, other = ex.words[ex.pronoun_index], ex.words[ex.antecedent_index], ex.words[ex.distractor_index]
        assert data.NOUNS[ante][0] == pron != data.NOUNS[other][0]
        assert ex.words[ex.pronoun_index + 1] == data.NOUNS[ante][1]  # the verb names the antecedent
        assert ex.antecedent_index < ex.pronoun_index


def test_word_tokenizer_maps_corpus_words_one_to_one():
    tok = load_tokenizer("word")
    for ex in data.pronoun_examples(20):
        assert tok.encode(ex.text).tokens == list(ex.words)


def test_toy_tasks_are_correct():
    rng = random.Random(0)
    for _ in range(20):
        c, r, i = (data.toy_example(t, rng) for t in ("copy", "reverse", "induction"))
        n = c.words.index(":")
        assert c.words[n + 1:] == c.words[:n] and c.score_from == n + 1
        m = r.words.index(":")
        assert r.words[m + 1:] == tuple(reversed(r.words[:m]))
        half = len(i.words) // 2
        assert i.words[:half] == i.words[half:] and len(set(i.words[:half])) == half


def test_pad_batch_shifts_targets_and_pads_with_pad_id():
    ids, targets = data.pad_batch([[2, 5, 6, 3], [2, 7, 3]], pad_id=0, score_from=[1, 2])
    assert ids.tolist() == [[2, 5, 6], [2, 7, 0]]
    assert targets.tolist() == [[5, 6, 3], [0, 3, 0]]  # second: prediction of index 1 not scored


def test_task_batches_depend_only_on_seed_and_step():
    tok = load_tokenizer("word")
    a, b = data.TaskData("lm", tok, seed=1), data.TaskData("lm", tok, seed=1)
    assert torch.equal(a.batch(5).ids, b.batch(5).ids)
    assert not torch.equal(a.batch(5).ids[:, :3], a.batch(6).ids[:, :3])
    ind = data.TaskData("induction", tok, seed=0).batch(0)
    scored = ind.targets != 0
    assert 0 < scored.float().mean() < 0.6  # only the second copy is scored


def test_lm_stream_yields_shifted_blocks():
    stream = data.lm_stream([[2, 10, 11, 3]] * 20, block_size=8, batch_size=4, seed=0)
    x, y = next(stream)
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_probe_and_prompt_exist_for_every_task():
    for task in data.TASKS:
        assert len(data.probe_text(task).split()) >= 8
        assert data.sample_prompt(task)


def test_lm_batches_mix_in_repeated_phrases_scored_only_on_the_second_copy():
    tok = load_tokenizer("word")
    d = data.TaskData("lm", tok, seed=0, batch_size=64)
    batch = d.batch(0)
    repeats = 0
    for ids, targets in zip(batch.ids.tolist(), batch.targets.tolist(), strict=True):
        words = [i for i in ids[1:] if i not in (0, d.eos_id)]
        half = len(words) // 2
        if ids[0] == d.bos_id and len(words) % 2 == 0 and words[:half] == words[half:] and half >= 4:
            repeats += 1
            assert sum(t != 0 for t in targets) == half  # second copy (minus its first word) + <eos>
    assert 3 <= repeats <= 20


# -- the toy grammar's sampler (#25) ------------------------------------------------------------------
def _grammar_sample(n: int = 10_000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [data.grammar_sentence(rng) for _ in range(n)]


def test_every_grammar_sentence_parses_within_the_translators_length():
    tok = load_tokenizer("word")
    for text in _grammar_sample(2000, seed=5):
        target, alignment = data.reference_translation(text)  # raises outside the toy language
        assert len(text.split()) <= data.GRAMMAR_MAX_SOURCE and len(target.split()) <= data.GRAMMAR_MAX_TARGET
        assert len(alignment) == len(target.split())
        assert None not in [tok.token_to_id(w) for w in (*text.split(), *target.split())]


def test_every_parser_rule_fires_in_ten_thousand_grammar_sentences():
    fired = {r for text in _grammar_sample() for r in data.parse_rules(text)}
    assert fired == set(data.PARSER_RULES)


def test_parser_rules_name_what_the_parser_did():
    assert data.parse_rules("after the old dog near the box sat , it barked loudly") == [
        "sentence:after clause , clause", "np:adjective", "subject:noun phrase + preposition", "np:bare",
        "subject:pronoun", "complement:ADV loudly"]


def _clauses(text: str) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for w in text.split():
        if data.WORD_CLASSES.get(w) in ("CONJ", "COMMA", "AFTER"):
            out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c]


def test_grammar_sentences_keep_agreement_and_the_pronouns_verb():
    number = {w: n for pair in data.AGREE_VERBS for n, w in enumerate(pair)}  # 0 singular, 1 plural
    owner = {v: (noun, pron) for noun, (pron, v) in data.NOUNS.items()}
    for text in _grammar_sample(3000, seed=2):
        for clause in _clauses(text):
            head = clause[0] if clause[0] != "the" else clause[1 + (clause[1] in data.ADJECTIVES)]
            verb = next(w for w in clause if data.WORD_CLASSES.get(w) == "VERB")
            if verb in number:
                assert number[verb] == (head in data.PLURAL_STEMS or head == "they"), text
            if verb in owner:  # a noun's own verb follows that noun or its pronoun only
                assert head in owner[verb], text


def test_skeleton_is_the_word_class_of_each_unit():
    assert data.skeleton("the keys next to the old dog are here") == "DET NOUN PREP DET ADJ NOUN VERB PRED"
    assert data.skeleton("it barked all day") == "PRON VERB ADV"


def test_structural_split_keeps_heldout_skeletons_out_of_training():
    pool = data.grammar_pool(2000)
    assert len(pool) == 2000 and not any(data.is_heldout_skeleton(data.skeleton(t)) for t in pool)
    unseen = data.structural_sentences(50, "unseen")
    seen = data.structural_sentences(50, "seen")
    assert len(unseen) == len(seen) == 50
    assert all(data.is_heldout_skeleton(data.skeleton(t)) for t in unseen)
    shapes = data.pool_skeletons()
    assert all(data.skeleton(t) in shapes and data.is_heldout(t) for t in seen)
    assert not data.corpus_skeletons() & {data.skeleton(t) for t in unseen}
