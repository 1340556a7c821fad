"""Step-wise generation: sampling rules, determinism, EOS, KV cache parity, context limit, teacher forcing."""

import dataclasses
import math

import pytest
import torch

from viz_model.config import ModelConfig
from viz_model.generate import (
    Sampling,
    distinct_n,
    filter_distribution,
    generate,
    sci_from_log,
    score,
    score_stepwise,
    sequence_logprob,
    sequence_prob,
    sequence_sentence,
    strategy_scores,
    top_p_mask,
)
from viz_model.model import TinyTransformer

PROMPT = [2, 7, 11, 5]


def make_model(**overrides) -> TinyTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", vocab_size=40, tie_weights=False, **overrides)
    model = TinyTransformer(cfg).eval()
    with torch.no_grad():  # std 0.02 init gives near-uniform next-token distributions; make them peaked
        model.tok_emb.weight.normal_(0, 1)
        model.head.weight.normal_(0, 3 / cfg.d_model**0.5)
    return model


@pytest.fixture(scope="module")
def model():
    return make_model()


def run(model, **kw):
    kw = {"strategy": "greedy", "max_new_tokens": 12, "seed": 0, "use_cache": True, "stop_at_eos": False, **kw}
    return list(generate(model, PROMPT, **kw))


def ids(steps):
    return [s.token_id for s in steps]


def test_same_seed_gives_same_text_and_other_seeds_differ(model):
    warm = Sampling(temperature=1.5)
    assert ids(run(model, strategy=warm, seed=7)) == ids(run(model, strategy=warm, seed=7))
    assert any(ids(run(model, strategy=warm, seed=s)) != ids(run(model, strategy=warm, seed=7)) for s in (1, 2, 3))


def test_top_k_one_equals_greedy(model):
    assert ids(run(model, strategy=Sampling(temperature=1.3, top_k=1), seed=3)) == ids(run(model, strategy="greedy"))


def test_temperature_to_zero_approaches_greedy(model):
    logits = run(model, max_new_tokens=1)[0].logits
    one_hot = torch.nn.functional.one_hot(logits.argmax(), logits.numel()).double()
    gaps = [(filter_distribution(logits, Sampling(temperature=t))[1] - one_hot).abs().max().item()
            for t in (1.0, 0.3, 0.1, 0.01)]
    assert all(a > b for a, b in zip(gaps, gaps[1:])), gaps
    assert gaps[-1] < 1e-6
    assert ids(run(model, strategy=Sampling(temperature=1e-4), seed=5)) == ids(run(model, strategy="greedy"))


def test_top_p_keeps_the_smallest_set_whose_mass_reaches_p():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
    for p, kept in [(0.45, 1), (0.79, 2), (0.81, 3), (0.97, 4), (1.0, 4)]:
        assert int(top_p_mask(probs, p).sum()) == kept, p
    gen = torch.Generator().manual_seed(0)
    for _ in range(50):  # property: kept mass >= p, and dropping the least likely kept token falls below p
        q = torch.softmax(torch.randn(30, generator=gen, dtype=torch.float64) * 2, -1)
        p = float(torch.rand(1, generator=gen)) * 0.98 + 0.01
        keep = top_p_mask(q, p)
        assert q[keep].sum() >= p
        assert q[keep].sum() - q[keep].min() < p
        assert q[keep].min() >= q[~keep].max() if (~keep).any() else True


def test_filtered_probabilities_are_renormalised_over_the_kept_tokens():
    logits = torch.randn(50, generator=torch.Generator().manual_seed(1)) * 3
    probs, filtered = filter_distribution(logits, Sampling(temperature=0.7, top_k=10, top_p=0.8))
    kept = filtered > 0
    assert abs(probs.sum().item() - 1) < 1e-12 and abs(filtered.sum().item() - 1) < 1e-12
    assert 1 <= int(kept.sum()) <= 10
    tempered = torch.softmax(logits.double() / 0.7, -1)
    assert torch.allclose(filtered[kept], tempered[kept] / tempered[kept].sum(), atol=1e-12)


