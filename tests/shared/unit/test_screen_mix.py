"""The mixed real text of `make bench`'s screen_throughput_mixed_real_text (bench/screen_mix.py): fixed proportions,
pieces clipped as tool results are, deterministic, no document in two slices, and a missing source said, not
made up from the others."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path
from types import SimpleNamespace

from bench import screen_mix
from bench.screen_mix import LANGUAGES, PIECE_CHARS, SHARES, Roots, build, catalog_messages, digest, measure

SLICE = 40_000
WORDS = {"ru": "Не удалось открыть файл", "uk": "Не вдалося відкрити файл", "el": "Αδυναμία ανοίγματος αρχείου",
         "zh_CN": "无法打开文件", "ja": "ファイルを開けません", "ko": "파일을 열 수 없습니다",
         "ar": "تعذر فتح الملف", "he": "לא ניתן לפתוח את הקובץ"}  # no hi, no th: their catalogs are missing


def _mo(path: Path, messages: dict[str, str]) -> None:
    """A gettext .mo catalog (little-endian, no hash table), the header first as msgfmt writes it."""
    entries = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    originals = [key.encode() for key, _ in entries]
    translations = [value.encode() for _, value in entries]
    count = len(entries)
    data = bytearray(struct.pack("<7I", 0x950412DE, 0, count, 28, 28 + 8 * count, 0, 0))
    offset = 28 + 16 * count
    tables = []
    for strings in (originals, translations):
        table = []
        for string in strings:
            table.append((len(string), offset))
            offset += len(string) + 1
        tables.append(table)
    for table in tables:
        for length, at in table:
            data += struct.pack("<2I", length, at)
    for strings in (originals, translations):
        for string in strings:
            data += string + b"\0"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))


def _tree(root: Path) -> Roots:
    doc = root / "doc"
    for number in range(12):
        package = doc / f"pkg{number}"
        package.mkdir(parents=True)
        entries = "".join(f"pkg{number} (1.{entry}-1) unstable; urgency=medium\n\n"
                          f"  * Fix bug #{entry} in the parser.\n\n" for entry in range(400))
        (package / "changelog.Debian.gz").write_bytes(gzip.compress(entries.encode()))
        (package / "README").write_text(f"pkg{number}\n\nRead the manual before use.\n" * 200)
        (package / "index.html").write_text(f"<html><body><p>Manual of pkg{number}</p>\n" * 600 + "</body></html>")
        (package / "api.json").write_text(json.dumps({"module": f"pkg{number}", "items": list(range(4000))},
                                                     indent=2))
    stdlib = root / "stdlib"
    stdlib.mkdir()
    for number in range(40):
        (stdlib / f"mod{number}.py").write_text(
            f'"""Module {number}: helpers for reading files."""\n\n'
            + "".join(f'def f{i}():\n    """Return {i}, as documented at length{" again" * 40}."""\n'
                      for i in range(60)))
    (stdlib / "site-packages").mkdir()
    (stdlib / "site-packages" / "third.py").write_text('"""Not the standard library."""\n')
    status = root / "status"
    status.write_text("".join(f"Package: p{number}\nVersion: 1.{number}\nDescription: tool {number}\n more text\n\n"
                              for number in range(3000)))
    for language, words in WORDS.items():
        for catalog in range(6):
            _mo(root / "locale" / language / "LC_MESSAGES" / f"c{catalog}.mo",
                {f"Cannot open file {i}": f"{words} {i}" for i in range(300)})
        _mo(root / "locale" / language / "LC_MESSAGES" / "iso_639.mo", {"French": "xx" + words})
    return Roots(doc=doc, locale=root / "locale", iso_codes_json=root / "none", dpkg_status=status, stdlib=stdlib)


def test_every_slice_holds_each_source_in_its_share_and_missing_languages_are_said(tmp_path):
    slices, missing = build(SLICE, 3, _tree(tmp_path))
    assert set(missing) == {"non-latin/hi", "non-latin/th"}
    assert "0 of" in missing["non-latin/hi"] and "/hi/LC_MESSAGES" in missing["non-latin/hi"]
    for mix in slices:
        sizes = mix.bytes_by_source()
        for source, share in SHARES.items():
            if source not in missing:
                assert abs(sizes[source] - SLICE * share) <= 64 + 3, (source, sizes[source])
        assert sizes["non-latin/hi"] == sizes["non-latin/th"] == 0  # not filled from another source
        assert all(0 < len(piece.text) <= PIECE_CHARS for piece in mix.pieces)
        assert not any("site-packages" in piece.where or "iso_639" in piece.where for piece in mix.pieces)
    documents = [{(piece.source, piece.where) for piece in mix.pieces} for mix in slices]
    assert not documents[0] & documents[1] and not documents[1] & documents[2] and not documents[0] & documents[2]


def test_the_mix_is_the_same_every_time(tmp_path):
    roots = _tree(tmp_path)
    first, _ = build(SLICE, 2, roots)
    again, _ = build(SLICE, 2, roots)
    assert digest(first) == digest(again)
    assert [piece.where for piece in first[0].pieces] == [piece.where for piece in again[0].pieces]


def test_catalog_messages_are_the_translations_not_the_header_nor_untranslated_ascii(tmp_path):
    path = tmp_path / "x.mo"
    _mo(path, {"Open": "Открыть", "One file\0%d files": "Один файл\0%d файла", "Quit": "Quit"})
    assert sorted(catalog_messages(path)) == ["Один файл", "Открыть"]


def test_measure_reports_each_source_and_language_over_text_not_seen_before(tmp_path):
    slices, _ = build(SLICE, 3, _tree(tmp_path))
    seen: list[str] = []

    def screen(text: str, source: str):
        seen.append(text)
        return SimpleNamespace(flagged="Fix bug #7 " in text)

    found = measure(slices, screen)
    assert found["passes"] == 2 and found["bytes"] == sum(sum(m.bytes_by_source().values()) for m in slices[1:])
    assert set(found["by_source"]) == {"debian-docs", "docstrings", "html", "json-files", "json-records",
                                       "non-latin"}
    assert set(found["non_latin_by_language"]) == set(LANGUAGES)
    assert found["non_latin_by_language"]["hi"] == {"share": 0.0, "bytes": 0, "pieces": 0, "flagged_pieces": 0,
                                                    "mb_per_s": None}
    assert found["by_source"]["non-latin"]["share"] == round(
        sum(row["bytes"] for row in found["non_latin_by_language"].values()) / found["bytes"], 3)
    assert found["flagged_pieces"] == found["by_source"]["debian-docs"]["flagged_pieces"] > 0
    assert found["mb_per_s"] > 0 and found["repeat_text_mb_per_s"] > 0
    # warm-up, two passes over unseen slices, then the first measured slice again
    assert len(seen) == sum(len(m.pieces) for m in slices) + len(slices[1].pieces)


def test_a_slow_screen_is_measured_on_one_slice(tmp_path, monkeypatch):
    slices, _ = build(SLICE, 3, _tree(tmp_path))
    monkeypatch.setattr(screen_mix, "SLOW_MB_PER_S", 1e9)
    found = measure(slices, lambda text, source: SimpleNamespace(flagged=False))
    assert found["passes"] == 1 and found["repeat_text_mb_per_s"] is None
