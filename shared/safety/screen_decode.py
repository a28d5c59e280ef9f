"""Text a reader does not see, or sees only as noise, made readable for the read-path screen (§8).

An instruction can reach a model without being written in plain words: encoded (base64, base32, hex,
percent-encoding, rot13) for the model to decode, or hidden in characters a person never sees (Unicode
tag characters, runs of variation selectors carrying bytes). The screen's single RE2 pass marks the
candidate spans (the `CUES` groups below); this module decodes them, bounded, so the screen can read the
result again. Decoding is only kept when it yields text: random tokens, hashes and binary attachments
decode to bytes that are not, and are dropped without a word.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import urllib.parse
from dataclasses import dataclass

# A candidate must be long enough to hold an instruction: shorter runs are ids, hashes and words.
MIN_ENCODED_CHARS = 24
MAX_SPANS = 16  # decoded per screened text (and its decodings): bounded work for any input
MAX_DECODED_CHARS = 20_000  # the read path's clip, over all decodings of one text
MAX_DEPTH = 2  # base64 of percent-encoded text is read; a third layer is not

# Encoded text is often wrapped: MIME and PEM break base64 into lines of 76 or 64 characters, hex dumps put 16
# bytes on a line, a pasted payload carries a tab or a line break mid-run. A wrapped run is one span (one
# decoding, one share of the allowance): the breaks are dropped before decoding (`decode`). Only a single line
# break (with the spaces or tabs around it) joins; a blank line ends a run. Lengths count the alphabet only.
_LINE_BREAK = r"[ \t]*\n[ \t]*"
_RUN_BREAK = rf"(?:{_LINE_BREAK}|\t)"
_ALPHABET = r"[a-z0-9+/_-]"
# a `\x41` string literal wrapped over lines: closed and reopened quotes, `+` or a backslash before the break
_ESCAPE_BREAK = r"[\"']?[ \t]*\+?[ \t]*\\?\n[ \t]*b?[\"']?"
_ESCAPE = r"%(?:" + _LINE_BREAK + r")?[0-9a-f](?:" + _LINE_BREAK + r")?[0-9a-f]"  # a break may fall inside one
_NOT_SPACE = r"[^\s%]"

# RE2 sources of the cues the screen's pass reports (lower case: the pass is case-insensitive).
CUES = {
    # base64 (either alphabet) or a run of hex digits (a `0x` literal too), possibly wrapped; which one it is is
    # decided when decoding
    "encoded_run": rf"{_ALPHABET}(?:{_RUN_BREAK}?{_ALPHABET}){{{MIN_ENCODED_CHARS - 1},}}={{0,2}}",
    # hex bytes set apart by spaces, colons or commas (lines of a dump too), or written as \x41 or 0x41
    "encoded_hex": rf"[0-9a-f]{{2}}(?:(?:[ :,]|[ \t:,]*\n[ \t]*)[0-9a-f]{{2}}){{11,}}"
                   rf"|\\x[0-9a-f]{{2}}(?:(?:{_ESCAPE_BREAK})?\\x[0-9a-f]{{2}}){{7,}}"
                   rf"|0x[0-9a-f]{{2}}(?:[ \t]*,?[ \t]*\n?[ \t]*0x[0-9a-f]{{2}}){{7,}}",
    # percent-encoding: five escapes or more in one run of text without spaces (or lines of it, the last of which
    # may hold no escape)
    "encoded_percent": rf"{_NOT_SPACE}*{_ESCAPE}(?:(?:{_NOT_SPACE}|{_LINE_BREAK}{_NOT_SPACE})*(?:{_LINE_BREAK})?"
                       rf"{_ESCAPE}){{4,}}{_NOT_SPACE}*(?:{_LINE_BREAK}{_NOT_SPACE}+)?",
    # words that common English words become under rot13 (the, you, your, ignore, previous, instructions,
    # assistant, system, send, delete, password, all, with, this, that, user), or the name of the cipher
    "encoded_rot13": r"\b(?:gur|lbh|lbhe|vtaber|cerivbhf|vafgehpgvbaf|nffvfgnag|flfgrz|fraq|qryrgr|cnffjbeq|nyy|"
                     r"jvgu|guvf|gung|hfre|rznvy|zhfg|gryy|ertneqyrff)\b",
    # the cipher named: whatever the language, the text is read rotated
    "encoded_rot13_named": r"\brot-? ?13\b",
}
ROT13_WORDS_NEEDED = 3  # rot13'd common words before the whole text is read rotated

_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")
_HEX_LITERAL = re.compile(r"(?:0[xX])?[0-9a-fA-F]+")  # a run of hex digits, or one long 0x literal
_BASE32 = re.compile(r"[A-Z2-7]+=*")
# decoded text that is encoded once more: base64 (wrapped in lines, too), percent-encoding, \x escapes
_ANOTHER_LAYER = re.compile(r"[A-Za-z0-9+/=_-]{24,}(?:\r?\n[A-Za-z0-9+/=_-]+)*\r?\n?"
                            r"|(?:[^\s%]{0,12}%[0-9a-fA-F]{2})+[^\s%]*|(?:\\x[0-9a-fA-F]{2})+")
# around the digits of a hex span: \x and 0x, and what sets bytes or lines apart (spaces, commas, breaks, quotes
# and the b of a bytes literal)
_HEX_NOISE = re.compile(r"\\x|0x|(?<![0-9a-f])b(?=[\"'])|[^0-9a-f]", re.IGNORECASE)
# where a wrapped span breaks (and what it is cut into, to try without a line taken in by mistake)
_BREAKS = re.compile(r"\s*[\r\n\t]\s*")
_WHITESPACE = re.compile(r"\s+")
# Unicode tags: an emoji flag is a black flag, tag letters or digits, and a cancel tag (U+1F3F4 E0067 E0062
# E0073 E0063 E0074 E007F is Scotland's). Any other tag is text hidden from the reader (its ASCII meaning is what
# a model reads), and so is a made-up flag: a black flag and tags spelling "ignoreall" renders as a flag, but
# the model reads the words. What is exempt:
# - the three flags Unicode recommends for general interchange (RGI): England, Scotland and Wales;
# - codes of the ISO 3166-2 subdivision shape whose first two letters are a country (ISO 3166-1), then 1-3
#   letters or digits: "ustx", "usca". Such flags are valid emoji tag sequences that platforms and tool output do
#   carry (US states, French regions). A run of them could still spell text a few letters at a time, so one flag
#   of the text that is not such a code (or not a flag at all) makes every made-up flag of it reported: an
#   instruction chopped into flags ("ign", "ore", "all"...) cannot pick its pieces from country codes alone.
_TAG = "\U000e0000-\U000e007f"
_FLAG_TAGS = "[\U000e0030-\U000e0039\U000e0061-\U000e007a]"
_FLAG_SEQUENCE = re.compile(f"\U0001f3f4{_FLAG_TAGS}+\U000e007f")
_RGI_FLAGS = frozenset("\U0001f3f4" + "".join(chr(0xE0000 + ord(char)) for char in code) + "\U000e007f"
                       for code in ("gbeng", "gbsct", "gbwls"))
_COUNTRIES = frozenset("""
    ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bl bm bn bo bq br bs bt bv bw by bz
    ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg eh er es et fi fj fk fm fo
    fr ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im in io iq ir is it je
    jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md me mf mg mh mk ml mm mn mo
    mp mq mr ms mt mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw
    py qa re ro rs ru rw sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st sv sx sy sz tc td tf tg th tj tk tl tm
    tn to tr tt tv tw tz ua ug um us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw
