"""What the class sees while presenting (#39, item 4): answers hidden on the students' screens until Reveal, the
lecture's sentence carried across pages, the join link students can open and its QR code."""

from __future__ import annotations

import base64
import io

import numpy as np
import segno
from conftest import open_app, open_tab, plotly_array, spec, texts

from viz_model.lessons import classview as cv
from viz_model.runtime.class_mode import ClassStore, Question

# -- pure parts ----------------------------------------------------------------------------------------------------


def _q(revealed=False, page=None) -> Question:
    return Question(1, "attention", "Which?", ("a", "b"), {"correct": [0], **({"page": page} if page is not None
                                                                              else {})}, revealed)


def test_a_students_answers_are_hidden_only_on_the_page_asked_while_the_question_is_open():
    keys = cv.ANSWERS[""]
    assert cv.hidden_answers("", leading=False, question=_q(page=""), leader_page="explorer") == keys
    assert cv.hidden_answers("", leading=True, question=_q(page=""), leader_page="") == ()  # the leader sees all
    assert cv.hidden_answers("", leading=False, question=_q(revealed=True, page=""), leader_page="") == ()
    assert cv.hidden_answers("", leading=False, question=None, leader_page="") == ()
    assert cv.hidden_answers("explorer", leading=False, question=_q(page=""), leader_page="explorer") == ()
    # a question that did not record its page: the page the leader shows
    assert cv.hidden_answers("rope", leading=False, question=_q(), leader_page="rope") == cv.ANSWERS["rope"]
    assert cv.hidden_answers("cost", leading=False, question=_q(page="cost"), leader_page="cost") == ()  # none listed


def test_a_sentence_set_on_one_page_opens_the_next_page_that_takes_text_unless_its_link_names_one():
    state: dict = {}
    cv.carry_out(state, "explorer_text", "The bank by the river", "default", named=True)
    assert cv.carry_in(state, {}, "masks_text") and state["masks_text"] == "The bank by the river"
    cv.carry_out(state, "masks_text", state["masks_text"], "The cat sat on the mat")
    assert not cv.carry_in(state, {}, "masks_text")  # taken once: the student's own edits are not undone
    assert not cv.carry_in(state, {"qkv_text": "x"}, "qkv_text") and "qkv_text" not in state  # the link's own
    assert not cv.carry_in(state, {}, "ed_text") and "ed_text" not in state  # not a sentence box
    # a page's default, as it first opens, does not become the sentence; a link naming it, or typing it, does
    cv.carry_out(state, "qkv_text", "The cat sat on the mat", "The cat sat on the mat")
    assert state[cv.CARRIED][0] == "The bank by the river"
    cv.carry_out(state, "masks_text", "The cat sat on the mat", "The cat sat on the mat")  # typed over the carried
    assert state[cv.CARRIED][0] == "The cat sat on the mat"
    cv.carry_out(state, "encoder_text", "She gave him the book", "The cat sat on the mat")
    cv.carry_out(state, "qkv_text", "The cat sat on the mat", "The cat sat on the mat", named=True)
    assert cv.carry_in(state, {}, "masks_text") and state["masks_text"] == "The cat sat on the mat"


def test_a_link_opened_on_this_machine_names_the_network_address_and_keeps_port_path_and_code():
    assert cv.reachable_link("http://localhost:8501/?class=ABCD", lan="192.168.1.7") == \
        "http://192.168.1.7:8501/?class=ABCD"
    assert cv.reachable_link("http://127.0.0.1:8501/lab/?class=ABCD", lan="10.0.0.2") == \
        "http://10.0.0.2:8501/lab/?class=ABCD"
    # a configured address wins over the guessed one; Streamlit's default "localhost" is no address
    assert cv.reachable_link("http://localhost:8501/?class=ABCD", configured=("localhost", "lab.example.edu"),
                             lan="10.0.0.2") == "http://lab.example.edu:8501/?class=ABCD"
    assert cv.reachable_link("https://lab.example.edu/?class=ABCD", lan="10.0.0.2") == \
        "https://lab.example.edu/?class=ABCD"
    assert cv.reachable_link("http://localhost:8501/?class=ABCD", lan=None) == "http://localhost:8501/?class=ABCD"
    assert cv.reachable_link("/?class=ABCD", lan="10.0.0.2") == "/?class=ABCD"  # no address to replace
    assert cv.reachable_link("http://[::1]:8501/?class=ABCD", lan="fe80::1") == "http://[fe80::1]:8501/?class=ABCD"


