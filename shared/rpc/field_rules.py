"""The contract's field rules (proto/tessera/rules/v1/rules.proto), checked before any servicer code runs.

`RequestRules` reads every rule of every request message of the services a server registers, once, when the
server is built; a rule that does not fit its field's type stops the server there. The interceptor then
checks each request (each message of a request stream) and refuses the first broken rule with `Invalid`,
reason FIELD_INVALID, the field's JSON Pointer (proto field names: `/turn/session_id`, `/turn_ids/3`) and the
bound it broke. Nested messages are checked where their type states rules, however deep.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import NamedTuple

import re2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Invalid
from tessera.rules.v1 import rules_pb2

# One check: the message, the pointer of the message itself; a refusal, or None when it keeps the rule.
Check = Callable[[Message, str], Invalid | None]


class Broken(NamedTuple):
    """What one value broke: said, the rule, its bound, the values allowed (the pointer is added only then)."""

    says: str
    rule: str
    bound: int | None = None
    allowed: list[str] | None = None


# One check of a single value; hot: it returns a Broken only when the value breaks its rule.
ValueCheck = Callable[[object], Broken | None]

_INTEGERS = frozenset({
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32, FieldDescriptor.TYPE_SFIXED64})


class RuleMisfit(ValueError):
    """A contract states a rule its field's type cannot keep (a text kind on a number, say)."""


def text_bounds(kind: int) -> rules_pb2.TextBounds:
    """The bounds of one kind of text, as its TextKind value states them (a kind without them is a misfit)."""
    value = rules_pb2.TextKind.DESCRIPTOR.values_by_number.get(kind)
    bounds = value.GetOptions().Extensions[rules_pb2.bounds] if value is not None else None
    if bounds is None or bounds.max_chars == 0:
        raise RuleMisfit(f"text kind {kind} states no bounds (rules.proto: TextKind's `bounds` option)")
    return bounds


def max_chars(kind: int) -> int:
    """The most characters one kind of text may have (the one place code reads a text limit from)."""
    return text_bounds(kind).max_chars


def stated(message: type[Message], field: str, bound: str) -> int:
    """One number a contract states for a field (`max`, `max_items`, `max_bytes`...), for code that needs it (a
    page's most rows); a bound the contract does not state is a misfit, never a silent 0."""
    rules = field_rules(message.DESCRIPTOR.fields_by_name[field])
    if rules is None or not rules.HasField(bound):
        raise RuleMisfit(f"{message.DESCRIPTOR.full_name}.{field} states no {bound}")
    return getattr(rules, bound)


def field_rules(field: FieldDescriptor) -> rules_pb2.FieldRules | None:
    options = field.GetOptions()
    return options.Extensions[rules_pb2.field] if options.HasExtension(rules_pb2.field) else None


def refusal(pointer: str, says: str, rule: str, bound: int | None = None, allowed: list[str] | None = None) -> Invalid:
    return Invalid("FIELD_INVALID", f"{pointer}: {says}", metadata(pointer, bound=bound, allowed=allowed, rule=rule))


