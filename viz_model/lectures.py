"""Lectures (#39): a guided walk through the pages, written as one Markdown file an instructor can read on GitHub.

    ---
    title: Attention in one lesson        (optional front matter: title, audience, model)
    audience: first-year students
    model: classroom
    ---

    ## Every word looks at every word     (one step per `##` heading)

    view: /explorer?explorer_text=the+cat+sat+on+the+mat&explorer_layer=1&explorer_head=2
    look: the row of "sat" in the heatmap
    ask: Which word does "sat" weigh most? | the | *cat | mat
    why: A verb often looks back at its subject.
    chart: explorer_head_map

    The narrative: plain Markdown, any number of paragraphs and lists. This model has {{layers}} layers; here
    "sat" puts {{attention layer=1 head=2 query="sat" key="cat"}} of its weight on "cat".

A step's view is the app's own share link (path plus query: the parameters `ui.share.URL` writes). The `view:`,
`look:` (or `look at:`), `ask:` and `why:` lines, lower case, are read from the step's top-level paragraphs, one
line each; every other line of the step is its narrative, kept as the Markdown it was written in. `ask:` is either
`preset NAME` (a page's preset question, answered by the model live) or `prompt | choice | *correct choice ...`.
`chart:` (optional) names the chart the step points at, by the key the page gives it (`ui.chart.show(fig, key=...)`).

The front matter's `model:` is applied: a step whose view names no `model_key` opens on the lecture's model (core adds
it to the step's params, by the name written there; ui.lecture turns it into the picker's label a link carries). The
name, and any `model_key` a view names, must be a model this server offers (`model_name`: a shipped transformer, the
untrained baseline or an instructor's model folder, by its key or by that label, as a link copied from the browser
has it). With layers and heads known (a shipped model), an {{attention}} placeholder's layer and head are checked too.

A step with no `view:` line is narrative only (for a section the app cannot show live): its `page` is None, its
params are empty, and the student stays on the page they are on.

Numbers about the model are never typed: a placeholder in the narrative or the `look:` line stands for one, computed
from the step's model when the step is shown (`lessons.lecture_numbers`). The grammar, one placeholder on one line:

    {{FACT}}        FACT: params, layers, heads, d_model, d_k, d_ff, vocab, context (the model's settings)
    {{attention layer=L head=H query="word" key="word" text="sentence"}}
                    the weight that the query word puts on the key word in head H of layer L, as the Explorer
                    shows it (a word is its first occurrence; a word the tokenizer splits: the query is its last
                    piece, the key its pieces' sum). text= may be left out when the step's view sets a sentence
                    (a `*_text` setting): the number is then about the sentence the page opens on.

Arguments are `name=value`, a value with spaces in double quotes. `ask:` and `why:` lines take no placeholders.

A file that breaks a rule raises `LectureError` (a ValueError) listing every problem with its line number. Raw HTML
is rejected, not stripped: a `<script>` or `<div>` in the narrative is an error naming its line, so nothing in a
lecture file is ever passed through to the browser (a token such as `<pad>` is written in backticks). Links may only
go to http(s) addresses or to relative paths. No Streamlit here: the pages read the `Lecture` this module returns.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

from viz_model import ASSETS_DIR
from viz_model.files import dir_stamp
from viz_model.pages import PAGES

LECTURES_DIR = ASSETS_DIR / "lectures"
MAX_BYTES = 200_000        # a long lecture is ~20 kB; anything far bigger is not a lecture
MAX_VIEW_CHARS = 2_000     # a share link longer than this is not one the app writes
MAX_CHOICES = 16           # the class store's MAX_CHOICES: a poll shows at most this many bars
FRONT_MATTER_KEYS = ("title", "audience", "model")
DIRECTIVES = {"view": "view", "look": "look", "look at": "look", "ask": "ask", "why": "why", "chart": "chart"}
RANDOM_MODEL = "random-init"  # ui.models.RANDOM_MODEL: the untrained baseline every server offers
RANDOM_TITLE = "untrained (random weights)"  # its label in the sidebar's picker (ui.models)
MODEL_FACTS = ("params", "layers", "heads", "d_model", "d_k", "d_ff", "vocab", "context")  # {{FACT}}
NUMBER_ARGS = {"attention": ("layer", "head", "query", "key", "text")}  # {{NAME arg=value ...}}: its arguments
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
_ARG = re.compile(r'\s+([A-Za-z_]+)=(?:"([^"]*)"|([^\s"]+))')
_CHART = re.compile(r"[A-Za-z0-9_-]{1,100}")  # a chart's key, as ui.chart.show gets it

# The page table: URL path -> the prefixes of its share parameters (viz_model.pages' rows, in the sidebar's order)
PAGE_PARAMS: dict[str, tuple[str, ...]] = {p.url: p.params for p in PAGES}
# Old or other paths of a page (app.py serves Start at "/", "/home" and "/start"; a row's old_urls keeps an old path)
PAGE_ALIASES = {"": "start", "home": "start", **{old: p.url for p in PAGES for old in p.old_urls if old != p.url}}
# Parameters every page takes: the sidebar's model, device and presenter toggle, and the lecture's own place
GLOBAL_PARAMS = frozenset({"model_key", "device_key", "presenter_mode", "lecture", "step"})
# On/off settings (toggles and checkboxes): their link value is "true" or "false"
BOOLEAN_PARAMS = frozenset({"presenter_mode", "start_bos", "explorer_scale", "explorer_avg", "recurrence_relative",
                            "cost_cpu_backward", "cost_gpu_backward"})
HEAD_WORDS = ("mean", "mean of the heads")  # a head picker that offers the heads' mean (the Encoder's "bank" view)

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a preset's name
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # C0 controls but tab, newline, carriage return


class LectureError(ValueError):
    """A lecture file that breaks the format. `errors`: [(line, message)], 1-based lines, in file order; str(err)
    is one "line N: message" per problem."""

    def __init__(self, errors: list[tuple[int, str]]):
        self.errors = sorted(errors)
        super().__init__("\n".join(f"line {n}: {msg}" for n, msg in self.errors))


@dataclass(frozen=True)
class Question:
    """A step's question. Either a page's preset (`preset` set; the model computes the answer live) or a written one:
    `prompt`, `choices` and the indices of the `correct` ones, with an optional `why`."""

    line: int                                 # of the `ask:` line
    preset: str | None = None
    prompt: str = ""
    choices: tuple[str, ...] = ()
    correct: tuple[int, ...] = ()             # indices into choices, at least one
    why: str | None = None


@dataclass(frozen=True)
class Number:
    """A placeholder for a number about the model: `source` is the placeholder as written ("{{layers}}"), `name` a
    MODEL_FACTS entry or "attention", `args` its arguments in NUMBER_ARGS order (the step's sentence filled in for a
    missing text=)."""

    source: str
    name: str
    args: tuple[tuple[str, str], ...] = ()
    line: int = 0

    def arg(self, name: str) -> str:
        return dict(self.args)[name]


@dataclass(frozen=True)
class Step:
    """One `##` section: a view of a page (its URL path and share parameters), the narrative around it, what to look
    at, and a question."""

    title: str
    page: str | None                          # a key of PAGE_PARAMS ("explorer", "start"...); None: narrative only
    params: dict[str, str | list[str]]        # the link's query; a repeated parameter (a range's two ends): a list
    text: str                                 # the narrative, Markdown without raw HTML
    question: Question | None = None
    look: str | None = None                   # a caption of what to look at on the page
    line: int = 0                             # of the `##` heading
    chart: str | None = None                  # the key of the chart the step points at
    numbers: tuple[Number, ...] = ()          # the placeholders in its narrative and look, in order

    @property
    def url(self) -> str:
        """The step's view as a share link path: "/explorer?explorer_layer=1" ("" for a narrative-only step)."""
        if self.page is None:
            return ""
        query = urlencode(self.params, doseq=True)
        return f"/{self.page}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class Lecture:
    """A parsed lecture: `title`, the `steps` in order, the front matter's `audience` and default `model` (a
    model_key, or None), and the narrative before the first step (`intro`)."""

    title: str
    steps: tuple[Step, ...]
    audience: str | None = None
    model: str | None = None
    intro: str = ""
    meta: dict[str, str] = field(default_factory=dict)  # the front matter as written


