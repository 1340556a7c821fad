"""What the class sees while an instructor presents (#39, item 4), as plain data and pure functions (no Streamlit):

- which elements of a page answer its prediction questions, hidden on the students' screens until Reveal;
- the lecture's sentence, carried from the page that set it to the next page that takes text;
- the join link, with the server's network address where the instructor opened the app on this machine;
- what a student is told while the instructor reconnects, or while the class server cannot be reached (#42).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping, MutableMapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# -- answers hidden until Reveal -------------------------------------------------------------------------------
# A page's URL path -> the keys of the elements (charts by their ui.chart.show key, or a line's own name) whose
# numbers answer the page's prediction questions. A page with a new preset question adds its row here.
ANSWERS: dict[str, tuple[str, ...]] = {
    "": ("start_heatmap", "start_role"),                          # Start: which word does this head attend to?
    "explorer": ("explorer_grid", "explorer_head_map", "explorer_bars", "explorer_role",  # the previous token?
                 "explorer_roles_table"),                         # the head roles' table names that head
    "generate": ("generate_output", "generate_bars", "generate_step_sentence", "generate_table",  # the next token?
                 "generate_sequence", "generate_attention",
                 "generate_branch_grid", "generate_branch_sentence"),  # where do two branches first differ?
    "rope": ("rope_coverage", "rope_coverage_text"),                    # which method keeps every angle in range?
    "sinusoidal": ("sinusoidal_heatmap",),                            # which position is this vector? (its row)
    "masks": ("masks_panels",),                                         # how many tokens can row t see?
    "qkv": ("qkv_lookup_chart", "qkv_mix_chart"),                       # which key does this query match best?
    "encoder": ("encoder_fills", "encoder_topk"),                       # which word fills the blank?
    "encoder-decoder": ("ed_three_encoder", "ed_three_decoder", "ed_three_cross",  # which source word does it
                        "ed_align_chart"),                                         # read?
    "recurrence": ("recurrence_accuracy_chart",),                      # which model recalls at this distance?
    "normalization": ("norm_padding_chart",),                           # which norm does padding change?
    "logit-lens": ("lens_map", "lens_rank", "lens_rank_sentence"),      # at which layer does it first come top?
    "attribution": ("attribution_methods", "attribution_top_text"),      # which token matters most, by occlusion?
    "sinks": ("sinks_stream_chart", "sinks_stream_table", "sinks_stream_sentence"),  # which cache keeps ppl lowest?
}
HIDDEN_TEXT = "Hidden until the instructor reveals the answer."
LABELS_TELL = frozenset({"generate_attention"})  # charts whose axis labels are the answer (the generated tokens)


def question_page(answer: Mapping[str, Any], leader_page: str | None) -> str | None:
    """The page a class question was asked on: recorded with the question ("page" beside the model's answer), else
    (a question asked by a path that did not record it) the page the instructor shows now."""
    page = answer.get("page")
    return page if isinstance(page, str) else leader_page


def hidden_answers(page: str, *, leading: bool, question: Any, leader_page: str | None) -> tuple[str, ...]:
    """The elements of `page` drawn hidden for this tab: a student's (never the leader's), while a class question
    asked on this page is open and not revealed. `question`: the class's open question (runtime.class_mode.Question
    or None)."""
    if leading or question is None or question.revealed:
        return ()
    if question_page(question.answer, leader_page) != page:
        return ()
    return ANSWERS.get(page, ())


# -- the lecture's sentence, carried across pages ------------------------------------------------------------
# The text boxes that take "a sentence" (the ones a lecture's sentence makes sense in), by their key (= URL name).
# Not carried: the Encoder-decoder's source (the toy language's own words), Q/K/V's two short phrases, Generate's
# teacher-forcing sentence (a fixed lecture example with its own padding).
SENTENCE_KEYS = ("start_text", "explorer_text", "masks_text", "qkv_text", "encoder_text", "norm_text",
                 "generate_text", "lens_text", "attribution_text")
CARRIED = "_sentence_carried"       # (the session's sentence, its serial): set by the last box that changed it
TAKEN = "_sentence_taken"           # {box key: serial of the carried sentence this box last took or set}
DRAWN = "_sentence_drawn"           # {box key: the text it showed when last drawn}


def carry_in(state: MutableMapping[str, Any], link: Mapping[str, Any], key: str) -> bool:
    """Before the text box `key` is drawn: a box that opens with no text of its own in the link (`link`: the URL's
    query now) starts from the session's sentence, if a newer one was set elsewhere since this box last took or set
    one. The value goes into `state` (session_state: a bound widget takes it and writes it to the URL). True if it
    did."""
    carried = state.get(CARRIED)
    if key not in SENTENCE_KEYS or carried is None or key in link:
        return False
    text, serial = carried
    taken = state.setdefault(TAKEN, {})
    if taken.get(key, 0) >= serial and key in state:  # taken already (a box whose value was forgotten takes it again)
        return False
    taken[key] = serial
    if state.get(key) == text:
        return False
    state[key] = text
    return True


def carry_out(state: MutableMapping[str, Any], key: str, text: str, default: str, named: bool = False) -> None:
    """After the text box `key` is drawn with `text`: a sentence the box got on this page (typed, picked, followed:
    it differs from the box's last draw), one its link named (`named`: a lecture step's sentence may be the page's
    default) or one other than its default when it is first drawn becomes the session's sentence, unless it is the
    carried one already."""
    drawn = state.setdefault(DRAWN, {})
    last, drawn[key] = drawn.get(key), text
    if key not in SENTENCE_KEYS or not text.strip():
        return
    if not (named or (text != last if last is not None else text != default)):
        return
    carried = state.get(CARRIED)
    if carried is not None and carried[0] == text:
        state.setdefault(TAKEN, {})[key] = carried[1]
        return
    serial = (carried[1] if carried else 0) + 1
    state[CARRIED] = (text, serial)
    state.setdefault(TAKEN, {})[key] = serial


# -- the join link --------------------------------------------------------------------------------------------
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "0.0.0.0", "::"}


def is_loopback(host: str | None) -> bool:
    """A host only this machine can reach (localhost, 127.x.x.x, ::1) or no host at all (0.0.0.0: every address)."""
    host = (host or "").strip("[]").lower()
    if not host or host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def lan_ip() -> str | None:
    """This machine's address on its network: the source address the system would use to reach another network
    (a UDP socket's connect sends no packet; nothing leaves the machine). None without a network."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if is_loopback(ip) else ip


def reachable_link(link: str, *, configured: tuple[str | None, ...] = (), lan: str | None = None) -> str:
    """The class link students can open. Opened on this machine (localhost, 127.0.0.1), a link names a host only
    the instructor's computer reaches: its host becomes the first address the server was configured with that is not
    loopback (`configured`: Streamlit's browser.serverAddress, server.address), else this machine's network address
    (`lan`), keeping the scheme, port, path and query. Any other host (a name the students already reach) stays."""
    parts = urlsplit(link)
    if not parts.netloc or not is_loopback(parts.hostname):  # no address at all (a relative link), or one to keep
        return link
    host = next((h for h in configured if h and not is_loopback(h)), None) or lan
    if host is None:
        return link
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


JOIN_TEXT = "Students open {link} or type the code."
QR_CAPTION = "Scan to join: the QR code holds the link above."
LOOPBACK_NOTE = ("This link names this computer only (no network address was found): students on other machines "
                 "need its network address instead.")


# -- an instructor who reconnects, a class server that is away (#42, items 3 and 5) ---------------------------------
# The leader's tab refreshes its heartbeat with its publish tick (runtime.class_mode.REPUBLISH_S, every 2 s). A leader
# not seen for LEADER_RECONNECTING_S is on a flaky connection or reloading: the students keep their live page with a
# line that says so. After LEADER_AWAY_S the tab is taken as closed or asleep. The class itself stays in the store far
# longer (CLASS_TTL_S, 3 h), so a leader back after any of these finds it, by the page or by the key (led_by).
LEADER_RECONNECTING_S = 5.0
LEADER_AWAY_S = 60.0
RECONNECTING_TEXT = ("The instructor is reconnecting… You stay on this view and can explore it; following goes on "
                     "when they are back.")
AWAY_TEXT = "The instructor's tab is closed or asleep: you stay on this view. Following goes on when they are back."
PAUSED_TEXT = ("The class is paused: the class server can't be reached. Everything on this page still works; the "
               "class resumes by itself when the server is back.")


def leader_notice(leader: str | None, leader_seen: float, now: float) -> str | None:
    """A student's line about the instructor: None while the leader was seen in the last LEADER_RECONNECTING_S,
    RECONNECTING_TEXT up to LEADER_AWAY_S, AWAY_TEXT after that or when nobody leads the class."""
    if leader is None or now - leader_seen > LEADER_AWAY_S:
        return AWAY_TEXT
    return RECONNECTING_TEXT if now - leader_seen > LEADER_RECONNECTING_S else None


def lost_text(code: str) -> str:
    """A class that did not come back with its server (Redis keeps classes in memory only)."""
    return (f"Class {code} was lost while the class server was away: it keeps classes in memory only. Join again "
            "with the instructor's new code, or start a new class.")
