"""The read path screen (§8): every external text is clipped, normalised and screened before a model sees it.

Two texts come out of one input. What the model reads is the input with the usual
invisible disguises undone (compatibility forms via NFKC; zero-width and other
invisible characters taken out, or read as the word break they stand for between
two letters; runs of variation selectors that carry bytes taken out; runs of
whitespace): that text is data and must stay faithful. What the rules read goes further and undoes what a reader undoes
without noticing: HTML character references, letters from other scripts that
look Latin (Unicode's confusables data), accents and stacked combining marks,
direction overrides that make reversed text read forwards, letter-spaced words
and blank lines between words. A match never blocks the read — the text reaches
the model wrapped as untrusted — it flags the run, so a person deciding on a
later mutation sees the snippet and where it came from. Taint never relaxes a gate.
Text hidden from a reader or encoded for the model is decoded, within a bound, and
read the same way (shared/safety/screen_decode.py).

Every step is linear in the input: one RE2 pass per English rule family
(shared/safety/screen_rules.py), one RE2 Set pass that says which other languages' rules
the text needs (shared/safety/screen_markers.py) and one pass for each of those
(shared/safety/screen_languages.py), each reading (stored and shown order, invisible
characters read as breaks or taken out) read the same way; and long runs of
combining marks are cut before Unicode normalisation, whose reordering of marks is
quadratic in the length of a run.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from itertools import islice
from pathlib import Path

import re2

from shared.safety import screen_decode as decoding
from shared.safety.screen_fields import field_readings
from shared.safety.screen_languages import LATIN_SCRIPT, OTHER_SCRIPTS
from shared.safety.screen_markers import MARKERS, SCRIPTS
from shared.safety.screen_rules import RULE_SOURCES, as_regex

MAX_CHARS = 20_000
RE2_MEMORY = 64 << 20  # per program: the budget its DFA may use before RE2 falls back to a slower matcher
SNIPPET_CONTEXT = 40
MAX_MATCHES = 100  # per screened text: a person reads a card, not a log
# Invisible characters, which a reader does not see and a model reads past: zero-width space/joiners,
# direction marks and embeddings, the Arabic letter mark, word joiner and invisible operators, BOM,
# soft hyphen, Mongolian vowel separator, and what is left of the Unicode tag block once its ASCII
# look-alikes were made visible.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                        "\U000e0000-\U000e007f]")
# Of those, the ones that stand for a word break when they sit between two letters ("Please\u200bignore" is two
# words to a reader and to a model): deleting them would glue the words together past the rules. The soft
# hyphen and direction marks sit inside words and are only taken out.
_SEPARATORS = "\u180e\u200b\u200c\u200d\u2060-\u2064\ufeff"
_BETWEEN_LETTERS = re.compile(f"(?<=[^\\W\\d_])[{_SEPARATORS}]+(?=[^\\W\\d_])")
_JOINERS = frozenset("\u200c\u200d")
# Invisible characters that are neither typography nor hyphenation (zero-width spaces, word joiners, invisible
# operators, BOMs, direction marks and embeddings) between two ASCII letters of one case, more than once: no Latin
# word is spelled with one, and placed both inside words and between them no single reading (a break, or nothing)
# undoes them. One alone, or before a capital ("Service\u200bImpl", "Acme\u2060Cloud"), is a line-break hint in
# real text; the joiners ZWNJ and ZWJ are typography (German sets ZWNJ at a word joint to break a ligature:
# "Auf\u200clage"), and the soft hyphen marks where a word may break.
_NOT_TYPOGRAPHY = "\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_IN_ASCII_WORDS = re.compile(f"[a-z][{_NOT_TYPOGRAPHY}]+(?=[a-z])|[A-Z][{_NOT_TYPOGRAPHY}]+(?=[A-Z])")
_IN_ASCII_WORDS_FLAGGED = 2
_TAGS = decoding.TAGS_AS_ASCII
_SPACE = re.compile(r"\s+")
# UAX #15's stream-safe limit: no real text stacks more than 30 combining marks on one letter, and
# cutting longer runs keeps NFKC/NFKD (which sort each run of marks) linear.
_MARK_RUN_LIMIT = 30


def _re2(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.max_mem = RE2_MEMORY
    options.case_sensitive = False
    options.dot_nl = True  # the rules read across line breaks, as the model does
    return re2.compile(pattern, options)




@cache
def _mark_runs() -> re2._Regexp:
    """Runs of more marks than the limit; compiled on first use (a large program), since only text
    beyond Latin-1 can hold marks. A mark is also anything that decomposes into one (the half-width
    katakana voiced marks are letters, but NFKD makes them combining marks that the sort then moves)."""
    also = "".join(rf"\x{{{ord(char):X}}}" for char in _decomposes_to_a_mark())
    return _re2(rf"[\p{{M}}{also}]{{{_MARK_RUN_LIMIT + 1},}}")


def _decomposes_to_a_mark() -> list[str]:
    """Characters that are no mark themselves but whose compatibility decomposition starts with one."""
    found = []
    for code in range(0xA0, 0x30000):
        char = chr(code)
        if not unicodedata.category(char).startswith("M") and unicodedata.decomposition(char):
            decomposed = unicodedata.normalize("NFKD", char)
            if unicodedata.combining(decomposed[0]):
                found.append(char)
    return found


def _latin1(text: str) -> bool:
    """Whether every character is below U+0100 (no combining marks, no direction controls): for such
    text, which Python stores one byte a character, this is a copy, not a scan."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _cap_marks(text: str) -> str:
    if _latin1(text) or not _mark_runs().search(text):
        return text
    return _mark_runs().sub(lambda run: run.group()[:_MARK_RUN_LIMIT], text)