# -- reading ----------------------------------------------------------------------------------------------------


def read_text(source: str | bytes | os.PathLike) -> str:
    """A lecture's text, checked for size and encoding before anything parses it. `source`: a path (a PathLike, or a
    one-line str ending in ".md"), raw bytes (an upload), or the Markdown text itself."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                            and source.endswith(".md")):
        path = Path(source)
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)  # never more than the bound, however large the file
    elif isinstance(source, bytes):
        data = source
    else:
        data = source.encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        raise LectureError([(1, f"the file is over {MAX_BYTES // 1000} kB: a lecture is a short Markdown text")])
    if b"\x00" in data:
        raise LectureError([(_line_at(data, data.index(b"\x00")), "a NUL byte: this is a binary file, not a "
                                                                   "Markdown lecture")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LectureError([(_line_at(data, err.start), "not UTF-8 text: save the lecture as UTF-8")]) from None
    bad = _CONTROL.search(text)
    if bad:
        raise LectureError([(text.count("\n", 0, bad.start()) + 1, f"a control character ({bad.group()!r}): "
                                                                   "this is not a plain Markdown text")])
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def front_matter(lines: list[str], errors: list[tuple[int, str]]) -> tuple[dict[str, str], int]:
    """The optional `---` fenced `key: value` lines at the top: (meta, number of lines they take, 0 if none). Read
    by hand, not as YAML: three known keys, each a plain string."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:  # the rest would parse as Markdown and add errors that are only this one's echo
        raise LectureError([(1, "the front matter opened with --- is never closed by a --- line")])
    meta: dict[str, str] = {}
    for i in range(1, end):
        key, colon, value = lines[i].partition(":")
        key = key.strip().lower()
        if not lines[i].strip():
            continue
        if not colon or key not in FRONT_MATTER_KEYS:
            errors.append((i + 1, f"front matter takes only `key: value` lines with the keys "
                                  f"{', '.join(FRONT_MATTER_KEYS)}"))
        elif key in meta:
            errors.append((i + 1, f"front matter names “{key}” twice"))
        else:
            meta[key] = value.strip()
    return meta, end + 1


