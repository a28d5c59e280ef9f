"""Browser tests: Playwright for Python driving Debian's Chromium (installed by `make`), never a download."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shared.paths import REPO_ROOT

ARTIFACTS = REPO_ROOT / "var" / "artifacts" / "browser"


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("Chromium is not installed (make installs Debian's package): browser tests skipped")
    if not (REPO_ROOT / "services" / "web" / "static" / "index.html").exists():
        pytest.skip("the browser bundle is not built (make builds it): browser tests skipped")
    return found


# Module scope: Playwright's sync API runs its own event loop, which must be gone before other
# tests call asyncio.run().
@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser, running_set):
    context = browser.new_context(base_url=f"http://{running_set.handles['web'].address}",
                                  viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.goto("/")
    opened.wait_for_selector("body[data-ready=true]", timeout=15_000)
    opened.problems = problems
    yield opened
    context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
