"""The design is in the repository (docs/architecture.md) and what cites it resolves there.

Code, protos, policies and docs cite the design as `§n` (a numbered section of docs/architecture.md). A
citation of a section that does not exist, a `§` without a number, or a pointer to a design document outside
the repository is a reader sent nowhere. A `§` right after a named outside document ("RFC 7493 §2.2") cites
that document and is left alone.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache

from shared.paths import REPO_ROOT

DESIGN = REPO_ROOT / "docs" / "architecture.md"
# Cited documents of their own, whose section numbers are theirs: "RFC 7493 §2.2", "UAX #15 §9".
_OUTSIDE_DOCUMENT = re.compile(r"(?:RFC ?\d+|UAX ?#\d+|ISO[ /-]?[\d-]+|NIST (?:SP )?[\d-]+\w*)[ ,]*$")
# A citation with a sub-section ("§5.9") is read whole: the design has no numbered sub-sections to name.
_CITATION = re.compile(r"§ ?(\d+[a-z]?(?:\.\d+)*)?")
_SECTION = re.compile(r"^## (\d+[a-z]?)\. ", re.MULTILINE)
# Not the design's citations: others' documents kept as their authors wrote them, binary files, and this file
# (which writes about citations). The design's own citations of itself are read like any other.
_SKIPPED = ("tests/fixtures/", "docs/screenshots/", "tests/contract/test_design_document.py")


def sections() -> set[str]:
    return set(_SECTION.findall(DESIGN.read_text(encoding="utf-8")))


@cache  # read once for the tests below
def _tracked_text() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    texts = {}
    for path in listed.decode().split("\0"):
        if not path or path.startswith(_SKIPPED):
            continue
        try:
            texts[path] = (REPO_ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
    return texts


def citations(text: str) -> list[tuple[int, str]]:
    """(line, section) of each citation of the design in `text`; the section is "" when none is named."""
    found = []
    for hit in _CITATION.finditer(text):
        line_start = text.rfind("\n", 0, hit.start()) + 1
        if _OUTSIDE_DOCUMENT.search(text[line_start:hit.start()]):
            continue
        found.append((text.count("\n", 0, hit.start()) + 1, hit.group(1) or ""))
    return found


def test_the_design_document_has_every_numbered_section_and_its_parts():
    text = DESIGN.read_text(encoding="utf-8")
    assert {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "10a", "10b", "11"} <= sections()
    for part in ("The path of one question", "Decisions and their reasons"):
        assert part in text, part


def test_every_citation_of_the_design_names_a_section_it_has():
    have = sections()
    wrong = [f"{path}:{line}: §{section or ' without a number'}"
             for path, text in _tracked_text().items() for line, section in citations(text) if section not in have]
    assert not wrong, "\n".join(wrong)


# The design as it was kept outside the repository (the class keeps this line from naming it).
_OUTSIDE_DESIGN = re.compile(r"[A]RCHITECTURE(?:\.md)? ?§|shared/[A]RCHITECTURE")


def test_nothing_points_at_a_design_document_outside_the_repository():
    outside = [f"{path}:{number}" for path, text in _tracked_text().items()
               for number, line in enumerate(text.splitlines(), 1) if _OUTSIDE_DESIGN.search(line)]
    assert not outside, outside


def test_the_citation_reader_tells_the_designs_sections_from_other_documents():
    assert citations("Windows of bound results (§5, §6).\nsee § grants") == [(1, "5"), (1, "6"), (2, "")]
    assert citations("integers go this far (RFC 7493 §2.2)") == []
    assert citations("the stream-safe limit (UAX #15 §13), then §10b") == [(1, "10b")]
    assert citations("per NIST guidance the design says §99, and §5.9") == [(1, "99"), (1, "5.9")]
    assert citations("NIST SP 800-63B §5.1.1 and ISO 3166-2 §3") == []
