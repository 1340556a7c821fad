"""#41 item 2, one body per idea: one row-sum check, one teacher forcing, one claim type on the Start page, eval mode
restored, and caches of what a file says keyed by the file's identity (path, mtime, size), not its path alone."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from viz_model import checkpoint, files
from viz_model import generate as G
from viz_model.config import ModelConfig
from viz_model.lessons import common
from viz_model.lessons import english as english_lesson
from viz_model.lessons import generate as gen_lesson
from viz_model.lessons import train as train_lesson
from viz_model.model import TinyTransformer


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TinyTransformer(ModelConfig.preset("tiny", vocab_size=40)).eval()


# -- one row-sum check -------------------------------------------------------------------------------------------
def test_the_row_sum_check_fails_on_a_nan_row_and_reads_tensors_and_arrays_alike():
    probs = torch.softmax(torch.randn(2, 5, 5), -1)
    err = common.row_sum_error(probs)
    assert err < common.ROW_SUM_TOL and err == pytest.approx(common.row_sum_error(probs.numpy()), abs=1e-5)
    bad = probs.numpy().copy()
    bad[0, 3] = np.nan  # a row the softmax lost: never a ✓ (np.nanmax used to skip it)
    assert not common.row_sums(bad, "rows").ok
    assert common.row_sum_error(np.zeros((0, 4))) == 0.0
    half = np.full((2, 3), 0.5)
    assert common.row_sums(half, "rows").error == pytest.approx(0.5)


# -- one teacher forcing -----------------------------------------------------------------------------------------
def test_generate_and_train_return_the_one_teacher_forcing_with_the_same_numbers(model):
    context, truth = [2, 7, 11], [5, 9, 14, 3]
    gen = gen_lesson.teacher_forcing(model, context, truth, None, 3)
    assert type(gen) is common.TeacherForcing and gen.check.ok
    assert torch.allclose(gen.forced, G.score(model, context, truth))
    one = common.TeacherForcing.of(model, context, truth)  # what Train's check builds on, from the same pass
    assert torch.equal(one.forced, gen.forced) and one.top == gen.top
    logits = model(torch.tensor([context + truth[:-1]])).logits[0, len(context) - 1:]
    assert one.top == [int(i) for i in logits.argmax(-1)]
    run = train_lesson.Run(train_lesson.TrainSpec(steps=10))
    tf = train_lesson.teacher_forcing_check(run, "the cat sat")
    assert type(tf) is common.TeacherForcing and tf.check.ok
    rows = train_lesson.forcing_rows(run, tf, "the cat sat")
    assert [r["loss"] for r in rows] == pytest.approx((-tf.forced).tolist())


def test_teacher_forcing_runs_in_eval_mode_and_gives_the_mode_back_also_when_the_pass_fails(model):
    model.train()
    try:
        G.teacher_forced(model, [2, 7, 11])
        assert model.training
        with pytest.raises(IndexError):
            G.teacher_forced(model, [2, 7, 10_000])  # an id past the vocabulary
        assert model.training
    finally:
        model.eval()


# -- one claim type, eval mode restored ---------------------------------------------------------------------------
def test_the_english_lesson_has_no_claim_type_of_its_own_and_gives_a_training_model_back_in_training_mode(model):
    assert not hasattr(english_lesson, "Claim")  # its ✓/✗ are lessons.common.Fact values
    assert english_lesson.passes("previous_token_head", 0.7) and not english_lesson.passes("order_vs_shuffled", 0.7)
    assert not english_lesson.passes("perplexity_vs_bigram", float("nan"))
    model.train()
    try:
        losses = english_lesson.token_losses(model, [[2, 7, 11, 5], [2, 9, 3]])
        assert model.training and [len(x) for x in losses] == [3, 2]
    finally:
        model.eval()


# -- caches keyed by file identity --------------------------------------------------------------------------------
def _write_kind(weights, kind: str) -> None:
    doc = {"format": checkpoint.FORMAT, "version": checkpoint.VERSION, "kind": kind, "config": {}, "metadata": {}}
    path = checkpoint.json_path(weights)
    path.write_text(json.dumps(doc))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later mtime even on a coarse clock


def test_the_model_kind_is_read_again_when_the_checkpoint_json_changes(tmp_path):
    from viz_model.ui import models

    weights = tmp_path / "mine.safetensors"
    _write_kind(weights, "rnn")
    assert models._kind(str(weights)) == "rnn"
    _write_kind(weights, "lstm")  # the same name, retrained as another kind
    assert models._kind(str(weights)) == "lstm"


def test_a_file_stamp_changes_with_the_file_and_a_folder_stamp_with_any_file_in_it(tmp_path):
    f = tmp_path / "a.json"
    assert files.file_stamp(f) is None and files.dir_stamp(tmp_path / "none") == ()
    f.write_text("{}")
    first, folder = files.file_stamp(f), files.file_stamp(tmp_path)
    f.write_text('{"x": 1}')
    assert files.file_stamp(f) != first and files.file_stamp(tmp_path) != folder
    assert [name for name, *_ in files.dir_stamp(tmp_path, ".json")] == ["a.json"]


# -- memo ways: cached() and st.cache_resource (tests/test_lessons_compute.py), else lru_cache that says why ----------
ROOT = Path(__file__).resolve().parents[1]


def _module_caches(tree: ast.Module) -> list[int]:
    """Lines of module-level dict/OrderedDict stores (a hand-made memo: `_X = {}`, `_X: dict[...] = OrderedDict()`)."""
    out = []
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        empty_dict = isinstance(value, ast.Dict) and not value.keys
        made = isinstance(value, ast.Call) and not value.args and not value.keywords and getattr(
            value.func, "id", getattr(value.func, "attr", "")) in ("dict", "OrderedDict", "WeakKeyDictionary",
                                                                  "WeakValueDictionary")
        if empty_dict or made:
            out.append(node.lineno)
    return out


def test_every_lru_cache_says_why_and_no_module_keeps_a_memo_dict_of_its_own():
    unexplained, stores = [], []
    for f in sorted([*(ROOT / "viz_model").rglob("*.py"), *(ROOT / "app_pages").rglob("*.py")]):
        text = f.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        for node in ast.walk(tree):
            for d in getattr(node, "decorator_list", []):
                target = d.func if isinstance(d, ast.Call) else d
                name = getattr(target, "attr", getattr(target, "id", ""))
                if name in ("lru_cache", "cache"):
                    said = " ".join(lines[max(0, d.lineno - 4): d.lineno]).lower()  # the comment above, or beside
                    if "pure" not in said:
                        unexplained.append(f"{f.relative_to(ROOT)}:{d.lineno}")
        # ui's page registries (_pages: url path -> st.Page, given by app.py) are tables, not memos
        stores += [f"{f.relative_to(ROOT)}:{n}" for n in _module_caches(tree) if "_pages" not in lines[n - 1]]
    assert not unexplained, f"say why each lru_cache is a pure function of immutable arguments: {unexplained}"
    assert not stores, f"memo through ui.cache.cached or a commented lru_cache: {stores}"
