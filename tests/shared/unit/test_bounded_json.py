"""Bounded JSON: every limit at and across its edge, and the strictness rules."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.data.bounded_json import BoundedJsonError, Limits, check, parse


def nested(depth: int) -> str:
    return "[" * (depth - 1) + "0" + "]" * (depth - 1)


def test_depth_at_and_over_the_limit():
    assert parse(nested(64)) is not None
    with pytest.raises(BoundedJsonError) as error:
        parse(nested(65))
    assert error.value.code == "json.too-deep"


def test_values_at_and_over_the_limit():
    assert len(parse(json.dumps([0] * 9_999))) == 9_999  # the list itself is the 10,000th value
    with pytest.raises(BoundedJsonError) as error:
        parse(json.dumps([0] * 10_000))
    assert error.value.code == "json.too-many-values"


def test_utf16_units_count_astral_characters_twice():
    limits = Limits(max_utf16_units=12)
    assert parse('"' + "😀" * 5 + '"', limits) == "😀" * 5  # 10 units + 2 quotes
    with pytest.raises(BoundedJsonError) as error:
        check("😀" * 6, limits)  # 12 units + 2 quotes
    assert error.value.code == "json.too-large"


def test_raw_bytes_are_limited_before_parsing():
    with pytest.raises(BoundedJsonError) as error:
        parse("[" + " " * 200 + "1]", Limits(max_raw_bytes=100))
    assert error.value.code == "json.too-large"


@pytest.mark.parametrize("text,code,pointer", [
    ('{"a": 1, "a": 2}', "json.duplicate-key", ""),
    ("[NaN]", "json.non-finite", ""),
    ("[1, Infinity]", "json.non-finite", ""),
    ('{"a": ["\\ud800"]}', "json.lone-surrogate", "/a/0"),
    ('{"a/b": {"c~d": "\\udfff"}}', "json.lone-surrogate", "/a~1b/c~0d"),
    ("[1,", "json.syntax", ""),
])
def test_strictness(text, code, pointer):
    with pytest.raises(BoundedJsonError) as error:
        parse(text)
    assert (error.value.code, error.value.pointer) == (code, pointer)


def test_non_json_values_are_refused():
    for value in ({1: "int key"}, {"a": {1, 2}}, (1, 2), float("nan"), b"bytes"):
        with pytest.raises(BoundedJsonError):
            check(value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_the_text_fast_path_agrees_with_counting(value, indent, ascii_only):
    """parse() skips per-string counting when the text itself fits; it must decide as check() does."""
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    for limit in (10, 50, 200):
        limits = Limits(max_utf16_units=limit)
        try:
            check(value, limits)
            counted = True
        except BoundedJsonError:
            counted = False
        try:
            parse(text, limits)
            parsed = True
        except BoundedJsonError:
            parsed = False
        assert not parsed or counted, "the fast path accepted what counting refuses"


def _serialized_units(value) -> int:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_the_unit_count_is_exactly_the_minimal_serialization(value):
    exact = _serialized_units(value)
    check(value, Limits(max_utf16_units=exact))
    with pytest.raises(BoundedJsonError) as error:
        check(value, Limits(max_utf16_units=exact - 1))
    assert error.value.code == "json.too-large"
