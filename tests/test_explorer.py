"""The Explorer's claims and tables, computed by lessons.explorer (#27: lessons compute, ui shows): each claim holds on
a real pass and fails on an input that breaks it; the grid's pages and the recorded head roles."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from viz_model.config import ModelConfig
from viz_model.lessons import explorer as lesson
from viz_model.model import TinyTransformer, eval_mode
from viz_model.tokenizer import encode


@pytest.fixture(scope="module")
def gqa():
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=64, dropout=0.0,
                      pos_encoding="rope", n_kv_heads=2)
    return TinyTransformer(cfg).eval()


def arrays(model, ids):
    with eval_mode(model):
        return lesson.trace_arrays(model, ids)


def test_heads_of_a_kv_group_share_keys_and_values_but_not_queries(gqa):
    data, cfg = arrays(gqa, list(range(3, 15))), gqa.config
    assert lesson.kv_group(cfg) == 2 and "4 query heads read 2 K/V heads" in lesson.kv_note(cfg)
    claim = lesson.kv_share_claim(data, cfg)
    assert claim.ok and "largest difference 0 over every layer" in claim.claim
    broken = dict(data, k=data["k"].copy())
    broken["k"][:, 1] += 0.5  # head 1 no longer reads its group's keys
    assert not lesson.kv_share_claim(broken, cfg).ok
    assert lesson.kv_mates(cfg, 1) == "Head 1 reads K/V head 0, shared with query head 0."


def test_a_model_without_gqa_has_no_kv_note(classroom):
    cfg = classroom.model.config
    assert lesson.kv_group(cfg) == 1 and lesson.kv_note(cfg) is None and lesson.kv_mates(cfg, 0) is None


def test_a_wide_model_is_paged_and_a_small_one_shown_whole(classroom):
    cfg = classroom.model.config
    assert lesson.grid_page_size(cfg) == (cfg.n_layers, cfg.n_heads)
    assert lesson.grid_page(cfg, 0, 0)[2] == f"{cfg.n_layers} layers × {cfg.n_heads} heads"
    gpt2 = SimpleNamespace(n_layers=12, n_heads=12)
    assert lesson.grid_page_size(gpt2) == (4, 12)
    layers, heads, title = lesson.grid_page(gpt2, 8, 0)
    assert layers == [8, 9, 10, 11] and heads == list(range(12)) and title == "12 layers × 12 heads: layers 8–11"
    assert lesson.grid_layers(gpt2, (4, 0)) == (4, 5, 6, 7)
    wide = SimpleNamespace(n_layers=2, n_heads=32)
    assert lesson.grid_page(wide, 0, 16)[2] == "2 layers × 32 heads: layers 0–1, heads 16–31"


def test_recorded_head_roles_read_in_every_format(classroom):
    meta, cfg = classroom.metadata, classroom.model.config
    grid = lesson.head_roles(meta, cfg.n_layers, cfg.n_heads)
    first = meta["head_roles"][0]
    assert grid[first["layer"]][first["head"]] == f"{first['role']} {first['score']:.2f}"
    assert lesson.head_roles({"head_roles": {"L1.H0": "induction"}}, 2, 2) == [["", ""], ["induction", ""]]
    assert lesson.head_roles({"head_roles": [["a", "b"]]}, 1, 2) == [["a", "b"]]
    assert lesson.head_roles({}, 2, 2) is None and lesson.head_roles({"head_roles": {"9.9": "x"}}, 2, 2) is None
    rows = lesson.roles_rows(meta, lambda layer, head: f"{layer}/{head}")
    assert len(rows) == cfg.n_layers * cfg.n_heads and rows[0]["head"] == f"{first['layer']}/{first['head']}"
    assert rows[0]["previous-token"] == first["scores"]["previous-token"]
    assert lesson.roles_rows({"head_roles": [["a"]]}, str) is None


def test_every_pipeline_step_recomputed_from_the_trace_passes_and_a_wrong_one_fails(classroom):
    model = classroom.model
    ids = torch.tensor([encode(classroom.tokenizer, "the cat sat on the mat").ids])
    with eval_mode(model):
        tr = model(ids, trace=True).trace
    checks = lesson.pipeline_check(model, tr, 1, lesson.score_scale(model))
    steps = lesson.pipeline_steps(ids.shape[1], model.config.d_model, model.config.n_heads, model.config.d_k)
    claims = [c for i in range(len(steps)) for c in lesson.step_claims(i, checks, 0.25)]
    assert len(claims) == 5 and all(c.ok for c in claims)
    assert "Q·Kᵀ·0.25" in claims[1].claim
    wrong = {k: 1.0 for k in checks}  # every recomputation off by 1
    assert not any(c.ok for i in range(len(steps)) for c in lesson.step_claims(i, wrong, 0.25))
    cols = lesson.pipeline_columns(steps, checks)
    assert cols["recomputed, max error"][2] == "—" and cols["recomputed, max error"][0] == f"{checks['qkv']:.1e}"


def test_rows_of_the_big_heatmap_sum_to_one_and_sharpness_compares_with_uniform(classroom):
    data = arrays(classroom.model, encode(classroom.tokenizer, "the cat sat on the mat").ids)
    probs = data["probs"][0, 1]
    assert lesson.head_rows_claim(probs).ok and not lesson.head_rows_claim(probs * 1.01).ok
    ent, uniform, said = lesson.sharpness(data, 0, 1, average=False)
    T = probs.shape[0]
    np.testing.assert_allclose(uniform, np.log(np.arange(1, T + 1)))  # causal: query t reads t + 1 keys
    assert np.all(ent <= uniform + 1e-5) and f"Mean row entropy {ent.mean():.3f} nats" in said
    concat, labels = lesson.concat_heads(data["head_out"][0])
    d_k = classroom.model.config.d_k
    assert concat.shape == (T, classroom.model.config.n_heads * d_k) and labels[d_k] == "h1:0"