def _word_break(run: re.Match) -> str:
    before, after = run.string[run.start() - 1], run.string[run.end()]
    if set(run.group()) <= _JOINERS and not (before.isascii() or after.isascii()):
        return ""  # ZWNJ or ZWJ inside Persian or Indic words is part of their spelling
    return " "


def _word_breaks(text: str) -> str:
    """Invisible characters between two letters as the word break they stand for."""
    return _BETWEEN_LETTERS.sub(_word_break, text)


# ----------------------------------------------------------------------------------------------------------
# The reading the rules see
# ----------------------------------------------------------------------------------------------------------

# Unicode's confusables data as packaged by confusable-homoglyphs, read when the table is first built;
# found now (without importing the package) so that a missing package stops a service at start-up.
_CONFUSABLES_PACKAGE = importlib.util.find_spec("confusable_homoglyphs")
if _CONFUSABLES_PACKAGE is None or not _CONFUSABLES_PACKAGE.submodule_search_locations:
    raise ImportError("the read-path screen needs the confusable-homoglyphs package (Unicode confusables data)")
_CONFUSABLES_JSON = Path(_CONFUSABLES_PACKAGE.submodule_search_locations[0]) / "confusables.json"
_TABLE_SIZE = 0x20000  # the Basic and Supplementary Multilingual Planes: every script and mark in use
_PLANE_14 = {**{code: None for code in range(0xE0000, 0xE1000)}, **_TAGS}  # tags spelled out, selectors dropped
# Hangul fillers are letters that render as nothing.
_BLANK_LETTERS = (0x115F, 0x1160, 0x3164, 0xFFA0)
# A Latin letter by its Unicode name: "LATIN LETTER SMALL CAPITAL P", "LATIN SMALL LETTER DOTLESS I",
# "LATIN SMALL LETTER D WITH STROKE" all read as that letter.
_LATIN_NAME = re.compile(r"LATIN (?:SMALL |CAPITAL )?LETTER (?:SMALL CAPITAL |SCRIPT |DOTLESS )?([A-Z])(?: WITH .*)?")


def _ascii_lookalike(char: str, entries: list[dict], table: list) -> str | None:
    """The printable ASCII character `char` is confusable with, by Unicode's confusables data, directly
    or through one look-alike that itself reads as ASCII (Cyrillic т → small capital T → t).

    The data's prototype for I-like letters is `l`; a letter whose own name says I is read as `i`.
    """
    found = [entry["c"] for entry in entries if len(entry["c"]) == 1 and "!" <= entry["c"] <= "~"]
    if not found:
        hops = (table[ord(entry["c"])] for entry in entries if len(entry["c"]) == 1 and ord(entry["c"]) < _TABLE_SIZE)
        found = [hop for hop in hops if isinstance(hop, str)]
    if not found:
        return None
    target = next((c for c in found if c.isalnum()), found[0])
    if target == "l" and unicodedata.name(char, "").split()[-1:] in (["I"], ["IOTA"]):
        return "i"
    return target


