"""AppTest of the pages on real checkpoints: the instructor's model folders (ATTENTION_LAB_MODEL_DIRS) in the
sidebar with their sizes, a folder the app cannot read refused with its reason, paths in a link refused; Start,
Explorer (paged grid, shared K/V heads, head roles measured on demand), Masks, RoPE (the model's own theta and
scaling) and Generate (its own end token) on a tiny GPT-2 and a tiny Llama written by tests/conftest.py (no
transformers, no download)."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import assert_clean, texts

from viz_model import checkpoint, hf, model_text
from viz_model.lessons import real_models
from viz_model.ui import models

PAGES = ["app_pages/start.py", "app_pages/explorer.py", "app_pages/masks.py", "app_pages/rope.py",
         "app_pages/generate.py"]
TABS = {"app_pages/explorer.py": ("explorer_tab", ["Pipeline", "Query focus", "How sharp is each row?"]),
        "app_pages/masks.py": ("masks_tab", ["Padding", "Causal ≠ sequential", "Dependency map", "Mask vs position",
                                             "Check yourself"]),
        "app_pages/rope.py": ("rope_tab", ["Worked example", "Pair rotation", "Angles", "Relative scores",
                                           "Context extension", "Length test", "Where it acts", "Conventions"]),
        "app_pages/generate.py": ("generate_tab", ["KV cache", "Compare strategies",
                                                   "Teacher forcing vs free running", "Context limit"])}


@pytest.fixture(scope="module")
def folders(model_folders):
    """ATTENTION_LAB_MODEL_DIRS names the folder holding the three tiny model folders, for this module only."""
    root = next(iter(model_folders.values())).parent
    models._read_folders.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(hf.ENV_VAR, str(root))
        yield model_folders
    models._read_folders.cache_clear()


def model_card(at) -> dict:
    """The Start page's card (below the sentence's tokens since #43): a real model's comes in two rows of fields."""
    cards = [d for d in at.dataframe if "layers" in d.value.columns or "position encoding" in d.value.columns]
    return {k: v for d in cards for k, v in d.value.iloc[0].items()}


def chips(at):
    return next(d.value for d in at.dataframe if "vocabulary entry" in list(d.value.iloc[:, 0]))


def grid(at) -> dict:
    return json.loads(at.get_by_key("explorer_grid").proto.spec)


def titles(fig: dict) -> list[str]:
    """The grid's tile titles, row by row (one text trace above the tiles, #42 item 6)."""
    return list(next(t for t in fig["data"] if t["name"] == "titles")["text"])


def app(folders, model: str | None = None, page: str | None = None):
    from conftest import open_app

    # a link names a model by its picker label (Streamlit's URL value of a selectbox)
    titles = {e.key: e.title for e in models.available_models(("transformer",))}
    return open_app(page, timeout=120, query={"model_key": titles.get(model, model)} if model else None)


def test_sidebar_lists_the_instructors_folders_with_their_size(folders):
    at = app(folders)
    picker = at.sidebar.selectbox(key="model_key")
    for name in ("tiny-gpt2", "tiny-llama"):
        folder = folders[name]
        size = (folder / "model.safetensors").stat().st_size
        n = hf.prepare(folder).n_params
        kind = json.loads((folder / "config.json").read_text())["model_type"]
        assert f"{name} · {kind} · {models.params_text(n)} params · {hf.human_bytes(size)}" in picker.options
    assert "broken-bert · unavailable" in picker.options
    assert picker.value == models.DEFAULT_MODEL  # the default model is still the one chosen
    assert models.params_text(124_439_808) == "124M" and models.params_text(1_235_814_400) == "1.2B"


def test_a_folder_the_app_cannot_read_is_refused_with_its_reason(folders):
    at = app(folders, "tiny-gpt2")
    at.sidebar.selectbox(key="model_key").select("broken-bert").run()
    assert any("“broken-bert” cannot be used" in e and "'bert' model" in e for e in texts(at.sidebar.error))
    assert at.session_state["model_key"] == "tiny-gpt2"  # back on the model shown before
    assert not at.exception


@pytest.mark.parametrize("value", ["../../etc", "/etc/passwd", "tiny-gpt2/../../..", "broken-bert"])
def test_a_link_can_only_name_a_listed_model(folders, value):
    at = app(folders, value)
    assert not at.exception
    assert at.session_state["model_key"] == models.DEFAULT_MODEL
    if value == "broken-bert":  # listed, so the link can name it: refused with its reason, as a pick is
        assert any("“broken-bert” cannot be used" in e for e in texts(at.sidebar.error))
    else:
        assert any("not valid here" in t.value for t in at.toast)