""".split())  # ISO 3166-1 alpha-2: the first two tags of a subdivision flag
_SUBDIVISION = re.compile("\U0001f3f4[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,3}"
                          "\U000e007f")
_TAGS = re.compile(f"[{_TAG}]+")
# Tag characters U+E0020..U+E007E mirror printable ASCII and render as nothing: text smuggled in them is read
# (by the model, and by the screen) as the ASCII it spells.
TAGS_AS_ASCII = {0xE0000 + code: chr(code) for code in range(0x20, 0x7F)}
# Variation selectors: one after a character picks its glyph (emoji presentation, an ideograph's variant);
# two or more in a row pick nothing, and are how bytes are smuggled (one selector per byte).
_SELECTOR = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
SELECTOR_RUN = re.compile(f"[{_SELECTOR}]{{2,}}")


@dataclass(frozen=True)
class Decoded:
    how: str  # said to a person: "base64", "hex", "percent-encoding", "rot13", "variation selectors"
    text: str


class Budget:
    """What is left of one screening's decoding allowance."""

    def __init__(self) -> None:
        self.spans = MAX_SPANS
        self.chars = MAX_DECODED_CHARS

    def take(self, decoded: Decoded) -> Decoded | None:
        """`decoded`, cut to what is left of the allowance; None once it is spent."""
        if self.spans <= 0 or self.chars <= 0:
            return None
        self.spans -= 1
        text = decoded.text[:self.chars]
        self.chars -= len(text)
        return Decoded(decoded.how, text)


