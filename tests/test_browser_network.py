"""Offline and safe by construction: touring every page contacts only the local server."""


import pytest
from conftest import ROOT, wait_idle

from viz_model.pages import page_urls

pytestmark = pytest.mark.browser


def _page_urls() -> list[str]:
    return page_urls()


def test_touring_all_pages_contacts_only_the_local_server(page):
    requests: list[str] = []
    page.on("request", record := lambda r: requests.append(r.url))
    page.goto(page.base_url)
    wait_idle(page)
    urls = _page_urls()
    assert len(urls) >= 1
    for url in urls[1:]:
        page.locator(f'[data-testid="stSidebar"] a[href="{url}"]').click()
        page.wait_for_url(f"**/{url}**")
        wait_idle(page)
        assert page.locator('[data-testid="stException"]').count() == 0, url
    foreign = [u for u in requests if not u.startswith((page.base_url, "data:", "blob:", "ws://127.0.0.1"))]
    assert foreign == []
    assert any("/_stcore/" in u or "/static/" in u for u in requests)  # the tour really loaded things
    page.remove_listener("request", record)  # the page goes on to the next test (conftest.ReusedPage)
    assert page.console.errors() == []


def test_usage_statistics_are_off_in_the_shipped_config():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["browser"]["gatherUsageStats"] is False
