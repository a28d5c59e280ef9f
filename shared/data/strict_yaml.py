"""YAML read strictly: safe types only, and a duplicate key is an error that names its line.

PyYAML keeps the last of two equal keys without a word; in a reviewed file (a semantic model,
an imported dbt project) a duplicate is a mistake to point at, not to hide. `load_model` is the
one way a configuration file becomes a pydantic model: every problem is one line that starts
with the file's path.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError


class YamlProblem(ValueError):
    """Not usable YAML; the message starts with the line where known ("line 5: ...")."""


class _UniqueKeyLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:  # a list or a mapping used as a key (`? [a, b]: 1`)
            raise YamlProblem(f"line {key_node.start_mark.line + 1}: a key must be a name, not a list or a "
                              "mapping") from None
        if key in seen:
            raise YamlProblem(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load(text: str) -> object:
    """The document in `text`; YamlProblem for a syntax error or a duplicate key."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise YamlProblem(f"{where}not valid YAML: {getattr(exc, 'problem', None) or exc}") from None


M = TypeVar("M", bound=BaseModel)


def load_model(path: Path, model_class: type[M], error_class: type[Exception], what: str = "file") -> M:
    """The YAML file at `path` as a validated `model_class`; error_class with one line naming the file."""
    return load_model_and_digest(path, model_class, error_class, what)[0]


def load_model_and_digest(path: Path, model_class: type[M], error_class: type[Exception],
                          what: str = "file") -> tuple[M, str]:
    """As `load_model`, with the SHA-256 of the very bytes that were validated (a reviewed file's identity)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error_class(f"{path}: the {what} cannot be read: {exc.strerror}") from None
    try:
        document = load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise error_class(f"{path}: the {what} is not UTF-8 text") from None
    except YamlProblem as exc:
        raise error_class(f"{path}: {exc}") from None
    if not isinstance(document, dict):
        raise error_class(f"{path}: the top level of the {what} must be a mapping")
    try:
        model = model_class.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise error_class(f"{path}: {where}: {first['msg']}") from None
    return model, hashlib.sha256(raw).hexdigest()
