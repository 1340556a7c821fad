"""A lecture as one static HTML file: every step's title, narrative, question (its answer behind a <details>) and
charts as interactive Plotly figures, computed now on the lecture's model and dated; plotly.js inlined once, so the
file opens from file:// with no server and no network.

    python -m viz_model.handout attention handout.html            (a built-in lecture's name, or a lecture file)
    python -m viz_model.handout my-lecture.md out.html --model classroom --app-url http://class.example:8501
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import os
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import plotly.graph_objects as go
import plotly.io as pio
from markdown_it import MarkdownIt
from plotly.offline import get_plotlyjs

from viz_model import ASSETS_DIR, checkpoint
from viz_model.figures.common import fit_texts, png_config
from viz_model.figures.describe import summary
from viz_model.figures.export import readable_numbers
from viz_model.handout.views import Models, NotInHandout, figures_for
from viz_model.lectures import Lecture, Question, Step, builtin_lectures, load_lecture
from viz_model.lessons import lecture_numbers as numbers

Progress = Callable[[int, int, str], None]  # (steps done, steps in all, the step being built)


def markdown_html(text: str, app_url: str) -> str:
    """A lecture's Markdown as HTML: raw HTML is escaped, never passed through (the parser already refuses it in a
    lecture); a link to a page of the app ("/rope") goes to the app at `app_url`."""
    md = MarkdownIt("commonmark", {"html": False})
    tokens = md.parse(text)
    for tok in tokens:
        for child in tok.children or []:
            href = str(child.attrs.get("href", "")) if child.type == "link_open" else ""
            if href.startswith("/"):
                child.attrs["href"] = app_url.rstrip("/") + href
    return md.renderer.render(tokens, md.options, {})


def step_link(step: Step, n: int, lecture_name: str | None, app_url: str) -> str:
    """The step's view in the app; for a built-in lecture, with the lecture's panel at this step."""
    place = {"lecture": lecture_name, "step": str(n)} if lecture_name else {}
    query = urlencode({**step.params, **place}, doseq=True)
    return f"{app_url.rstrip('/')}/{step.page}" + (f"?{query}" if query else "")


def question_html(q: Question) -> str:
    """A written question with its choices, the answer behind <details>; a preset one names itself."""
    if q.preset:
        return f'<div class="question"><p>{html.escape(PRESET_QUESTION.format(name=q.preset))}</p></div>'
    choices = "".join(f"<li>{html.escape(c)}</li>" for c in q.choices)
    answer = " or ".join(f"“{q.choices[i]}”" for i in q.correct)
    why = f" {q.why}" if q.why else ""
    return (f'<div class="question"><p><strong>{QUESTION}</strong> {html.escape(q.prompt)}</p><ol>{choices}</ol>'
            f"<details><summary>{SHOW_ANSWER}</summary><p>{html.escape(answer + '.' + why)}</p></details></div>")


def figure_html(fig: go.Figure, div_id: str) -> str:
    """One figure's div and the script that draws it (plotly.js is in the page's head), its sentence beneath."""
    words = summary(fig)
    # what the page draws: long titles wrapped to fit a phone, numbers on cells in black or white
    fig = readable_numbers(go.Figure(fit_texts(fig.to_dict())))
    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, config=png_config(div_id), div_id=div_id,
                      default_width="100%", validate=False)
    save = (f'<button type="button" class="save" onclick="Plotly.downloadImage(\'{div_id}\', '
            f'{{format: \'svg\', filename: \'{div_id}\'}})">{SAVE_SVG}</button>')  # beside the modebar's PNG
    return f'<figure>{div}<figcaption>{html.escape(IN_WORDS + words)} {save}</figcaption></figure>'


def charts_html(step: Step, n: int, models: Models) -> str:
    """The step's charts, or the sentence saying why the handout does not draw its view."""
    try:
        figs = figures_for(step.page, step.params, models)
    except NotInHandout as why:
        return f'<p class="not-drawn">{html.escape(NOT_DRAWN.format(why=why))}</p>'
    if step.chart in figs:  # the chart the step points at comes first
        figs = {step.chart: figs[step.chart], **figs}
    return "".join(figure_html(fig, chart_id(n, key)) for key, fig in figs.items())


def chart_id(n: int, key: str) -> str:
    """The div of step n's chart that the page draws with `key` (ui.chart.show(fig, key=...))."""
    return f"step{n}-{key}"


def step_html(step: Step, n: int, total: int, models: Models, lecture_name: str | None, app_url: str) -> str:
    """One step's section: title, narrative, what to look at, the charts (or why not and a link), the question."""
    models = models.of_step(step.params) if step.page else models
    values, notes = numbers.step_values(models.main, step.numbers)  # the narrative's {{placeholders}}, computed
    parts = [f'<section id="step-{n}"><p class="where">{html.escape(STEP_OF.format(n=n, total=total))}</p>',
             f"<h2>{html.escape(step.title)}</h2>", markdown_html(numbers.fill(step.text, values), app_url)]
    parts.extend(f'<p class="note">{html.escape(note)}</p>' for note in notes)
    if step.look:
        parts.append(f'<p class="look"><strong>{LOOK_AT}</strong> {html.escape(numbers.fill(step.look, values))}</p>')
    if step.page is not None:  # a narrative-only step has no view
        parts.append(charts_html(step, n, models))
        link = step_link(step, n, lecture_name, app_url)
        parts.append(f'<p class="open"><a href="{html.escape(link)}">{OPEN_IN_APP}</a></p>')
    if step.question is not None:
        parts.append(question_html(step.question))
    return "".join(parts) + "</section>"


