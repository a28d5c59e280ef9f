"""YAML read strictly: safe types only, and a duplicate key is an error that names its line.

PyYAML keeps the last of two equal keys without a word; in a reviewed file (a semantic model,
an imported dbt project) a duplicate is a mistake to point at, not to hide.
"""

from __future__ import annotations

import yaml


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
