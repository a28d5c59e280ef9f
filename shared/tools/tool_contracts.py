"""Tool contracts: input schemas compiled at startup, applied without side effects (§9).

A tool's input schema is an object-root JSON Schema, draft-07 unless it
declares 2020-12 in `$schema`; any other dialect is refused. Schemas are
checked against their meta-schema when compiled (an invalid one stops
startup) and may only reference their own parts (`#…`): nothing is fetched.
Validation never coerces, inserts defaults or removes properties; unknown
`x-*` keywords carry no behaviour. A violation is explained where it is, with what is allowed there
(shared.data.schema_errors). Results leave through the tool's output schema: only the properties it declares
are kept (a result can never carry more than its contract says).

A *closed* contract (an external tool's, built from its pinned schema) also
refuses properties the schema does not declare, where the schema does not
say so itself: at the top level always (declared = named in `properties` or
`required`, or matching `patternProperties`, of the root or of anything that
applies to the same value: allOf/anyOf/oneOf, if/then/else, dependent
schemas, local `$ref`s), and in a nested object whose schemas name
`properties` and say nothing of `additionalProperties`, `patternProperties`
or `unevaluatedProperties`. The names are the union over all those
branches, so compositions keep working (a property of one allOf branch is
not refused by another); the check runs only where it can only refuse more
(never inside not/if/contains/propertyNames, which it could turn around).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import jsonschema

from shared.data.schema_errors import SchemaProblem, explain, resolve_local, resolve_pointer

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_DIALECTS = {None: jsonschema.Draft7Validator, DRAFT_07: jsonschema.Draft7Validator,
             DRAFT_07.rstrip("#"): jsonschema.Draft7Validator, DRAFT_2020_12: jsonschema.Draft202012Validator}


class ToolSchemaError(Exception):
    """A tool schema that cannot be used; raised at startup, naming the tool."""


def _refs(schema: object, pointer: str = "") -> list[tuple[str, str]]:
    found = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                found.append((f"{pointer}/{key}", value))
            elif key not in ("enum", "const", "default", "examples"):
                found += _refs(value, f"{pointer}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            found += _refs(item, f"{pointer}/{index}")
    return found


@dataclass
class ToolContract:
    """A tool the model may call: its input schema and the shape its results may take."""

    name: str
    description: str
    input_schema: dict
    # The JSON Schema of a result: what a result keeps (see project) and what MCP clients are told.
    output_schema: dict = field(default_factory=dict)
    # Refuse undeclared properties (see the module docstring): for schemas someone else wrote, where a
    # property the reviewed schema never had must never reach the tool.
    closed: bool = False
    # Where a peer's refusal pointers are rooted in the arguments: "/draft" when the gateway points into the
    # draft it was given, "" when the peer's request mirrors the arguments themselves.
    subject: str = ""

    def __post_init__(self) -> None:
        schema = self.input_schema
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ToolSchemaError(f"tool {self.name}: the input schema root must be {{type: object}}")
        dialect = schema.get("$schema")
        validator_class = _DIALECTS.get(dialect)
        if validator_class is None:
            raise ToolSchemaError(f"tool {self.name}: schema dialect {dialect!r} is not supported "
                                  f"(use draft-07 or 2020-12)")
        for where, target in _refs(schema):
            if not target.startswith("#"):
                raise ToolSchemaError(f"tool {self.name}: {where} points outside the schema ({target!r}); "
                                      "schemas resolve locally only")
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "".join(f"/{p}" for p in exc.absolute_path)
            raise ToolSchemaError(f"tool {self.name}: schema{where}: {exc.message}") from None
        self._validator = validator_class(schema)
        self._closed = _CLOSING[validator_class](closed_schema(self.name, schema)) if self.closed else None

    def violations(self, arguments: object) -> list[SchemaProblem]:
        """Schema problems of `arguments`, first the most relevant; the value is never changed."""
        errors = list(self._validator.iter_errors(arguments))
        if not errors and self._closed is not None:  # valid as written: only undeclared properties remain
            return explain(_undeclared_first(self._closed.iter_errors(arguments)), self.input_schema)
        return explain(errors, self.input_schema)

    def project(self, result: object) -> object:
        return project(result, self.output_schema)


def project(value: object, schema: dict, root: dict | None = None) -> object:
    """Only what `schema` declares: an object keeps the properties it lists (each projected by its own schema),
    an array projects each item; a value whose schema lists no properties (a number, a text, a JSON Schema
    the contract passes on whole) is kept as it is."""
    root = schema if root is None else root
    schema = resolve_local(root, schema)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [project(item, schema["items"], root) for item in value]
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return value
    if not isinstance(value, dict):
        return None  # not the object the contract says: nothing of it leaves
    return {key: project(value[key], rule, root) for key, rule in properties.items() if key in value}


def function_name(tool_id: str) -> str:
    """The name a model calls a tool by: function names cannot hold dots, so `server.tool` is `server__tool`
    (the tool policy refuses two ids that would share one)."""
    return tool_id.replace(".", "__")


# --- closed contracts: undeclared properties refused -----------------------------------------------------

# The keyword a closed contract's schema copy carries where undeclared properties are refused: ours, and
# dropped from the copy wherever the schema had it, so a schema cannot bring its own.
_DECLARED = "x-tessera-declared"
_SAME_VALUE = ("allOf", "anyOf", "oneOf", "then", "else", "dependentSchemas", "dependencies")
_NEW_VALUE = ("properties", "patternProperties", "additionalProperties", "unevaluatedProperties", "items",
              "prefixItems", "additionalItems", "unevaluatedItems")
_HOLDERS = ("definitions", "$defs")  # schemas that apply only where a $ref names them
_HELD = ("#/$defs/", "#/definitions/")
_MAPS = ("properties", "patternProperties", "dependentSchemas", "dependencies", *_HOLDERS)
# Never marked: there a stricter schema would not only refuse more (a stricter `not` or `if` turns its
# outcome around).
_LEFT_ALONE = ("not", "if", "contains", "propertyNames", "contentSchema")
# A base URI other than the root's, or dynamic references: which schemas apply cannot be read off the text.
_UNSUPPORTED = ("$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor")
_OPEN = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def closed_schema(name: str, schema: dict) -> dict:
    """A copy of `schema` marked, at every value where undeclared properties are refused, with the
    properties (and top-level patterns) it declares there; ToolSchemaError if that cannot be told."""
    marked = copy.deepcopy(schema)
    try:
        for entry, top in _entries(marked):
            names, patterns, described, open_ = _declared(_same_value(marked, entry))
            if top or (described and not open_):
                for pattern in patterns if top else []:
                    re.compile(pattern)
                entry[_DECLARED] = {"names": sorted(names), "patterns": sorted(patterns) if top else []}
    except (ValueError, re.error) as exc:
        raise ToolSchemaError(f"tool {name}: cannot close the schema to undeclared properties: {exc}") from None
    return marked


def _entries(root: dict) -> list[tuple[dict, bool]]:
    """Every schema to mark: the first to apply to a value (the root, a property's, an item's …) outside
    _LEFT_ALONE, with whether it is the root's. Our keyword is dropped from every schema on the way."""
    found, stack = [], [(root, "value", True)]
    while stack:
        node, role, top = stack.pop()
        if not isinstance(node, dict):
            continue
        node.pop(_DECLARED, None)
        if not top and "$id" in node or any(key in node for key in _UNSUPPORTED):
            raise ValueError("it sets its own base URI or uses dynamic references")
        reference = node.get("$ref")
        if isinstance(reference, str) and reference != "#" and not reference.startswith(_HELD):
            # Only schemas this walk visits get marked: a $ref into anywhere else would leave its target open.
            raise ValueError(f"$ref {reference[:100]!r} points outside $defs/definitions")
        if role == "value":
            found.append((node, top))
        for key, value in node.items():
            if key in _LEFT_ALONE or role == "alone":
                child = "alone"
            else:
                child = "value" if key in _NEW_VALUE else "part"
            if key in _LEFT_ALONE or key in _SAME_VALUE or key in _HOLDERS or key in _NEW_VALUE:
                stack += [(schema, child, False) for schema in _children(key, value)]
    return found