def _latin_letters(table: list) -> None:
    """Latin letters NFKD leaves alone (small capitals, script and dotless forms, letters with strokes)
    read as the letter their Unicode name gives."""
    for code in (*range(0x80, 0x3000), *range(0xA700, 0xAC00)):
        named = _LATIN_NAME.fullmatch(unicodedata.name(chr(code), ""))
        if named:
            table[code] = named.group(1).lower() if unicodedata.category(chr(code)) != "Lu" else named.group(1)


@cache
def _skeleton_table() -> list:
    """One `str.translate` table for the reading: marks, format characters and blank letters dropped,
    spaces made plain, look-alike letters made ASCII. A list (about 5 MB) rather than a dict: a dict
    lookup that misses raises inside `translate`, which made the reading of Cyrillic text twice as slow.

    Built on first use from Unicode's own data (categories and names from `unicodedata`, the
    confusables list as packaged by confusable-homoglyphs), on first use: by the first text beyond ASCII or
    the first screening, whose other languages' rules are spelled with it (`_as_read`).
    """
    table: list = list(range(_TABLE_SIZE))
    for code in range(0x80, _TABLE_SIZE):
        category = unicodedata.category(chr(code))
        if category in ("Mn", "Me", "Mc", "Cf"):
            table[code] = None
        elif category in ("Zs", "Zl", "Zp") or code == 0x85:
            table[code] = 0x20
    for code in _BLANK_LETTERS:
        table[code] = None
    _latin_letters(table)
    data = json.loads(_CONFUSABLES_JSON.read_text(encoding="utf-8"))
    for char, entries in data.items():
        if len(char) == 1 and 0x80 <= ord(char) < _TABLE_SIZE and table[ord(char)] == ord(char):
            target = _ascii_lookalike(char, entries, table)
            if target:
                table[ord(char)] = target
    return table


_PLANE_14_CHARS = _re2(r"[\x{E0000}-\x{E0FFF}]")
# The same questions as the `re` patterns ask, asked of RE2 where they scan whole texts: several times faster.
_ANY_INVISIBLE = _re2(_INVISIBLE.pattern)
_SELECTOR_RUN = _re2(decoding.SELECTOR_RUN.pattern)


def _skeleton_text(text: str, table: list) -> str:
    """Compatibility forms and accents taken apart (NFKD; runs of marks are already cut), then the
    table applied: the marks NFKD split off are dropped and look-alikes mapped."""
    if _PLANE_14_CHARS.search(text):
        text = text.translate(_PLANE_14)
    return unicodedata.normalize("NFKD", text).translate(table)


def _skeleton(text: str) -> str:
    """Non-ASCII text as the rules read it. Most external text is ASCII with a few accented names or
    curly quotes: then only the lines that are not ASCII are worked on (`isascii` costs nothing)."""
    table = _skeleton_table()
    if len(text.encode()) - len(text) > len(text) // 8:
        return _skeleton_text(text, table)
    return "\n".join([line if line.isascii() else _skeleton_text(line, table) for line in text.split("\n")])


# Right-to-left override (and, to be safe, embedding and isolate) up to its pop or the end of the line:
# the letters inside are shown in reverse, so the rules also read them reversed.
_RTL_OPENERS = "\u202b\u202e\u2067"
_RTL_SPAN = re.compile(f"[{_RTL_OPENERS}]([^\u202c\u2069\n]*)")
_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


_RTL_TO_LINE_END = re.compile(f"[{_RTL_OPENERS}]([^\n]*)")


def _shown_orders(text: str) -> list[str]:
    """The text with every right-to-left override span reversed, as a person sees it: span by span, and
    from the first opener to the line's end whatever pops come between (nested embeddings and isolates
    close early in the span reading); none when there is no opener."""
    if text.isascii() or not any(opener in text for opener in _RTL_OPENERS):
        return []
    return [_RTL_SPAN.sub(lambda span: _BIDI_CONTROLS.sub("", span.group(1))[::-1], text),
            _RTL_TO_LINE_END.sub(lambda span: _BIDI_CONTROLS.sub("", span.group(1))[::-1], text)]


