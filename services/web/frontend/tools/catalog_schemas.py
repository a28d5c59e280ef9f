"""Writes the browser's zod prop schemas from the catalog's component contracts.

The renderer checks every component it is sent against its catalog's zod schema, and its binder reads
the same schema to know which props are data bindings. Those schemas come from one place: the YAML
contracts under shared/ui/catalogs, in the form the compiler writes them to the stream
(shared.ui.a2ui.catalog_document: binding props as A2UI data bindings, slots as child lists). Run by the
bundle's build (vite.config.js); the output is not committed.

    python services/web/frontend/tools/catalog_schemas.py OUT.js [CATALOG_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shared.ui.a2ui import COMMON_TYPES, catalog_document
from shared.ui.contracts import DEFAULT_CATALOG, load_catalog

# The envelope the renderer takes off before it checks a component's props.
ENVELOPE = ("id", "component")
# Keywords the conversion understands; a contract using any other keyword stops the build (no check is lost
# without a word).
KNOWN = {"type", "properties", "required", "additionalProperties", "propertyNames", "minProperties",
         "maxProperties", "items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern",
         "minimum", "maximum", "enum", "const", "oneOf", "anyOf", "$ref", "description"}


def _literal(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _string(schema: dict) -> str:
    out = "z.string()"
    if "pattern" in schema:
        out += f".regex(new RegExp({_literal(schema['pattern'])}))"
    if "minLength" in schema or "maxLength" in schema:  # in code points, as the compiler counts them
        out = f"characters({out}, {schema.get('minLength', 0)}, {schema.get('maxLength', 'Infinity')})"
    return out


def _number(schema: dict, integer: bool) -> str:
    out = "z.number().int()" if integer else "z.number()"
    if "minimum" in schema:
        out += f".gte({schema['minimum']})"
    if "maximum" in schema:
        out += f".lte({schema['maximum']})"
    return out


def _array(schema: dict) -> str:
    out = f"z.array({to_zod(schema.get('items', {}))})"
    if "minItems" in schema:
        out += f".min({schema['minItems']})"
    if "maxItems" in schema:
        out += f".max({schema['maxItems']})"
    return f"uniqueItems({out})" if schema.get("uniqueItems") else out


def object_zod(schema: dict, skip: tuple[str, ...] = (), separator: str = ", ") -> str:
    """An object: its named props (optional unless required), closed when additionalProperties is false;
    a map (z.record) when it names none and says what every value is."""
    properties = {k: v for k, v in schema.get("properties", {}).items() if k not in skip}
    extra = schema.get("additionalProperties", True)
    if not properties and isinstance(extra, dict):
        keys = _string(schema.get("propertyNames", {}))
        out = f"z.record({keys}, {to_zod(extra)})"
        if "minProperties" in schema or "maxProperties" in schema:
            out = f"propertyCount({out}, {schema.get('minProperties', 0)}, {schema.get('maxProperties', 'Infinity')})"
        return out
    if not properties and extra is True:
        return "z.record(z.string(), z.unknown())"
    required = set(schema.get("required", ()))
    fields = separator.join(f"{_literal(name)}: {to_zod(prop)}{'' if name in required else '.optional()'}"
                       for name, prop in properties.items())
    return f"z.object({{{fields}}})" + (".strict()" if extra is False else ".passthrough()")


def _typed(schema: dict, kind: str) -> str:
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return "z.boolean()"
    if kind == "array":
        return _array(schema)
    if kind == "object":
        return object_zod(schema)
    if kind == "null":
        return "z.null()"
    raise ValueError(f"type {kind!r} is not converted")


def _union(members: list[str]) -> str:
    return members[0] if len(members) == 1 else f"z.union([{', '.join(members)}])"


# Keywords that decide a schema alone: beside them, anything but a description would go unchecked.
_WHOLE = ("$ref", "const", "enum", "anyOf", "oneOf")
_MAP_KEYWORDS = {"propertyNames", "minProperties", "maxProperties"}


def _told_apart(options: list[dict]) -> bool:
    """Whether one required prop holds a different const in every option (e.g. a chart's recipe): then at most
    one option can match, and "any of" checks what "exactly one of" says."""
    def consts(option: dict) -> dict:
        return {name: prop["const"] for name, prop in option.get("properties", {}).items()
                if isinstance(prop, dict) and "const" in prop and name in option.get("required", ())}

    shared = set.intersection(*(set(consts(option)) for option in options)) if options else set()
    return any(len({json.dumps(consts(option)[name]) for option in options}) == len(options) for name in shared)


def _refuse_what_would_be_dropped(schema: dict) -> None:
    """Known keywords in combinations the conversion does not carry over: an error, never a lost check."""
    for key in _WHOLE:
        if key in schema and set(schema) - {key, "description"}:
            raise ValueError(f"{key} next to {sorted(set(schema) - {key, 'description'})} is not converted to zod")
    if "oneOf" in schema and not _told_apart(schema["oneOf"]):
        raise ValueError("oneOf (exactly one) is converted only where a required const prop tells the options "
                         "apart: otherwise use anyOf")
    names = schema.get("propertyNames", {})
    if set(names) - {"type", "minLength", "maxLength", "pattern"}:
        raise ValueError(f"propertyNames with {sorted(set(names))} is not converted to zod")
    if schema.get("properties") and (_MAP_KEYWORDS & set(schema) or isinstance(schema.get("additionalProperties"),
                                                                               dict)):
        raise ValueError("an object with named properties and map keywords is not converted to zod")


def to_zod(schema: dict) -> str:
    """One prop schema (the subset of JSON Schema the contracts use) as a zod expression."""
    unknown = sorted(set(schema) - KNOWN)
    if unknown:
        raise ValueError(f"keyword {unknown[0]!r} is not converted to zod")
    _refuse_what_would_be_dropped(schema)
    if "$ref" in schema:
        if not schema["$ref"].startswith(COMMON_TYPES):
            raise ValueError(f"$ref {schema['$ref']!r}: only A2UI common types are known")
        return f"common.{schema['$ref'][len(COMMON_TYPES):]}"
    if "const" in schema:
        return f"z.literal({_literal(schema['const'])})"
    if "enum" in schema:
        values = schema["enum"]
        if all(isinstance(v, str) for v in values):
            return f"z.enum({_literal(values)})"
        return _union([f"z.literal({_literal(v)})" for v in values])
    for key in ("oneOf", "anyOf"):  # oneOf only where its options are told apart (_told_apart)
        if key in schema:
            return _union([to_zod(option) for option in schema[key]])
    kind = schema.get("type")
    if kind is None:
        return "z.unknown()"
    if isinstance(kind, list):
        return _union([_typed(schema, k) for k in kind])
    return _typed(schema, kind)


def chart_recipes(catalog) -> dict:
    """Each recipe of the catalog's Chart with the result columns each of its slots takes (roles, types)."""
    chart = catalog.contracts.get("Chart")
    return {name: {slot: field.model_dump() for slot, field in slots.items()}
            for name, slots in (chart.recipes.items() if chart else ())}


def module(catalog_dir: Path = DEFAULT_CATALOG) -> str:
    """The generated ES module: the catalog's A2UI id, one props schema per component, and each recipe of a
    chart with the result columns it takes (the other chart types a result can be switched to)."""
    catalog = load_catalog(catalog_dir)
    document = catalog_document(catalog)
    lines = [f"// Generated by services/web/frontend/tools/catalog_schemas.py from {catalog_dir.name}: do not edit.",
             "import { z } from 'zod';",
             "import { characters, common, propertyCount, uniqueItems } from '../catalog-schema-parts.js';",
             "",
             f"export const CATALOG_ID = {_literal(document['catalogId'])};",
             "",
             "export const componentSchemas = {"]
    for name, schema in document["components"].items():
        props = object_zod(schema, skip=ENVELOPE, separator=",\n    ").replace("z.object({", "z.object({\n    ", 1)
        lines.append(f"  {name}: {props},")
    lines.append("};")
    lines += ["", f"export const chartRecipes = {json.dumps(chart_recipes(catalog), indent=2)};"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    text = module(Path(argv[2]) if len(argv) == 3 else DEFAULT_CATALOG)
    out = Path(argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text(encoding="utf-8") != text:  # unchanged: no rebuild for watchers
        out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