# -- checks -----------------------------------------------------------------------------------------------------


def model_names() -> dict[str, tuple[int, int] | None]:
    """The models a lecture may name (the sidebar's `model_key` values this server offers, but a session's own):
    name -> (layers, heads) for a shipped transformer, None where core does not read the shape (the untrained
    baseline; the instructor's model folders, listed only when ATTENTION_LAB_MODEL_DIRS or models/ has any)."""
    return {name: shape for name, (shape, _) in _shipped().items()} | {RANDOM_MODEL: None}


def _shipped() -> dict[str, tuple[tuple[int, int] | None, str]]:
    folder = ASSETS_DIR / "models"
    return _shipped_models(str(folder), dir_stamp(folder))


# lru_cache (core has no ui.cache.cached): a pure function of immutable arguments, the folder's file identities among
# them (files.dir_stamp: a new, removed or rewritten JSON or weight file is a new key). Read-only result: shared.
@functools.lru_cache(maxsize=4)
def _shipped_models(folder: str, stamp: tuple) -> dict[str, tuple[tuple[int, int] | None, str]]:
    """name -> ((layers, heads) or None, the picker's label: the metadata's title) of each shipped transformer."""
    from viz_model.checkpoint import read_metadata

    out: dict[str, tuple[tuple[int, int] | None, str]] = {}
    for js in sorted(Path(folder).glob("*.json")):
        try:
            doc = read_metadata(js.with_suffix(".safetensors"))
        except (OSError, ValueError):
            continue
        cfg = doc["config"] or {}
        if doc["kind"] == "transformer" and js.with_suffix(".safetensors").exists():
            shape = (int(cfg["n_layers"]), int(cfg["n_heads"])) if "n_layers" in cfg else None
            out[js.stem] = (shape, str((doc["metadata"] or {}).get("title", js.stem)))
    return out