# Numeric references longer than any code point needs (leading zeros aside): resolved here, because
# html.unescape turns thousands of digits into an int and Python refuses numbers past 4,300 digits.
_LONG_DECIMAL_REF = re.compile(r"&#([0-9]{8,});?")
_LONG_HEX_REF = re.compile(r"&#[xX]([0-9a-fA-F]{7,});?")


def _code_point(digits: str, base: int) -> str:
    digits = digits.lstrip("0") or "0"
    value = int(digits, base) if len(digits) <= 8 else 0x110000
    return chr(value) if 0 < value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"


def _unescape(text: str) -> str:
    """HTML character references resolved (twice, for `&amp;#105;`), line breaks kept where they were."""
    if "&#" in text:
        text = _LONG_DECIMAL_REF.sub(lambda ref: _code_point(ref.group(1), 10), text)
        text = _LONG_HEX_REF.sub(lambda ref: _code_point(ref.group(1), 16), text)
    once = html.unescape(text)
    plain = html.unescape(once) if "&" in once and once != text else once
    if plain.count("\n") == text.count("\n") and "\r" not in plain:
        return plain
    return "\n".join(html.unescape(html.unescape(line)).replace("\r", " ").replace("\n", " ")
                     for line in text.split("\n"))


def _readings(raw: str) -> list[str]:
    """What the rules read: the text in stored order and, when it holds right-to-left overrides,
    also in shown order. Line breaks stay where they were, so a match can say its line."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n") if "\r" in raw else raw
    if "&" in text:
        text = _cap_marks(_unescape(text))  # references can spell combining marks too
    if text.isascii():
        return [text]
    broken = _word_breaks(text) if _ANY_INVISIBLE.search(text) else text
    readings = [text, *([broken] if broken != text else []), *_shown_orders(text)]
    return [_skeleton(reading)[:MAX_CHARS] for reading in readings]


# Letter-spacing: single letters kept apart by one space, dot, dash, star, bar or slash ("i g n o r e",
# "I.G.N.O.R.E."); words stay apart by two spaces or more. Joining a run keeps its even characters
# (the letters), which also drops a trailing separator.
# A single line break or tab separates letters as a space does: the model reads every break as a space.
_SPACED_NEXT = r"[ \t\n.*|/-][a-z0-9'._]"  # a separator and the next single character
_SPACED_RUN = _re2(rf"\b[a-z0-9](?:{_SPACED_NEXT})+\b(?:[.*|/-]\B)?")


def _join_run(run: str) -> str:
    """The letters of a run; where it also separates letters by dashes or dots, a space in it is a word
    break ("n-o n-e-e-d" is "no need")."""
    letters = run[::2]
    separators = run[1::2][:len(letters) - 1].replace("\n", " ").replace("\t", " ")  # a trailing one: nothing
    if " " not in separators or separators.count(" ") == len(separators):
        return letters
    breaks = (" " if separator == " " else "" for separator in separators)
    return letters[0] + "".join(gap + letter for gap, letter in zip(breaks, letters[1:], strict=True))


def _join_spaced(text: str) -> str:
    return _SPACED_RUN.sub(lambda run: _join_run(run.group()), text)


# ----------------------------------------------------------------------------------------------------------
# Rules (their sources: shared/safety/screen_rules.py and shared/safety/screen_languages.py)
# ----------------------------------------------------------------------------------------------------------

_REGEX_SYNTAX = frozenset("\\^$.|?*+()[]{}")


def _as_read(source: str) -> str:
    """A rule written in a language's own spelling, spelled as the rules' reading spells text (accents and
    look-alike letters undone). Only the letters beyond ASCII change, so the pattern's syntax stays."""
    def spelled(run: re.Match) -> str:
        read = _skeleton_text(run.group(), _skeleton_table())
        if _REGEX_SYNTAX & set(read):
            raise ValueError(f"rule text {run.group()!r} reads as regex syntax {read!r}")
        return read
    return re.sub(r"[^\x00-\x7f]+", spelled, source)


def _group(name: str, sources: list[str]) -> str:
    return f"(?P<{name.replace('-', '_')}>{'|'.join(f'(?:{source})' for source in sources)})"


def _family(sources: list[str]) -> re2._Regexp:
    return _re2("|".join(f"(?:{source})" for source in sources))


