"""Attention vs attribution (#40, item 2): every number the page shows against an independent computation.

Rollout against a hand-written product of (0.5·A + 0.5·I) matrices; Spearman's ρ against pandas' ranks and the
no-ties formula; on the English and classroom models, occlusion against one pass per occluded sentence and gradient
× input against autograd on a second path (a copy of the model fed a leaf embedding); on GPT-2- and Llama-shaped
folders, every method against `transformers` itself (the test-time reference tests/test_hf.py uses)."""

from __future__ import annotations

import copy
import math
import threading

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from test_hf import _gpt2, _llama

from viz_model import checkpoint
from viz_model.lecture import PROMPTS
from viz_model.lessons import attribution as lesson
from viz_model.model_text import encode_for, pad_token, uses_bos

SENTENCE = PROMPTS[2]  # "The trophy didn't fit in the suitcase because it"


def _run(ckpt, text=SENTENCE, layer=None, head=0, rank=0):
    enc = encode_for(ckpt, text, bos=uses_bos(ckpt))
    target = lesson.top_next(ckpt.model, enc.ids)[rank][0]
    layer = ckpt.model.config.n_layers - 1 if layer is None else layer
    res = lesson.attribute(ckpt.model, enc.ids, enc.tokens, layer=layer, head=head, target=target,
                           start=int(uses_bos(ckpt)), baseline=pad_token(ckpt))
    return enc, target, res


# -- rollout and Spearman, on their own -------------------------------------------------------------------------
def test_rollout_is_the_product_of_half_attention_plus_half_identity():
    torch.manual_seed(0)
    L, H, T = 3, 2, 5
    probs = torch.softmax(torch.randn(L, H, T, T), -1).tril()
    probs = probs / probs.sum(-1, keepdim=True)
    want = [[float(i == j) for j in range(T)] for i in range(T)]
    for layer in range(L):  # plain Python: A_hat = 0.5 mean_h + 0.5 I, rows renormalised, then A_hat @ product
        a = [[0.5 * sum(float(probs[layer, h, i, j]) for h in range(H)) / H + 0.5 * (i == j) for j in range(T)]
             for i in range(T)]
        a = [[v / sum(row) for v in row] for row in a]
        want = [[sum(a[i][k] * want[k][j] for k in range(T)) for j in range(T)] for i in range(T)]
    got = lesson.rollout(probs)
    assert got.shape == (T, T)
    assert np.allclose(got.numpy(), np.array(want), atol=1e-12)
    assert np.allclose(got.sum(-1).numpy(), 1.0, atol=1e-12)
    assert np.allclose(np.triu(got.numpy(), 1), 0.0)  # causal attention: rollout reaches no later token


def test_rollout_refuses_a_wrong_shape():
    with pytest.raises(ValueError, match="shape"):
        lesson.rollout(torch.ones(2, 3, 4))


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_pandas_ranks_and_the_no_ties_formula(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=9), rng.normal(size=9)
    d = pd.Series(a).rank().to_numpy() - pd.Series(b).rank().to_numpy()
    n = len(a)
    assert lesson.spearman(a, b) == pytest.approx(1 - 6 * (d ** 2).sum() / (n * (n * n - 1)), abs=1e-12)
    ties_a, ties_b = np.round(a), np.round(b * 2) / 2  # ties on both sides: average ranks, then Pearson
    ra, rb = pd.Series(ties_a).rank().to_numpy(), pd.Series(ties_b).rank().to_numpy()
    want = np.corrcoef(ra, rb)[0, 1] if ra.std() > 0 and rb.std() > 0 else float("nan")
    got = lesson.spearman(ties_a, ties_b)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


def test_spearman_is_undefined_for_a_constant_method():
    assert math.isnan(lesson.spearman([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]))
    assert lesson.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


# -- the methods on the shipped models --------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["english", "classroom"])
def ckpt(request, english_model, classroom):
    return english_model if request.param == "english" else classroom


def test_occlusion_matches_one_pass_per_occluded_sentence(ckpt):
    enc, target, res = _run(ckpt)
    model, base = ckpt.model, pad_token(ckpt)[0]

    def logp(ids):
        with torch.no_grad():
            return float(F.log_softmax(model(torch.tensor([ids])).logits[0, -1].double(), -1)[target])

    full = logp(enc.ids)
    want = [full - logp(enc.ids[:p] + [base] + enc.ids[p + 1:]) for p in res.positions]
    assert np.allclose(res.scores["occlusion"], want, atol=2e-4)
    assert res.logp == pytest.approx(full, abs=1e-4)
    assert res.positions == list(range(int(uses_bos(ckpt)), len(enc.ids)))  # the start token is left out