def model_name(value: str) -> str | None:
    """The model a lecture names, by its key ("english") or, as a link copied from the browser carries it, by the
    sidebar picker's label ("English (WordNet prose, BPE)"; a folder's "NAME · llama · ..."); None if this server
    offers no such model."""
    if value in model_names():
        return value
    by_label = {title: name for name, (_, title) in _shipped().items()} | {RANDOM_TITLE: RANDOM_MODEL}
    if value in by_label:
        return by_label[value]
    from viz_model import hf

    try:
        folders = [d.name for d in hf.model_dirs_from_env()]
    except OSError:
        folders = []
    return next((f for f in folders if value == f or value.startswith(f + " · ")), None)


def model_problem(value: str) -> str | None:
    """Why `value` is not a model this server offers, or None."""
    if model_name(value) is not None:
        return None
    return (f"there is no model “{value[:40]}” on this server: the shipped ones are "
            f"{', '.join(model_names())} (or a model folder the instructor names at launch)")


def parse_numbers(text: str, line: int, sentence: str | None, errors: list[tuple[int, str]]) -> list[Number]:
    """The placeholders of one line of a step, checked; `sentence`: the step's view's sentence, for a missing text=."""
    found = [_number(m.group(0), m.group(1), line, sentence, errors) for m in _PLACEHOLDER.finditer(text)]
    rest = _PLACEHOLDER.sub("", text)
    if "{{" in rest or "}}" in rest:
        errors.append((line, "a placeholder opens with {{ and closes with }} on the same line: one half is missing"))
    return [n for n in found if n is not None]


def _number(source: str, inner: str, line: int, sentence: str | None, errors: list[tuple[int, str]]) -> Number | None:
    name, _, rest = inner.strip().partition(" ")
    args = _ARG.findall(" " + rest)
    names = ", ".join([*MODEL_FACTS, *NUMBER_ARGS])
    if not name:
        errors.append((line, f"an empty placeholder {{{{}}}}: the names are {names}"))
    elif name in MODEL_FACTS:
        if rest.strip():
            errors.append((line, f"{{{{{name}}}}} is a fact of the model and takes no arguments"))
        return None if rest.strip() else Number(source, name, (), line)
    elif name not in NUMBER_ARGS:
        errors.append((line, f"unknown placeholder {source[:60]!r}: the names are {names}"))
    elif _ARG.sub("", " " + rest).strip():
        errors.append((line, f"{source[:60]!r}: arguments are name=value, a value with spaces in double quotes"))
    else:
        return _arguments(source, name, args, line, sentence, errors)
    return None


def _arguments(source: str, name: str, args: list[tuple[str, str, str]], line: int, sentence: str | None,
               errors: list[tuple[int, str]]) -> Number | None:
    before, given = len(errors), {}
    for key, quoted, bare in args:
        if key not in NUMBER_ARGS[name]:
            errors.append((line, f"{{{{{name}}}}} takes {', '.join(NUMBER_ARGS[name])}, not “{key}”"))
        elif key in given:
            errors.append((line, f"{{{{{name}}}}} names “{key}” twice"))
        else:
            given[key] = quoted or bare
    if "text" not in given and sentence:
        given["text"] = sentence
    for key in NUMBER_ARGS[name]:
        if not given.get(key, "").strip() and len(errors) == before:
            errors.append((line, f"{{{{{name}}}}} needs {key}=" + (
                "… (this step's view sets no sentence)" if key == "text" else "…")))
    for key in ("layer", "head"):
        if given.get(key) and not given[key].isdigit():
            errors.append((line, f"{{{{{name}}}}}'s {key} must be a number (0, 1, 2...), not {given[key][:20]!r}"))
    if len(errors) > before:
        return None
    return Number(source, name, tuple((k, given[k]) for k in NUMBER_ARGS[name]), line)


