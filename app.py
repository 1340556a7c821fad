"""Attention Lab — entry point: page config, navigation, shared sidebar, page-level error guard."""

import os
from pathlib import Path

import streamlit as st
import torch

from viz_model.pages import PAGES
from viz_model.ui import class_mode, lecture, share, sidebar
from viz_model.ui.errors import guard
from viz_model.ui.jobs import status_badge

ROOT = Path(__file__).parent

# Many small requests from many users: one torch thread each beats threads fighting over 2 cores
# (measured: 512 cached generation steps took 14.8 s with 2 threads, 0.87 s with 1, on a busy 2-core server).
torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", "1")))

st.set_page_config(page_title="Attention Lab", page_icon="🔍", layout="wide")

# Old URLs still open their page: a hidden page at the old path runs the same file (viz_model.pages: a row's old_urls)
ALIASES = {old for p in PAGES for old in p.old_urls}

sections: dict[str, list] = {}
for row in PAGES:  # the page table (viz_model.pages): only pages whose file exists are listed
    section, file, title, icon, url = row.section, row.file, row.title, row.icon, row.url
    if (ROOT / file).exists():
        # The default page is served at "/" only, so Streamlit answered "/start" with "Page not found" (#26). It
        # keeps a reserved name ("home") and a hidden page at "start" runs the same file: old /start links open it.
        sections.setdefault(section, []).append(
            st.Page(str(ROOT / file), title=title, icon=icon, url_path="home" if url == "start" else url,
                    default=(url == "start"))
        )
        for old in row.old_urls:
            sections[section].append(st.Page(str(ROOT / file), title=title, icon=icon, url_path=old,
                                              visibility="hidden"))
# Streamlit's own sidebar menu puts each section's <li> items in <div>s inside its <ul> (axe: "list", "listitem",
# serious, #29), which screen readers announce as a broken list. The menu is hidden and the same pages are listed
# with st.page_link (sidebar.lesson_links): a link still switches page inside the session, keeping every setting.
page = st.navigation(sections, position="hidden")
# Class mode (#28): a student following the instructor takes their page and settings before any widget is drawn
by_path = {p.url_path: p for ps in sections.values() for p in ps if p.url_path not in ALIASES}
class_mode.begin(page.url_path, by_path)
with st.sidebar:
    if class_mode.following():  # the instructor picks the page; a follower's run is 17 % cheaper without the links
        sidebar.following_note()  # (25 elements: bench/lecture_present.py, 50 -> 41 ms of server CPU a follower)
    else:
        # #39: the guided lectures first; the instructor's folder files that are not offered are the instructor's
        lecture.sidebar_links(by_path, instructor=not class_mode.enabled() or class_mode.leading())
        sidebar.lesson_links({name: [p for p in ps if p.url_path not in ALIASES] for name, ps in sections.items()})

link = share.opened_link()  # before any widget takes its value from it
# #39: a lecture's step above the page (a slot always there); in class mode, read-only for a follower, the class's
# tools for a leader
lecture.panel(page.url_path, first_run=link is not None, **class_mode.in_lecture())
with guard("the sidebar"):
    sidebar.render()
    class_mode.panel()  # the "Class" expander: lead, follow, ask
    status_badge()  # a training run of this user shows on every page
try:
    with guard(page.title):
        page.run()
finally:  # also after a page's st.stop()
    share.link_notices(link)
    class_mode.end()  # a leader publishes the view just drawn
