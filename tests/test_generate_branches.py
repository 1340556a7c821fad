"""#40 (item 5): branching generation on the Generate page. The lesson (where branches first differ, against a plain
loop; a forced token continued with the KV cache, against generate() without the cache and one full recompute) and
the tab in AppTest (default view, a forced token, temperature 0, an empty prompt)."""

import json
import random
from functools import partial

import pytest
import torch

from viz_model import generate as G
from viz_model.lessons import generate as L

PAGE = "app_pages/generate.py"


def plain_divergence(seqs):
    """The first index where the branches do not all agree, written as the obvious double loop."""
    longest = max(len(s) for s in seqs)
    for i in range(longest):
        for s in seqs:
            if i >= len(s) or i >= len(seqs[0]) or s[i] != seqs[0][i]:
                return i
    return None


def test_first_divergence_against_a_plain_loop():
    rng = random.Random(0)
    cases = [[[1, 2, 3], [1, 2, 3]], [[1, 2, 3], [1, 2]], [[1], [2]], [[5, 6], [5, 6], [5, 7]], [[], [1]], [[], []]]
    for _ in range(300):  # short sequences over a small vocabulary: shared prefixes are common
        cases.append([[rng.randrange(3) for _ in range(rng.randrange(6))] for _ in range(rng.choice((2, 3)))])
    for seqs in cases:
        assert L.first_divergence(seqs) == plain_divergence(seqs), seqs
    assert L.first_divergence([[1, 2, 3], [1, 2, 4]]) == 2 and L.first_divergence([[4, 4], [4, 4]]) is None


@pytest.fixture(scope="module")
def classroom():
    from conftest import ROOT

    from viz_model.checkpoint import load_checkpoint
    ckpt = load_checkpoint(ROOT / "assets" / "models" / "classroom.safetensors")
    ckpt.model.eval()
    return ckpt


def runs(ckpt, text, picks, max_new=12):
    from viz_model.model_text import encode_for, token_texts
    ids = encode_for(ckpt, text, bos=True).ids
    return ids, L.branch_runs(ckpt.model, ids, picks, max_new, True, L.eos_id(ckpt), partial(token_texts, ckpt))


def test_forcing_a_token_with_the_cache_equals_a_run_without_it_and_a_full_recompute(classroom):
    from viz_model.model_text import token_texts
    ids, (b,) = runs(classroom, "please send the", [(1.0, 3)], max_new=10)
    at = 1
    token = b.top[at][1][0] if b.top[at][0][0] == b.ids[at] else b.top[at][0][0]  # not the token it wrote
    f = L.force(classroom.model, ids, b, at, token, 10, False, L.eos_id(classroom), partial(token_texts, classroom))
    assert f.branch.ids[:at] == b.ids[:at] and f.branch.ids[at] == token and f.n == 10 - at - 1
    assert f.check.ok and f.error <= L.FORCE_TOL
    prefix = [*ids, *b.ids[:at], token]
    off = list(G.generate(classroom.model, prefix, strategy=G.Sampling(temperature=1.0), max_new_tokens=f.n, seed=3,
                          use_cache=False, stop_at_eos=False, attention=False))  # no cache: the whole text each step
    assert [x.token_id for x in off] == list(f.branch.ids[at + 1:])
    scored = G.score(classroom.model, prefix, [x.token_id for x in off]).exp()  # teacher forcing, one pass
    assert torch.allclose(scored, torch.tensor(f.branch.p[at + 1:], dtype=scored.dtype), atol=1e-5)
    assert f.branch.p[at] == pytest.approx(dict((i, p) for i, _, p in b.top[at])[token])


def test_forcing_the_end_token_ends_the_branch_there(classroom):
    from viz_model.model_text import token_texts
    ids, (b,) = runs(classroom, "please send the", [(1.0, 0)])
    eos = L.eos_id(classroom)
    f = L.force(classroom.model, ids, b, 0, eos, 12, True, eos, partial(token_texts, classroom))
    assert f.branch.ids == (eos,) and f.n == 0 and f.check.ok


