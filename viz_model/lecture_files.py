"""Lectures as files (#39, item 5): write a Lecture back as its Markdown, read the instructor's lecture folders, read
an uploaded file for one session, and turn recorded views into a lecture. No Streamlit: `viz_model.ui.lecture_record`
draws the widgets.

    dump_lecture(lecture) -> str           the same Markdown format: load_lecture(dump_lecture(x)) is x (line numbers
                                           aside: `without_lines`)
    folder_lectures(folders, taken)        the *.md files of the folders ATTENTION_LAB_LECTURE_DIRS names at launch
                                           (os.pathsep-separated): the lectures, and each bad file by name and line
    read_upload(file name, bytes, taken)   a student's file, parsed for their session only (never written anywhere)
    recorded_lecture(title, steps)         "Add this view as a step", as a Lecture (each view a share link)

Names are what ?lecture=NAME carries. Built-in names come first; a folder file whose name is taken (by a built-in
lecture or an earlier folder's file) is refused with a message naming both, not renamed: an instructor who wants
their own "attention" sees why it is not listed. Names starting with SESSION_PREFIX belong to lectures a session
opened or recorded, so a link to one opened in another session can say why it does not open there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from viz_model.lectures import (
    DIRECTIVES,
    PAGE_ALIASES,
    PAGE_PARAMS,
    Lecture,
    LectureError,
    Question,
    Step,
    load_lecture,
    param_problem,
    parse_view,
)

ENV_VAR = "ATTENTION_LAB_LECTURE_DIRS"
SESSION_PREFIX = "my-"   # a lecture this session uploaded or recorded: ?lecture=my-week-3
MAX_FILES = 100          # *.md files read per folder (a folder of thousands is not a lecture folder)
MAX_STEPS = 60           # steps a recording keeps
MAX_NOTE_CHARS = 4_000   # a recorded step's note
MAX_TITLE_CHARS = 120
_PLACE = ("lecture", "step")  # the lecture's own place in a link: never part of a recorded view
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")


# -- writing ----------------------------------------------------------------------------------------------------


def dump_lecture(lec: Lecture) -> str:
    """The lecture as the Markdown file load_lecture reads: front matter (the keys it was written with, else the
    title), the intro, then one `## step` each with its directives and narrative."""
    meta = dict(lec.meta)
    for key, value in (("audience", lec.audience), ("model", lec.model)):
        if value and not meta.get(key):  # a lecture built in code, not read from a file
            meta[key] = value
    out = ["---", *(f"{k}: {v}" for k, v in meta.items()), "---", ""] if meta else []
    if meta.get("title") != lec.title:  # a title read from a `# Title` heading stays a heading (and meta as it was)
        out += [f"# {lec.title}", ""]
    if lec.intro:
        out += [lec.intro, ""]
    for step in lec.steps:
        out += [f"## {step.title}", ""] + ([f"view: {step.url}"] if step.url else [])  # no view: narrative only
        out += [f"look: {step.look}"] if step.look is not None else []
        out += [f"chart: {step.chart}"] if getattr(step, "chart", None) else []  # the chart the step points at
        out += _ask_lines(step.question) if step.question is not None else []
        out += ["", step.text, ""] if step.text else [""]
    return "\n".join(out).rstrip("\n") + "\n"


def _ask_lines(q: Question) -> list[str]:
    if q.preset:
        return [f"ask: preset {q.preset}"]
    choices = " | ".join(("*" if i in q.correct else "") + c for i, c in enumerate(q.choices))
    return [f"ask: {q.prompt} | {choices}"] + ([f"why: {q.why}"] if q.why else [])


def messages(err: LectureError) -> list[str]:
    """Each problem as a sentence: "line 4: ..." (a problem of the whole file or of a recorded step: its message)."""
    return [(f"line {n}: " if n else "") + msg for n, msg in err.errors]


def without_lines(lec: Lecture) -> Lecture:
    """The lecture with its line numbers zeroed: what stays the same when it is written out and read back."""
    steps = tuple(replace(s, line=0, question=s.question and replace(s.question, line=0)) for s in lec.steps)
    if steps and hasattr(steps[0], "numbers"):  # the placeholders in a step's text carry their lines too
        steps = tuple(replace(s, numbers=tuple(replace(n, line=0) for n in s.numbers)) for s in steps)
    return replace(lec, steps=steps)


# -- names --------------------------------------------------------------------------------------------------------


def slug(text: str) -> str:
    """A name for ?lecture=: letters, digits, - and _ ("Week 3.md" -> "Week-3"), at most 60 characters."""
    return _SLUG.sub("-", text).strip("-")[:60]


def session_name(stem: str, taken: Collection[str]) -> str:
    """SESSION_PREFIX + the file's or title's slug, with -2, -3... until no lecture has it."""
    base = SESSION_PREFIX + (slug(stem) or "lecture")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


# -- the instructor's folders -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileProblem:
    """A lecture file that is not offered: its path, and each problem as (line, message) (line 0: the whole file)."""

    path: Path
    errors: tuple[tuple[int, str], ...]

    def __str__(self) -> str:
        return "; ".join((f"line {n}: " if n else "") + msg for n, msg in self.errors)


def lecture_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders ATTENTION_LAB_LECTURE_DIRS names (os.pathsep-separated), in order, each once; unset or empty:
    none. Read by the server from its own environment: nothing a student types names a folder."""
    raw = (os.environ if env is None else env).get(ENV_VAR, "")
    out: list[Path] = []
    for part in raw.split(os.pathsep):
        folder = Path(part.strip()).expanduser()
        if part.strip() and folder not in out:
            out.append(folder)
    return out


