"""Mixed real text for the read-path screen's throughput (issue 45, part 3): what external tools really return, not
only the generated support tickets of `screen_throughput`.

The mix is built from what the machine's image holds offline, the same on every machine of that image, and is
deterministic: candidates are sorted, then shuffled with a fixed seed per source, and taken in that order until the
source's share is filled. A document (a file, a module's docstrings, a catalog, a batch of records) gives up to
`PIECES_PER_DOCUMENT` consecutive pieces of at most `PIECE_CHARS` characters, cut at line breaks, as a tool result is
clipped there; the last piece of a source is cut to fill its share exactly. The mix comes in `SLICES` slices of
`SLICE_BYTES`, in the same proportions and with no document in two slices: the screen's RE2 pass builds DFA states
as it meets new text and caches them, so screening the same text again measures the cache, not the screen. The
first slice warms up; each other slice is screened once, as text not seen before. Shares are of UTF-8 bytes:

- debian-docs: changelogs, READMEs and NEWS files under /usr/share/doc (gzipped or not);
- docstrings: the Python standard library's docstrings (site-packages left out), one module's joined by blank
  lines per piece;
- html: HTML pages under /usr/share/doc (libxslt, Node.js, Valgrind, libffi manuals...);
- json-files: JSON documents as installed (Node.js API docs under /usr/share/doc, /usr/share/iso-codes/json);
- json-records: Debian's package records (/var/lib/dpkg/status) as compact JSON arrays, as an API returns them;
- non-latin/LANG: translated messages from the gettext catalogs under /usr/share/locale/LANG/LC_MESSAGES (the
  ISO code-list catalogs left out: names, not prose), grouped into paragraphs; one equal share per language.

A source that cannot fill its share is not made up from the others: `build` says what fell short and why.

Usage: python -m bench.screen_mix [--json]   (the mix's composition and the screen's throughput over it)
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import random
import struct
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SLICE_BYTES = 1_500_000  # UTF-8 bytes of one slice
SLICES = 4  # one to warm up, then each of the others screened once: text the screen has not seen
WARM_SLICES = 1
SLOW_MB_PER_S = 1.0  # below this in the warm-up, only one slice is measured (and none again): a pass takes minutes
PIECE_CHARS = 20_000  # the screen clips a tool result there (shared/safety/screen.py MAX_CHARS)
PIECES_PER_DOCUMENT = 3  # consecutive pieces of one document at most: many documents, not a few long ones
SEED = 45
# Ten languages in scripts beyond Latin: Cyrillic, Greek, Han, kana, Hangul, Arabic, Hebrew, Devanagari, Thai.
LANGUAGES = ("ru", "uk", "el", "zh_CN", "ja", "ko", "ar", "he", "hi", "th")
NON_LATIN_SHARE = 0.25
SHARES: dict[str, float] = {
    "debian-docs": 0.25,
    "docstrings": 0.15,
    "html": 0.15,
    "json-files": 0.10,
    "json-records": 0.10,
    **{f"non-latin/{language}": NON_LATIN_SHARE / len(LANGUAGES) for language in LANGUAGES},
}
PARAGRAPH_CHARS = 300  # translated messages are joined with spaces into paragraphs of at least this many characters
RECORDS_PER_BATCH = 20


@dataclass(frozen=True)
class Roots:
    """Where the sources live (a test points them at a small tree of its own)."""

    doc: Path = Path("/usr/share/doc")
    locale: Path = Path("/usr/share/locale")
    iso_codes_json: Path = Path("/usr/share/iso-codes/json")
    dpkg_status: Path = Path("/var/lib/dpkg/status")
    stdlib: Path = field(default_factory=lambda: Path(sysconfig.get_paths()["stdlib"]))


@dataclass(frozen=True)
class Piece:
    source: str
    where: str
    text: str


@dataclass
class Mix:
    """One slice of the mix: every source's pieces for this slice, in a seeded order that interleaves them."""

    pieces: list[Piece]
    quotas: dict[str, int]  # bytes each source should give

    def bytes_by_source(self) -> dict[str, int]:
        found = dict.fromkeys(self.quotas, 0)
        for piece in self.pieces:
            found[piece.source] += len(piece.text.encode())
        return found


