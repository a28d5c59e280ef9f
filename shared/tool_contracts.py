"""Tool contracts: input schemas compiled at startup, applied without side effects (§9).

A tool's input schema is an object-root JSON Schema, draft-07 unless it
declares 2020-12 in `$schema`; any other dialect is refused. Schemas are
checked against their meta-schema when compiled (an invalid one stops
startup) and may only reference their own parts (`#…`): nothing is fetched.
Validation never coerces, inserts defaults or removes properties; unknown
`x-*` keywords carry no behaviour. Results leave through an explicit shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jsonschema

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_DIALECTS = {None: jsonschema.Draft7Validator, DRAFT_07: jsonschema.Draft7Validator,
             DRAFT_07.rstrip("#"): jsonschema.Draft7Validator, DRAFT_2020_12: jsonschema.Draft202012Validator}


class ToolSchemaError(Exception):
    """A tool schema that cannot be used; raised at startup, naming the tool."""


@dataclass(frozen=True)
class SchemaViolation:
    pointer: str
    message: str


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
    # Allowed result shape: {key: True} keeps a value as is, {key: {...}} recurses into
    # objects (and into each object of a list); anything else is dropped.
    result_shape: dict = field(default_factory=dict)

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

    def violations(self, arguments: object) -> list[SchemaViolation]:
        """Schema problems of `arguments`, first the most relevant; the value is never changed."""
        errors = sorted(self._validator.iter_errors(arguments), key=jsonschema.exceptions.relevance)
        return [SchemaViolation("".join(f"/{p}" for p in e.absolute_path), e.message[:300]) for e in errors[:5]]

    def project(self, result: object) -> object:
        return project(result, self.result_shape)


def project(value: object, shape: dict) -> object:
    """Keep only what `shape` names; a result can never carry more than its contract says."""
    if isinstance(value, list):
        return [project(item, shape) for item in value]
    if not isinstance(value, dict):
        return None
    kept = {}
    for key, rule in shape.items():
        if key not in value:
            continue
        kept[key] = value[key] if rule is True else project(value[key], rule)
    return kept


def function_name(tool_id: str) -> str:
    """The name a model calls a tool by: function names cannot hold dots, so `server.tool` is `server__tool`
    (the tool policy refuses two ids that would share one)."""
    return tool_id.replace(".", "__")
