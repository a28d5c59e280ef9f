"""Bounded, strict JSON for every value that crosses a trust boundary (§9).

`parse` accepts only finite JSON: no NaN/Infinity, no duplicate keys, no
lone surrogates, and within bounds — raw bytes first (before any parsing
work), then depth, number of values and serialized size in UTF-16 code units
(an astral character counts 2). Errors carry a JSON Pointer and a stable code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

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
        self.code, self.pointer = code, pointer


def _reject_constant(name: str):
    raise BoundedJsonError("json.non-finite", f"{name} is not JSON")


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise BoundedJsonError("json.duplicate-key", f"duplicate key {key[:40]!r}")
        result[key] = value
    return result


def _utf16_units(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


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
    check(value, limits)
    return value


def check(value: object, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check an already-built value against the same rules (iteratively: no recursion limit)."""
    visited = 0
    units = 0
    stack: list[tuple[object, int, str]] = [(value, 1, "")]
    while stack:
        node, depth, pointer = stack.pop()
        visited += 1
        if visited > limits.max_values:
            raise BoundedJsonError("json.too-many-values", f"more than {limits.max_values} values", pointer)
        if depth > limits.max_depth:
            raise BoundedJsonError("json.too-deep", f"deeper than {limits.max_depth} levels", pointer)
        if isinstance(node, str):
            _check_string(node, pointer)
            units += _utf16_units(node) + 2
        elif isinstance(node, bool) or node is None:
            units += 4
        elif isinstance(node, int):
            units += len(str(node))
        elif isinstance(node, float):
            if node != node or node in (float("inf"), float("-inf")):
                raise BoundedJsonError("json.non-finite", "number is not finite", pointer)
            units += len(repr(node))
        elif isinstance(node, dict):
            units += 2
            for key, item in node.items():
                if not isinstance(key, str):
                    raise BoundedJsonError("json.non-json-type", "object key is not a string", pointer)
                _check_string(key, pointer)
                units += _utf16_units(key) + 4
                stack.append((item, depth + 1, f"{pointer}/{_escape(key)}"))
        elif isinstance(node, list):
            units += 2
            for index, item in enumerate(node):
                units += 1
                stack.append((item, depth + 1, f"{pointer}/{index}"))
        else:
            raise BoundedJsonError("json.non-json-type", f"{type(node).__name__} is not a JSON type", pointer)
        if units > limits.max_utf16_units:
            raise BoundedJsonError("json.too-large", f"more than {limits.max_utf16_units} UTF-16 code units",
                                   pointer)


def _check_string(text: str, pointer: str) -> None:
    for ch in text:
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise BoundedJsonError("json.lone-surrogate", "string contains a lone surrogate", pointer)


def canonical(value: object) -> str:
    """Canonical JSON text (sorted keys, no spaces) for hashing.

    Equivalent to RFC 8785 for the values Tessera hashes (strings, integers,
    finite floats via repr); floats are rare in hashed documents.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
