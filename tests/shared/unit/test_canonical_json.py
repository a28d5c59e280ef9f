"""canonical() is RFC 8785: the RFC's own examples; integers past its range; a precise error for what is not JSON."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.data import bounded_json
from shared.data.bounded_json import BoundedJsonError, canonical


def test_the_rfc_example_of_section_3_2_2():
    text = r"""{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"""
    assert canonical(json.loads(text)) == r"""{"literals":[null,true,false],""" \
        r""""numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"""


def test_keys_sort_by_utf16_code_units_as_in_section_3_2_3():
    # The emoji is U+1F600, written as the surrogates D83D DE00: before U+FB33 in UTF-16, after it in code points.
    names = {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
             "1": "One", "\U0001f600": "Emoji: Grinning Face", "\u0080": "Control",
             "\u00f6": "Latin Small Letter O With Diaeresis"}
    assert list(json.loads(canonical(names))) == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


# RFC 8785 Appendix B: IEEE 754 doubles (as hex) and their canonical text.
APPENDIX_B = [
    ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"), ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"), ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"), ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"), ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"), ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "expected"), APPENDIX_B)
def test_numbers_of_appendix_b(bits, expected):
    assert canonical(struct.unpack(">d", bytes.fromhex(bits))[0]) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ({"a": 1.0}, '{"a":1}'), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"),
    (1e-6, "0.000001"), (-0.0, "0"), (4.50, "4.5"), (2**53 - 1, "9007199254740991"), (True, "true"),
])
def test_numbers_are_written_as_ecmascript_writes_them(value, expected):
    assert canonical(value) == expected


def test_strings_escape_only_what_json_requires():
    assert canonical(["\x1f\x7f\u2028é😀", "\b\f\n\r\t"]) == '["\\u001f\x7f\u2028é😀","\\b\\f\\n\\r\\t"]'


@pytest.mark.parametrize(("value", "expected"), [
    (2**53, "9007199254740992"), (2**53 + 1, "9007199254740993"), (-(2**63), "-9223372036854775808"),
    (2**63 - 1, "9223372036854775807"), (10**30, "1" + "0" * 30),
    ({"b": [2**64, 1.0], "a": "\x00"}, '{"a":"\\u0000","b":[18446744073709551616,1]}'),
    (["\x00deadbeefdeadbeef:0", 2**60], '["\\u0000deadbeefdeadbeef:0",1152921504606846976]'),
])
def test_integers_past_i_json_keep_all_their_digits(value, expected):
    """RFC 8785 stops at ±(2**53 − 1); past it each integer keeps its own exact text, as before the package."""
    assert canonical(value) == expected


def test_a_value_with_big_integers_is_still_checked_precisely():
    with pytest.raises(BoundedJsonError) as error:
        canonical({"n": 2**60, "x": [float("nan")]})
    assert (error.value.code, error.value.pointer) == ("json.non-finite", "/x/0")


@pytest.mark.parametrize(("value", "code", "pointer"), [
    ({"x": float("nan")}, "json.non-finite", "/x"),
    ([float("inf")], "json.non-finite", "/0"),
    ({"a": "\ud800"}, "json.lone-surrogate", "/a"),
    ({"\udfff": 1}, "json.lone-surrogate", ""),
    ({1: "an integer key"}, "json.non-json-type", ""),
    ({"a": {1, 2}}, "json.non-json-type", "/a"),
])
def test_values_without_a_canonical_form_are_refused_precisely(value, code, pointer):
    with pytest.raises(BoundedJsonError) as error:
        canonical(value)
    assert (error.value.code, error.value.pointer) == (code, pointer)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([2**53 + 1, 2**63, -(10**22), 2**1000])
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_canonical_text_is_json_of_the_same_value_and_a_fixed_point(value):
    text = canonical(value)
    # Compared as doubles: ECMAScript's shortest form of a float reads back exactly, but a float past 2**53
    # is written as digits (2.0**63 as 9223372036854776000), which Python reads back as a different int.
    assert json.loads(text, parse_int=float) == json.loads(json.dumps(value), parse_int=float)
    assert canonical(json.loads(text)) == text


# What the fast path must tell apart from the package's form: integral, tiny, huge and negative-zero floats;
# keys whose code points and UTF-16 units sort differently; escapes; tuples; ints on both sides of 2**53.
awkward_scalars = st.sampled_from([
    0.0, -0.0, 1.0, -5.0, 1e-4, 9.99e-5, 1e-7, 1e16, 9999999999999998.0, 2.0**53, 2.0**53 - 1, 1e21, 1e22,
    0.1, 123456.78, -3.5e-5, "\x00\x1f\x7f\u2028\"\\/", "\ufb33", "\U0001f600", 2**53 - 1, 2**53, -(2**60)])
fast_path_values = st.recursive(
    awkward_scalars | st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=3) | st.sampled_from(["\ufb33", "\U0001f600", "é", "a"]), inner, max_size=5),
    max_leaves=40)


@settings(max_examples=500, deadline=None)
@given(value=fast_path_values)
def test_the_fast_path_writes_exactly_what_the_package_writes(value):
    """canonical() takes the standard library's encoder where it agrees with RFC 8785, and must never
    differ from the package's text (or its big-integer extension)."""
    assert canonical(value) == bounded_json._by_package(value)


@pytest.mark.parametrize("value", [[1.0], {"a": [float("nan")]}, ["\ud800"], {"\U0001f600": 1}, [{1, 2}]])
def test_what_the_fast_path_leaves_to_the_package_still_gets_the_packages_answer_or_error(value):
    try:
        expected = bounded_json._by_package(value)
    except BoundedJsonError as refused:
        with pytest.raises(BoundedJsonError) as error:
            canonical(value)
        assert (error.value.code, error.value.pointer) == (refused.code, refused.pointer)
    else:
        assert canonical(value) == expected