# The English rules, one RE2 program per family: each pass is linear in the text, and each program's DFA stays
# small. One program holding every family met so many combinations of half-matched rules on varied text that
# its DFA cache kept filling: on Debian's changelogs it ran at a fraction of a MB/s, where the families one
# by one run at tens to hundreds (bench/screen_mix.py; issue 45).
RULES: dict[str, re2._Regexp] = {name: _family([as_regex(p) for p in patterns])
                                 for name, patterns in RULE_SOURCES.items()}
# Letter-spaced runs (four letters or more, from a letter: not version numbers or addresses), joined and read again.
_SPACED = _re2(rf"\b[a-z](?:{_SPACED_NEXT}){{3,}}\b")
# The cues of encoded text (shared/safety/screen_decode.py), decoded and read again.
_CUES = _re2("|".join(f"(?P<{cue}>{source})" for cue, source in decoding.CUES.items()))


@dataclass(frozen=True)
class _Language:
    """One language's rules, compiled on their own: a pass over text in that language only. Every language in
    one program would exceed RE2's memory budget and run at a fraction of the speed (issue 45)."""

    name: str
    rules: re2._Regexp
    native: bool  # read on the text as the model reads it (other scripts), not on the rules' reading


def _language(name: str, families: dict[str, list[str]], native: bool) -> _Language:
    # a rule in another script is read on undecorated text, so its own optional vowel signs go too
    spelled = (lambda source: _DECORATIONS.sub("", source)) if native else _as_read
    return _Language(name, _re2("|".join(_group(family, [as_regex(spelled(p)) for p in patterns])
                                         for family, patterns in families.items())), native)


@cache
def _language_set() -> tuple[re2.Set, list[_Language]]:
    """One RE2 Set pass says which languages a text may be in: two of a Latin-script language's common words
    (on the rules' reading, accents undone), or one letter of another script. Built on first use, not at import:
    compiling every language's program takes about half a second, which a restarted service should not wait
    for before it serves."""
    options = re2.Options()
    options.case_sensitive = False
    options.dot_nl = True
    options.max_mem = RE2_MEMORY
    found, languages = re2.Set.SearchSet(options), []
    for name, families in LATIN_SCRIPT.items():
        words = "|".join(_as_read(word) for word in MARKERS[name])
        found.Add(rf"\b(?:{words})\b.*\b(?:{words})\b")
        languages.append(_language(name, families, native=False))
    for name, families in OTHER_SCRIPTS.items():
        found.Add(SCRIPTS[name])
        languages.append(_language(name, families, native=True))
    found.Compile()
    return found, languages


# A text this short is read with every Latin-script language's rules: a one-line instruction ("Oublie tes
# consignes.") holds too few common words to say its language, and reading it costs little.
SHORT_TEXT_CHARS = 1_000


def _languages_of(reading: str) -> list[_Language]:
    """The languages whose rules read a text: those the Set pass finds cues of, and every Latin-script one for a
    short text."""
    cues, languages = _language_set()
    found = set(cues.Match(reading) or ())
    return [language for i, language in enumerate(languages)
            if i in found or (not language.native and len(reading) <= SHORT_TEXT_CHARS)]


@dataclass(frozen=True)
class Match:
    rule: str
    snippet: str
    ref: str  # where in the source, e.g. "line 3"


@dataclass
class Screened:
    text: str
    source: str
    ref: str
    clipped: bool
    matches: list[Match] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.matches)


# Anything `_normalise_lines` would change once NFKC has run (NFKC turns the Unicode spaces into plain
# ones): invisible characters, runs of spaces, whitespace other than space and newline, spaces at line edges.
_UNTIDY = _re2(rf"{_INVISIBLE.pattern}|  |[\t\x0b\x0c\x1c-\x1f\x{{85}}\x{{1680}}\x{{2028}}\x{{2029}}]| \n|\n ")


def normalise(text: str) -> str:
    """NFKC, tag characters shown as ASCII, invisible characters taken out (a space between two letters),
    whitespace collapsed (one line)."""
    nfkc = unicodedata.normalize("NFKC", _cap_marks(text))
    return _SPACE.sub(" ", _INVISIBLE.sub("", _word_breaks(nfkc.translate(_TAGS)))).strip()


