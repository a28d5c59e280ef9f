"""Kubernetes objects written as Helm template text: plain YAML, but for three markers that the chart's values decide.

- `Value(expression)`: a value from the chart's values, `expression` a Go template pipeline (`.Values.image.tag`),
  written as JSON (valid YAML for any scalar, list or mapping);
- `When(condition, value)`: a mapping entry, list item or whole object that exists only where `condition` holds;
- `Switch(cases)`: a mapping entry or list item that is one of several, the first case whose condition holds (the
  last case is the `else`).

Literal text holding `{{` or `}}` is written as a template string, so Helm prints it and does not run it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Value:
    expression: str


@dataclass(frozen=True)
class When:
    condition: str
    value: object


@dataclass(frozen=True)
class Switch:
    cases: tuple[tuple[str, object], ...]


def _action(text: str) -> str:
    return "{{ " + text + " }}"


def _directive(pad: str, text: str) -> str:
    """A control line; `{{-` eats the line break before it, so it leaves no blank line in the output."""
    return f"{pad}{{{{- {text} }}}}"


def scalar(value: object) -> str:
    if isinstance(value, Value):
        return _action(f"{value.expression} | toJson")
    if isinstance(value, str) and ("{{" in value or "}}" in value):
        return _action(f"{json.dumps(value, ensure_ascii=False)} | toJson")  # a Go string literal: printed, not run
    if isinstance(value, str) and "\n" in value:
        return json.dumps(value, ensure_ascii=False)  # no \u escapes: YAML and Go read no surrogate pairs
    return yaml.safe_dump(value, default_flow_style=True, width=1 << 30).strip().removesuffix("\n...")


def _branches(pad: str, marker: When | Switch, write) -> list[str]:
    """`write(value)` under the marker's conditions: if / else if ... / else / end."""
    cases = [(marker.condition, marker.value)] if isinstance(marker, When) else list(marker.cases)
    lines = []
    for index, (condition, value) in enumerate(cases):
        if index == 0:
            lines.append(_directive(pad, f"if {condition}"))
        elif index == len(cases) - 1:
            lines.append(_directive(pad, "else"))
        else:
            lines.append(_directive(pad, f"else if {condition}"))
        lines += write(value)
    return lines + [_directive(pad, "end")]


def _entry(key: str, value: object, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, When | Switch):
        return _branches(pad, value, lambda case: _entry(key, case, indent))
    if isinstance(value, dict) and value:
        return [f"{pad}{scalar(key)}:", *mapping(value, indent + 2)]
    if isinstance(value, list) and value:
        return [f"{pad}{scalar(key)}:", *_sequence(value, indent)]
    return [f"{pad}{scalar(key)}: {scalar(value)}"]


def mapping(value: dict, indent: int = 0) -> list[str]:
    return [line for key, item in value.items() for line in _entry(key, item, indent)]


def _item(item: object, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(item, When | Switch):
        return _branches(pad, item, lambda case: _item(case, indent))
    if isinstance(item, dict) and item:
        inner = mapping(item, indent + 2)
        if inner[0].lstrip().startswith("{{-"):  # a conditional first entry: the dash on a line of its own
            return [f"{pad}-", *inner]
        return [f"{pad}- {inner[0][indent + 2:]}", *inner[1:]]
    if isinstance(item, list) and item:
        return [f"{pad}-", *_sequence(item, indent + 2)]
    return [f"{pad}- {scalar(item)}"]


def _sequence(items: list, indent: int) -> list[str]:
    return [line for item in items for line in _item(item, indent)]


def documents(header: str, objects: list) -> str:
    """One template file: `header` (comment lines), then each object as a YAML document, a `When` object only where
    its condition holds."""
    parts = [header]
    for obj in objects:
        if isinstance(obj, When):
            parts.append("\n".join([_directive("", f"if {obj.condition}"), "---", *mapping(obj.value),
                                    _directive("", "end")]) + "\n")
        else:
            parts.append("\n".join(["---", *mapping(obj)]) + "\n")
    return "".join(parts)
