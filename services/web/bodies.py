"""What web accepts from a browser or an app, as pydantic models whose bounds are the contracts' own
(proto/tessera/rules/v1/rules.proto, read through shared/rpc/field_rules.py): a body a service would refuse is refused
here, before any call, with the services' reason (FIELD_INVALID) and a JSON Pointer into the body."""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictBool,
    StrictStr,
    StringConstraints,
    TypeAdapter,
)
from pydantic import ValidationError as PydanticError

from shared.rpc.field_rules import text_bounds
from tessera.rules.v1 import rules_pb2


class BodyInvalid(ValueError):
    """A body, path or query value out of its contract's bounds: `pointer` says where, the message what."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"{pointer}: {message}")
        self.pointer = pointer


_NOUNS: dict[str, str] = {}  # pattern → what the contract calls such text, for a refusal a person reads


def _text(kind: int, required: bool = False):
    bounds = text_bounds(kind)
    pattern = None
    if bounds.pattern:  # the contract's pattern holds for text that is not empty, as shared/rpc/field_rules.py reads it
        pattern = f"^(?:{bounds.pattern}){'' if required else '?'}$"
        _NOUNS[pattern] = bounds.noun
    return Annotated[StrictStr, StringConstraints(min_length=1 if required else 0, max_length=bounds.max_chars,
                                                  pattern=pattern)]


def _said(text: str) -> str:
    if not text.strip():
        raise ValueError("it says nothing (only spaces)")
    return text


Question = Annotated[_text(rules_pb2.TEXT_KIND_QUESTION, required=True), AfterValidator(_said)]
Id = _text(rules_pb2.TEXT_KIND_ID)
PlainId = _text(rules_pb2.TEXT_KIND_PLAIN_ID, required=True)
OptionalPlainId = _text(rules_pb2.TEXT_KIND_PLAIN_ID)
Reason = _text(rules_pb2.TEXT_KIND_REASON)


class _Body(BaseModel):
    # Keys the page sends that this model does not name are ignored, as they always were.
    model_config = ConfigDict(extra="ignore", frozen=True)


def _absent_as(default):
    """A key sent as null reads as one not sent (what the page and older clients send when they have none)."""
    return BeforeValidator(lambda value: default if value is None else value)


class AskBody(_Body):
    question: Question
    request_id: Annotated[Id, _absent_as("")] = ""


class DecisionBody(_Body):
    approve: StrictBool
    arguments_sha256: StrictStr
    entries: Annotated[list[StrictStr], _absent_as([])] = []
    # Made once per click by the page and sent unchanged on its retries: the broker replays a decision it already
    # recorded under this id instead of refusing it.
    decision_id: OptionalPlainId = ""
    nonce: Id = ""
    reason: Reason | None = None  # signed as sent: never cut short


Model = TypeVar("Model", bound=BaseModel)


def read(model: type[Model], body: dict) -> Model:
    """`body` as `model`, or BodyInvalid at its first value out of bounds."""
    return _validated(model.model_validate, body, "")


PLAIN_ID, OPTIONAL_PLAIN_ID, QUESTION = TypeAdapter(PlainId), TypeAdapter(OptionalPlainId), TypeAdapter(Question)


def checked(kind: TypeAdapter, value: object, name: str):
    """One path or query value checked as its type says (PLAIN_ID, QUESTION), or BodyInvalid naming it."""
    return _validated(kind.validate_python, value, f"/{name}")


def _validated(validate, value: object, root: str):
    try:
        return validate(value)
    except PydanticError as exc:
        raise _invalid(exc, root) from None


def _invalid(exc: PydanticError, root: str) -> BodyInvalid:
    first = exc.errors(include_url=False)[0]
    pointer = root + "".join(f"/{part}" for part in first["loc"])
    context = first.get("ctx", {})
    if first["type"] == "string_pattern_mismatch":
        message = f"not {_NOUNS.get(context.get('pattern'), 'in the form this value takes')}"
    elif first["type"] == "value_error":
        message = str(context.get("error", first["msg"]))
    else:
        message = first["msg"]
    return BodyInvalid(pointer or "/", message)
