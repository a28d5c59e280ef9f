"""A component the compiler accepted but the page's renderer refuses becomes a placeholder, and the rest of the
revision is still shown (services/web/frontend/src/refused.js, run in Node over the generated prop schemas)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from shared.paths import REPO_ROOT

REFUSED = REPO_ROOT / "services" / "web" / "frontend" / "src" / "refused.js"
GENERATED = REPO_ROOT / "services" / "web" / "frontend" / "src" / "generated" / "catalog-schemas.js"

RUN = """
const { withPlaceholders } = await import(process.env.REFUSED_URL);
let input = '';
for await (const chunk of process.stdin) input += chunk;
console.log(JSON.stringify(withPlaceholders(JSON.parse(input))));
"""


def _placed(components: list[dict]):
    node = shutil.which("node")
    if node is None or not GENERATED.exists():
        pytest.skip("node, or the generated prop schemas (make frontend), are missing")
    message = {"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": components}}
    result = subprocess.run([node, "--input-type=module", "-e", RUN], input=json.dumps(message), cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=60, env={**os.environ,
                                                                            "REFUSED_URL": REFUSED.as_uri()})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_heading_of_120_characters_that_are_240_utf16_units_is_not_refused():
    assert _placed([{"id": "h", "component": "Heading", "text": "\U0001F4C8" * 120}]) is None


def test_only_the_refused_component_is_replaced_keeping_its_children():
    placed = _placed([
        {"id": "root", "component": "Column", "children": ["h", "t"]},
        {"id": "h", "component": "Heading", "text": "\U0001F4C8" * 121},  # over the contract's 120 characters
        {"id": "t", "component": "Text", "text": "fine"},
        {"id": "c", "component": "Card", "children": ["t"], "tone": "no such tone"},
    ])["updateComponents"]["components"]
    assert [c["component"] for c in placed] == ["Column", "Placeholder", "Text", "Placeholder"]
    assert placed[1] == {"id": "h", "component": "Placeholder", "code": "CLIENT_REFUSED", "children": [],
                         "reason": "This page could not display this Heading."}
    assert placed[3]["children"] == ["t"]