def _children(key: str, value: object) -> list:
    if key in _MAPS:
        return list(value.values()) if isinstance(value, dict) else []
    return list(value) if isinstance(value, list) else [value]


def _same_value(root: dict, schema: dict) -> list[dict]:
    """`schema` and every schema that applies to the same value with it (compositions, conditionals,
    local references), each once."""
    found, seen, stack = [], set(), [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        if isinstance(node.get("$ref"), str):
            stack.append(resolve_pointer(root, node["$ref"]))
        for key in ("allOf", "anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "dependencies"):
            if key in node:
                stack += _children(key, node[key])
    return found


def _declared(schemas: list[dict]) -> tuple[set[str], set[str], bool, bool]:
    """(property names, property name patterns, whether any schema lists `properties`, whether any says
    how other properties are treated) over schemas that apply to one value."""
    names, patterns, described, open_ = set(), set(), False, False
    for schema in schemas:
        if isinstance(schema.get("properties"), dict):
            names.update(schema["properties"])
            described = True
        names.update(n for n in schema.get("required", []) if isinstance(n, str))
        if isinstance(schema.get("patternProperties"), dict):
            patterns.update(schema["patternProperties"])
        open_ = open_ or any(key in schema for key in _OPEN)
    return names, patterns, described, open_


def _refuse_undeclared(validator, declared: dict, instance: object, schema: dict):
    if not validator.is_type(instance, "object"):
        return
    for key in instance:
        if key not in declared["names"] and not any(re.search(p, key) for p in declared["patterns"]):
            yield jsonschema.ValidationError(f"{key!r} is not a property the schema declares", path=[key])


def _closing(base: type) -> type:
    """`base` with our keyword, which draft-07 also honours beside a `$ref` (its other siblings it ignores,
    as draft-07 says)."""
    def applicable(schema: dict):
        if base is jsonschema.Draft7Validator and "$ref" in schema:
            return [("$ref", schema["$ref"])] + ([(_DECLARED, schema[_DECLARED])] if _DECLARED in schema else [])
        return schema.items()

    return jsonschema.validators.create(
        meta_schema=base.META_SCHEMA, validators={**base.VALIDATORS, _DECLARED: _refuse_undeclared},
        type_checker=base.TYPE_CHECKER, format_checker=base.FORMAT_CHECKER, id_of=base.ID_OF,
        applicable_validators=applicable)


_CLOSING = {base: _closing(base) for base in set(_DIALECTS.values())}


def _undeclared_first(errors) -> list:
    """The undeclared-property refusals among `errors` and their causes (an anyOf branch refused for one
    is only a cause), ordered by where they are; `errors`, the most relevant first, if there are none."""
    top = list(errors)
    found, stack = {}, list(top)
    while stack:
        error = stack.pop()
        if error.validator == _DECLARED:  # one per place: a recursive schema can refuse it twice
            found.setdefault(tuple(str(p) for p in error.absolute_path), error)
        stack += error.context
    return [found[place] for place in sorted(found)] or sorted(top, key=jsonschema.exceptions.relevance)