def test_gradient_times_input_matches_autograd_on_a_second_path(ckpt):
    enc, target, res = _run(ckpt)
    model = copy.deepcopy(ckpt.model).eval()
    emb = ckpt.model.tok_emb(torch.tensor([enc.ids])).detach().requires_grad_(True)  # (1, T, d) a leaf

    class Fixed(torch.nn.Module):  # the copy's embedding layer hands out the leaf (the tied head keeps its weight)
        weight = model.tok_emb.weight

        def forward(self, ids):
            return emb

    model.tok_emb = Fixed()
    logp = F.log_softmax(model(torch.tensor([enc.ids])).logits[0, -1].double(), -1)[target]
    (grad,) = torch.autograd.grad(logp, emb)
    want = (grad[0].double() * emb[0].double()).sum(-1)[res.positions].detach().numpy()
    assert np.allclose(res.scores["grad_x_input"], want, rtol=1e-4, atol=1e-6)
    assert np.abs(want).max() > 1e-3  # a real signal, not zeros agreeing with zeros


def test_attention_scores_are_the_traced_rows_and_rollout_its_last_row(ckpt):
    enc, target, res = _run(ckpt, layer=0, head=1)
    with torch.no_grad():
        trace = ckpt.model(torch.tensor([enc.ids]), trace=True).trace
    probs = torch.stack([layer.probs[0] for layer in trace.layers])  # (L, H, T, T)
    assert np.allclose(res.scores["head"], probs[0, 1, -1, res.positions].numpy(), atol=1e-6)
    assert np.allclose(res.scores["mean"], probs[0, :, -1, res.positions].mean(0).numpy(), atol=1e-6)
    assert np.allclose(res.scores["rollout"], lesson.rollout(probs)[-1, res.positions].numpy(), atol=1e-6)
    if uses_bos(ckpt):
        assert res.start_share == pytest.approx(float(probs[0, 1, -1, 0]), abs=1e-6)


def test_rank_matrix_is_spearman_of_every_pair_and_the_checks_pass(ckpt):
    _, _, res = _run(ckpt)
    names = list(res.scores)
    assert names == list(lesson.METHODS)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            ra, rb = (pd.Series(res.scores[m]).rank().to_numpy() for m in (a, b))
            assert res.rho[i, j] == pytest.approx(np.corrcoef(ra, rb)[0, 1], abs=1e-9)
    claims = lesson.claims(res)
    assert len(claims) >= 3 and all(c.ok for c in claims), claims


def test_the_picked_target_is_explained_not_the_argmax(english_model):
    enc, target, res = _run(english_model, rank=2)
    top = lesson.top_next(english_model.model, enc.ids)
    assert target == top[2][0] != top[0][0]
    assert res.logp == pytest.approx(math.log(top[2][1]), abs=1e-4)


def test_the_sentences_are_chosen_from_the_numbers(classroom):
    for text in (SENTENCE, "The cat sat on the mat", "She gave him the book because he"):
        _, _, res = _run(classroom, text)
        said = lesson.agreement_sentence(res)
        j = lesson.METHODS.index("occlusion")
        names = lesson.method_names(res.layer, res.head)
        agree = [m for i, m in enumerate(lesson.METHODS[:-1]) if res.rho[i, j] >= lesson.AGREE]
        head, _, rest = said.partition(" rank")
        for m in lesson.METHODS[:-1]:
            assert (names[m] in head) == (m in agree), (m, said)
        assert f"{res.rho[lesson.METHODS.index(agree[0]), j]:.2f}" in said if agree else "no method" in said
        tops = lesson.top_tokens(res)
        assert tops["occlusion"] == int(np.argmax(res.scores["occlusion"]))
        assert f"occlusion (Δ log p): “{res.tokens[tops['occlusion']].strip()}”" in lesson.top_sentence(res)


# -- bad input --------------------------------------------------------------------------------------------------
def test_one_token_empty_and_too_long_inputs_say_why(classroom):
    model = classroom.model
    with pytest.raises(ValueError, match="nothing to attribute"):
        lesson.attribute(model, [2, 5], ["<bos>", "The"], layer=0, head=0, target=5, start=1)
    with pytest.raises(ValueError, match="empty"):
        lesson.attribute(model, [2], ["<bos>"], layer=0, head=0, target=5, start=1)
    with pytest.raises(ValueError, match="at most 64"):
        lesson.attribute(model, [5] * 65, ["x"] * 65, layer=0, head=0, target=5)
    with pytest.raises(ValueError, match="layers 0–1"):
        lesson.attribute(model, [2, 5, 6], ["<bos>", "a", "b"], layer=2, head=0, target=5, start=1)


