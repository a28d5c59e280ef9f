"""Names and text for semantic models the CLI writes (`tessera semantic init` and `import`): lower_snake_case keys
and readable labels within the limits the Resource Gateway enforces when it loads a model (its loader is not
imported here: the CLI never imports a service; `tessera semantic check` asks the gateway's own loader)."""

from __future__ import annotations

import keyword
import re

MAX_LABEL, MAX_DESCRIPTION, MAX_EXPRESSION, MAX_PATH_EDGES = 80, 400, 500, 6  # Tessera's limits


def snake(name: str) -> str:
    """A Tessera name (lower_snake_case, at most 63 characters) for a name from elsewhere."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()
    text = re.sub(r"[^a-z0-9]+", "_", text).strip("_")
    if not text or not text[0].isalpha():
        text = f"x_{text}".rstrip("_")
    text = text[:63].rstrip("_")
    # A Python keyword cannot name a field in a metric expression (`count_distinct(class)` does not parse).
    return f"{text[:62]}_" if keyword.iskeyword(text) else text


def humanize(name: str) -> str:
    """`order_total` reads `Order total`; `customer_id` reads `Customer ID`."""
    words = ["ID" if word == "id" else word for word in snake(name).split("_")]
    text = " ".join(words)
    return clip(text[:1].upper() + text[1:], MAX_LABEL)


def clip(text: object, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