def test_start_page_describes_the_real_model_and_uses_its_own_tokenizer(folders):
    at = app(folders, "tiny-llama")
    assert_clean(at)
    ckpt = checkpoint.load_checkpoint(folders["tiny-llama"])
    card = model_card(at)
    assert card["K/V heads"].startswith("2 (grouped-query: 2 query heads share each)")
    assert card["position encoding"] == "RoPE, θ = 500,000, llama3 scaling ×8"
    assert card["memory"] == hf.human_bytes(ckpt.metadata["memory_bytes"]) and card["dtype"] == "float32"
    assert card["layers"] == "6" and card["heads per layer"] == "4"
    text = "the cat sat on the mat"
    at.text_input(key="start_text").set_value(text).run()
    table = chips(at)
    ids = [int(x) for x in table.iloc[2, 1:]]
    assert ids == ckpt.tokenizer.encode(text).ids  # its own post-processor's <s> in front, nothing else added
    assert list(table.iloc[0, 1:3]) == ["<s>", "␣the"] and table.iloc[1, 2] == "▁the"
    assert "as its tokenizer does" in at.toggle(key="start_bos").label
    at.toggle(key="start_bos").set_value(False).run()
    assert [int(x) for x in chips(at).iloc[2, 1:]] == ckpt.tokenizer.encode(text, add_special_tokens=False).ids


def test_gpt2_text_has_no_start_token_and_shows_spaces(folders):
    at = app(folders, "tiny-gpt2")
    ckpt = checkpoint.load_checkpoint(folders["tiny-gpt2"])
    at.text_input(key="start_text").set_value("the cat sat").run()
    assert_clean(at)
    table = chips(at)
    assert [int(x) for x in table.iloc[2, 1:]] == ckpt.tokenizer.encode("the cat sat").ids  # GPT-2 adds nothing
    assert list(table.iloc[0, 1:]) == ["the", "␣cat", "␣sat"] and table.iloc[1, 2] == "Ġcat"
    toggle = at.toggle(key="start_bos")  # <|endoftext|> offered, not put in front by default
    assert toggle.value is False and toggle.label == "Start with `<|endoftext|>` (its tokenizer does not)"
    toggle.set_value(True).run()
    assert chips(at).iloc[0, 1] == "<|endoftext|>" and int(chips(at).iloc[2, 1]) == ckpt.tokenizer.token_to_id(
        "<|endoftext|>")


def test_explorer_pages_a_large_grid_and_names_the_shared_kv_heads(folders):
    at = app(folders, "tiny-llama", "app_pages/explorer.py")
    assert_clean(at)
    fig = grid(at)
    assert fig["layout"]["meta"]["tiles"] == [f"L{lyr}H{h}" for lyr in range(4) for h in range(4)]  # 24 > 16: paged
    assert [t["name"] for t in fig["data"]] == ["masked", "attention", "titles"]  # one tiled heatmap (#42, 6)
    notes = titles(fig)
    assert notes[2] == "L0·H2<br><sub>K/V 1</sub>" and notes[1].endswith("K/V 0</sub>")  # h // (4 / 2)
    first = fig["data"][1]["z"]
    at.segmented_control(key="explorer_grid_layers").set_value(4).run()
    fig = grid(at)
    assert fig["layout"]["meta"]["tiles"] == [f"L{lyr}H{h}" for lyr in (4, 5) for h in range(4)]
    assert fig["data"][1]["z"] != first and "layers 4–5" in fig["layout"]["title"]["text"]
    assert any(s.startswith("✓ Heads in one group read the same keys and values (largest difference 0 ")
               for s in texts(at.success))
    assert any("h // 2 = h′ // 2" in c for c in texts(at.caption))
    assert all(r.key != "explorer_tokenizer" for r in at.radio)  # its own tokenizer only: no word/BPE switch


def test_explorer_measures_head_roles_on_demand_with_the_models_own_vocabulary(folders):
    at = app(folders, "tiny-llama", "app_pages/explorer.py")
    assert not any("broad" in t for t in titles(grid(at)))  # nothing measured on open
    at.button(key="explorer_roles_run").click().run()
    assert_clean(at)
    ckpt = checkpoint.load_checkpoint(folders["tiny-llama"])
    expected = real_models.real_head_roles(ckpt.model, ckpt.tokenizer, bos_id=0)  # Llama starts with <s> = 0
    notes = titles(grid(at))
    for entry, note in zip(expected[:16], notes):
        assert f"<sub>{entry['role']}</sub><br><sub>{entry['score']:.2f}" in note  # name above score (#43, phones)
    table = next(d.value for d in at.dataframe if "induction" in d.value.columns)
    assert len(table) == 24 and list(table["score"]) == [e["score"] for e in expected]


def test_generate_stops_at_the_models_own_end_token(folders):
    at = app(folders, "tiny-gpt2", "app_pages/generate.py")
    at.radio(key="generate_mode").set_value("run").run()
    assert_clean(at)
    stop = at.checkbox(key="generate_stop_eos")
    assert stop.label == "Stop at <|endoftext|>"
    assert any(c == "Stopped: the model chose the end token <|endoftext|>." for c in texts(at.caption))
    assert at.code[0].value.endswith("<|endoftext|>")
    stop.uncheck().run()
    assert not any(c.startswith("Stopped: the model chose") for c in texts(at.caption))
    assert at.code[0].value.count("<|endoftext|>") == at.slider(key="generate_max_new").value  # went on writing


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2"])
def test_every_real_model_page_and_tab_runs(folders, name):
    at = app(folders, name)
    for page in PAGES:
        at.switch_page(page).run()
        assert_clean(at, page)
        key, labels = TABS.get(page, (None, []))
        for label in labels:
            at.session_state[key] = label
            at.run()
            assert_clean(at, (page, label))
    assert at.session_state["model_key"] == name