def digest(slices: list[Mix]) -> str:
    """sha256 over every slice's pieces in order: two machines measured the same mix when this agrees."""
    hashed = hashlib.sha256()
    for number, mix in enumerate(slices):
        for piece in mix.pieces:
            hashed.update(f"{number}\0{piece.source}\0{piece.where}\0{piece.text}\0".encode())
    return hashed.hexdigest()


def _shuffled(paths: Iterable[Path], source: str) -> list[Path]:
    ordered = sorted(paths)
    random.Random(f"{SEED}:{source}").shuffle(ordered)
    return ordered


def _head(text: str, limit: int = PIECE_CHARS) -> str:
    """The first `limit` characters, cut at the last line break when there is one in the second half."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", limit // 2, limit)
    return text[:cut] if cut > 0 else text[:limit]


def _fit(text: str, budget: int) -> str:
    """At most `budget` UTF-8 bytes of `text`, cut at a line break when one is in the second half."""
    data = text.encode()
    if len(data) <= budget:
        return text
    cut = data[:budget].decode("utf-8", "ignore")
    line = cut.rfind("\n", len(cut) // 2)
    return cut[:line] if line > 0 else cut


# ----------------------------------------------------------------------------------------------------------
# Sources: each yields (where, document) in its fixed order
# ----------------------------------------------------------------------------------------------------------

def debian_docs(root: Path = Path("/usr/share/doc")) -> list[Path]:
    """Debian's changelogs, READMEs and NEWS files (gzipped or not), one level under each package's directory."""
    return [path for path in sorted(root.glob("*/*"))
            if path.name.lower().startswith(("changelog", "readme", "news")) and path.is_file()]


def read_text(path: Path) -> str:
    """A file's text, gunzipped when its name ends in .gz; bytes that are not UTF-8 replaced."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.decode("utf-8", "replace")


def docstrings(path: Path) -> list[str]:
    """The docstrings of one Python module (its own, its classes' and its functions'), in ast.walk order; none
    when the file does not parse."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    return [doc for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and (doc := ast.get_docstring(node))]


def _files(paths: Iterable[Path], source: str) -> Iterator[tuple[str, str]]:
    for path in _shuffled(paths, source):
        text = read_text(path)
        if text.strip():
            yield str(path), text


def _debian_docs(roots: Roots) -> Iterator[tuple[str, str]]:
    return _files(debian_docs(roots.doc), "debian-docs")


def _docstrings(roots: Roots) -> Iterator[tuple[str, str]]:
    modules = [path for path in roots.stdlib.rglob("*.py") if not {"site-packages", "dist-packages"} & set(path.parts)]
    for path in _shuffled(modules, "docstrings"):
        found = docstrings(path)
        if found:
            yield str(path), "\n\n".join(found)


def _by_suffix(root: Path, *suffixes: str) -> list[Path]:
    return [path for path in root.rglob("*") if path.name.lower().endswith(suffixes) and path.is_file()]


def _html(roots: Roots) -> Iterator[tuple[str, str]]:
    return _files(_by_suffix(roots.doc, ".html", ".htm", ".html.gz", ".htm.gz"), "html")


def _json_files(roots: Roots) -> Iterator[tuple[str, str]]:
    found = _by_suffix(roots.doc, ".json", ".json.gz")
    if roots.iso_codes_json.is_dir():
        found += _by_suffix(roots.iso_codes_json, ".json")
    return _files(found, "json-files")


def _dpkg_records(status: Path) -> list[dict[str, str]]:
    """Debian's package records (RFC 822 stanzas), continuation lines joined to their field."""
    records = []
    for stanza in read_text(status).split("\n\n"):
        record: dict[str, str] = {}
        key = ""
        for line in stanza.split("\n"):
            if line[:1] in (" ", "\t") and key:
                record[key] += "\n" + line[1:]
            elif ":" in line:
                key, _, value = line.partition(":")
                record[key] = value.strip()
        if record:
            records.append(record)
    return records


