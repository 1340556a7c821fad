"""The Attention sinks lesson's math, each number against an independent computation: the first token's share
against heads.positional_scores, the three losses against one pass per text, the hidden-key mask against rows
renormalised by hand, the streaming caches against one forward pass (nothing evicted) and, for a one-layer model
(whose keys depend only on the token and its slot), against a plain forward pass of exactly the tokens the cache
keeps, at positions 0..n-1. Plus the English model's numbers that the page reports."""

import math

import numpy as np
import pytest
import torch

from viz_model.config import ModelConfig
from viz_model.heads import _probs, positional_scores
from viz_model.lessons import sinks as lesson
from viz_model.model import TinyTransformer

torch.set_num_threads(1)


def build(pos: str = "rope", n_layers: int = 2, causal: bool = True, seed: int = 0, max_len: int = 48):
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=n_layers, d_ff=64, max_len=max_len,
                      pos_encoding=pos, mask="causal" if causal else "bidirectional")
    model = TinyTransformer(cfg).eval()
    with torch.no_grad():  # larger weights than the init's 0.02: sharp, position-dependent attention
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0, 0.3)
    return model.requires_grad_(False)


def texts(n: int = 6, seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [[2, *torch.randint(5, 40, (int(torch.randint(3, 14, (1,), generator=g)),), generator=g).tolist()]
            for _ in range(n)]


def stream(n: int = 40, seed: int = 3) -> list[int]:
    return torch.randint(5, 40, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def nll(model, ids: list[int], mask=None) -> np.ndarray:
    """-log p(ids[t+1] | ...) at every t, one plain forward pass."""
    x = torch.tensor([ids])
    lp = torch.log_softmax(model(x, attn_mask=mask).logits[0].double(), -1)
    return -lp[torch.arange(len(ids) - 1), x[0, 1:]].numpy()


def test_first_token_share_equals_the_heads_module_score():
    model, seqs = build(), texts()
    share = lesson.first_token_share(model, seqs)
    ref = positional_scores(_probs(model, seqs, model.config.pad_id), [len(s) for s in seqs])["first-token"]
    assert share.shape == (2, 4)
    np.testing.assert_allclose(share, ref.numpy(), atol=1e-6)
    # and by a plain loop: one text at a time, every query from 1 on
    rows = [model(torch.tensor([s]), trace=True).trace.stack("probs")[:, 0, :, 1:, 0] for s in seqs]  # (L, H, n-1)
    np.testing.assert_allclose(share, torch.cat(rows, -1).double().mean(-1).numpy(), atol=1e-6)


def test_hidden_first_key_is_exactly_the_renormalised_rows():
    model, ids = build(), texts()[0]
    T = len(ids)
    lt = model(torch.tensor([ids]), trace=True).trace.layers[0]
    scores = lt.scores[0].double()  # (H, T, T) before the mask
    allowed = torch.ones(T, T).tril().bool()
    allowed[1:, 0] = False
    by_hand = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
    hidden = model(torch.tensor([ids]), attn_mask=lesson.hide_first_key(T), trace=True).trace.layers[0].probs[0]
    assert float((by_hand - hidden.double()).abs().max()) < 1e-5
    p = lt.probs[0].double()  # and as "remove column 0, divide by the rest"
    renorm = p[:, 1:, 1:] / p[:, 1:, 1:].sum(-1, keepdim=True)
    assert float((renorm - hidden.double()[:, 1:, 1:]).abs().max()) < 1e-5
    check = lesson.renormalised_rows_claim(model, ids)
    assert check.ok and check.error < 1e-5


@pytest.mark.parametrize("pos", ["rope", "learned"])
def test_the_three_losses_equal_one_pass_per_text(pos):
    model, seqs = build(pos), texts()
    cmp = lesson.loss_comparison(model, seqs)
    as_is = np.concatenate([nll(model, s)[1:] for s in seqs])           # targets s[2:]
    dropped = np.concatenate([nll(model, s[1:]) for s in seqs])          # the same targets without s[0]
    hidden = np.concatenate([nll(model, s, lesson.hide_first_key(len(s)))[1:] for s in seqs])
    np.testing.assert_allclose(cmp.as_is, as_is, atol=1e-5)
    np.testing.assert_allclose(cmp.dropped, dropped, atol=1e-5)
    np.testing.assert_allclose(cmp.hidden, hidden, atol=1e-5)
    relative = np.abs(cmp.hidden - cmp.dropped).max()
    if pos == "rope":  # only distances: hiding key 0 is dropping it
        assert relative < 1e-4
        assert [c.ok for c in lesson.loss_claims(model, seqs, cmp)] == [True, True]
    else:  # learned positions: dropping moves every token one position; hiding does not
        assert relative > 1e-3
        assert len(lesson.loss_claims(model, seqs, cmp)) == 1


@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
def test_a_cache_larger_than_the_text_equals_one_forward_pass(pos):
    model, ids = build(pos), stream(30)
    ref = nll(model, ids)
    cached = lesson.stream_caches(model, ids, 31, (0, 1, 4))
    assert cached.shape == (3, 29)
    np.testing.assert_allclose(cached, np.broadcast_to(ref, cached.shape), atol=1e-4)
    np.testing.assert_allclose(lesson.stream_recompute(model, ids, 30), ref, atol=1e-4)
    assert all(c.ok for c in lesson.stream_claims(model, ids, 4))


@pytest.mark.parametrize("pos", ["rope", "alibi"])
def test_one_layer_cache_equals_a_forward_pass_of_the_kept_tokens_at_their_slots(pos):
    """One layer: a cached key/value depends only on its token and its slot, so at every step the cache with sinks
    equals a plain pass over sinks + the most recent tokens at positions 0..n-1; the window alone equals recompute.
    Wrong positions (a key kept at its absolute position) would fail here."""
    model, ids, W, S = build(pos, n_layers=1), stream(40), 8, 2
    cached = lesson.stream_caches(model, ids, W, (0, S))
    for t in range(len(ids) - 1):
        recent = ids[max(0, t - W + 1): t + 1]
        kept = recent if t < W else ids[:S] + ids[t - (W - S) + 1: t + 1]
        assert len(kept) == min(t + 1, W)
        for row, ctx in ((0, recent), (1, kept)):
            x = torch.tensor([ctx])
            want = -torch.log_softmax(model(x).logits[0, -1].double(), -1)[ids[t + 1]].item()
            assert math.isclose(cached[row, t], want, abs_tol=1e-4), (row, t)
    np.testing.assert_allclose(cached[0], lesson.stream_recompute(model, ids, W), atol=1e-4)


def test_recompute_equals_a_plain_loop_and_two_layers_make_the_cache_differ():
    model, ids, W = build(), stream(36), 8
    rec = lesson.stream_recompute(model, ids, W)
    loop = [-torch.log_softmax(model(torch.tensor([ids[max(0, t - W + 1): t + 1]])).logits[0, -1].double(), -1)
            [ids[t + 1]].item() for t in range(len(ids) - 1)]
    np.testing.assert_allclose(rec, loop, atol=1e-5)
    cached = lesson.stream_caches(model, ids, W, (0,))[0]
    np.testing.assert_allclose(cached[: W - 1], rec[: W - 1], atol=1e-4)  # the same until the cache is full
    assert np.abs(cached[W:] - rec[W:]).max() > 1e-3  # then layer 1 keeps what the evicted tokens wrote


def test_bad_inputs_say_why():
    with pytest.raises(ValueError, match="decoders"):
        lesson.first_token_share(build(causal=False), texts())
    with pytest.raises(ValueError, match="RoPE, ALiBi or no positions"):
        lesson.stream_caches(build("learned"), stream(20), 8, (0, 2))
    with pytest.raises(ValueError, match="context"):
        lesson.stream_caches(build(), stream(20), 64, (0, 2))  # larger than max_len 48
    with pytest.raises(ValueError, match="not longer than the window"):
        lesson.stream_experiment(build(), stream(20), 32, 4)
    with pytest.raises(ValueError, match="0 is the window alone"):
        lesson.stream_experiment(build(), stream(40), 16, 0)
    with pytest.raises(ValueError, match="shorter than 3"):
        lesson.loss_comparison(build(), [[2, 5]])
    assert lesson.window_choices(48) == [8, 16, 32] and max(lesson.window_choices(256)) == 256


@pytest.fixture(scope="module")
def english(english_model):
    return english_model


def test_english_model_first_token_heads_and_the_loss_without_it(english):
    seqs = lesson.heldout_ids(english, "wordnet", 32)
    assert all(s[0] == english.tokenizer.token_to_id("<bos>") for s in seqs)
    share = lesson.first_token_share(english.model, seqs)
    assert share.shape == (4, 4) and share.max() > 0.6  # first-token heads exist on held-out text
    cmp = lesson.loss_comparison(english.model, seqs)
    m = cmp.means()
    assert m["dropped"] > m["as_is"] + 0.5  # the model leans on its <bos>: without it the loss rises a lot


def test_english_model_sinks_help_a_sliding_window_on_one_long_text(english):
    ids = lesson.stream_ids(english, "wordnet", "one", 160)
    assert ids.count(english.tokenizer.token_to_id("<bos>")) == 1
    r = lesson.stream_experiment(english.model, ids, 32, 4)
    assert r.perplexity("sinks") < 0.9 * r.perplexity("window")  # measured: about a third lower
    assert 2 in lesson.best_method(r) or 1 in lesson.best_method(r)


def test_the_class_question_is_the_lowest_perplexity_of_a_run_here():
    from test_presets import inputs

    from viz_model.lessons import presets as P

    settings = {"sinks_windows": ["16"], "sinks_n": "2", "sinks_len": "1.5", "sinks_stream": "packed"}
    p = P.compute("sinks_stream_best", inputs(settings))
    ck = inputs().ckpt
    ids = lesson.stream_ids(ck, "wordnet", "packed", 96)  # 1.5 x the classroom model's 64
    caches = lesson.stream_caches(ck.model, ids, 16, (0, 2))
    ppl = [math.exp(x[15:].mean()) for x in (*caches, lesson.stream_recompute(ck.model, ids, 16))]
    assert p.choices == ["the window alone", "the window + the first 2 tokens", "recomputing the window"]
    assert p.answer["correct"] == [i for i, v in enumerate(ppl) if v <= min(ppl) * 1.005]
    assert "16 tokens slides over 96" in p.prompt
    with pytest.raises(ValueError, match="RoPE, ALiBi or no positions"):
        P.compute("sinks_stream_best", inputs({}, "enc-learned"))
    with pytest.raises(ValueError, match="about decoders"):
        P.compute("sinks_stream_best", inputs({}, "encoder-mlm"))


def test_the_handout_draws_the_pages_three_charts_from_a_link():
    from test_presets import model

    from viz_model.handout.views import Models, figures_for

    ck = model("classroom")
    link = {"sinks_windows": ["8", "16"], "sinks_n": "2", "sinks_len": "1.5",
            "sinks_stream": lesson.STREAMS["packed"], "sinks_source": lesson.SOURCES["python_docs"]}
    figs = figures_for("sinks", link, Models("classroom", ck, model))
    assert list(figs) == ["sinks_share_chart", "sinks_loss_chart", "sinks_stream_chart"]
    names = [t.name for t in figs["sinks_stream_chart"].data]
    assert len(names) == 6 and names[0] == "W=8: window alone" and names[1] == "W=8: window + first 2 kept"
    ids = lesson.stream_ids(ck, "python_docs", "packed", 96)  # the link's labels read as the widgets' options
    want = lesson.stream_recompute(ck.model, ids, 16)
    got = figs["sinks_stream_chart"].data[5].y  # W=16 recompute, a running mean over 8 tokens
    assert math.isclose(got[-1], float(np.mean(want[-8:])), abs_tol=1e-6)
    assert "sinks_stream_chart" not in figures_for("sinks", {}, Models("enc-learned", model("enc-learned"), model))