def _normalise_lines(text: str) -> str:
    """Like `normalise`, but keeps line breaks: the text the model reads, before breaks become spaces.
    The caller has cut runs of combining marks (`_cap_marks`).

    Substitutions run only when one RE2 pass finds something they would change: that is what
    keeps the screen fast on ordinary tool output.
    """
    flat = unicodedata.normalize("NFKC", text)
    if "\r" in flat:
        flat = flat.replace("\r\n", "\n").replace("\r", "\n")
    if not flat.isascii() and _ANY_INVISIBLE.search(flat):
        flat = _INVISIBLE.sub("", _word_breaks(flat.translate(_TAGS)))
    if not flat.isascii() and _SELECTOR_RUN.search(flat):  # after the invisible characters that could split a run
        flat = decoding.SELECTOR_RUN.sub("", flat)  # bytes smuggled to the model, not glyph choices: taken out
    if not _UNTIDY.search(flat):
        return flat.strip(" ")
    # each line's whitespace runs made one space and its ends trimmed: str.split does it in C
    return "\n".join(" ".join(line.split()) for line in flat.split("\n")).strip(" ")


def _find(reading: str, languages: list[_Language]) -> tuple[list[tuple[str, int, int]], bytes, list[tuple[str, str]]]:
    """(rule, start, end) of every match in one reading (the English rules, and those of the Latin-script
    `languages`), as byte offsets in the reading's UTF-8 (which every pass reads: the RE2 wrapper would
    encode a str once per pass); and the (cue, span) of encoded text in it. When it holds letter-spaced
    runs, those are joined first."""
    if _SPACED.search(reading):
        reading = _join_spaced(reading)
    data = reading.encode(errors="replace")
    found = [(family, hit.start(), hit.end()) for family, rules in RULES.items() for hit in rules.finditer(data)]
    found += [(hit.lastgroup.replace("_", "-"), hit.start(), hit.end())
              for language in languages for hit in language.rules.finditer(data)]
    cues = [(hit.lastgroup, hit.group().decode()) for hit in _CUES.finditer(data)]
    return found, data, cues


# Marks a reader looks past in scripts whose rules are written without them: Arabic vowel signs and the
# tatweel (a stretched joining line), and the generic combining marks stacked on any letter. Indic vowel signs
# are spelling, not decoration, and stay.
_DECORATION = ("\u0300-\u036f\u0483-\u0489\u0610-\u061a\u0640\u064b-\u065f\u0670\u06d6-\u06ed\u08d3-\u08ff"
               "\u180b-\u180d\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\u2de0-\u2dff\ufe00-\ufe0f\ufe20-\ufe2f")
_ANY_DECORATION = _re2(f"[{_DECORATION}]")
_DECORATIONS = re.compile(f"[{_DECORATION}]+")
# Letters set apart by single spaces ("п р о и г н о р и р у й", "в с е", "忽 略 之 前"): three or more, each alone.
_SPACED_LETTERS = re.compile(r"(?<!\w)[^\W\d_](?: [^\W\d_](?!\w)){2,}")
_ANY_SPACED_LETTERS = _re2(r"(?:^|[^\pL\pN_])\pL \pL \pL(?:$|[^\pL\pN_])")


def _undecorated(text: str) -> str:
    if _ANY_DECORATION.search(text):
        text = _DECORATIONS.sub("", text)
    if _ANY_SPACED_LETTERS.search(text):
        text = _SPACED_LETTERS.sub(lambda run: run.group().replace(" ", ""), text)
    return text


def _native_readings(raw: str) -> list[str]:
    """The text as the model reads it, for rules in other scripts, with decoration taken out and letter-spaced
    words joined; and with invisible characters taken out rather than read as breaks, when it holds any (a rule
    in a script without spaces reads across them)."""
    text = _undecorated(unicodedata.normalize("NFKC", _unescape(raw) if "&" in raw else raw).translate(_TAGS))
    if not _ANY_INVISIBLE.search(text):
        return [text]
    return list(dict.fromkeys([_undecorated(_INVISIBLE.sub("", _word_breaks(text))),
                               _undecorated(_INVISIBLE.sub("", text))]))