def test_eos_stops_generation(model):
    free = run(model, max_new_tokens=12)
    eos = free[4].token_id  # pretend the 5th greedy token is the end token
    first = ids(free).index(eos)
    stopped = run(model, max_new_tokens=12, stop_at_eos=True, eos_id=eos)
    assert len(stopped) == first + 1 and stopped[-1].token_id == eos
    assert stopped[-1].stop_reason == "eos" and all(s.stop_reason is None for s in stopped[:-1])
    assert run(model, max_new_tokens=6)[-1].stop_reason == "length"


@pytest.mark.parametrize("pos", ["rope", "learned", "sinusoidal"])
def test_cache_on_and_off_give_the_same_tokens_logits_and_attention(pos):
    m = make_model(pos_encoding=pos)
    kw = {"strategy": Sampling(temperature=1.2, top_p=0.9), "seed": 4, "max_new_tokens": 20}
    on, off = run(m, use_cache=True, **kw), run(m, use_cache=False, **kw)
    assert ids(on) == ids(off)
    assert max((a.logits - b.logits).abs().max().item() for a, b in zip(on, off)) <= 1e-5
    for a, b in zip(on, off):
        assert a.attention.shape == (2, 2, a.position)  # (layers, heads, prefix length)
        assert torch.allclose(a.attention, b.attention, atol=1e-5)
        assert torch.allclose(a.attention.sum(-1), torch.ones(2, 2), atol=1e-5)


def test_context_limit_stops_with_a_reason_and_a_full_prompt_is_refused(model):
    max_len = model.config.max_len
    prompt = list(range(5, 5 + max_len - 3))
    steps = list(generate(model, prompt, max_new_tokens=10, stop_at_eos=False))
    assert len(steps) == 3 and steps[-1].position == max_len - 1
    assert steps[-1].stop_reason == "context"
    with pytest.raises(ValueError, match="reads at most"):
        next(generate(model, list(range(5, 5 + max_len)), max_new_tokens=1))


def test_teacher_forced_scores_equal_step_by_step_scores(model):
    sentence = [9, 14, 3, 22, 8, 3]
    one_pass, separate = score(model, PROMPT, sentence), score_stepwise(model, PROMPT, sentence)
    assert one_pass.shape == (len(sentence),)
    assert (one_pass - separate).abs().max().item() < 1e-5
    steps = run(model, max_new_tokens=8)  # and equal the log p recorded while generating
    forced = score(model, PROMPT, ids(steps))
    assert max(abs(f - s.logprob) for f, s in zip(forced.tolist(), steps)) < 1e-5


def test_sequence_probability_is_the_product_of_conditionals(model):
    steps = run(model, strategy=Sampling(temperature=1.0), seed=2, max_new_tokens=6)
    product = math.prod(s.probs[s.token_id].item() for s in steps)
    assert abs(sequence_prob([s.logprob for s in steps]) - product) < 1e-12
    assert sequence_logprob([s.logprob for s in steps]) < 0


def printed_p(sentence: str) -> str:
    return sentence.split(" and p = **")[1].split("**")[0]


def test_sequence_probability_is_written_from_the_log_sum_when_the_product_underflows():
    """128 tokens sampled at temperature 3 said p = 0.000e+00: the float product of 129 factors underflows.
    129 factors of 1e-5 are 1e-645; the sentence writes that from Σ log p, with Σ log p itself."""
    lps = [math.log(1e-5)] * 129
    assert math.prod(math.exp(lp) for lp in lps) == 0.0 and sequence_prob(lps) == 0.0  # float64 gives up
    sentence = sequence_sentence(lps, "length", "</s>")
    total = sum(lps)
    assert printed_p(sentence) == "1.00e-645"
    mantissa, exponent = printed_p(sentence).split("e")
    assert abs(math.log10(float(mantissa)) + int(exponent) - total / math.log(10)) < 0.005  # the printed value is Σ
    assert f"Σ log p = **{total:.3f}**" in sentence and "log₁₀ p = -645.000" in sentence
    assert sci_from_log(math.log(1.2e-300) - 100 * math.log(10)) == "1.20e-400"
    assert sci_from_log(-math.inf) == "0" and sci_from_log(0.0) == "1.00e+00"
    for p in (0.5, 0.099996, 3.14159e-7, 1e-300, 9.9996e-12):  # where floats suffice: Python's own .2e
        assert sci_from_log(math.log(p)) == f"{p:.2e}", p


