"""What the accessibility audits share (#29, #42): axe-core on the page as it is now, and the walk over a page's tabs
(tabs inside tabs too). Used at laptop size (tests/test_browser_accessibility.py) and at phone size
(tests/test_browser_phone.py)."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from conftest import A11Y_NOTES, settled, wait_idle

FAILING = ("critical", "serious")
AXE = Axe()
TABLESS = ("start", "explorer", "generate", "cost", "attribution", "logit-lens", "sinks")  # pages without tabs


def _audit(page, where: str, rules: dict | None = None) -> list[str]:
    """Run axe on the page as it is now; returns the failing violations as lines, notes the others."""
    settled(page)
    options = {"resultTypes": ["violations"], **({"rules": rules} if rules else {})}
    found = AXE.run(page, options=options).response["violations"]
    failing = []
    for v in found:
        nodes = "; ".join(n["html"][:90] for n in v["nodes"][:3])
        line = f"{where}: {v['id']} ({v['impact']}) ×{len(v['nodes'])}: {v['help']} — {nodes}"
        if v["impact"] in FAILING or (rules and v["id"] in rules):
            failing.append(line)
        else:
            A11Y_NOTES.append(line)
    return failing


def _tab_labels(page) -> list[str]:
    return page.locator('[data-testid="stMain"] [role="tab"]').all_inner_texts()


def _open_tab(page, label: str) -> None:
    tab = page.locator('[data-testid="stMain"] [role="tab"]').filter(has_text=label).first
    tab.click()
    page.wait_for_function("""label => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')]
        .some(t => t.innerText === label && t.getAttribute('aria-selected') === 'true')""", arg=label)
    wait_idle(page)


def walk_tabs(page):
    """Open every tab of the page in turn (and the tabs inside it), yielding each label once it is open."""
    seen, queue = set(), _tab_labels(page)
    while queue:
        label = queue.pop(0)
        if label in seen:
            continue
        seen.add(label)
        _open_tab(page, label)
        yield label
        queue += [lb for lb in _tab_labels(page) if lb not in seen]  # tabs inside this tab


def check_page_and_tabs(page, url: str, check) -> list[str]:
    """`check(page, where)` on the page as opened, then on each of its tabs in turn: the lines they return, together.
    A page with tabs whose walk found none fails here (the walk ran)."""
    failing = check(page, url)
    labels = []
    for label in walk_tabs(page):
        labels.append(label)
        failing += check(page, f"{url} › {label}")
    assert url in TABLESS or labels, f"{url}: no tabs found"
    return failing
