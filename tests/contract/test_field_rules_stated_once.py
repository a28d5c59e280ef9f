"""A field's bounds are stated once, in its contract (proto/tessera/rules/v1/rules.proto), and checked once, by the
interceptor: no servicer or domain module checks again a request field that a rule governs.

The walk reads every module under services/ and flags, inside an `if` test, `len(request.f)`, `not request.f` or
`request.f` compared with `<`, `<=`, `>` or `>=`, where `f` is a field some request message states a rule for.
A check the contract cannot state (a prefix reserved, a value tied to the caller's grant) reads the field some
other way and is not flagged.
"""

from __future__ import annotations

import ast

from shared.paths import REPO_ROOT
from shared.rpc.contracts import SERVICES
from shared.rpc.field_rules import field_rules


def ruled_request_fields() -> tuple[set[str], set[str]]:
    """The names of the request fields (of any depth) a contract states a bound for, and those it requires."""
    bounded: set[str] = set()
    required: set[str] = set()
    seen: set[str] = set()

    def walk(message) -> None:
        if message.full_name in seen:
            return
        seen.add(message.full_name)
        for field in message.fields:
            rules = field_rules(field)
            if rules is not None and rules.required:
                required.add(field.name)
            if rules is not None and any(rule.name != "required" for rule, _ in rules.ListFields()):
                bounded.add(field.name)
            if field.message_type is not None:
                walk(field.message_type)

    for service, _ in SERVICES.values():
        for method in service.methods:
            walk(method.input_type)
    return bounded, required


def _request_field(node: ast.AST) -> str | None:
    """`f` when the node is `request.f` (or `request.x.f`), else None."""
    if not isinstance(node, ast.Attribute):
        return None
    root = node.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return node.attr if isinstance(root, ast.Name) and root.id == "request" else None


def restated_checks(source: str, bounded: set[str], required: set[str]) -> list[tuple[int, str]]:
    """Where an `if` checks a request field again: its presence when a rule requires it, its size or value when
    a rule bounds it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.If):
            continue
        for part in ast.walk(node.test):
            if isinstance(part, ast.Call) and getattr(part.func, "id", "") == "len" and part.args:
                checked, ruled = _request_field(part.args[0]), bounded | required
            elif isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
                checked, ruled = _request_field(part.operand), required
            elif isinstance(part, ast.Compare) and any(
                    isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in part.ops):
                checked = next(filter(None, map(_request_field, [part.left, *part.comparators])), None)
                ruled = bounded | required
            else:
                continue
            if checked in ruled:
                found.append((part.lineno, checked))
    return found


def test_the_contracts_state_rules_for_the_fields_people_and_models_send():
    bounded, required = ruled_request_fields()
    # A walk that finds no rules proves nothing: these are the fields every service's requests carry.
    assert {"question", "turn_id", "session_id", "request_id", "entity_ids", "limit"} <= bounded
    assert {"question", "turn_id", "session_id", "request_id", "turn", "outcome"} <= required


def test_no_servicer_checks_a_field_its_contract_states_a_rule_for():
    bounded, required = ruled_request_fields()
    restated = {f"{path.relative_to(REPO_ROOT)}:{line} ({name})"
                for path in sorted(REPO_ROOT.glob("services/**/*.py"))
                for line, name in restated_checks(path.read_text(), bounded, required)}
    assert not restated, f"checked again where the contract already states the rule: {sorted(restated)}"


def test_the_walk_sees_each_shape_of_a_restated_check():
    source = (
        "if not request.question: pass\n"
        "if len(request.turn.turn_id) > 128: pass\n"
        "if request.limit > 100: pass\n"
        "if not request.nonce: pass\n"  # bounded, not required: presence is the servicer's own rule
        "if request.question.startswith('x'): pass\n"  # not a bound: left alone
        "if not other.question: pass\n")  # not the request: left alone
    assert restated_checks(source, {"limit", "turn_id", "nonce"}, {"question"}) == [
        (1, "question"), (2, "turn_id"), (3, "limit")]