def number_range_problem(number: Number, model: str, shape: tuple[int, int] | None) -> str | None:
    """Why a number's layer or head is not one of `model` (shape: its (layers, heads)), or None."""
    if shape is None or number.name != "attention":
        return None
    for key, top in zip(("layer", "head"), shape):
        if int(number.arg(key)) >= top:
            return f"{number.source[:40]!r}: “{model}” has {key}s 0 to {top - 1}, not {number.arg(key)}"
    return None



def parse_view(value: str, line: int, errors: list[tuple[int, str]]) -> tuple[str, dict[str, str | list[str]]]:
    """A `view:` link -> (page, params); every problem is added to `errors`. Accepts the path and query alone
    ("/explorer?explorer_layer=1") or the whole link the browser shows ("http://host:8501/explorer?...")."""
    value = value.strip().strip("<>`")
    if not value:
        errors.append((line, "the `view:` line has no link (e.g. /explorer?explorer_layer=1)"))
        return "", {}
    if len(value) > MAX_VIEW_CHARS:
        errors.append((line, f"the view link is over {MAX_VIEW_CHARS:,} characters"))
        return "", {}
    parts = urlsplit(value)
    if parts.scheme not in ("", "http", "https"):
        errors.append((line, f"the view must be a link into the app, not a {parts.scheme}: address"))
        return "", {}
    path = parts.path.strip("/")
    page = PAGE_ALIASES.get(path, path)
    if page not in PAGE_PARAMS:
        errors.append((line, f"unknown page “/{path}”: the pages are {', '.join(PAGE_PARAMS)}"))
        return "", {}
    params: dict[str, str | list[str]] = {}
    for name, raw in parse_qsl(parts.query, keep_blank_values=True):
        problem = param_problem(page, name, raw)
        if problem:
            errors.append((line, problem))
        elif name in params:  # a range setting repeats its name: both ends, in order
            kept = params[name]
            params[name] = [*kept, raw] if isinstance(kept, list) else [kept, raw]
        else:
            params[name] = raw
    return page, params


def param_problem(page: str, name: str, raw: str) -> str | None:
    """Why `name=raw` is not a setting of `page`, or None. Only what needs no model is checked here (a layer must be
    a whole number; whether that layer exists depends on the model the page runs)."""
    if name not in GLOBAL_PARAMS and not name.startswith(PAGE_PARAMS[page]):
        return (f"“{name}” is not a setting of the {page} page (its settings start with "
                f"{' or '.join(PAGE_PARAMS[page])})")
    if name.endswith("_layer") and not raw.isdigit():
        return f"“{name}” must be a layer number (0, 1, 2...), not {raw[:40]!r}"
    if name.endswith("_head") and not raw.isdigit() and raw not in HEAD_WORDS:
        return f"“{name}” must be a head number (0, 1, 2...), not {raw[:40]!r}"
    if name in BOOLEAN_PARAMS and raw.lower() not in ("true", "false"):
        return f"“{name}” is on or off: true or false, not {raw[:40]!r}"
    return None


