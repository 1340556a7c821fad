"""An import-linter contract (#41): no lesson's module imports another lesson's, in any layer. A lesson is a row of
viz_model.pages, so a new lesson is checked as soon as it has its row; nothing here lists lessons.

A lesson's modules are its row's name and parts in app_pages/, ui/, figures/ and lessons/ (a package's submodules
included). The per-layer "independence" contracts keep the lessons of one layer apart; this one also forbids the
imports across layers (ui/qkv.py importing figures/explorer.py, say): what two lessons share lives in a shared module
(figures/attention.py, figures/next_token.py, ui/widgets.py, lessons/common.py ...). Direct imports are checked:
the shared modules, the lecture and class mode (features of every page, not lessons) may import a lesson.

pyproject.toml registers it (`contract_types`); `lint-imports` runs it with the other contracts.
"""

from __future__ import annotations

from collections.abc import Iterable

from importlinter.application import output
from importlinter.domain.contract import Contract, ContractCheck


def lesson_of(rows: Iterable) -> dict[str, str]:
    """Module name -> the lesson (row name) it belongs to, for every module a row names (viz_model.pages.Page)."""
    return {m: row.name for row in rows for m in row.modules()}


def crossings(graph, owner: dict[str, str]) -> list[tuple[str, str, list[int]]]:
    """(importer, imported, line numbers) of each direct import from one lesson's module into another lesson's."""
    def lesson(module: str) -> str | None:
        while module:
            if module in owner:
                return owner[module]
            module = module.rpartition(".")[0]
        return None

    found = []
    for importer in sorted(graph.modules):
        mine = lesson(importer)
        if mine is None:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            theirs = lesson(imported)
            if theirs is not None and theirs != mine:
                lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                found.append((importer, imported, lines))
    return found


class LessonsApartContract(Contract):
    """Kept when no module of one lesson (a row of viz_model.pages) directly imports a module of another."""

    type_name = "lessons_apart"

    def check(self, graph, verbose: bool) -> ContractCheck:
        from viz_model.pages import PAGES  # the page table (core, no streamlit): importing it runs nothing

        found = crossings(graph, lesson_of(PAGES))
        return ContractCheck(kept=not found, metadata={"crossings": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["crossings"]:
            where = ", ".join(f"l.{n}" for n in lines)
            output.print_error(f"{importer} imports {imported} ({where}): another lesson's module; move what they "
                               "share to a shared module of its layer", bold=False)
            output.new_line()
