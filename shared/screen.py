"""The read path screen (§8): every external text is clipped, normalised and screened before a model sees it.

Normalisation undoes the usual disguises (full-width letters and other
compatibility forms via NFKC, zero-width and other invisible characters,
runs of whitespace) so that the rules see what a model would read. A match
never blocks the read — the text is data and reaches the model wrapped as
untrusted — it flags the run, so a person deciding on a later mutation sees
the snippet and where it came from. Taint never relaxes a gate.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import re2

MAX_CHARS = 20_000
SNIPPET_CONTEXT = 40
# Invisible characters that split words for a reader but not for a model: zero-width space/joiners,
# direction marks and embeddings, word joiner and invisible operators, BOM, soft hyphen, Mongolian vowel
# separator, and what is left of the Unicode tag block once its ASCII look-alikes were made visible.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")
# Tag characters U+E0020..U+E007E mirror printable ASCII and render as nothing: text smuggled in them is
# shown (and screened) as the ASCII it spells.
_TAGS = {0xE0000 + code: chr(code) for code in range(0x20, 0x7F)}
_SPACE = re.compile(r"\s+")

_ANY = r"(?:this|that|the \S+)"
_TELL = r"(?:ask|tell|inform|notify|confirm|mention)"
# Instruction-like text, by family (lower case; matched case-insensitively on normalised text).
_RULE_SOURCES: dict[str, list[str]] = {
    "ignore-previous": [rf"{verb}\b.{{0,30}}\b(?:previous|prior|above|earlier|all|your|the)\b.{{0,20}}"
                        r"\b(?:instructions?|rules?|prompts?|guidelines?|directions?|polic(?:y|ies))\b"
                        for verb in ("ignore", "disregard", "forget", "override")],
    "role-play": [r"you are now\b", r"act as\b", r"pretend to be\b", r"from now on you\b", r"new instructions?\b",
                  r"system prompt\b", r"developer mode\b", r"jailbreak",
                  r"<\s*/?\s*(?:system|assistant|instructions?)\s*>"],
    "ordering": [r"before (?:you )?(?:answer|reply|respond|do anything|continuing)\b",
                 r"first,? (?:call|run|use|invoke|execute)\b",
                 *(rf"{verb} \S+ (?:first|before)\b" for verb in ("call", "run", "invoke", "execute"))],
    "preference": [*(rf"{verb} {_ANY} (?:tool )?instead\b" for verb in ("use", "call", "prefer")),
                   r"instead of (?:using|calling)\b", r"always use (?:the )?\S+ tool\b",
                   r"only use (?:the )?\S+ tool\b"],
    "suppression": [r"no need to (?:confirm|ask|check|verify)\b", rf"do not {_TELL}\b", rf"don't {_TELL}\b",
                    rf"never {_TELL}\b", r"without (?:asking|confirm\w*|approval|telling)\b",
                    r"skip (?:the )?(?:approval|confirmation|review)\b", r"auto-?approved?\b", r"pre-?approved?\b"],
    "scope-inflation": [r"all (?:users|customers|records|tickets|repositories|files)\b",
                        r"every (?:user|customer|record|ticket|file)\b",
                        *(rf"{verb} (?:everything|all)\b"
                          for verb in ("delete", "drop", "wipe", "export", "send", "close", "grant")),
                        r"entire (?:database|table|repository)\b",
                        r"admin(?:istrator)? (?:access|rights|privileges)\b"],
}



def _combined() -> re2._Regexp:
    """All rules as one RE2 alternation (one named group per family): a single linear-time pass
    over the text, whatever the number of rules (bench/results.json: screening throughput)."""
    families = [f"(?P<{name.replace('-', '_')}>{'|'.join(f'(?:{p})' for p in patterns)})"
                for name, patterns in _RULE_SOURCES.items()]
    options = re2.Options()
    options.max_mem = 64 << 20
    options.case_sensitive = False
    return re2.compile(rf"\b(?:{'|'.join(families)})", options)


RULES = _combined()


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


# Only what needs changing (runs of 2+, or tabs and other spaces): single spaces are left alone, cheaply.
_LINE_SPACE = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
_LINE_EDGES = re.compile(r" ?\n ?")
# Whitespace other than space and newline that can survive NFKC.
_ODD_SPACES = ("\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u1680", "\u2028", "\u2029")


def normalise(text: str) -> str:
    """NFKC, tag characters shown as ASCII, invisible characters removed, whitespace collapsed (one line)."""
    return _SPACE.sub(" ", _INVISIBLE.sub("", unicodedata.normalize("NFKC", text).translate(_TAGS))).strip()


def _normalise_lines(text: str) -> str:
    """Like `normalise`, but keeps line breaks so a match can say which line it came from.

    Substitutions run only when the text holds something they would change: that is what
    keeps the screen fast on ordinary tool output. NFKC has already turned the Unicode
    spaces (no-break, en, ideographic ...) into plain ones.
    """
    flat = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    if not flat.isascii() and _INVISIBLE.search(flat):
        flat = _INVISIBLE.sub("", flat.translate(_TAGS))
    if "  " in flat or any(odd in flat for odd in _ODD_SPACES):
        flat = _LINE_SPACE.sub(" ", flat)
    if " \n" in flat or "\n " in flat:
        flat = _LINE_EDGES.sub("\n", flat)
    return flat.strip(" ")


def screen(text: str, source: str, ref: str = "") -> Screened:
    """Clip, normalise and screen one external text; `source` names where it came from (e.g. tickets.get_ticket).

    The rules see exactly what the model will read — one line, breaks turned into spaces — so an
    instruction split over two lines is still found; the break positions only say which line a
    match starts on (replacing a break by a space keeps every offset).
    """
    lines = _normalise_lines(text[:MAX_CHARS])
    clipped = len(text) > MAX_CHARS or len(lines) > MAX_CHARS  # NFKC can lengthen text: clip again
    lines = lines[:MAX_CHARS]
    flat = lines.replace("\n", " ")
    matches: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for found in RULES.finditer(flat):
        rule = found.lastgroup.replace("_", "-")
        snippet = flat[max(0, found.start() - SNIPPET_CONTEXT):found.end() + SNIPPET_CONTEXT].strip()
        if (rule, snippet) in seen:
            continue
        seen.add((rule, snippet))
        line = f"line {lines.count(chr(10), 0, found.start()) + 1}"
        matches.append(Match(rule, snippet, f"{ref}, {line}" if ref else line))
    return Screened(flat.strip(), source, ref, clipped, matches)