def test_loopback_hosts_are_recognised_and_the_lan_address_is_never_one():
    assert all(cv.is_loopback(h) for h in ("localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "0.0.0.0", "", None))
    assert not any(cv.is_loopback(h) for h in ("192.168.1.7", "lab.example.edu", "10.0.0.2"))
    ip = cv.lan_ip()
    assert ip is None or not cv.is_loopback(ip)


def _png_matrix(png: bytes, scale: int, border: int) -> np.ndarray:
    """The QR modules of a PNG segno wrote: one pixel per module (dark = 1), the quiet zone cut off."""
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    modules = img[::scale, ::scale] < 128
    return modules[border:-border, border:-border].astype(np.uint8)


def test_the_qr_code_encodes_exactly_the_link_shown():
    from viz_model.ui.join import QR_BORDER, QR_SCALE, qr_png

    link = "http://192.168.1.7:8501/?class=ABCD"
    shown = _png_matrix(qr_png(link), QR_SCALE, QR_BORDER)
    assert np.array_equal(shown, np.array(segno.make(link).matrix, dtype=np.uint8))
    assert not np.array_equal(shown.shape, np.array(segno.make("http://192.168.1.7:8501/?class=ABCE").matrix).shape) \
        or not np.array_equal(shown, np.array(segno.make("http://192.168.1.7:8501/?class=ABCE").matrix))


# -- in the app (AppTest) -------------------------------------------------------------------------------------------
def _leading():
    at = open_app()
    at.text_input(key="class_key").input("s3cret").run()
    at.toggle(key="class_lead").set_value(True).run()
    return at, at.session_state["_class_code"]


def _param(at, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def _values_hidden(fig: dict) -> bool:
    """Every heatmap one flat grey with no hover, nothing else drawn (a bar or line chart: no trace at all), "hidden"
    in the title: no number of the chart reaches the browser."""
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    return (len(heat) == len(fig["data"]) and "hidden" in fig["layout"]["title"]["text"]
            and all(t.get("hoverinfo") == "skip" for t in heat)
            and all(not np.any(plotly_array(t["z"])) for t in heat)
            and all("text" not in t and "customdata" not in t for t in heat))


def test_a_followers_heatmap_is_hidden_until_reveal_while_the_leader_sees_it(class_env):
    leader, code = _leading()
    leader.selectbox(key="class_ask_kind").set_value(leader.selectbox(key="class_ask_kind").options[0]).run()
    leader.button(key="class_ask").click().run()
    q = ClassStore(class_env).get(code).question
    assert q is not None and q.answer["page"] == ""  # asked on Start, and the question says so

    student = open_app(query={"class": code})
    assert student.toggle(key="class_follow").value is True
    hidden = spec(student, "start_heatmap")
    assert _values_hidden(hidden) and hidden["data"]
    assert cv.HIDDEN_TEXT in texts(student.caption)
    shown = spec(leader, "start_heatmap")
    assert not _values_hidden(shown) and cv.HIDDEN_TEXT not in texts(leader.caption)
    # the head's measured role says where it looks: hidden too
    assert any(c.startswith("Role of this head") for c in texts(leader.caption))
    assert not any(c.startswith("Role of this head") for c in texts(student.caption))
    # the token labels stay, so a student can still read the sentence the question is about
    assert hidden["data"][-1]["y"] == [t for t in shown["data"] if t["type"] == "heatmap"][-1]["y"]

    leader.button(key="class_reveal").click().run()
    assert ClassStore(class_env).get(code).question.revealed
    student.run()
    assert not _values_hidden(spec(student, "start_heatmap")) and cv.HIDDEN_TEXT not in texts(student.caption)
    assert not student.exception and not leader.exception


def test_a_question_asked_on_another_page_hides_nothing_here(class_env):
    leader, code = _leading()
    leader.switch_page("app_pages/rope.py").run()
    open_tab(leader, "rope_tab", "Context extension")
    leader.selectbox(key="class_ask_kind").set_value(leader.selectbox(key="class_ask_kind").options[0]).run()
    leader.button(key="class_ask").click().run()
    assert ClassStore(class_env).get(code).question.answer["page"] == "rope"
    student = open_app(query={"class": code})  # follows the leader to RoPE: its coverage is hidden
    student.run()
    assert _param(student, "rope_tab") == "Context extension"
    assert cv.HIDDEN_TEXT in texts(student.caption) and _values_hidden(spec(student, "rope_coverage"))
    assert not _values_hidden(spec(leader, "rope_coverage"))
    student.toggle(key="class_follow").set_value(False).run()
    student.switch_page("app_pages/start.py").run()  # Start draws its answers: the question is RoPE's
    assert not _values_hidden(spec(student, "start_heatmap"))
    assert not student.exception


def test_a_sentence_a_step_set_on_the_explorer_opens_masks_and_qkv(app_test):
    sentence = "The bank by the river"
    at = app_test(query={"explorer_text": sentence})
    at.switch_page("app_pages/explorer.py").run()
    assert at.text_input(key="explorer_text").value == sentence
    at.switch_page("app_pages/masks.py").run()
    assert at.text_input(key="masks_text").value == sentence
    at.text_input(key="masks_text").input("The cat sat on the mat").run()  # the student's own sentence now
    at.switch_page("app_pages/qkv.py").run()
    assert at.text_input(key="qkv_text").value == "The cat sat on the mat"
    at.switch_page("app_pages/masks.py").run()
    assert at.text_input(key="masks_text").value == "The cat sat on the mat"
    assert not at.exception


def test_a_pages_own_link_text_wins_over_the_carried_sentence(app_test):
    at = app_test("app_pages/explorer.py")
    at.text_input(key="explorer_text").input("The bank by the river").run()
    from viz_model.ui import lecture  # noqa: F401  (the app's pages are registered)

    at2 = app_test(query={"masks_text": "please send the report"})
    at2.switch_page("app_pages/masks.py").run()
    assert at2.text_input(key="masks_text").value == "please send the report"
    assert not at.exception and not at2.exception


def test_a_follower_gets_the_carried_sentence_on_the_leaders_next_page(class_env):
    sentence = "The bank by the river"
    leader, code = _leading()
    leader.switch_page("app_pages/explorer.py").run()
    leader.text_input(key="explorer_text").input(sentence).run()
    student = open_app(query={"class": code})
    student.run()
    assert student.text_input(key="explorer_text").value == sentence
    leader.switch_page("app_pages/masks.py").run()
    assert leader.text_input(key="masks_text").value == sentence
    assert ClassStore(class_env).get(code).values.get("masks_text") == sentence
    student.run()
    assert student.session_state["_class_page"] == "masks"
    assert student.text_input(key="masks_text").value == sentence  # (following on: tests/test_browser_classview.py)
    assert not student.exception and not leader.exception


def test_the_join_line_names_the_network_address_when_opened_on_localhost_and_its_qr_holds_it(class_env,
                                                                                                monkeypatch):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    from viz_model.ui.join import qr_png

    monkeypatch.setattr(cv, "lan_ip", lambda: "192.168.1.7")  # this machine's network address
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.context = {"url": "http://localhost:8501/"}  # the instructor opened the app on this machine
    at.run()
    at.text_input(key="class_key").input("s3cret").run()
    at.toggle(key="class_lead").set_value(True).run()
    code = at.session_state["_class_code"]
    link = f"http://192.168.1.7:8501/?class={code}"
    assert any(cv.JOIN_TEXT.format(link=f"[{link}](/?class={code})") == m.value for m in at.markdown)
    assert not any("localhost" in m.value for m in at.markdown)
    (img,) = [i.proto.imgs[0] for i in at.get("image")]
    assert img.caption == cv.QR_CAPTION
    # the image is exactly qr_png(link), inline (no media file a next run could drop first), whose modules are segno's
    assert img.url.startswith("data:image/png;base64,")
    assert base64.b64decode(img.url.split(",", 1)[1]) == qr_png(link)
    assert base64.b64decode(img.url.split(",", 1)[1]) != qr_png(link.replace(code, "ZZZZ"))
    assert not at.exception


def test_a_next_token_question_hides_the_generated_text_the_ranked_tokens_and_their_labels(class_env):
    leader, code = _leading()
    leader.switch_page("app_pages/generate.py").run()
    leader.selectbox(key="class_ask_kind").set_value(leader.selectbox(key="class_ask_kind").options[0]).run()
    leader.button(key="class_ask").click().run()
    assert ClassStore(class_env).get(code).question.answer["page"] == "generate"
    student = open_app(query={"class": code})
    student.run()
    assert student.session_state["_class_page"] == "generate"
    bars, attention = spec(student, "generate_bars"), spec(student, "generate_attention")
    assert bars["data"] == [] and _values_hidden(bars)  # the ranked list: no bar, no label
    assert all(not a.get("tickvals") and a.get("showticklabels") is False
               for k, a in bars["layout"].items() if k.startswith(("xaxis", "yaxis")))
    assert _values_hidden(attention) and all("y" not in t and "x" not in t for t in attention["data"])
    (code_text,) = [c.value for c in student.code]
    (leader_text,) = [c.value for c in leader.code]
    assert code_text.endswith(f"… ({cv.HIDDEN_TEXT})") and leader_text.startswith(code_text.split(" … ")[0])
    assert code_text.split(" … ")[0] != leader_text  # the leader's shows the generated tokens
    rows = [len(t.value) for at in (student, leader) for t in at.dataframe if "log p" in t.value.columns]
    assert rows[0] == 0 and rows[1] > 0  # the running table: its columns, no row
    assert not spec(leader, "generate_bars")["data"] == []
    assert not student.exception and not leader.exception