def _json_records(roots: Roots) -> Iterator[tuple[str, str]]:
    if not roots.dpkg_status.is_file():
        return
    records = _dpkg_records(roots.dpkg_status)
    batches = [records[start:start + RECORDS_PER_BATCH] for start in range(0, len(records), RECORDS_PER_BATCH)]
    order = list(range(len(batches)))
    random.Random(f"{SEED}:json-records").shuffle(order)
    for index in order:
        yield f"{roots.dpkg_status} records {index * RECORDS_PER_BATCH}+", json.dumps(batches[index],
                                                                                     ensure_ascii=False)


def catalog_messages(path: Path) -> list[str]:
    """The translations in one gettext .mo catalog, in the catalog's order (sorted by original), the header left
    out; of a plural, the first form. Only translations that are not plain ASCII (left untranslated)."""
    data = path.read_bytes()
    if len(data) < 20:
        return []
    order = {0x950412DE: "<", 0xDE120495: ">"}.get(struct.unpack("<I", data[:4])[0])
    if order is None:
        return []
    _, count, originals, translations = struct.unpack(f"{order}4I", data[4:20])
    charset, found = "utf-8", []
    for index in range(count):
        original_length, _ = struct.unpack_from(f"{order}2I", data, originals + 8 * index)
        length, offset = struct.unpack_from(f"{order}2I", data, translations + 8 * index)
        raw = data[offset:offset + length]
        if original_length == 0:  # the header: says the charset
            for line in raw.decode("ascii", "replace").split("\n"):
                if "charset=" in line:
                    charset = line.split("charset=", 1)[1].strip() or charset
            continue
        try:
            text = raw.split(b"\0", 1)[0].decode(charset, "replace")
        except LookupError:
            text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        if text.strip() and not text.isascii():
            found.append(text.strip())
    return found


def _paragraphs(messages: list[str]) -> str:
    paragraphs, current = [], []
    for message in messages:
        current.append(message)
        if sum(len(m) + 1 for m in current) >= PARAGRAPH_CHARS:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def _non_latin(language: str) -> Callable[[Roots], Iterator[tuple[str, str]]]:
    def documents(roots: Roots) -> Iterator[tuple[str, str]]:
        folder = roots.locale / language / "LC_MESSAGES"
        catalogs = [path for path in folder.glob("*.mo") if not path.name.startswith("iso_")] if folder.is_dir() else []
        for path in _shuffled(catalogs, f"non-latin/{language}"):
            text = _paragraphs(catalog_messages(path))
            if text:
                yield str(path), text

    return documents


SOURCES: dict[str, Callable[[Roots], Iterable[tuple[str, str]]]] = {
    "debian-docs": _debian_docs,
    "docstrings": _docstrings,
    "html": _html,
    "json-files": _json_files,
    "json-records": _json_records,
    **{f"non-latin/{language}": _non_latin(language) for language in LANGUAGES},
}
WHERE = {
    "debian-docs": "changelog*, README*, NEWS* under {doc}/*/", "docstrings": "*.py under {stdlib} (not site-packages)",
    "html": "*.html under {doc}", "json-files": "*.json under {doc} and {iso_codes_json}",
    "json-records": "{dpkg_status}",
    **{f"non-latin/{language}": f"{{locale}}/{language}/LC_MESSAGES/*.mo" for language in LANGUAGES},
}


def _cuts(document: str) -> Iterator[str]:
    """A document's consecutive pieces, each cut at a line break, at most PIECES_PER_DOCUMENT of them."""
    rest = document
    for _ in range(PIECES_PER_DOCUMENT):
        piece = _head(rest)
        if not piece:
            return
        yield piece
        rest = rest[len(piece):].lstrip("\n")


def _fill(source: str, documents: Iterable[tuple[str, str]], quota: int, slices: int) -> list[list[Piece]]:
    """`slices` lists of pieces of about `quota` bytes each, from one stream of documents: a document's pieces all
    go to one slice (what a slice cannot hold of it is left out), so no two slices share a document."""
    stream = iter(documents)
    filled: list[list[Piece]] = []
    for _ in range(slices):
        pieces, used = [], 0
        for where, document in stream:
            for cut in _cuts(document):
                text = _fit(cut, quota - used)
                if text.strip():
                    pieces.append(Piece(source, where, text))
                    used += len(text.encode())
                if used >= quota - 64:  # within 64 bytes of the quota: full
                    break
            if used >= quota - 64:
                break
        filled.append(pieces)
    return filled


