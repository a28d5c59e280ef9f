"""How the read-path screen (shared/safety/screen.py) does on a held-out corpus: recall per attack kind and
language, false positives per benign kind, as the broker screens tool text (a structured result is screened as the
JSON text the tool returns). Issue 45's yardstick: its corpora are written by people who have not read the screen or
its own corpus, hashed, and scored here first, before the screen is changed.

Usage: python -m bench.screen_fresh CORPUS.jsonl[.gz] [--json]   (gzipped: sealed corpora are kept so)
       python -m bench.screen_fresh --real [--json]   (false positives on real text: Debian's /usr/share/doc
       changelogs and READMEs, and the Python standard library's docstrings, in paragraph-sized pieces)
Each line: {"id", "label": "attack"|"benign", "kind", "language", and "text" or "fields" (an object of strings)}.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

from bench.screen_mix import debian_docs, docstrings, read_text
from shared.safety.screen import screen


def _text(item: dict) -> str:
    """The text as a tool returns it: a structured result as its JSON."""
    return item["text"] if "text" in item else json.dumps(item["fields"], ensure_ascii=False)


def _ratio(hits: int, total: int) -> dict:
    return {"hits": hits, "of": total, "ratio": round(hits / total, 3) if total else None}


def score(items: list[dict]) -> dict:
    """Recall over attacks and false-positive ratio over benign texts, overall and per kind (and per language)."""
    flagged = {item["id"]: screen(_text(item), "held-out").flagged for item in items}
    groups: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for item in items:
        label = item["label"]
        for axis in ("all", "kind", "language"):
            key = "all" if axis == "all" else str(item.get(axis, "?"))
            groups[(label, axis, key)].append(flagged[item["id"]])
    report: dict = {"attacks": {}, "benign": {}}
    for (label, axis, key), results in sorted(groups.items()):
        report["attacks" if label == "attack" else "benign"].setdefault(axis, {})[key] = _ratio(
            sum(results), len(results))
    report["missed"] = [item["id"] for item in items if item["label"] == "attack" and not flagged[item["id"]]]
    report["false_positives"] = [item["id"] for item in items if item["label"] == "benign" and flagged[item["id"]]]
    return report


PIECE_CHARS = (200, 4000)  # a piece: a paragraph-sized run of text, as a tool result would hold one


def _paragraphs(text: str) -> list[str]:
    pieces, current = [], ""
    for paragraph in text.split("\n\n"):
        current = f"{current}\n\n{paragraph}" if current else paragraph
        if len(current) >= PIECE_CHARS[0]:
            pieces.append(current[:PIECE_CHARS[1]])
            current = ""
    return pieces


def real_text() -> list[tuple[str, str]]:
    """(where, piece) from Debian's installed documentation and the Python standard library's docstrings."""
    import sysconfig

    found = []
    for path in debian_docs():
        found += [(str(path), piece) for piece in _paragraphs(read_text(path))]
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        found += [(str(path), doc[:PIECE_CHARS[1]]) for doc in docstrings(path) if len(doc) >= PIECE_CHARS[0]]
    return found


def score_real() -> dict:
    pieces = real_text()
    flagged = [(where, screen(piece, "real-text")) for where, piece in pieces]
    hits = [(where, result.matches[0].rule, result.matches[0].snippet) for where, result in flagged
            if result.flagged]
    by_rule: dict[str, int] = defaultdict(int)
    for _, rule, _ in hits:
        by_rule[rule] += 1
    return {"pieces": len(pieces), "characters": sum(len(piece) for _, piece in pieces),
            "false_positives": _ratio(len(hits), len(pieces)), "by_rule": dict(sorted(by_rule.items())),
            "examples": hits[:20]}


def _print(report: dict, corpus: Path, digest: str) -> None:
    print(f"{corpus} (sha256 {digest})")
    for label, what in (("attacks", "recall"), ("benign", "false positives")):
        overall = report[label]["all"]["all"]
        print(f"\n{label}: {what} {overall['hits']}/{overall['of']} = {overall['ratio']:.1%}")
        for axis in ("kind", "language"):
            for key, found in report[label].get(axis, {}).items():
                print(f"  {axis} {key:<24} {found['hits']:>3}/{found['of']:<3} {found['ratio']:.0%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?")
    parser.add_argument("--real", action="store_true", help="false positives on real text instead of a corpus")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    args = parser.parse_args(argv)
    if args.real:
        report = score_real()
        print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else
              f"real text: {report['false_positives']['hits']}/{report['pieces']} pieces flagged "
              f"({report['false_positives']['ratio']:.2%}; {report['characters']:,} characters); by rule "
              f"{report['by_rule']}")
        return 0
    if args.corpus is None:
        parser.error("a corpus file, or --real")
    data = args.corpus.read_bytes()
    if args.corpus.suffix == ".gz":  # sealed corpora are kept compressed, so that no search reads them by accident
        data = gzip.decompress(data)
    items = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    report = score(items)
    digest = hashlib.sha256(data).hexdigest()
    if args.json:
        print(json.dumps({"corpus": str(args.corpus), "sha256": digest, **report}, indent=2))
    else:
        _print(report, args.corpus, digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
