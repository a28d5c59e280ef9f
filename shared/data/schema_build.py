"""Small builders for the JSON Schemas the contracts publish: every part described, objects closed."""

from __future__ import annotations


def described(text: str, schema: dict) -> dict:
    """`schema` with a description (a new dict: shared parts are never changed in place)."""
    return {"description": text, **schema}


def closed(required: list[str], properties: dict, text: str, **more) -> dict:
    """An object with exactly these properties, `required` among them."""
    return described(text, {"type": "object", "additionalProperties": False, "required": required,
                            "properties": properties, **more})


def array(text: str, items: dict, low: int = 0, high: int | None = None, **more) -> dict:
    bounds = {"minItems": low} if low else {}
    return described(text, {"type": "array", **bounds, **({"maxItems": high} if high else {}), "items": items,
                            **more})


def text(description: str, **more) -> dict:
    return described(description, {"type": "string", **more})


def integer(description: str, **more) -> dict:
    return described(description, {"type": "integer", **more})
