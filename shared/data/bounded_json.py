"""Bounded, strict JSON for every value that crosses a trust boundary (§9).

`parse` accepts only finite JSON: no NaN/Infinity, no duplicate keys, no
lone surrogates, and within bounds — raw bytes first (before any parsing
work), then depth, number of values and serialized size in UTF-16 code units
(an astral character counts 2). Errors carry a JSON Pointer and a stable code.

`canonical` writes a value as RFC 8785 canonical JSON, the form every content
hash and pin is taken over.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from dataclasses import dataclass

import rfc8785

MAX_DEPTH = 64
MAX_VALUES = 10_000
MAX_UTF16_UNITS = 1_000_000
MAX_RAW_BYTES = 4_000_000  # ≥ 1,000,000 UTF-16 units written as (up to 4-byte) UTF-8


@dataclass(frozen=True)
class Limits:
    max_raw_bytes: int = MAX_RAW_BYTES
    max_depth: int = MAX_DEPTH
    max_values: int = MAX_VALUES
    max_utf16_units: int = MAX_UTF16_UNITS


DEFAULT_LIMITS = Limits()


class BoundedJsonError(ValueError):
    def __init__(self, code: str, message: str, pointer: str = "") -> None:
        super().__init__(f"{message} (at {pointer or '/'})")
        self.code, self.pointer, self.detail = code, pointer, message


def _reject_constant(name: str):
    raise BoundedJsonError("json.non-finite", f"{name} is not JSON")


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise BoundedJsonError("json.duplicate-key", f"duplicate key {key[:40]!r}")
        result[key] = value
    return result


_SURROGATE = re.compile("[\ud800-\udfff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _utf16_units(text: str) -> int:
    # An astral character is two UTF-16 code units; regex keeps this in C.
    return len(text) + len(_ASTRAL.findall(text)) if not text.isascii() else len(text)


def _string_units(text: str) -> int:
    """UTF-16 units of the string as JSON, quotes and escapes included."""
    if text.isascii() and '"' not in text and "\\" not in text and text.isprintable():
        return len(text) + 2
    return _utf16_units(json.dumps(text, ensure_ascii=False))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def parse(raw: str | bytes, limits: Limits = DEFAULT_LIMITS) -> object:
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > limits.max_raw_bytes:
        raise BoundedJsonError("json.too-large", f"{size} bytes exceed the limit of {limits.max_raw_bytes}")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BoundedJsonError("json.encoding", "not valid UTF-8") from None
    try:
        value = json.loads(raw, object_pairs_hook=_pairs, parse_constant=_reject_constant)
    except BoundedJsonError:
        raise
    except (json.JSONDecodeError, RecursionError) as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise BoundedJsonError("json.syntax", f"not JSON: {message}") from None
    except ValueError:  # Python refuses integers of more than 4,300 digits
        raise BoundedJsonError("json.syntax", "not JSON: a number is too long") from None
    # JSON text is never shorter than its minimal serialization (escapes only
    # lengthen it), so a text within the unit budget needs no per-string count.
    check(value, limits, count_units=_utf16_units(raw) > limits.max_utf16_units)
    return value


def check(value: object, limits: Limits = DEFAULT_LIMITS, count_units: bool = True) -> None:
    """Check an already-built value against the same rules (iteratively: no recursion limit)."""
    visited = 0
    units = 0
    # Entries are (node, depth, parent entry, key): a pointer is only spelled out for an error.
    stack: list[tuple] = [(value, 1, None, None)]
    while stack:
        entry = stack.pop()
        node, depth = entry[0], entry[1]
        visited += 1
        if visited > limits.max_values:
            raise BoundedJsonError("json.too-many-values", f"more than {limits.max_values} values", _pointer(entry))
        if depth > limits.max_depth:
            raise BoundedJsonError("json.too-deep", f"deeper than {limits.max_depth} levels", _pointer(entry))
        kind = type(node)
        # Units of the minimal serialization: separators count once, strings with their escapes.
        if kind is str:
            _check_string(node, entry)
            if count_units:
                units += _string_units(node)
        elif kind is bool:
            units += 4 if node else 5
        elif node is None:
            units += 4
        elif kind is int:
            units += len(str(node))
        elif kind is float:
            if node != node or node in (float("inf"), float("-inf")):
                raise BoundedJsonError("json.non-finite", "number is not finite", _pointer(entry))
            units += len(repr(node))
        elif kind is dict:
            units += 2 + max(len(node) - 1, 0) + len(node)  # braces, commas, colons
            for key, item in node.items():
                if type(key) is not str:
                    raise BoundedJsonError("json.non-json-type", "object key is not a string", _pointer(entry))
                _check_string(key, entry)
                if count_units:
                    units += _string_units(key)
                stack.append((item, depth + 1, entry, key))
        elif kind is list:
            units += 2 + max(len(node) - 1, 0)
            stack.extend((item, depth + 1, entry, index) for index, item in enumerate(node))
        else:
            raise BoundedJsonError("json.non-json-type", f"{kind.__name__} is not a JSON type", _pointer(entry))
        if units > limits.max_utf16_units:
            raise BoundedJsonError("json.too-large", f"more than {limits.max_utf16_units} UTF-16 code units",
                                   _pointer(entry))


def _pointer(entry: tuple | None) -> str:
    parts = []
    while entry is not None and entry[2] is not None:
        parts.append(_escape(str(entry[3])))
        entry = entry[2]
    return "".join(f"/{part}" for part in reversed(parts))


def _check_string(text: str, entry: tuple) -> None:
    if not text.isascii() and _SURROGATE.search(text):
        raise BoundedJsonError("json.lone-surrogate", "string contains a lone surrogate", _pointer(entry))


# Only the rules, no bounds: canonical() asks which part of a value has no canonical form.
_RULES_ONLY = Limits(max_raw_bytes=sys.maxsize, max_depth=sys.maxsize, max_values=sys.maxsize,
                     max_utf16_units=sys.maxsize)
_I_JSON_INTEGER = 2**53 - 1  # RFC 8785 covers I-JSON, whose integers go this far (RFC 7493 §2.2)


def canonical(value: object) -> str:
    """RFC 8785 (JCS) text of a JSON value, for hashing: no whitespace, object keys in UTF-16 code-unit
    order, numbers as ECMAScript writes them (1.0 → 1, 1e21 → 1e+21, -0.0 → 0), written by the rfc8785
    package.

    Integers are written with all their digits. Up to ±(2**53 − 1) that is RFC 8785 itself; past it the
    RFC has no answer (it covers I-JSON, whose numbers are IEEE doubles, and the package refuses them),
    so they keep the form they always had here: every integer its own text, never rounded and never
    refused. A JavaScript implementation would round them; a number another party must hash the same
    way belongs in a string (RFC 8785 Appendix D). Refused with BoundedJsonError, and the code and
    pointer check() gives: a non-finite float, a lone surrogate, a key or value that is not JSON.
    """
    # Most values need nothing changed: checked without building a copy, and written as they are.
    plain = value if _already_plain(value) else _plain(value)
    if plain is not _NOT_PLAIN:
        try:
            text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
            text.encode("utf-8")  # a lone surrogate fails here: the package path says where it is
            return text
        except (ValueError, UnicodeEncodeError):
            pass
    return _by_package(value)


# The fast path: for most values (result rows above all) the standard library's C encoder writes what RFC 8785
# asks, about five times sooner than the package, once integral floats are written as the integers they are.
_NOT_PLAIN = object()
_EXACT_FLOATS = 2.0**53  # an integral float below this is exactly its int, and both forms write its digits
_SAME_FLOAT_TEXT = (1e-4, 1e16)  # other floats in this range: Python's repr is ECMAScript's Number::toString


def _plain(node: object) -> object:
    """`node` as json.dumps writes in RFC 8785's form, or _NOT_PLAIN when only the package writes it right
    (a float outside the ranges above, a key that is not ASCII, so code points might not sort as UTF-16 units
    do, or anything that is not plain JSON)."""
    kind = type(node)
    if kind is str or kind is int or kind is bool or node is None:
        return node
    if kind is float:
        return _plain_float(node)
    if kind is list or kind is tuple:
        items = []
        for item in node:
            if type(item) is not str:  # most cells are: spare them a call
                item = _plain(item)
                if item is _NOT_PLAIN:
                    return _NOT_PLAIN
            items.append(item)
        return items
    if kind is dict and all(type(key) is str and key.isascii() for key in node):
        items = {key: _plain(item) for key, item in node.items()}
        return _NOT_PLAIN if any(item is _NOT_PLAIN for item in items.values()) else items
    return _NOT_PLAIN


def _plain_float(node: float) -> object:
    """A float as json.dumps writes it in RFC 8785's form: itself, its int, or _NOT_PLAIN (the package's)."""
    if node.is_integer() and abs(node) < _EXACT_FLOATS:
        return int(node)
    if _SAME_FLOAT_TEXT[0] <= abs(node) < _SAME_FLOAT_TEXT[1] and not node.is_integer():
        return node
    return _NOT_PLAIN


def _already_plain(node: object) -> bool:
    """`_plain(node)` would be `node` itself (a quicker walk that copies nothing): nothing to convert, keys all
    ASCII."""
    kind = type(node)
    if kind is str or kind is int or kind is bool or node is None:
        return True
    if kind is float:
        return _plain_float(node) is node
    if kind is list or kind is tuple:
        for item in node:
            if type(item) is not str and not _already_plain(item):
                return False
        return True
    if kind is dict:
        for key, item in node.items():
            if type(key) is not str or not key.isascii() or (type(item) is not str and not _already_plain(item)):
                return False
        return True
    return False


def _by_package(value: object) -> str:
    try:
        return rfc8785.dumps(value).decode("utf-8")
    except rfc8785.IntegerDomainError:
        return _with_big_integers(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError) as exc:
        check(value, _RULES_ONLY, count_units=False)  # raises the precise error, with its pointer
        raise BoundedJsonError("json.non-json-type", f"no canonical form: {exc}") from None


def _with_big_integers(value: object) -> str:
    """canonical() of a value holding integers past ±(2**53 − 1): the package writes a placeholder string
    in the place of each, which is then replaced by the integer's digits."""
    marker = f"\x00{secrets.token_hex(8)}:"  # random, so no string of the value can pass for a placeholder
    digits: list[str] = []

    def placed(node: object) -> object:
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) > _I_JSON_INTEGER:
            digits.append(str(int(node)))
            return f"{marker}{len(digits) - 1}"
        if isinstance(node, dict):
            return {key: placed(item) for key, item in node.items()}
        if isinstance(node, list | tuple):
            return [placed(item) for item in node]
        return node

    written = re.escape(json.dumps(marker)[:-1])  # as the package writes it: quoted, \u0000 for the NUL
    return re.sub(written + r'(\d+)"', lambda found: digits[int(found[1])], canonical(placed(value)))
