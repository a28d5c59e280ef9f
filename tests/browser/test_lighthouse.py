"""Lighthouse (the npm package, run in the system's Chromium) on the answer page as a signed-in person sees it
after a question: accessibility and best practices each score at least 95. The scores are kept beside the
screenshots (var/artifacts/browser/lighthouse-<desktop|mobile>.json)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from shared.paths import REPO_ROOT
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_browser import ask

LIGHTHOUSE = REPO_ROOT / "node_modules" / ".bin" / "lighthouse"
CATEGORIES = ("accessibility", "best-practices")


@pytest.mark.parametrize("form_factor", ["desktop", "mobile"])
def test_the_answer_page_scores_at_least_95_for_accessibility_and_best_practices(page, running_set, chromium_path,
                                                                                 tmp_path, form_factor):
    if not LIGHTHOUSE.exists():
        pytest.skip("lighthouse is not installed (npm ci installs it)")
    ask(page, "What is our net revenue by region?")
    page.wait_for_selector("tessera-chart[data-drawn]", timeout=30_000)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
    report_path = tmp_path / "lighthouse.json"
    run = subprocess.run(
        [str(LIGHTHOUSE), f"http://localhost:{running_set.handles['web'].port}/", "--quiet", "--output=json",
         f"--output-path={report_path}", f"--only-categories={','.join(CATEGORIES)}", "--only-audits=network-requests",
         *(["--preset=desktop"] if form_factor == "desktop" else []),  # (Lighthouse's own default: a phone)
         "--chrome-flags=--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage",
         f"--extra-headers={json.dumps({'Cookie': cookie})}", "--max-wait-for-load=30000"],
        env={**os.environ, "CHROME_PATH": chromium_path}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(report_path.read_text())
    scores = {name: round(report["categories"][name]["score"] * 100) for name in CATEGORIES}
    audits = [report["audits"][ref["id"]] for name in CATEGORIES
              for ref in report["categories"][name]["auditRefs"] if ref["weight"]]
    missed = sorted(audit["id"] for audit in audits if audit["score"] is not None and audit["score"] < 1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kept = ARTIFACTS / f"lighthouse-{form_factor}.json"
    kept.write_text(json.dumps({"scores": scores, "missed": missed}, indent=2) + "\n")
    # The page it scored was the signed-in one, following the answer's stream (a signed-out page opens none).
    requests = report["audits"]["network-requests"]["details"]["items"]
    assert any("/api/surface/stream" in r["url"] and r.get("statusCode") == 200 for r in requests), [
        (r["url"], r.get("statusCode")) for r in requests]
    assert all(score >= 95 for score in scores.values()), (scores, missed)
