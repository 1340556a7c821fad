"""The class summary (#39, item 4): each question a class was asked, its answer counts, the share of the class that
picked the model's answer, and the model's answer. Anonymous by construction: only counts reach it (the store keeps
no student id with a closed question). Markdown and CSV for the instructor's download; no streamlit here."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class AskedQuestion:
    """One question as the class store kept it: its choices, the model's answer ({"correct": [indices], "why": ...},
    or {} for a free question) and the number of answers per choice."""

    qid: int
    kind: str
    prompt: str
    choices: tuple[str, ...]
    answer: dict
    counts: tuple[int, ...]

    @property
    def correct(self) -> tuple[int, ...]:
        return tuple(i for i in self.answer.get("correct") or () if 0 <= i < len(self.choices))

    @property
    def answers(self) -> int:
        return sum(self.counts)

    @property
    def share_correct(self) -> float | None:
        """The share of the answers that picked one of the model's choices; None without answers or a model answer."""
        if not self.answers or not self.correct:
            return None
        return sum(self.counts[i] for i in self.correct) / self.answers

    @property
    def model_answer(self) -> str:
        if not self.correct:
            return "(none: a free question)"
        names = " or ".join(self.choices[i] for i in self.correct)  # a lecture's written question: its author's
        return names + (" (the lecture's answer)" if self.answer.get("source") == "lecture" else "")


def share_text(q: AskedQuestion) -> str:
    share = q.share_correct
    if share is None:
        return "no answers yet" if q.correct else "no model answer"
    return f"{share:.0%} ({sum(q.counts[i] for i in q.correct)} of {q.answers})"


def _cell(text: str) -> str:
    """A table cell: one line, a literal pipe (a student's or instructor's text never breaks the table)."""
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|")


def summary_markdown(questions: Sequence[AskedQuestion], title: str, when: str) -> str:
    """The summary as a Markdown document: one table row per question, then each question's counts per choice."""
    lines = [f"# Class summary: {_cell(title)}", "", f"{when}. Anonymous: answer counts only.", ""]
    if not questions:
        return "\n".join([*lines, "No question was asked in this class yet.", ""])
    lines += ["| # | question | answers | share correct | model's answer |", "|---|---|---|---|---|"]
    lines += [f"| {q.qid} | {_cell(q.prompt)} | {q.answers} | {share_text(q)} | {_cell(q.model_answer)} |"
              for q in questions]
    for q in questions:
        lines += ["", f"## {q.qid}. {_cell(q.prompt)}", "", "| choice | answers | model's answer |", "|---|---|---|"]
        lines += [f"| {_cell(c)} | {n} | {'✓' if i in q.correct else ''} |"
                  for i, (c, n) in enumerate(zip(q.choices, q.counts))]
    return "\n".join(lines) + "\n"


def summary_rows(questions: Sequence[AskedQuestion]) -> list[dict[str, object]]:
    """One row per question for the instructor's table."""
    return [{"#": q.qid, "question": q.prompt, "answers": q.answers, "share correct": share_text(q),
             "model's answer": q.model_answer} for q in questions]


CSV_COLUMNS = ("question", "prompt", "choice", "answers", "model_answer", "question_answers", "share_correct")


def summary_csv(questions: Sequence[AskedQuestion]) -> str:
    """The summary as CSV: one row per question and choice (a spreadsheet sums and charts it as it is)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for q in questions:
        share = "" if q.share_correct is None else f"{q.share_correct:.4f}"
        for i, (c, n) in enumerate(zip(q.choices, q.counts)):
            writer.writerow((q.qid, q.prompt, c, n, "yes" if i in q.correct else "no", q.answers, share))
    return out.getvalue()


# -- what the page says --
SUMMARY_TITLE = "Class summary"
SUMMARY_HELP = ("Each question asked in this class, its answer counts, the share that picked the model's answer, and "
                "the model's answer. Anonymous: counts only.")
NO_QUESTIONS = "No question was asked in this class yet: a step's “Ask the class this question” opens one."
