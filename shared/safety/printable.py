"""Text from a model, a person or a warehouse, made safe to show on a terminal or in a title."""

from __future__ import annotations

import re
import unicodedata

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object, keep_newlines: bool = True) -> str:
    """Control characters (terminal escape sequences among them) shown as U+FFFD, never obeyed."""
    cleaned = _CONTROL.sub("\ufffd", str(text))
    return cleaned if keep_newlines else cleaned.replace("\t", "\ufffd").replace("\n", "\ufffd")


def revealed(text: object, keep_newlines: bool = True) -> str:
    """Like `printable`, and every invisible formatting character (bidi overrides, zero-width characters,
    tag characters) spelled out as <U+XXXX>: for text a reviewer must read exactly as a model would get it,
    where a reversed or hidden run would otherwise mislead the eye."""
    shown = "".join(f"<U+{ord(c):04X}>" if _invisible(c) else c for c in str(text))
    return printable(shown, keep_newlines)


# Besides format characters (Cf): marks and letters that draw nothing — the combining grapheme joiner,
# Mongolian and other variation selectors, Hangul fillers, the braille blank and Khmer inherent vowels.
_ALSO_INVISIBLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
                   (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF))


def _invisible(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char) == "Cf" or any(low <= code <= high for low, high in _ALSO_INVISIBLE)