def parse_ask(value: str, line: int, errors: list[tuple[int, str]]) -> Question | None:
    """An `ask:` line -> Question: "preset NAME", or "prompt | choice | *correct choice ..."."""
    value = value.strip()
    if value.startswith("preset ") or value == "preset":
        name = value.removeprefix("preset").strip()
        if not _NAME.fullmatch(name):
            errors.append((line, "`ask: preset NAME` needs the preset's name (letters, digits, - and _)"))
            return None
        return Question(line=line, preset=name)
    prompt, *options = (part.strip() for part in value.split("|"))
    choices = tuple(o.removeprefix("*").strip() for o in options)
    correct = tuple(i for i, o in enumerate(options) if o.startswith("*"))
    problems = [
        (not prompt, "the question has no prompt before its first |"),
        (len(choices) < 2, "a question needs at least two choices, separated by |"),
        (len(choices) > MAX_CHOICES, f"a question has at most {MAX_CHOICES} choices"),
        (any(not c for c in choices), "a choice is empty (two | with nothing between them)"),
        (len(set(choices)) < len(choices), "two choices are the same"),
        (bool(choices) and not correct, "no correct choice is marked: put * before the right answer(s)"),
    ]
    found = [msg for bad, msg in problems if bad]
    errors.extend((line, msg) for msg in found)
    return None if found else Question(line=line, prompt=prompt, choices=choices, correct=correct)


def markup_problems(tokens: list[Token], errors: list[tuple[int, str]]) -> None:
    """Raw HTML and links that are not http(s) or relative, anywhere in the file, each at its line."""
    for tok in tokens:
        if tok.type == "html_block":
            errors.append((tok.map[0] + 1, f"raw HTML ({_short(tok.content)}) is not allowed in a lecture: write "
                                           "Markdown, and put a token such as `<pad>` in backticks"))
        line = tok.map[0] + 1 if tok.map else 0
        for child in tok.children or []:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "html_inline":
                errors.append((line, f"raw HTML ({_short(child.content)}) is not allowed in a lecture: write "
                                     "Markdown, and put a token such as `<pad>` in backticks"))
            elif child.type in ("link_open", "image"):
                href = str(child.attrs.get("href") or child.attrs.get("src") or "")
                if urlsplit(href).scheme not in ("", "http", "https"):
                    errors.append((line, f"a link may go to an http(s) address or a page, not {_short(href)}"))


def _short(text: str) -> str:
    text = text.strip().splitlines()[0] if text.strip() else text
    return repr(text[:40])


# -- parsing ----------------------------------------------------------------------------------------------------


def _markdown() -> MarkdownIt:
    """CommonMark with every link kept as written, so `markup_problems` sees (and refuses) a javascript: link
    instead of the parser silently leaving it as text."""
    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True
    return md


def directive(line: str) -> tuple[str, str] | None:
    """("view" | "look" | "ask" | "why", the rest of the line), or None for a narrative line. Lower case only: a
    sentence of the narrative may well start with "Why: ..." or "Look: ..."."""
    key, colon, rest = line.partition(":")
    name = DIRECTIVES.get(key.strip()) if colon else None
    return (name, rest.strip()) if name else None


@dataclass
class _Draft:
    """A step while its lines are read."""

    title: str
    line: int                                  # of its heading
    body: list[int] = field(default_factory=list)  # 0-based narrative line indices
    found: dict[str, tuple[int, str]] = field(default_factory=dict)  # directive -> (line, value)


def sections(tokens: list[Token], lines: list[str], skip: int, errors: list[tuple[int, str]]
             ) -> tuple[str | None, list[int], list[_Draft]]:
    """Split the parsed file at its `##` headings: (the `#` title, the intro's line indices, the steps' drafts).
    Directive lines are read from top-level paragraphs only (not from code, lists or quotes)."""
    title, intro, drafts = None, [], []
    directive_lines: dict[int, tuple[str, str]] = {}
    heading_lines: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.tag in ("h1", "h2"):
            heading_lines.update(range(*tok.map))
            text = tokens[i + 1].content.strip()
            if tok.tag == "h1":
                if title is not None or drafts:
                    errors.append((tok.map[0] + 1, "only one # title, before the first ## step"))
                title = text
            else:
                if not text:
                    errors.append((tok.map[0] + 1, "a step's ## heading has no title"))
                drafts.append(_Draft(text, tok.map[0] + 1))
        elif tok.type == "paragraph_open" and tok.level == 0:
            for n in range(*tok.map):
                found = directive(lines[n])
                if found:
                    directive_lines[n] = found
    for n in range(skip, len(lines)):
        if n in heading_lines:
            continue
        draft = next((d for d in reversed(drafts) if d.line - 1 < n), None)
        if n not in directive_lines:
            (draft.body if draft else intro).append(n)
        elif draft is None:
            errors.append((n + 1, f"a `{directive_lines[n][0]}:` line before the first ## step"))
        elif directive_lines[n][0] in draft.found:
            errors.append((n + 1, f"a second `{directive_lines[n][0]}:` line in the step “{draft.title}”"))
        else:
            draft.found[directive_lines[n][0]] = (n + 1, directive_lines[n][1])
    return title, intro, drafts