class RequestRules:
    """Full method name (`/pkg.Service/Method`) → the check of its request message."""

    def __init__(self, services: Iterable[ServiceDescriptor]) -> None:
        self._by_type: dict[str, Check | None] = {}
        self._building: set[str] = set()
        self._by_method: dict[str, Check] = {}
        for service in services:
            for method in service.methods:
                check = self.of(method.input_type)
                if check is not None:
                    self._by_method[f"/{service.full_name}/{method.name}"] = check

    def check(self, method: str, request: Message) -> None:
        """Raise Invalid at the first rule the request breaks; a method whose request states none costs a lookup."""
        check = self._by_method.get(method)
        if check is not None and (broken := check(request, "")) is not None:
            raise broken

    async def each_checked(self, method: str, requests: AsyncIterator[Message]) -> AsyncIterator[Message]:
        """A request stream whose every message is checked as it is read: a broken one ends the call there."""
        async for request in requests:
            self.check(method, request)
            yield request

    def of(self, message: Descriptor) -> Check | None:
        """The check of one message type, or None when neither it nor any message inside it states a rule."""
        name = message.full_name
        if name in self._by_type:
            return self._by_type[name]
        if name in self._building:  # a type inside itself: its check is looked up once it is built
            return lambda inside, pointer: (self._by_type.get(name) or _keeps)(inside, pointer)
        self._building.add(name)
        checks = [check for field in message.fields for check in self._field_checks(field)]
        checks += [_oneof_required(oneof.name) for oneof in message.oneofs
                   if oneof.GetOptions().Extensions[rules_pb2.oneof_required]]
        self._building.discard(name)
        self._by_type[name] = _all(checks) if checks else None
        return self._by_type[name]

    def _field_checks(self, field: FieldDescriptor) -> list[Check]:
        checks: list[Check] = []
        rules = field_rules(field)
        if rules is not None:
            checks += _rule_checks(field, rules)
        if field.type == FieldDescriptor.TYPE_MESSAGE and not _is_map(field):
            inner = self.of(field.message_type)
            if inner is not None:
                checks.append(_nested(field, inner))
        return checks


def _keeps(message: Message, pointer: str) -> None:
    return None


def _all(checks: list[Check]) -> Check:
    def check(message: Message, pointer: str) -> Invalid | None:
        for one in checks:
            if (broken := one(message, pointer)) is not None:
                return broken
        return None
    return check


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _nested(field: FieldDescriptor, inner: Check) -> Check:
    name = field.name
    if field.is_repeated:
        def each(message: Message, pointer: str) -> Invalid | None:
            for index, item in enumerate(getattr(message, name)):
                if (broken := inner(item, f"{pointer}/{name}/{index}")) is not None:
                    return broken
            return None
        return each

    def one(message: Message, pointer: str) -> Invalid | None:
        return inner(getattr(message, name), f"{pointer}/{name}") if message.HasField(name) else None
    return one


def _oneof_required(name: str) -> Check:
    def check(message: Message, pointer: str) -> Invalid | None:
        return None if message.WhichOneof(name) else refusal(f"{pointer}/{name}", f"one {name} is required",
                                                            "oneof_required")
    return check


def _rule_checks(field: FieldDescriptor, rules: rules_pb2.FieldRules) -> list[Check]:
    """The checks one field's rules make, each refused at start when it cannot fit the field."""
    where = f"{field.containing_type.full_name}.{field.name}"
    is_text, repeated = field.type == FieldDescriptor.TYPE_STRING, field.is_repeated
    least, most = _stated_or_none(rules, "min"), _stated_or_none(rules, "max")
    fewest, most_items = rules.min_items, _stated_or_none(rules, "max_items")
    value_checks: list[ValueCheck] = []
    if rules.text:
        _fits(is_text, where, "text")
        value_checks.append(_text_check(rules.text))
    if rules.HasField("max_bytes"):
        _fits(is_text, where, "max_bytes")
        value_checks.append(_bytes_check(rules.max_bytes))
    if least is not None or most is not None:
        _fits(field.type in _INTEGERS, where, "min/max")
        _fits(least is None or most is None or least <= most, where, "min/max", "states a least above its most")
        value_checks.append(_range_check(least, most))
    if rules.defined_only:
        _fits(field.type == FieldDescriptor.TYPE_ENUM, where, "defined_only")
        value_checks.append(_defined_check(field.enum_type))
    checks: list[Check] = []
    if fewest or most_items is not None:
        _fits(repeated, where, "min_items/max_items")
        _fits(most_items is None or fewest <= most_items, where, "min_items/max_items",
              "states a least above its most")
        checks.append(_items_check(field.name, fewest, most_items))
    if rules.required:
        checks.append(_required_check(field))
    if rules.items_required:
        _fits(repeated and is_text, where, "items_required")
        value_checks.append(_filled)
    if value_checks:
        checks.append(_values_check(field.name, repeated, value_checks))
    return checks