def build(slice_bytes: int = SLICE_BYTES, slices: int = SLICES, roots: Roots | None = None) -> tuple[list[Mix],
                                                                                                     dict[str, str]]:
    """The mix: `slices` slices of `slice_bytes` each, in the same proportions and with no document in two of
    them; and, by source, what fell short of its share and why (empty when the machine holds everything)."""
    roots = roots or Roots()
    quotas = {source: round(slice_bytes * share) for source, share in SHARES.items()}
    by_slice: list[list[Piece]] = [[] for _ in range(slices)]
    missing: dict[str, str] = {}
    for source, documents in SOURCES.items():
        filled = _fill(source, documents(roots), quotas[source], slices)
        got = [sum(len(piece.text.encode()) for piece in pieces) for pieces in filled]
        short = [number + 1 for number, size in enumerate(got) if size < quotas[source] * 0.99]
        if short:
            place = WHERE[source].format(**{name: getattr(roots, name) for name in (
                "doc", "locale", "iso_codes_json", "dpkg_status", "stdlib")})
            missing[source] = (f"{sum(got):,} of {quotas[source] * slices:,} bytes (short in slice "
                               f"{', '.join(map(str, short))} of {slices}): not enough text in {place}")
        for pieces, found in zip(by_slice, filled, strict=True):
            pieces += found
    mixes = []
    for number, pieces in enumerate(by_slice):
        random.Random(f"{SEED}:order:{number}").shuffle(pieces)
        mixes.append(Mix(pieces, quotas))
    return mixes, missing


# ----------------------------------------------------------------------------------------------------------
# The measurement
# ----------------------------------------------------------------------------------------------------------

def _family(source: str) -> str:
    return source.split("/", 1)[0]


def _screen_slice(mix: Mix, screen: Callable) -> tuple[float, dict[str, float], dict[str, int]]:
    """Wall time of one pass, and per source its pieces' summed times (each piece timed alone) and flagged count."""
    spent: dict[str, float] = dict.fromkeys(mix.quotas, 0.0)
    flagged: dict[str, int] = dict.fromkeys(mix.quotas, 0)
    started = time.perf_counter()
    for piece in mix.pieces:
        piece_started = time.perf_counter()
        hit = screen(piece.text, "bench").flagged
        spent[piece.source] += time.perf_counter() - piece_started
        flagged[piece.source] += hit
    return time.perf_counter() - started, spent, flagged


def measure(slices: list[Mix], screen: Callable, warm: int = WARM_SLICES) -> dict:
    """Screen the first `warm` slices once (one-time tables, RE2's DFA states for text of this kind), then each other
    slice once: every measured pass reads text the screen has not seen. MB/s (10^6 UTF-8 bytes of input per
    second) of the best pass, and per source the best of its summed times over the passes; then the first
    measured slice once more, as text already seen (RE2 caches DFA states: repeated text flatters it)."""
    warm_bytes, warm_seconds = 0, 0.0
    for mix in slices[:warm]:
        warm_bytes += sum(mix.bytes_by_source().values())
        warm_seconds += _screen_slice(mix, screen)[0]
    measured = slices[warm:]
    if warm_seconds and warm_bytes / warm_seconds / 1e6 < SLOW_MB_PER_S:
        measured = measured[:1]  # minutes a pass: one pass says enough
    best, best_source, flagged, pieces = 0.0, {}, {}, {}
    by_source: dict[str, int] = {}
    for mix in measured:
        size = mix.bytes_by_source()
        wall, spent, hits = _screen_slice(mix, screen)
        best = max(best, sum(size.values()) / wall / 1e6)
        for family in {_family(source) for source in mix.quotas}:
            sources = [source for source in mix.quotas if _family(source) == family]
            for key, group in ((family, sources), *((source, [source]) for source in sources if "/" in source)):
                seconds, got = sum(spent[s] for s in group), sum(size[s] for s in group)
                best_source[key] = max(best_source.get(key, 0.0), got / seconds / 1e6 if seconds else 0.0)
                by_source[key] = by_source.get(key, 0) + got
                flagged[key] = flagged.get(key, 0) + sum(hits[s] for s in group)
                pieces[key] = pieces.get(key, 0) + sum(piece.source in group for piece in mix.pieces)
    repeat = None
    if measured and len(measured) > 1:
        wall, _, _ = _screen_slice(measured[0], screen)
        repeat = round(sum(measured[0].bytes_by_source().values()) / wall / 1e6, 2)
    total = sum(size for key, size in by_source.items() if "/" not in key)

    def row(key: str) -> dict:
        return {"share": round(by_source[key] / total, 3) if total else 0.0, "bytes": by_source[key],
                "pieces": pieces[key], "flagged_pieces": flagged[key],
                "mb_per_s": round(best_source[key], 2) if by_source[key] else None}  # None: the source is missing

    families = list(dict.fromkeys(_family(source) for source in SHARES))
    return {"mb_per_s": round(best, 2) if total else None, "passes": len(measured), "repeat_text_mb_per_s": repeat,
            "bytes": total, "pieces": sum(len(mix.pieces) for mix in measured),
            "flagged_pieces": sum(flagged[family] for family in families if family in flagged),
            "by_source": {family: row(family) for family in families if family in by_source},
            "non_latin_by_language": {key.split("/", 1)[1]: row(key) for key in by_source if "/" in key}}