def test_temperature_zero_branches_are_identical_whatever_the_seed_and_the_sentence_says_why(classroom):
    ids, bs = runs(classroom, "please send the", [(0.0, 0), (0.0, 7), (0.0, 99)])
    assert L.first_divergence([b.ids for b in bs]) is None and bs[0].ids == bs[2].ids
    assert "temperature 0 is greedy" in L.divergence_sentence(bs, len(ids), "<eos>")


def test_the_defaults_branch_within_three_tokens_on_the_english_model(english_model):
    ids, bs = runs(english_model, "please send the", list(zip(L.BRANCH_TEMPERATURES, L.BRANCH_SEEDS)))
    at = L.first_divergence([b.ids for b in bs])
    assert at is not None and at < 3
    said = L.divergence_sentence(bs, len(ids), "<eos>")
    assert f"first differ at new token **{at + 1}** (position {len(ids) + at})" in said
    from viz_model.model_text import md_token
    assert all(f"**{b.name}** {md_token(b.tokens[at])}" in said for b in bs if at < len(b.ids))


# -- the tab, in AppTest --------------------------------------------------------------------------------------------
def grid(at):
    return next(t for t in json.loads(at.get_by_key("generate_branch_grid").proto.spec)["data"]
                if t["name"] == "branches")


def said(at):
    return " ".join(m.value for m in at.markdown)


@pytest.fixture(scope="module")
def branches_tab():
    from conftest import open_app
    at = open_app(PAGE, timeout=180)
    at.session_state["generate_tab"] = "Branches"
    at.run()
    assert not at.exception
    return at


def test_the_tab_shows_three_branches_and_where_they_first_differ(branches_tab):
    at = branches_tab
    g = grid(at)
    assert len(g["y"]) == 3 and "first differ at new token" in said(at)
    shapes = json.loads(at.get_by_key("generate_branch_grid").proto.spec)["layout"]["shapes"]
    assert len(shapes) == 1  # the divergence frame
    assert not at.error and not any("full recompute" in s.value for s in at.success)  # nothing forced yet


def test_forcing_a_token_adds_its_continuation_and_a_passing_cache_check(branches_tab, classroom):
    at = branches_tab
    _, bs = runs(classroom, "please send the", list(zip(L.BRANCH_TEMPERATURES, L.BRANCH_SEEDS)))  # the page's view
    token_id, token, _ = bs[1].top[1][1]  # branch B, new token 2: the step's 2nd most probable token
    at.selectbox(key="generate_force_branch").set_value(1).run()
    at.selectbox(key="generate_force_at").set_value(1).run()
    pick = at.selectbox(key="generate_force_token")
    assert len(pick.options) == 1 + L.BRANCH_TOP and pick.options[0] == L.NO_FORCE
    pick.set_value(token_id).run()
    assert not at.exception and not at.error
    g = grid(at)
    assert len(g["y"]) == 4  # the forced branch is a fourth row
    assert "forced as new token 2" in said(at)
    checks = [s.value for s in at.success if "full recompute" in s.value]
    assert len(checks) == 1 and checks[0].startswith("✓")
    assert g["text"][3][1] == token and g["text"][3][0] == g["text"][1][0]  # B's first token, then the forced one
    at.selectbox(key="generate_force_token").set_value(-1).run()  # back to "(none)"
    assert len(grid(at)["y"]) == 3


def test_all_temperatures_zero_gives_identical_branches_and_the_page_says_so(branches_tab):
    at = branches_tab
    for i in range(3):
        at.slider(key=f"generate_branch_t{i}").set_value(0.0).run()
    assert not at.exception and "temperature 0 is greedy" in said(at)
    rows = grid(at)["text"]
    assert rows[0] == rows[1] == rows[2]
    assert json.loads(at.get_by_key("generate_branch_grid").proto.spec)["layout"].get("shapes", []) == []


def test_an_empty_prompt_gives_a_message_not_a_traceback(app_test):
    at = app_test(PAGE)
    at.session_state["generate_tab"] = "Branches"
    at.run()
    at.text_input(key="generate_text").set_value("").run()
    assert not at.exception and not at.error
    assert "Type a prompt" in " ".join(w.value for w in at.warning)
    assert not [e for e in at.get("plotly_chart") if "branches" in e.proto.spec]  # nothing to branch from
    for text in ("please", "😀 " + "word " * 400):  # one token; odd unicode, longer than the context
        at.text_input(key="generate_text").set_value(text).run()
        assert not at.exception and not at.error, text
        assert len(grid(at)["y"]) == 3, text


