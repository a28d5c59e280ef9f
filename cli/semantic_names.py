"""Names and text for semantic models the CLI writes (`tessera semantic init` and `import`): lower_snake_case keys
and readable labels within the limits the model format states (shared/semantic), which the Resource Gateway
enforces when it loads a model."""

from __future__ import annotations

import keyword
import re

from shared.semantic.model import MAX_LABEL_CHARS, MAX_NAME_CHARS


def snake(name: str) -> str:
    """A Tessera name (lower_snake_case, at most MAX_NAME_CHARS characters) for a name from elsewhere."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()
    text = re.sub(r"[^a-z0-9]+", "_", text).strip("_")
    if not text or not text[0].isalpha():
        text = f"x_{text}".rstrip("_")
    text = text[:MAX_NAME_CHARS].rstrip("_")
    # A Python keyword cannot name a field in a metric expression (`count_distinct(class)` does not parse).
    return f"{text[:MAX_NAME_CHARS - 1]}_" if keyword.iskeyword(text) else text


def humanize(name: str) -> str:
    """`order_total` reads `Order total`; `customer_id` reads `Customer ID`."""
    words = ["ID" if word == "id" else word for word in snake(name).split("_")]
    text = " ".join(words)
    return clip(text[:1].upper() + text[1:], MAX_LABEL_CHARS)


def clip(text: object, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