def test_the_end_token_is_a_factor_only_when_the_model_wrote_it():
    """A run that stopped on its end token counts it (the last log p); one cut off at the length limit or the context
    has no end factor, and says so, whatever p(end | text) would be."""
    lps = [-1.0, -2.0, -3.0]
    ended = sequence_sentence(lps, "eos", "</s>")
    assert "over **3** factors, the last one the end token `</s>` that the model wrote" in ended
    assert "No end token" not in ended
    for reason, why in [("length", "length limit"), ("context", "model's context"), (None, "not finished")]:
        cut = sequence_sentence(lps, reason, "</s>", end_logprob=math.log(0.25))
        assert "over **3** factors, one per generated token. No end token" in cut, reason
        assert why in cut and "the last one the end token" not in cut, reason
        assert "would add p(`</s>` | text) = 2.50e-01" in cut  # said, not counted:
        assert "Σ log p = **-6.000**" in cut and printed_p(cut) == sci_from_log(-6.0) == printed_p(ended)
    assert "over **1** factor," in sequence_sentence([-1.0], "length", "</s>")


def test_distinct_n_counts_repeated_ngrams():
    assert distinct_n([[1, 2, 3, 4]], 2) == 1.0
    assert distinct_n([[1, 1, 1, 1]], 1) == 0.25
    assert distinct_n([[1, 2, 1, 2], [1, 2]], 2) == 2 / 4


def test_greedy_counts_as_identical_samples_so_it_is_the_least_diverse():
    """Greedy writes the same text every time. Scored on its one run it looked the most diverse strategy (a text
    without repeats has distinct-2 = 1); over n samples it is n copies of that text: 1/n at best."""
    greedy = strategy_scores([[1, 2, 3, 4]], [[-0.1, -0.2, -0.1, -0.3]], 3, deterministic=True)
    assert greedy["distinct-2"] == pytest.approx(1 / 3) and greedy["distinct-1"] == pytest.approx(1 / 3)
    assert greedy["avg log p"] == pytest.approx(-0.175)
    varied = strategy_scores([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 9, 9]], [[-1.0] * 4] * 3, 3)
    assert varied["distinct-2"] == pytest.approx(8 / 9) and varied["avg log p"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="expected 3 sample"):
        strategy_scores([[1, 2]], [[-1.0, -1.0]], 3)  # a sampled strategy needs all its samples


def test_on_the_model_greedy_is_less_diverse_than_hot_sampling(model):
    n = 3
    g = run(model, strategy="greedy", max_new_tokens=10)
    hot = [run(model, strategy=Sampling(temperature=1.5), seed=s, max_new_tokens=10) for s in range(n)]
    greedy = strategy_scores([ids(g)], [[s.logprob for s in g]], n, deterministic=True)
    sampled = strategy_scores([ids(r) for r in hot], [[s.logprob for s in r] for r in hot], n)
    assert greedy["distinct-2"] <= 1 / n + 1e-12 < sampled["distinct-2"]
    assert greedy["avg log p"] > sampled["avg log p"]  # and the most likely text, as the caption says