def test_the_class_question_names_the_first_new_token_where_a_and_b_differ():
    from test_presets import chosen, inputs

    from viz_model.lessons import presets as P
    for settings, name in [({}, "classroom"), ({}, "english"), ({"generate_branch_t1": 0.0}, "classroom"),
                           ({"generate_text": "The cat sat on the", "generate_branch_seed1": 5}, "english")]:
        ckpt = inputs(name=name).ckpt
        ids, (a, b) = runs(ckpt, settings.get("generate_text", "please send the"),
                           [(settings.get(f"generate_branch_t{i}", t), settings.get(f"generate_branch_seed{i}", s))
                            for i, (t, s) in enumerate(zip(L.BRANCH_TEMPERATURES[:2], L.BRANCH_SEEDS))])
        at = L.first_divergence([a.ids, b.ids])
        p = P.compute("generate_branch", inputs(settings, name))
        assert chosen(p) == (["never"] if at is None else [f"new token {at + 1}"]), (settings, name)
    assert chosen(P.compute("generate_branch", inputs({"generate_branch_t1": 0.0}))) == ["never"]  # both greedy


def test_a_link_sets_the_branches_temperatures_and_seeds():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # a fresh session opened by a link
    for k, v in {"generate_tab": "Branches", "generate_branch_n": "2", "generate_branch_t1": "1.5",
                 "generate_branch_seed1": "7"}.items():
        at.query_params[k] = v
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.slider(key="generate_branch_t1").value == 1.5 and at.number_input(key="generate_branch_seed1").value == 7
    assert grid(at)["y"] == [0, 1] and "B: T=1.5, seed 7" in json.dumps(
        json.loads(at.get_by_key("generate_branch_grid").proto.spec)["layout"]["yaxis"]["ticktext"])


def test_the_branch_chart_frames_the_first_difference_and_hovers_p_and_q():
    from viz_model.figures.generate import branch_grid
    fig = branch_grid([["a", "b", "c"], ["a", "x"]], [[0.5, 0.25, 0.9], [0.5, 0.125]], [[1.0, 0.5, 1.0], [1.0, 0.3]],
                      ["A", "B"], start=4, diverge=1, forced=(1, 1))
    heat = fig.data[0]
    assert heat.name == "branches" and heat.z[1][1] == 0.125 and heat.text[1][1] == "x"
    assert heat.z[1][2] is None or heat.z[1][2] != heat.z[1][2]  # the shorter branch: no cell
    assert "model p = 0.2500" in heat.hovertext[0][1] and "q = 0.5000" in heat.hovertext[0][1]
    assert "position 5" in heat.hovertext[0][1]
    frames = [(s.x0, s.x1, s.y0, s.y1) for s in fig.layout.shapes]
    assert frames == [(0.5, 1.5, -0.5, 1.5), (0.5, 1.5, 0.5, 1.5)]  # the divergence column, then the forced cell


def test_the_branches_tab_runs_on_a_hugging_face_folder(model_folders):
    """#40's bar: each new view also on a Hugging Face folder. On the tiny GPT-2 folder (random weights) the tab draws
    its three branches, one row each, with nothing refused."""
    from conftest import open_app

    from viz_model import hf
    from viz_model.ui import models

    root = next(iter(model_folders.values())).parent
    models._read_folders.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(hf.ENV_VAR, str(root))
        title = {e.key: e.title for e in models.available_models(("transformer",))}["tiny-gpt2"]
        at = open_app(PAGE, timeout=180, query={"model_key": title})
        at.session_state["generate_tab"] = "Branches"
        at.run()
        assert not at.exception and not at.error
        assert len(grid(at)["y"]) == 3
        assert len(at.selectbox(key="generate_force_token").options) == 1 + L.BRANCH_TOP
    models._read_folders.cache_clear()