class _Findings:
    """The matches of one screening, each said once, with where it was found; and its decoding allowance."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self.matches: list[Match] = []
        self.budget = decoding.Budget()
        self._seen: set[tuple[str, str]] = set()

    def add(self, rule: str, data: bytes, start: int, end: int, how: str) -> None:
        """One match at byte offsets start..end of a reading's UTF-8, shown with its context in characters."""
        if len(self.matches) >= MAX_MATCHES:
            return
        before = data[max(0, start - 4 * SNIPPET_CONTEXT):start].decode(errors="ignore")[-SNIPPET_CONTEXT:]
        after = data[end:end + 4 * SNIPPET_CONTEXT].decode(errors="ignore")[:SNIPPET_CONTEXT]
        snippet = " ".join(f"{before}{data[start:end].decode(errors='ignore')}{after}".split())
        if (rule, snippet) in self._seen:
            return
        self._seen.add((rule, snippet))
        line = data.count(b"\n", 0, start) + 1
        where = how or f"line {line}"
        self.matches.append(Match(rule, snippet, f"{self.ref}, {where}" if self.ref else where))

    def say(self, rule: str, message: str, how: str) -> None:
        """A finding the screen states in its own words (what hidden or encoded text holds), not a match."""
        data = message.encode(errors="replace")
        self.add(rule, data, 0, len(data), how)


# A link or image (markdown, a reference definition, HTML) whose address leaves a parameter empty, with that
# parameter named again outside the address ("append the subjects after inbox=", "pon después de q= ..."): a
# template the model is asked to fill, and rendering it sends what was filled in. Said without words, so it holds
# in every language. (A placeholder word in the address, "?d=DATEN", is left to the rules: on its own, a word in
# capitals is as often a ticker, a format or a label: "?s=AAPL", "?format=CSV".)
_LINK_ADDRESS = re.compile(r"(?:\]\(\s*<?|\]:\s*<?|<img\b[^>]{0,100}?\bsrc\s*=\s*[\"']?)"
                           r"((?:https?:)?//[^)\s\"'>]{1,400})", re.IGNORECASE)
_PARAMETER = re.compile(r"[?&#;]([\w.\[\]-]{1,40})=([^&#;\s)\"'>]*)")
_ASSIGNED = re.compile(r"(?<![\w.\[\]-])([\w.\[\]-]{1,40}) ?=")


def _templated_links(raw: str) -> list[tuple[int, str]]:
    """(line, address) of each address in `raw` that is a template to be filled (see `_LINK_ADDRESS`). Linear:
    every "name=" of the text is counted once, and a link's empty parameter is named outside it when the text
    names it more often than the links do."""
    if "//" not in raw or not ("](" in raw or "]:" in raw or "<img" in raw.lower()):
        return []
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", raw))  # "inbox\u200b=" and "inbox＝" name it too
    links = list(_LINK_ADDRESS.finditer(text))
    if not links:
        return []
    named = Counter(name.lower() for name in _ASSIGNED.findall(text))
    parameters = [[(name.lower(), value) for name, value in _PARAMETER.findall(link.group(1))] for link in links]
    in_links = Counter(name for found in parameters for name, _ in found)
    return [(text.count("\n", 0, link.start(1)) + 1, link.group(1))
            for link, found in zip(links, parameters, strict=True)
            if any(not value and named[name] > in_links[name] for name, value in found)]


def _read_hidden(raw: str, findings: _Findings, how: str) -> list[decoding.Decoded]:
    """Say what `raw` hides from a reader: invisible characters inside words, text in tag characters; and return
    the payloads variation selectors carry, to be decoded and read."""
    # selectors set apart by invisible characters are a run all the same once those are taken out (tags are among
    # them: they are looked for in the text as it came)
    visible = _INVISIBLE.sub("", raw) if _ANY_INVISIBLE.search(raw) else raw
    runs = list(islice(_IN_ASCII_WORDS.finditer(raw), _IN_ASCII_WORDS_FLAGGED)) if visible is not raw else []
    if len(runs) == _IN_ASCII_WORDS_FLAGGED:
        around = raw[max(0, runs[0].start() - 30):runs[-1].end() + 60]
        shown = _IN_ASCII_WORDS.sub(lambda run: run.group()[0] + "\u2423", around)
        findings.say("invisible-characters", f"invisible characters between letters (shown \u2423): "
                     f"{' '.join(shown.split())}", how)
    if not (_PLANE_14_CHARS.search(raw) or _SELECTOR_RUN.search(visible)):
        return []
    hidden = decoding.hidden_tags(raw)
    if hidden:
        findings.say("hidden-text", f"Unicode tag characters spell: {hidden[:160]}", how or "tag characters")
    payloads = decoding.selector_payloads(visible)
    for payload in payloads:
        findings.say("hidden-text", f"variation selectors carry: {payload.text[:160]}", how or payload.how)
    return payloads