def test_bad_strategies_are_clear_errors():
    for bad in ({"temperature": -1}, {"top_k": 0}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(ValueError):
            Sampling(**bad)
    assert dataclasses.replace(Sampling(), temperature=0).is_greedy


# -- #27: the page's claims, computed by the lesson ---------------------------------------------------------------
def page_settings(**kw):
    from viz_model.generate import GREEDY
    from viz_model.lessons.generate import Settings

    return Settings(**{"strategy": GREEDY, "max_new": 6, "stop_at_eos": True, "seed": 0, "step_mode": False, **kw})


def labels(ids):
    return [f"#{int(i)}" for i in ids]


def test_the_page_steps_keep_the_chosen_bar_and_rows_that_sum_to_one(model):
    from viz_model.lessons import generate as lesson

    views = lesson.step_views(model, PROMPT, page_settings(stop_at_eos=False), 3, {3}, labels)
    assert [v.token_id for v in views] == ids(run(model, max_new_tokens=6))
    assert all(v.labels[v.chosen] == v.token == f"#{v.token_id}" for v in views)
    check = lesson.row_sum_check(views, 0, 1, 1e-5)
    assert check.ok and check.error < 1e-5
    views[-1].attention = views[-1].attention * 1.01  # a row that no longer sums to 1
    assert not lesson.row_sum_check(views, 0, 1, 1e-5).ok


def test_another_end_id_ends_the_run_and_is_its_end_factor(model):
    from viz_model.lessons import generate as lesson

    first = ids(run(model, max_new_tokens=6))
    end = first[2]  # pretend the model has a second end id: its third token
    views = lesson.step_views(model, PROMPT, page_settings(), -1, {end}, labels)
    assert [v.token_id for v in views] == first[:first.index(end) + 1] and views[-1].stop_reason == "eos"
    assert lesson.end_notes(views)[-1] == "end token (generated)" and not any(lesson.end_notes(views)[:-1])
    assert lesson.end_notes(views[:-1])[-1] == ""  # a run that did not write its end token: no end factor
    assert lesson.end_position([2, 7, end, 5], {end}) == 2 and lesson.end_position([end, 7], {end}) is None


def test_the_cache_claim_holds_on_the_model_and_fails_on_other_tokens(model):
    from viz_model.lessons import generate as lesson

    cached = lesson.cache_run(model, PROMPT, page_settings(), 10, 3)
    assert cached.claim.ok and len(cached.ms_on) == len(cached.ms_off) == 10
    assert cached.claim.claim.startswith("The same 10 tokens with and without the cache")
    assert not dataclasses.replace(cached, same=False).claim.ok
    assert not dataclasses.replace(cached, diff=1e-3 * cached.scale).claim.ok


def test_the_context_claim_holds_when_generation_fills_the_context(model):
    from viz_model.lessons import generate as lesson

    max_len = model.config.max_len
    steps = lesson.context_run(model, PROMPT)
    assert len(steps) == max_len - len(PROMPT) and lesson.context_claim(steps, max_len).ok
    assert not lesson.context_claim(steps[:-1], max_len).ok  # stopped one short of the context
    assert "then it stopped because the sequence filled" in lesson.context_sentence(steps, max_len, "<eos>")


def test_the_strategy_rows_run_greedy_once_and_each_temperature_n_times(model):
    from viz_model.lessons import generate as lesson

    rows, summary = lesson.compare_strategies(model, PROMPT, page_settings(stop_at_eos=False), 2, 3,
                                              lesson.sample_text)
    assert [r["strategy"] for r in rows] == ["greedy", "T=0.5", "T=0.5", "T=1", "T=1", "T=1.5", "T=1.5"]
    assert [r["strategy"] for r in summary] == ["greedy", "T=0.5", "T=1", "T=1.5"]
    greedy = run(model, max_new_tokens=6)
    assert rows[0]["avg log p"] == pytest.approx(sequence_logprob([s.logprob for s in greedy]) / 6)


def test_the_teacher_forcing_table_pads_the_shorter_side(model):
    from viz_model.lessons import generate as lesson

    tf = lesson.teacher_forcing(model, PROMPT, [9, 14, 3], None, 3)
    columns = lesson.forcing_table(tf, len(PROMPT), [9, 14, 3], labels)
    n = max(3, len(tf.free))
    assert columns["position"] == list(range(4, 4 + n)) and columns["true token"][:3] == ["#9", "#14", "#3"]
    assert columns["p(true | true prefix)"][:3] == pytest.approx(tf.forced.exp().tolist())
    assert tf.check.ok
