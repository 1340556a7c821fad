"""#27 item 1: lessons compute, ui shows — the passes the pages used to run themselves, now lesson functions, equal to
the model's own full trace; a claim is a Check value; and no module of viz_model/ui calls a model."""

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from viz_model import ASSETS_DIR, generate
from viz_model.checkpoint import load_checkpoint
from viz_model.lessons import common, explorer, normalization
from viz_model.lessons import encoder_decoder as ed
from viz_model.lessons import generate as gen_lesson

ROOT = Path(__file__).resolve().parents[1]


def test_no_module_of_the_ui_calls_a_model():
    """A call of something named model / _model (or x.model(...)) in viz_model/ui: a forward pass in the wrong layer."""
    found = []
    for path in sorted((ROOT / "viz_model" / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name in ("model", "_model"):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == []


def test_layer_attention_is_the_full_traces_layer(classroom):
    ids = [2, *classroom.tokenizer.encode("the cat sat on the mat").ids]
    full = classroom.model(torch.tensor([ids]), trace=True).trace
    for layer in range(classroom.model.config.n_layers):
        probs, allowed = common.layer_attention(classroom.model, ids, layer)
        # layers before the traced one run on the fast path (SDPA): equal to rounding (tests/test_partial_trace.py)
        np.testing.assert_allclose(probs, full.layers[layer].probs[0].detach().numpy(), atol=1e-5)
        assert np.array_equal(allowed, np.tril(np.ones((len(ids), len(ids)), bool)))


def test_trace_arrays_hold_every_layers_internals(classroom):
    ids = [2, *classroom.tokenizer.encode("she gave him the book").ids]
    data = explorer.trace_arrays(classroom.model, ids)
    with torch.no_grad():
        full = classroom.model(torch.tensor([ids]), trace=True).trace
    assert data["layers"] == (0, 1) and data["probs"].shape == (2, 4, len(ids), len(ids))
    np.testing.assert_allclose(data["probs"], full.stack("probs")[:, 0].numpy(), atol=1e-6)
    assert common.row_sums(data["probs"], "rows").ok


def test_batch_attention_is_each_samples_own(classroom):
    ids = torch.tensor([[2, 5, 23, 108], [2, 5, 23, 56]])
    probs = normalization.batch_attention(classroom.model, ids)
    assert probs.shape == (2, 2, 4, 4, 4)
    alone = normalization.batch_attention(classroom.model, ids[1:])
    torch.testing.assert_close(probs[:, 1:], alone, atol=1e-6, rtol=0)


def test_three_attentions_of_a_translator():
    ckpt = load_checkpoint(ASSETS_DIR / "models" / "translate.safetensors")
    out = ed.three_attentions(ckpt.model, (10, 11, 12, 3), (2, 40, 41), pad=2)
    probs, allowed = out["cross"]
    assert probs.shape[2:] == (3, 6) and allowed.shape == (3, 6) and not allowed[:, 4:].any()
    assert np.allclose(probs[..., 4:], 0) and common.row_sums(probs, "cross rows").ok


def test_teacher_forcing_top_picks_are_the_next_token_argmax(classroom):
    tok = classroom.tokenizer
    context = [2, *tok.encode("please send").ids]
    truth = [*tok.encode("the report").ids, tok.token_to_id("<eos>")]
    run = gen_lesson.teacher_forcing(classroom.model, context, truth, tok, tok.token_to_id("<eos>"))
    for i in range(len(truth)):
        with torch.no_grad():
            logits = classroom.model(torch.tensor([context + truth[:i]])).logits[0, -1]
        assert run.top[i] == int(logits.argmax())  # position by position, from the true prefix alone
    assert run.check.ok and run.check.error < 1e-5
    assert torch.allclose(run.forced, generate.score(classroom.model, context, truth))


def test_a_check_is_a_value():
    assert common.Check(1e-7, 1e-5, "x").ok and not common.Check(1e-3, 1e-5, "x").ok
    assert not common.Check(float("nan"), 1e-5, "x").ok
    bad = np.full((2, 3), 0.5)
    assert common.row_sums(bad, "rows").error == pytest.approx(0.5) and not common.row_sums(bad, "rows").ok


# Streamlit's caches on the pages: results (figures, model passes, measurements) through the one helper
# ui.cache.cached; st.cache_resource only for the server's resources: models and tokenizers (ui.models), the job
# registry (ui.jobs), the class store (ui.class_mode).
RESOURCE_MODULES = {"cache.py", "models.py", "jobs.py", "class_mode.py"}


def test_pages_cache_results_one_way():
    found = []
    for f in sorted([*(ROOT / "viz_model" / "ui").glob("*.py"), *(ROOT / "app_pages").glob("*.py")]):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("cache_data", "cache_resource"):
                if node.attr == "cache_data" or f.name not in RESOURCE_MODULES or f.parent.name != "ui":
                    found.append(f"{f.name}:{node.lineno} {node.attr}")
    assert not found, f"cache these with ui.cache.cached: {found}"