def build_step(draft: _Draft, lines: list[str], errors: list[tuple[int, str]], model: str | None = None
               ) -> Step | None:
    """A draft's directives checked and turned into a Step (None if it has errors, which are in `errors`). `model`:
    the lecture's, added to the view's params where the view names none. A step with no `view:` is narrative only."""
    before = len(errors)
    page, params = None, {}
    if "view" not in draft.found and not narrative(lines, draft.body):
        errors.append((draft.line, f"the step “{draft.title}” has no `view:` line (the link of the page it shows) "
                                   "and no narrative: a step without a view says in words what the app cannot show"))
    if "view" in draft.found:
        page, params = parse_view(draft.found["view"][1], draft.found["view"][0], errors)
        if model and page and "model_key" not in params:
            params["model_key"] = model
    question = parse_ask(draft.found["ask"][1], draft.found["ask"][0], errors) if "ask" in draft.found else None
    if "why" in draft.found:
        why_line, why = draft.found["why"]
        if "ask" not in draft.found:
            errors.append((why_line, "a `why:` line explains the step's `ask:` question, and this step has none"))
        elif not why:
            errors.append((why_line, "a `why:` line needs the explanation of the answer"))
        elif question is not None and question.preset:
            errors.append((why_line, "a preset's answer and its reason come from the model: no `why:` line"))
        elif question is not None:
            question = replace(question, why=why)
    look = draft.found.get("look", (0, None))[1]
    if look == "":
        errors.append((draft.found["look"][0], "a `look:` line needs the caption of what to look at"))
    chart = chart_key(draft, errors)
    numbers = step_numbers(draft, lines, params, errors, model)
    if len(errors) > before:
        return None
    return Step(title=draft.title, page=page, params=params, text=narrative(lines, draft.body), question=question,
                look=look, line=draft.line, chart=chart, numbers=tuple(numbers))


def chart_key(draft: _Draft, errors: list[tuple[int, str]]) -> str | None:
    """The `chart:` line's key (letters, digits, _ and -), or None."""
    if "chart" not in draft.found:
        return None
    line, key = draft.found["chart"]
    key = key.strip("`")
    if not _CHART.fullmatch(key):
        errors.append((line, "`chart:` names a chart by its key on the page (letters, digits, _ and -), "
                             f"not {key[:40]!r}"))
        return None
    if "view" not in draft.found:
        errors.append((line, "a `chart:` line points at a chart of the step's page, and this step has no `view:`"))
        return None
    return key


def step_numbers(draft: _Draft, lines: list[str], params: dict[str, str | list[str]],
                 errors: list[tuple[int, str]], lecture_model: str | None = None) -> list[Number]:
    """The placeholders of a step's narrative and `look:` line, each checked against the step's model where core
    knows its shape; `ask:` and `why:` take none (the question is drawn as written)."""
    sentence = next((v for k, v in params.items() if k.endswith("_text") and isinstance(v, str)), None)
    where = sorted([(n + 1, lines[n]) for n in draft.body] + [draft.found[k] for k in ("look",) if k in draft.found])
    numbers = [num for line, text in where for num in parse_numbers(text, line, sentence, errors)]
    for key in ("ask", "why"):
        if key in draft.found and "{{" in draft.found[key][1]:
            errors.append((draft.found[key][0], f"an `{key}:` line takes no {{{{placeholder}}}}: put the number "
                                                "in the narrative"))
    named = params.get("model_key") or lecture_model
    model = model_name(named) if isinstance(named, str) else None
    if model is not None:
        for num in numbers:
            problem = number_range_problem(num, model, model_names().get(model))
            if problem:
                errors.append((num.line, problem))
    return numbers


