"""What a reviewer is told about a server's tool before trusting it (§8): the server may lie.

A server's annotations (`readOnlyHint` …) and its own description are claims, not
facts. Review therefore reads the tool the way an attacker would write it:

- the server's words (description, and the titles and descriptions inside its
  input schema) go through the same read-path screen as tool output, because a
  description is text a model may read and a reviewer may skim;
- signs that the tool writes are collected from its name (a verb of change such
  as `update_status`), its description ("Deletes the …") and its parameters (ones
  that carry a new value or pick what to change, such as `new_status` or `force`).
  They are shown as a warning when a tool is classified or annotated read-only,
  and new tools are proposed as `mutate` whatever the server claims.

The word lists are deliberately broad: a false warning costs a reviewer one look;
a missed one lets a write run without a person's approval.
"""

from __future__ import annotations

import re

from shared.safety.screen import Match, screen

# Verbs whose tools change something, in the forms a tool name uses (imperative) …
_CHANGE_VERBS = frozenset("""
add append apply approve archive assign ban block cancel charge close commit create deactivate delete deploy
destroy disable drop edit email enable erase escalate exec execute flag grant import insert invite kill label
lock mark merge message modify move mute notify open patch pay post publish purge push put refund reject
remove rename reopen replace reply reset resolve restart restore revoke rollback run save schedule send set
share start stop submit suspend sync tag terminate transfer truncate unlock unsubscribe update upload upsert
wipe write
""".split())
# … and in a description, said of the tool itself ("Deletes …", "This tool sends …", "Use it to close …").
_DESCRIPTION_VERB = re.compile(
    r"(?:^|[.!?;:]\s+|\b(?:this tool|it|tool|will|can|to|and)\s+)("
    + "|".join(sorted(_CHANGE_VERBS, key=len, reverse=True)) + r")(?:e?s|d|ed)?\b", re.IGNORECASE)
# Parameters that carry what to write, or that choose how forcefully to do it.
_WRITE_PARAMETERS = frozenset("""
amount body changes confirm content data dry_run fields force message patch payload recipient recipients
replacement updates value values
""".split())
_WRITE_PARAMETER_PREFIXES = ("new_", "set_", "update_", "delete_", "overwrite")
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _name_words(name: str) -> list[str]:
    """`update_ticketStatus` → ["update", "ticket", "status"]."""
    return [word.lower() for part in re.split(r"[\W_]+", name) for word in _NAME_WORDS.findall(part)]


# Where a JSON Schema holds further schemas: one each, a list of them, or a map of them. A server that
# nests its parameters (pydantic models land in $defs behind a $ref) must not hide them from review.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedProperties", "additionalItems")
_LIST = ("items", "prefixItems", "allOf", "anyOf", "oneOf")
_MAP = ("$defs", "definitions", "patternProperties", "dependentSchemas")
_MAX_DEPTH = 32


def _subschemas(schema: dict, path: str) -> list[tuple[str, object]]:
    found = []
    for key in _ONE:
        if isinstance(schema.get(key), dict):
            found.append((f"{path}[]" if key == "items" else path, schema[key]))
    for key in _LIST:
        if isinstance(schema.get(key), list):
            found += [(f"{path}[]" if key in ("items", "prefixItems") else path, sub) for sub in schema[key]]
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            found += [(f"{key}.{name}" if key in ("$defs", "definitions") else path, sub)
                      for name, sub in schema[key].items()]
    return found


def _schema_properties(schema: object, path: str = "", depth: int = 0) -> list[tuple[str, dict]]:
    """Every (dotted path, property schema) anywhere in a schema: nested objects, array items, compositions
    and definitions included (the schema is bounded in size before review sees it; depth is bounded here)."""
    found: list[tuple[str, dict]] = []
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return found
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            where = f"{path}.{name}" if path else str(name)
            found.append((where, sub if isinstance(sub, dict) else {}))
            found += _schema_properties(sub, where, depth + 1)
    for where, sub in _subschemas(schema, path):
        found += _schema_properties(sub, where, depth + 1)
    return found


def _schema_texts(schema: object, path: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """Every title and description string anywhere in a schema, with where it stands."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return []
    texts = [(schema[key], f"input schema {path or '(root)'} {key}") for key in ("title", "description")
             if isinstance(schema.get(key), str) and schema[key]]
    properties = schema.get("properties")
    nested = [(f"{path}.{name}" if path else str(name), sub) for name, sub in properties.items()] \
        if isinstance(properties, dict) else []
    for where, sub in nested + _subschemas(schema, path):
        texts += _schema_texts(sub, where, depth + 1)
    return texts


def write_signals(name: str, description: str, input_schema: dict) -> list[str]:
    """Why this tool looks like it writes, each reason in words (empty: no sign found)."""
    signals = []
    verbs = [word for word in _name_words(name) if word in _CHANGE_VERBS]
    if verbs:
        signals.append(f"its name has a verb of change: {', '.join(repr(v) for v in verbs)}")
    said = sorted({found.group(1).lower() for found in _DESCRIPTION_VERB.finditer(description)})
    if said:
        signals.append(f"its description says it would {', '.join(repr(v) for v in said)}")
    for where, _ in _schema_properties(input_schema):
        leaf = where.rsplit(".", 1)[-1].removesuffix("[]").lower()
        if leaf in _WRITE_PARAMETERS or leaf.startswith(_WRITE_PARAMETER_PREFIXES):
            signals.append(f"parameter {where!r} looks like a value to write or a choice of what to change")
    return signals


def server_text(description: str, input_schema: dict) -> list[tuple[str, str]]:
    """The server's own words about a tool, each with where it stands: (text, ref)."""
    return ([(description, "description")] if description else []) + _schema_texts(input_schema)


def screen_server_text(tool_id: str, description: str, input_schema: dict) -> list[Match]:
    """The read-path screen over everything the server says about the tool."""
    return [match for text, ref in server_text(description, input_schema)
            for match in screen(text, tool_id, ref).matches]
