"""Compiled JSON Schema (draft-07) checks for hot paths.

fastjsonschema turns a schema into Python code once, and is about ten
times faster than jsonschema on the component schemas (bench/results.json).
It is configured to keep §9's rules: no defaults inserted (`use_default=False`),
no coercion (it never coerces), and schemas are checked beforehand by
jsonschema's draft-07 meta-schema and for references (`reserved_keywords`).
"""

from __future__ import annotations

from collections.abc import Callable

import fastjsonschema
import jsonschema

# (pointer, message) of the first violation, or None.
Check = Callable[[object], tuple[str, str] | None]


def compile_check(schema: dict) -> Check:
    jsonschema.Draft7Validator.check_schema(schema)
    validate = fastjsonschema.compile(schema, use_default=False)

    def check(value: object) -> tuple[str, str] | None:
        try:
            validate(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            path = [str(part) for part in (exc.path or [])[1:]]
            message = exc.message.removeprefix("data").lstrip(". ") or exc.message
            return "".join(f"/{p}" for p in path), message
        return None

    return check