def _read(raw: str, findings: _Findings, depth: int = 0, how: str = "") -> None:
    """Screen one text into `findings`: every reading of it against the rules (the other scripts' rules when it
    holds their letters), and, up to MAX_DEPTH, what it hides or encodes, decoded and read the same way.

    The text read another way (rotated, its fields joined) is always read again; decodings of its spans share
    the screening's allowance, each said once, and what the allowance cannot cover is flagged, not dropped:
    decoys must not be a way to push an instruction past the screen."""
    decoded: dict[tuple[str, str], decoding.Decoded] = {}
    rot13_cues = 0
    readings = _readings(raw)
    languages = list({id(language): language for reading in readings for language in _languages_of(reading)}
                     .values())
    for reading in readings:
        found, data, cues = _find(reading, [language for language in languages if not language.native])
        for rule, start, end in found:
            findings.add(rule, data, start, end, how)
        rot13_cues = max(rot13_cues, sum(decoding.ROT13_WORDS_NEEDED if cue == "encoded_rot13_named"
                                         else cue == "encoded_rot13" for cue, _ in cues))
        for cue, span in dict.fromkeys(cues):
            item = None if cue.startswith("encoded_rot13") else decoding.decode(cue, span)
            if item is not None:
                decoded.setdefault((item.how, item.text), item)
    if not raw.isascii():
        native = [language.rules for language in languages if language.native]
        for data in (reading.encode(errors="replace") for reading in _native_readings(raw)) if native else ():
            for hit in (hit for rules in native for hit in rules.finditer(data)):
                findings.add(hit.lastgroup.replace("_", "-"), data, hit.start(), hit.end(), how)
        for payload in _read_hidden(raw, findings, how):
            decoded.setdefault((payload.how, payload.text), payload)
    for line, address in _templated_links(raw):
        findings.say("markdown-exfiltration", f"a link whose parameter the text asks to fill: {address[:200]}",
                     how or f"line {line}")
    if depth >= decoding.MAX_DEPTH:
        return
    again = [decoding.rot13(raw)] if rot13_cues >= decoding.ROT13_WORDS_NEEDED else []
    # decoded text can be JSON too (base64 of a payload): its fields are read one layer down, within MAX_DEPTH
    again += [decoding.Decoded("fields read together", reading) for reading in field_readings(raw)]
    for item in again:
        _read(_cap_marks(item.text), findings, depth + 1, f"{how}, {item.how}" if how else item.how)
    items = list(decoded.values())
    for left, item in enumerate(items):
        taken = findings.budget.take(item)
        if taken is None:
            findings.say("encoded-text-unread", f"{len(items) - left} more encoded or hidden spans than the screen "
                         "decodes", how or "decoding allowance spent")
            return
        _read(_cap_marks(taken.text), findings, depth + 1, f"{how}, {taken.how}" if how else taken.how)


def screen(text: str, source: str, ref: str = "") -> Screened:
    """Clip, normalise and screen one external text; `source` names where it came from (e.g. tickets.get_ticket).

    The model reads the text on one line, breaks turned into spaces (`Screened.text`). The rules read
    it with its disguises undone and its breaks kept, and treat any whitespace between words alike,
    so an instruction split over lines or blank lines is still found and a match says its line.
    """
    raw = _cap_marks(text[:MAX_CHARS])
    lines = _normalise_lines(raw)
    clipped = len(text) > MAX_CHARS or len(lines) > MAX_CHARS  # NFKC can lengthen text: clip again
    flat = lines[:MAX_CHARS].replace("\n", " ")
    findings = _Findings(ref)
    _read(raw, findings)
    # NUL is no text (and PostgreSQL refuses it in a text column, which would lose the read's record).
    return Screened(flat.strip().replace("\x00", "\ufffd"), source, ref, clipped, findings.matches)