def model_line(models: Models, when: dt.datetime) -> str:
    """When and on what the numbers were computed: the date, the model, its size and where it ran."""
    meta = models.main.metadata or {}
    name = meta.get("title") or models.key
    return COMPUTED.format(date=when.strftime("%Y-%m-%d"), time=when.strftime("%H:%M"), key=models.key, name=name,
                           params=models.main.model.num_params(), device=str(models.main.model.device))


def build_handout(lecture: Lecture, models: Models, *, lecture_name: str | None = None,
                  app_url: str = "http://localhost:8501", now: dt.datetime | None = None,
                  progress: Progress | None = None) -> str:
    """The whole handout as one HTML text (UTF-8). `lecture_name`: a built-in lecture's name (its steps then link
    to the lecture in the app); `progress` is called before each step is computed."""
    when = now or dt.datetime.now().astimezone()
    sections = []
    for n, step in enumerate(lecture.steps, 1):
        if progress is not None:
            progress(n - 1, len(lecture.steps), step.title)
        sections.append(step_html(step, n, len(lecture.steps), models, lecture_name, app_url))
    head = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(lecture.title)}'
            f'</title><meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style>'
            f'<script type="text/javascript">{get_plotlyjs()}</script></head><body><main>')
    intro = [f"<h1>{html.escape(lecture.title)}</h1>"]
    if lecture.audience:
        intro.append(f'<p class="meta">{html.escape(FOR_WHOM.format(audience=lecture.audience))}</p>')
    intro.append(f'<p class="meta">{html.escape(model_line(models, when))}</p>')
    intro.append(markdown_html(lecture.intro, app_url))
    return head + "".join(intro) + "".join(sections) + "</main></body></html>"


# -- the command line ----------------------------------------------------------------------------------------------
MODELS_DIR = ASSETS_DIR / "models"


def shipped_loader(device: str = "cpu") -> Callable[[str], checkpoint.Checkpoint]:
    """Load shipped models by key (assets/models/KEY.safetensors), each once."""
    kept: dict[str, checkpoint.Checkpoint] = {}

    def load(key: str) -> checkpoint.Checkpoint:
        if key not in kept:
            path = MODELS_DIR / f"{key}.safetensors"
            if not path.exists():
                raise ValueError(f"there is no shipped model called {key!r}")
            ckpt = checkpoint.load_checkpoint(str(path), device=device)
            ckpt.model.requires_grad_(False)
            kept[key] = ckpt
        return kept[key]
    return load


def read_lecture(name_or_file: str) -> tuple[Lecture, str | None]:
    """(the lecture, its built-in name or None): a built-in lecture's name, or the path of a lecture file."""
    if Path(name_or_file).is_file():
        return load_lecture(Path(name_or_file)), None
    lectures = builtin_lectures()
    if name_or_file not in lectures:
        raise ValueError(f"no lecture file or built-in lecture called {name_or_file!r}; the built-in ones are "
                         f"{', '.join(lectures)}")
    return lectures[name_or_file], name_or_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz_model.handout", description=__doc__.split("\n\n")[0])
    parser.add_argument("lecture", help="a built-in lecture's name (attention, ...) or a lecture's Markdown file")
    parser.add_argument("out", help="the HTML file to write")
    parser.add_argument("--model", help="a shipped model's name (default: the lecture's, else the app's default)")
    parser.add_argument("--app-url", default="http://localhost:8501", help="where the app runs, for the links")
    args = parser.parse_args(argv)
    try:
        lecture, name = read_lecture(args.lecture)
        key = args.model or lecture.model or os.environ.get("ATTENTION_LAB_DEFAULT_MODEL", "english")
        load = shipped_loader()
        models = Models(key, load(key), load)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    say = lambda done, total, title: print(f"[{done + 1}/{total}] {title}", file=sys.stderr)  # noqa: E731
    text = build_handout(lecture, models, lecture_name=name, app_url=args.app_url, progress=say)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(text.encode()) / 1e6:.1f} MB, {len(lecture.steps)} steps)", file=sys.stderr)
    return 0


# -- what the handout says -----------------------------------------------------------------------------------------
COMPUTED = ("Every number and chart below was computed on {date} at {time} with the model “{key}” ({name}, "
            "{params:,} parameters, on {device}). Open a step in Attention Lab to change its settings and see it "
            "recomputed.")
FOR_WHOM = "For {audience}."
STEP_OF = "Step {n} of {total}"
LOOK_AT = "Look at:"
QUESTION = "Question:"
SHOW_ANSWER = "Show the answer"
PRESET_QUESTION = "This step asks the question “{name}”, which the model answers live in Attention Lab."
IN_WORDS = "In words: "
OPEN_IN_APP = "open this view in Attention Lab"
SAVE_SVG = "Save as SVG"
NOT_DRAWN = "The handout does not draw this view ({why}): open it in Attention Lab."
STYLE = """body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;line-height:1.5;margin:0}
main{max-width:980px;margin:0 auto;padding:1rem 1.25rem 4rem}section{border-top:1px solid #ccc;margin-top:2rem}
.where,.meta,figcaption{color:#4a4a4a;font-size:.9rem}figure{margin:1rem 0}.plotly-graph-div{min-height:420px}
code{background:#f2f2f2;padding:0 .2em;border-radius:3px}a{color:#0b5cad}
.note{color:#4a4a4a;font-size:.9rem}
.question{background:#f4f7fb;border-left:4px solid #0b5cad;padding:.5rem 1rem;margin:1rem 0}
details summary{cursor:pointer;font-weight:600}.not-drawn{font-style:italic}
button.save{font:inherit;font-size:.85rem;margin-left:.5rem}"""
