"""Every draft the docs show runs as it is written, on every backend (docs/*.md).

A draft in the docs is a ```json block with "mode"; its ids are placeholders, `fld_…entity.field`, for the
opaque ids a model reads from the catalog, and an `<!-- runs on: supply -->` line before it names the test
supply model (the retail demo otherwise). Each is sent to the Resource Gateway's Analyze as a model's would be,
after the placeholders are replaced by that catalog's ids, and must be answered. The parts the docs' tables
show must each be inside one of those drafts, so no part is shown that has not run.
"""

from __future__ import annotations

import json
import re

import pytest

from shared.paths import REPO_ROOT
from tests.resources.conftest import Session

BLOCK = re.compile(r"(<!-- runs on: (\w+) -->\n)?```json\n(.*?)```", re.S)
PLACEHOLDER = re.compile(r'"(ent|fld|met|rel)_…([a-z_]+)(?:\.([a-z_]+))?"')
CODE = re.compile(r"`([^`]+)`")


def documented() -> list[tuple[str, str, dict]]:
    """(where, model, draft) for every draft in docs/."""
    found = []
    for path in sorted((REPO_ROOT / "docs").glob("*.md")):
        for match in BLOCK.finditer(path.read_text()):
            text = match.group(3)
            if '"mode"' in text:
                found.append((f"{path.name}:{text[:40]}", match.group(2) or "retail", json.loads(text)))
    return found


def parts() -> list[str]:
    """The draft parts the tables of the drafts' sections show (a condition, a calculation, `"having": …`), as
    written: every code in a table row there that reads as JSON."""
    text = (REPO_ROOT / "docs" / "semantic-model.md").read_text()
    section = text[text.index("## Asking for data"):text.index("## Ids and the fingerprint")]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [code for row in rows for code in CODE.findall(row) if _json_part(code) is not None]


def _json_part(code: str) -> dict | None:
    for written in (code, "{" + code + "}"):
        try:
            value = json.loads(written)
        except ValueError:
            continue
        return value if isinstance(value, dict) and value else None
    return None


def _resolved(value, s: Session):
    text = PLACEHOLDER.sub(lambda m: json.dumps(_id(s, *m.groups())), json.dumps(value, ensure_ascii=False))
    return json.loads(text)


def _id(s: Session, kind: str, first: str, second: str | None) -> str:
    if kind == "ent":
        return s.entity(first)
    if kind == "rel":
        return s.relationship(first)
    return s.field(first, second) if kind == "fld" else s.metric(first, second)


def test_the_docs_show_drafts_and_their_parts():
    assert len(documented()) >= 10 and {model for _, model, _ in documented()} == {"retail", "supply"}
    assert len(parts()) >= 12


@pytest.mark.parametrize("model", ["retail", "supply"])
def test_every_documented_draft_runs_as_written(model, gateway, supply_gateway):
    s = Session(gateway if model == "retail" else supply_gateway)
    for where, documented_model, draft in documented():
        if documented_model == model:
            analysis = s.analyze(_resolved(draft, s))  # a refusal fails the test, naming the reason and pointer
            assert analysis.descriptor.columns, where


def test_every_part_the_tables_show_is_in_a_draft_that_runs():
    drafts = [json.dumps(draft, ensure_ascii=False) for _, _, draft in documented()]
    for part in parts():
        whole = json.dumps(_json_part(part), ensure_ascii=False)
        inner = whole if part.startswith("{") else whole[1:-1]  # `"having": {…}` is a key of a draft
        assert any(inner in draft for draft in drafts), part
