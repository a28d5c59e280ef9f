"""Browser tests: Playwright for Python driving Debian's Chromium (installed by `make`), never a download."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from shared.paths import REPO_ROOT
from tests.fixtures.signing import link_token

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


def virtual_authenticator(page, user_verified: bool = True) -> str:
    """A platform authenticator in Chromium itself (CDP WebAuthn domain): it makes real passkeys and real
    assertions, with user verification answered as `user_verified`; its id."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    page.cdp = cdp
    return cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": user_verified, "automaticPresenceSimulation": True}})["authenticatorId"]


def open_signed_in(browser, running_set, credentials, passkey: bool = True, person: str = "",
                   enforce_csp: bool = False):
    """A fresh browser context on `localhost` (a passkey needs a domain name), signed in with a one-time
    link as `person` (by default a new one: a person has one conversation, kept across their browsers, so each
    test starts its own); with `passkey`, a passkey added through the page as a person would. The person is
    `page.person`; problems the page hit, and any Content-Security-Policy violation, are in `page.problems`.

    Playwright's own waiting helpers evaluate strings in the page, which the page's CSP forbids, so by default
    the CSP is bypassed for the test's helpers; `enforce_csp` keeps it (see the headers test)."""
    context = browser.new_context(base_url=f"http://localhost:{running_set.handles['web'].port}",
                                  viewport={"width": 1280, "height": 900}, bypass_csp=not enforce_csp)
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.on("console", lambda message: "Content Security Policy" in message.text and problems.append(
        f"{message.text} ({message.location})"))
    opened.person = person or f"person-{secrets.token_hex(4)}"
    opened.authenticator = virtual_authenticator(opened)
    # A passkey of this context's own authenticator (a new device): the operator's link replaces earlier ones.
    opened.goto(f"/sign-in#token={link_token(running_set, credentials, opened.person, replace=passkey)}")
    opened.wait_for_selector("body[data-ready=true]", timeout=15_000)
    if passkey:
        opened.click("#add-passkey")
        opened.wait_for_selector("#passkey[data-enrolled=true]", timeout=15_000)
    opened.problems = problems
    return opened


@pytest.fixture
def page(browser, running_set, credentials):
    opened = open_signed_in(browser, running_set, credentials)
    yield opened
    opened.context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
