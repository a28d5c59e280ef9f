"""Text templates with figures (§10b): "{cancelled} orders were cancelled in {year}".

`{name}` marks where a bound figure goes; `{{` and `}}` are literal braces; any other brace is an error.
The compiler checks templates against the figures a block binds, and the person's client (browser,
CLI) fills them from granted windows: the model that wrote the template never sees the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\{\{|\}\}|\{([a-z][a-z0-9_]{0,31})\}|[{}]")


@dataclass(frozen=True)
class Slot:
    name: str


class TemplateError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def parse_template(text: str) -> list[str | Slot]:
    """Literal text and slots, in order; raises TemplateError at the first stray brace."""
    parts: list[str | Slot] = []
    literal: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        literal.append(text[position:match.start()])
        token = match.group(0)
        if token in ("{{", "}}"):
            literal.append(token[0])
        elif match.group(1) is not None:
            parts.append("".join(literal))
            literal = []
            parts.append(Slot(match.group(1)))
        else:
            raise TemplateError(f"a lone {token!r} at character {match.start()}: write {{name}} for a figure, "
                                f"{token * 2} for a literal brace", match.start())
        position = match.end()
    literal.append(text[position:])
    parts.append("".join(literal))
    return [part for part in parts if part != ""]


def slot_names(text: str) -> list[str]:
    return [part.name for part in parse_template(text) if isinstance(part, Slot)]


def fill(text: str, values: dict[str, str], missing: str = "…") -> str:
    """The template with each slot replaced by its formatted value (or `missing`)."""
    return "".join(part if isinstance(part, str) else values.get(part.name, missing) for part in parse_template(text))