def model_lines(meta: dict[str, str], lines: list[str], skip: int, drafts: list[_Draft],
                errors: list[tuple[int, str]]) -> None:
    """The front matter's `model:` and every view's model_key must be a model this server offers."""
    if meta.get("model"):
        line = next(i + 1 for i in range(1, skip) if lines[i].partition(":")[0].strip().lower() == "model")
        if problem := model_problem(meta["model"]):
            errors.append((line, problem))
    for draft in drafts:
        if "view" in draft.found:
            line, value = draft.found["view"]
            for name, raw in parse_qsl(urlsplit(value.strip().strip("<>`")).query):
                if name == "model_key" and (problem := model_problem(raw)):
                    errors.append((line, problem))


def narrative(lines: list[str], indices: list[int]) -> str:
    """The narrative's source lines (Markdown as written), runs of blank lines squeezed to one."""
    out: list[str] = []
    for n in indices:
        if lines[n].strip() or (out and out[-1].strip()):
            out.append(lines[n].rstrip())
    return "\n".join(out).strip()


def load_lecture(path_or_text: str | bytes | os.PathLike, presets: Collection[str] | None = None) -> Lecture:
    """A lecture from its file (a path), bytes or Markdown text. Raises LectureError (a ValueError) naming the line
    of every problem: the file's size or encoding, front matter, HTML, an unknown page, setting or model, a malformed
    value, question, chart or placeholder; with `presets` (the app's preset names: the registry lives above core),
    an `ask: preset NAME` that names none of them."""
    text = read_text(path_or_text)
    lines = text.split("\n")
    errors: list[tuple[int, str]] = []
    meta, skip = front_matter(lines, errors)
    # The front matter's lines are blanked, not cut: the parser's line numbers stay the file's
    tokens = _markdown().parse("\n" * skip + "\n".join(lines[skip:]))
    markup_problems(tokens, errors)
    heading, intro, drafts = sections(tokens, lines, skip, errors)
    title = meta.get("title") or heading
    if not title:
        errors.append((1, "the lecture has no title: a `title:` in the front matter or a `# Title` line"))
    if not drafts:
        errors.append((1, "the lecture has no steps: each step is a ## heading"))
    model_lines(meta, lines, skip, drafts, errors)
    steps = [build_step(d, lines, errors, meta.get("model") or None) for d in drafts]
    if presets is not None:
        errors += unknown_presets(steps, presets)
    if errors:
        raise LectureError(errors)
    return Lecture(title=title, steps=tuple(steps), audience=meta.get("audience") or None,
                   model=meta.get("model") or None, intro=narrative(lines, intro), meta=meta)


def unknown_presets(steps: Sequence[Step], presets: Collection[str]) -> list[tuple[int, str]]:
    """(line, message) for each `ask: preset NAME` whose NAME is not one of `presets`."""
    asked = [s.question for s in steps if s is not None and s.question is not None and s.question.preset]
    return [(q.line, f"unknown preset “{q.preset}”; the presets are: {', '.join(sorted(presets))}")
            for q in asked if q.preset not in presets]


def builtin_lectures(folder: Path = LECTURES_DIR) -> dict[str, Lecture]:
    """The lectures shipped in assets/lectures/, by file name without ".md", in name order."""
    return {path.stem: load_lecture(path) for path in sorted(folder.glob("*.md"))}