def folder_files(folders: Sequence[Path]) -> tuple[list[Path], list[FileProblem]]:
    """Each folder's *.md files in name order (at most MAX_FILES a folder); a missing folder is a problem."""
    files, problems = [], []
    for folder in folders:
        if not folder.is_dir():
            problems.append(FileProblem(folder, ((0, f"{ENV_VAR} names it, but it is not a folder"),)))
            continue
        try:
            found = sorted(p for p in folder.glob("*.md") if p.is_file())
        except OSError as err:
            problems.append(FileProblem(folder, ((0, f"the folder cannot be read ({err.strerror or err})"),)))
            continue
        if len(found) > MAX_FILES:
            problems.append(FileProblem(folder, ((0, f"{len(found)} lecture files: only the first {MAX_FILES} "
                                                     "(by name) are read"),)))
        files += found[:MAX_FILES]
    return files, problems


def stamp(folders: Sequence[Path]) -> tuple:
    """What changes when a lecture file is added, edited or removed (cache key of folder_lectures)."""
    out = []
    for path in folder_files(folders)[0]:
        try:
            info = path.stat()
        except OSError:
            continue
        out.append((str(path), info.st_mtime_ns, info.st_size))
    return tuple(out)


def folder_lectures(folders: Sequence[Path], taken: Collection[str] = (), presets: Collection[str] | None = None
                    ) -> tuple[dict[str, Lecture], list[FileProblem]]:
    """Every lecture file of the folders, by name (its file name's slug), and the files not offered: a file that
    does not parse (each error's line), a name another lecture has (built-in `taken`, or an earlier file), a name
    kept for sessions' lectures. Each file is read at most MAX_BYTES (load_lecture's bound)."""
    files, problems = folder_files(folders)
    found: dict[str, Lecture] = {}
    first: dict[str, Path] = {}
    for path in files:
        name = slug(path.stem)
        clash = (first.get(name) and f"another file, {first[name]}, has the name “{name}”") or (
            name in taken and f"“{name}” is a built-in lecture's name: rename the file to offer it too")
        if not name or name.startswith(SESSION_PREFIX):
            clash = f"a name starting “{SESSION_PREFIX}” is kept for lectures a student opens in their own session"
        if clash:
            problems.append(FileProblem(path, ((0, clash),)))
            continue
        try:
            found[name] = load_lecture(path, presets)
            first[name] = path
        except LectureError as err:
            problems.append(FileProblem(path, tuple(err.errors)))
        except OSError as err:
            problems.append(FileProblem(path, ((0, f"the file cannot be read ({err.strerror or err})"),)))
    return found, problems


# -- a session's own lectures -------------------------------------------------------------------------------------