def _as_text(data: bytes) -> str | None:
    """Decoded bytes, when they are text a model would read as words: valid UTF-8, almost all printable,
    with spaces between words."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8:
        return None
    if _ANOTHER_LAYER.fullmatch(text):
        return text  # encoded once more (percent-encoding in base64): read on, to MAX_DEPTH
    if " " not in text.strip() and text.isascii():
        return None  # words need spaces between them, but in scripts written without
    printable = sum(char.isprintable() or char in "\n\t\r" for char in text)
    letters = sum(char.isalpha() for char in text)
    return text if printable >= 0.95 * len(text) and letters >= 0.5 * len(text.replace(" ", "")) else None


def _from_hex(span: str) -> bytes | None:
    digits = _HEX_NOISE.sub("", span)
    if len(digits) % 2 or not _HEX_DIGITS.fullmatch(digits):
        return None
    return bytes.fromhex(digits)


def _from_base64(span: str) -> bytes | None:
    body = span.rstrip("=")
    altchars = b"-_" if ("-" in body or "_" in body) else b"+/"
    if len(body) % 4 == 1:
        return None
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None


def _from_base32(span: str) -> bytes | None:
    try:
        return base64.b32decode(span.rstrip("=") + "=" * (-len(span.rstrip("=")) % 8))
    except (binascii.Error, ValueError):
        return None


def _decode_joined(cue: str, span: str) -> Decoded | None:
    """What one unbroken span says, if it decodes to text."""
    if cue == "encoded_hex" or (cue == "encoded_run" and _HEX_LITERAL.fullmatch(span)):
        data = _from_hex(span)
        text = _as_text(data) if data else None
        if text or cue == "encoded_hex":
            return Decoded("hex", text) if text else None
    if _BASE32.fullmatch(span):
        data = _from_base32(span)
        text = _as_text(data) if data else None
        if text:
            return Decoded("base32", text)
    data = _from_base64(span)
    text = _as_text(data) if data else None
    return Decoded("base64", text) if text else None


def decode(cue: str, span: str) -> Decoded | None:
    """What one cue's span says, if it decodes to text. A wrapped span is read with its breaks dropped (when that
    says nothing, without the line before or after it: a word the run took in, "Thanks" under a MIME body); and
    each of its lines is read on its own too, as the screen read them before it joined lines (a list of encoded
    values, one a line), what a line says that the whole does not being added."""
    if cue == "encoded_percent":
        joined = _WHITESPACE.sub("", span)
        text = urllib.parse.unquote_plus(joined)
        return Decoded("percent-encoding", text) if text != joined and " " in text.strip() else None
    lines = _BREAKS.split(span.strip())
    if len(lines) == 1:
        return _decode_joined(cue, lines[0])
    whole = None
    for start, end in ((0, len(lines)), (1, len(lines)), (0, len(lines) - 1), (1, len(lines) - 1)):
        whole = _decode_joined(cue, "".join(lines[start:end])) if start < end else None
        if whole:
            break
    said = [whole] if whole else []
    for line in lines:
        alone = _decode_joined(cue, line) if len(line) >= MIN_ENCODED_CHARS else None
        if alone and (whole is None or alone.text not in whole.text):
            said.append(alone)
    return Decoded(said[0].how, "\n".join(item.text for item in said)) if said else None


def rot13(text: str) -> Decoded:
    return Decoded("rot13", codecs.encode(text, "rot13"))


def _country(flag: str) -> str:
    return flag[1:3].translate(TAGS_AS_ASCII)


def _without_flags(text: str) -> str:
    """`text` with its emoji flags taken out (see `_FLAG_SEQUENCE`): the RGI ones always, the others when every one
    of them is a subdivision code of a country; otherwise they are kept, side by side or apart, to be read."""
    made_up = [flag for flag in _FLAG_SEQUENCE.findall(text) if flag not in _RGI_FLAGS]
    if any(not _SUBDIVISION.fullmatch(flag) or _country(flag) not in _COUNTRIES for flag in made_up):
        return _FLAG_SEQUENCE.sub(lambda flag: "" if flag.group() in _RGI_FLAGS else flag.group(), text)
    return _FLAG_SEQUENCE.sub("", text)


def hidden_tags(text: str) -> str:
    """Tag characters outside emoji flags, spelled as the ASCII they mirror ("" when there are none)."""
    runs = _TAGS.findall(_without_flags(text)) if _TAGS.search(text) else []
    spelled = " ".join(_TAGS.sub("", run.translate(TAGS_AS_ASCII)) for run in runs).strip()
    return spelled or ("(tag characters that spell nothing)" if runs else "")


def _selector_byte(char: str) -> int:
    code = ord(char)
    return code - 0xFE00 if code <= 0xFE0F else code - 0xE0100 + 16


def selector_payloads(text: str) -> list[Decoded]:
    """Bytes carried by runs of variation selectors, as text (undecodable bytes shown as U+FFFD)."""
    return [Decoded("variation selectors", bytes(_selector_byte(char) for char in run.group())
                    .decode("utf-8", "replace"))
            for run in SELECTOR_RUN.finditer(text)]