def _stated_or_none(rules: rules_pb2.FieldRules, bound: str) -> int | None:
    return getattr(rules, bound) if rules.HasField(bound) else None


def _fits(fits: bool, where: str, rule: str, why: str = "does not fit this field's type") -> None:
    if not fits:
        raise RuleMisfit(f"{where}: the rule {rule} {why}")


def _values_check(name: str, repeated: bool, value_checks: list[ValueCheck]) -> Check:
    def check(message: Message, pointer: str) -> Invalid | None:
        values = getattr(message, name)
        for index, value in enumerate(values if repeated else (values,)):
            for one in value_checks:
                if (broken := one(value)) is not None:
                    return refusal(f"{pointer}/{name}/{index}" if repeated else f"{pointer}/{name}", *broken)
        return None
    return check


def _text_check(kind: int) -> ValueCheck:
    bounds = text_bounds(kind)
    pattern = re2.compile(bounds.pattern) if bounds.pattern else None

    def check(value: str) -> Broken | None:
        if len(value) > bounds.max_chars:
            return Broken(f"{bounds.noun} of at most {bounds.max_chars} characters", "max_chars", bounds.max_chars)
        if pattern is not None and value and not pattern.fullmatch(value):
            return Broken(f"{bounds.noun}, at most {bounds.max_chars} characters", "pattern")
        return None
    return check


def _filled(value: str) -> Broken | None:
    return None if value else Broken("not empty", "items_required")


def _bytes_check(most: int) -> ValueCheck:
    def check(value: str) -> Broken | None:
        # Characters first: at most 4 bytes each, so short text is never encoded to be measured.
        if len(value) * 4 > most and len(value.encode("utf-8", "surrogatepass")) > most:
            return Broken(f"at most {most} bytes of UTF-8", "max_bytes", most)
        return None
    return check


def _range_check(least: int | None, most: int | None) -> ValueCheck:
    said = " and ".join(part for part in ("" if least is None else f"at least {least}",
                                          "" if most is None else f"at most {most}") if part)

    def check(value: int) -> Broken | None:
        if least is not None and value < least:
            return Broken(said, "range", least)
        if most is not None and value > most:
            return Broken(said, "range", most)
        return None
    return check


def _enum_names(enum: EnumDescriptor) -> list[str]:
    return [value.name for value in enum.values if value.number != 0]


def _defined_check(enum: EnumDescriptor) -> ValueCheck:
    names = _enum_names(enum)

    def check(value: int) -> Broken | None:
        return None if value in enum.values_by_number else Broken(f"one of {', '.join(names)}", "defined_only",
                                                                  allowed=names)
    return check


def _items_check(name: str, least: int, most: int | None) -> Check:
    def check(message: Message, pointer: str) -> Invalid | None:
        count = len(getattr(message, name))
        if count < least or (most is not None and count > most):
            span = f"{least} to {most}" if most is not None else f"at least {least}"
            return refusal(f"{pointer}/{name}", f"{span} items", "items", most)
        return None
    return check


def _required_check(field: FieldDescriptor) -> Check:
    name = field.name
    if field.type == FieldDescriptor.TYPE_MESSAGE and not field.is_repeated:
        def present(message: Message, pointer: str) -> Invalid | None:
            return None if message.HasField(name) else refusal(f"{pointer}/{name}", "required", "required")
        return present

    names = _enum_names(field.enum_type) if field.type == FieldDescriptor.TYPE_ENUM else None
    what = f"one of {', '.join(names)}" if names else "required, not empty"

    def not_empty(message: Message, pointer: str) -> Invalid | None:
        return None if getattr(message, name) else refusal(f"{pointer}/{name}", what, "required", allowed=names)
    return not_empty