def read_upload(file_name: str, data: bytes, taken: Collection[str], presets: Collection[str] | None = None,
                ) -> tuple[str, Lecture]:
    """An uploaded file's (name, lecture) for one session: a .md name, at most MAX_BYTES, UTF-8 Markdown text
    (load_lecture checks size and encoding before parsing). Raises LectureError naming each problem's line."""
    if not file_name.lower().endswith(".md"):
        raise LectureError([(0, f"{file_name[:60]!r} is not a .md file: a lecture is a Markdown text")])
    lec = load_lecture(bytes(data), presets)  # bytes: never read as a path
    return session_name(Path(file_name).stem, taken), lec


def view_link(page: str, query: Mapping[str, str | Sequence[str]]) -> str:
    """A page's share link from its url path and its URL query (the parameters its bound widgets write): the
    lecture's place (lecture, step) and anything that is not a setting of that page (a class code) left out."""
    page = PAGE_ALIASES.get(page.strip("/"), page.strip("/"))
    if page not in PAGE_PARAMS:
        raise ValueError(f"“/{page}” is not a page a lecture can show")
    params: dict[str, str | list[str]] = {}
    for name, value in query.items():
        values = [value] if isinstance(value, str) else list(value)
        if name in _PLACE or not values or any(param_problem(page, name, v) for v in values):
            continue
        params[name] = values[0] if len(values) == 1 else values
    return Step(title="", page=page, params=params, text="").url


def escape_note(text: str) -> str:
    """A typed note as narrative that reads back as typed: a line that would be a directive ("why: ...") or a
    `#`/`##` heading (which would start a step) gets a Markdown backslash, which the page does not show."""
    out = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        key, colon, rest = line.partition(":")
        if colon and DIRECTIVES.get(key.strip()):
            line = f"{key}\\:{rest}"
        elif re.match(r" {0,3}#{1,2}(\s|$)", line):
            line = line.replace("#", "\\#", 1)
        out.append(line.rstrip())
    return "\n".join(out).strip()


def recorded_lecture(title: str, steps: Sequence[tuple[str, str, str]]) -> Lecture:
    """Recorded (title, note, view link) steps as a Lecture, read back from its own Markdown (so "Try it" opens
    exactly what the download holds). Raises LectureError with each problem as "step N: ..."."""
    errors: list[tuple[int, str]] = []
    if not steps:
        errors.append((0, NO_STEPS))
    drafts = []
    for n, (step_title, note, view) in enumerate(steps[:MAX_STEPS], 1):
        found: list[tuple[int, str]] = []
        page, params = parse_view(view, n, found)
        head = step_title.strip()[:MAX_TITLE_CHARS] or f"Step {n}"
        drafts.append(Step(title=head, page=page or "start", params=params,
                           text=escape_note(note[:MAX_NOTE_CHARS])))
        try:  # the note alone, as a one-step file: its raw HTML or bad link, named by step
            load_lecture(dump_lecture(Lecture(title="t", steps=(drafts[-1],))))
        except LectureError as err:
            found += [(n, msg) for _, msg in err.errors]
        errors += [(n, msg) for _, msg in found]
    if errors:
        raise LectureError([(0, f"step {n}: {msg}" if n else msg) for n, msg in errors])
    name = title.strip()[:MAX_TITLE_CHARS] or DEFAULT_TITLE
    return load_lecture(dump_lecture(Lecture(title=name, steps=tuple(drafts), meta={"title": name})))


# -- what the page says -------------------------------------------------------------------------------------------
DEFAULT_TITLE = "My lecture"
NO_STEPS = "the lecture has no steps yet: open a view and press “Add this view as a step”"
ELSEWHERE = ("“{name}” was opened or recorded in another browser session: a lecture someone uploads or records lives "
             "only in the tab that made it. Ask them for the file, then open it here under “Record a lecture” → "
             "“Open a lecture file”.")
SESSION_ONLY = ("Lectures you open or record here live in this tab only: nothing is written on the server, and a "
                "reload forgets them. Download the file to keep it.")
__all__ = ["ENV_VAR", "FileProblem", "dump_lecture", "escape_note", "folder_lectures",
           "lecture_dirs", "messages", "read_upload", "recorded_lecture", "session_name", "slug", "stamp", "view_link",
           "without_lines"]