def test_an_encoder_has_no_prediction_to_attribute(classroom):
    import dataclasses

    from viz_model.model import TinyTransformer

    enc = TinyTransformer(dataclasses.replace(classroom.model.config, mask="bidirectional")).eval()
    with pytest.raises(ValueError, match="encoder"):
        lesson.top_next(enc, [2, 5, 6])


def test_a_token_that_is_the_baseline_has_no_effect_and_is_named(classroom):
    ids = encode_for(classroom, "The cat sat on the mat", bos=True).ids
    ids = ids[:3] + [pad_token(classroom)[0]] + ids[3:]  # a <pad> typed into the sentence, read as a plain token
    tokens = ["t"] * len(ids)
    res = lesson.attribute(classroom.model, ids, tokens, layer=1, head=0, target=5, start=1,
                           baseline=pad_token(classroom))
    assert res.same_as_baseline == [2] and res.scores["occlusion"][2] == 0.0
    fact = lesson.claims(res)[-1]
    assert fact.ok and "replacing it by itself gives Δ = 0" in fact.claim


def test_two_threads_on_the_shared_model_get_their_own_gradients(english_model):
    """The sessions share one module: two attributions at once give what each gives alone (the hook and lock)."""
    texts = (SENTENCE, "Send the report before the")
    alone = {t: _run(english_model, t)[2].scores["grad_x_input"] for t in texts}
    got: dict[str, np.ndarray] = {}

    def work(t):
        for _ in range(3):
            got[t] = _run(english_model, t)[2].scores["grad_x_input"]

    threads = [threading.Thread(target=work, args=(t,)) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in texts:
        assert np.allclose(got[t], alone[t], rtol=1e-5, atol=1e-7)


# -- Hugging Face folders against transformers --------------------------------------------------------------------
@pytest.fixture(scope="module", params=["gpt2", "llama"])
def folder_pair(request, tmp_path_factory):
    torch.manual_seed(3)
    folder = tmp_path_factory.mktemp(request.param)
    ref = {"gpt2": _gpt2, "llama": _llama}[request.param](folder)
    return ref.eval(), checkpoint.load_checkpoint(folder)


def test_every_method_matches_transformers_on_a_folder(folder_pair):
    ref, ckpt = folder_pair
    enc = encode_for(ckpt, "the dog ate the bone because it", bos=uses_bos(ckpt))
    target = lesson.top_next(ckpt.model, enc.ids)[0][0]
    L = ckpt.model.config.n_layers
    res = lesson.attribute(ckpt.model, enc.ids, enc.tokens, layer=L - 1, head=1, target=target,
                           start=int(uses_bos(ckpt)), baseline=pad_token(ckpt))
    x = torch.tensor([enc.ids])
    emb = ref.get_input_embeddings()(x).detach().requires_grad_(True)
    out = ref(inputs_embeds=emb, output_attentions=True)
    logp = F.log_softmax(out.logits[0, -1].double(), -1)[target]
    (grad,) = torch.autograd.grad(logp, emb)
    pos = res.positions
    attn = torch.stack([a[0] for a in out.attentions]).detach()  # (L, H, T, T)
    assert res.logp == pytest.approx(float(logp.detach()), abs=1e-4)
    assert np.allclose(res.scores["head"], attn[L - 1, 1, -1, pos].numpy(), atol=1e-5)
    assert np.allclose(res.scores["rollout"], lesson.rollout(attn)[-1, pos].numpy(), atol=1e-5)
    gxi = (grad[0].double() * emb[0].double()).sum(-1)[pos].detach().numpy()
    assert np.allclose(res.scores["grad_x_input"], gxi, rtol=1e-3, atol=1e-6)
    base = pad_token(ckpt)[0]
    with torch.no_grad():
        occluded = [float(F.log_softmax(ref(torch.tensor([enc.ids[:p] + [base] + enc.ids[p + 1:]])).logits[0, -1]
                                        .double(), -1)[target]) for p in pos]
    assert np.allclose(res.scores["occlusion"], float(logp.detach()) - np.array(occluded), atol=1e-4)