def _family_shares() -> dict[str, float]:
    shares: dict[str, float] = {}
    for source, share in SHARES.items():
        shares[_family(source)] = shares.get(_family(source), 0.0) + share
    return shares


def entry() -> dict:
    """`make bench`'s screen_throughput_mixed_real_text (bench/tool_gate.py)."""
    from shared.safety.screen import screen

    slices, missing = build()
    found = measure(slices, screen)
    value = found.pop("mb_per_s")
    shares = ", ".join(f"{family} {share:.0%}" for family, share in _family_shares().items())
    result = {"name": "screen_throughput_mixed_real_text", "value": value, "unit": "MB/s", "baseline": 50.0,
              "ratio": round(value / 50.0, 2) if value is not None else None, "goal_ratio_min": 1.0, **found,
              "mix_sha256": digest(slices),
              "description": f"read-path screen over real text from this machine's image (bench/screen_mix.py: "
                             f"{shares} of UTF-8 bytes; non-Latin: gettext catalogs in {', '.join(LANGUAGES)}) in "
                             f"pieces of up to {PIECE_CHARS:,} characters; {SLICES} slices of {SLICE_BYTES / 1e6:.1f} "
                             f"MB with no document in two, the first screened to warm up, then best of "
                             f"{found['passes']} pass(es) each over a slice not seen before (one when the warm-up "
                             f"ran below {SLOW_MB_PER_S} MB/s; per source: best of its summed piece times); "
                             "repeat_text_mb_per_s: a measured slice screened again (RE2's DFA cache flatters "
                             "repeated text); baseline is issue 45's 50 MB/s goal"}
    if missing:
        result["missing"] = missing
        result["description"] += "; INCOMPLETE MIX, missing: " + "; ".join(
            f"{source} ({why})" for source, why in missing.items())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the entry as one JSON document")
    args = parser.parse_args(argv)
    result = entry()
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"{result['value']} MB/s on text not seen before, best of {result['passes']} "
          f"({result['repeat_text_mb_per_s']} MB/s on text seen before) over {result['bytes'] / 1e6:.2f} MB, "
          f"{result['pieces']} pieces, {result['flagged_pieces']} flagged (mix sha256 {result['mix_sha256'][:16]})")
    for title, rows in (("source", result["by_source"]), ("non-latin", result["non_latin_by_language"])):
        for name, row in rows.items():
            print(f"  {title} {name:<14} {row['share']:>6.1%} {row['bytes']:>10,} B {row['pieces']:>4} pieces "
                  f"{row['flagged_pieces']:>3} flagged {row['mb_per_s']!s:>8} MB/s")
    for source, why in result.get("missing", {}).items():
        print(f"  MISSING {source}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