def test_masks_pad_with_the_models_own_pad_and_the_proofs_pass(folders):
    at = app(folders, "tiny-llama", "app_pages/masks.py")
    ckpt = checkpoint.load_checkpoint(folders["tiny-llama"])
    pad = ckpt.metadata["special_tokens"]["pad"]["id"]  # a spare embedding row: Llama has no pad token
    assert any(f"Replacing every `<row {pad}>`" in s for s in texts(at.success))
    at.session_state["masks_tab"] = "Causal ≠ sequential"
    at.run()
    assert any(s.startswith("✓ Causal: one pass gives the same logits") for s in texts(at.success))


def test_rope_opens_on_the_models_own_theta_and_scaling(folders):
    at = app(folders, "tiny-llama", "app_pages/rope.py")
    at.session_state["rope_tab"] = "Context extension"
    at.run()
    assert_clean(at)
    state = at.session_state
    assert (state["rope_ext_dk"], state["rope_ext_base"], state["rope_ext_method"]) == (8, 500000.0, "llama3")
    assert (state["rope_ext_L"], state["rope_ext_Lp"]) == (16, 128)  # original 16 x factor 8
    assert any(s.startswith("✓ Llama 3.1 at s = L′/L = 8 gives this model's own RoPE frequencies")
               for s in texts(at.success))
    at.number_input(key="rope_ext_L").set_value(32).run()
    assert not any("own RoPE frequencies" in s for s in texts(at.success))  # another setting: no claim about it
    at.session_state["rope_tab"] = "Where it acts"
    at.run()
    assert any("rope_theta = 500,000" in c and "Llama 3.1 scaling ×8" in c for c in texts(at.caption))
    assert sum(s.startswith("✓") for s in texts(at.success)) == 2
    at.sidebar.selectbox(key="model_key").select(models.DEFAULT_MODEL).run()  # back to one of the app's models
    at.session_state["rope_tab"] = "Context extension"
    at.run()
    assert at.session_state["rope_ext_base"] == 10000.0 and at.session_state["rope_ext_method"] == "ntk"


def test_cached_model_is_shared_and_read_only(folders):
    ckpt = models.load_model("tiny-gpt2")
    assert models.load_model("tiny-gpt2") is ckpt and model_text.is_folder_model(ckpt)
    assert not any(p.requires_grad for p in ckpt.model.parameters())
    with torch.no_grad():
        fresh = checkpoint.load_checkpoint(folders["tiny-gpt2"]).model(torch.tensor([[1, 2, 3]])).logits
        assert torch.equal(ckpt.model(torch.tensor([[1, 2, 3]])).logits, fresh)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2"])
def test_text_boxes_survive_hostile_input_on_real_tokenizers(folders, name):
    from test_hostile_input import HOSTILE

    at = app(folders, name)
    for page, key in (("app_pages/start.py", "start_text"), ("app_pages/explorer.py", "explorer_text"),
                      ("app_pages/masks.py", "masks_text"), ("app_pages/generate.py", "generate_text")):
        at.switch_page(page).run()
        for text in HOSTILE:
            box = at.text_input(key=key)
            box.set_value(text[: box.max_chars] if box.max_chars else text).run()
            assert_clean(at, (page, text[:20]))
        at.text_input(key=key).set_value("").run()
        assert any("Type" in w.value for w in at.warning), page  # an empty box says what to do


def test_a_model_too_large_for_the_free_memory_says_so_and_the_page_runs_the_default(folders, monkeypatch):
    models._load.clear()  # loaded models are kept for the server: start from an empty cache
    monkeypatch.setattr(hf, "available_bytes", lambda device: 1000)  # 1000 bytes free: nothing fits
    try:
        at = app(folders, "tiny-llama")
        assert not at.exception
        n = hf.prepare(folders["tiny-llama"]).n_params
        assert any(f"“tiny-llama” could not be loaded: this model has {n:,} parameters" in e and "1000 B" in e
                   and "uses “classroom” instead" in e for e in texts(at.error))
        assert "K/V heads" not in model_card(at)  # the page shows the default model's card
    finally:
        models._load.clear()


def test_the_qkv_page_says_it_measures_the_apps_own_models_on_a_folder_model(folders):
    at = app(folders, "tiny-gpt2", "app_pages/qkv.py")
    assert_clean(at, "qkv")
    assert any("runs on the shipped classroom model" in i.value for i in at.info)
    assert at.session_state["model_key"] == "tiny-gpt2"  # the sidebar keeps the student's choice
    lookup = json.loads(at.get_by_key("qkv_lookup_chart").proto.spec)
    assert lookup["data"] and "The" in json.dumps(lookup)  # the classroom model's word tokens, not GPT-2 pieces
