"""Schema violations explained so a model can fix them in one step (§9): where, what, and what is allowed.

jsonschema reports a value that fits none of a `oneOf`'s shapes as "is not valid under any of the
given schemas", which teaches nothing. Here such an error is followed into the shape the value was
evidently meant to be: the one whose fixed values (a `const` or `enum` on `op`, `kind`, `mode` …) it
matches, that declares most of its keys, with the fewest problems; and when several shapes fit
equally and the value only lacks keys, the shapes themselves are listed. Each problem carries a JSON
Pointer to the offending part (the missing or unknown key itself, not its parent), the failed
keyword, and the allowed values or keys, or the bound.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import unquote

import jsonschema

MAX_MESSAGE = 300
# How a broken bound is said (without echoing the value, which may be long).
_BOUND_WORDS = {"minItems": "needs at least {bound} items", "maxItems": "takes at most {bound} items",
                "minLength": "needs at least {bound} characters", "maxLength": "takes at most {bound} characters",
                "minimum": "must be at least {bound}", "maximum": "must be at most {bound}",
                "exclusiveMinimum": "must be more than {bound}", "exclusiveMaximum": "must be less than {bound}",
                "minProperties": "needs at least {bound} keys", "maxProperties": "takes at most {bound} keys",
                "multipleOf": "must be a multiple of {bound}"}
_ARTICLES = {"object": "an object", "array": "an array", "integer": "an integer", "null": "null"}


@dataclass(frozen=True)
class SchemaProblem:
    pointer: str  # JSON Pointer into the checked value ("" is the value itself)
    message: str
    keyword: str
    allowed: tuple = ()  # the values, keys or shapes accepted there
    bound: int | float | None = None  # the limit a size or number broke


def explain(errors, root: dict, limit: int = 5) -> list[SchemaProblem]:
    """The problems of `errors` (from one validation against `root`), the most relevant first, at most `limit`."""
    leaves = _Explainer(root).followed(_most_relevant_first(errors))
    problems: list[SchemaProblem] = []
    for error in leaves:
        for problem in _problems(error):
            problem = _with_condition(problem, error, root)
            if problem not in problems:
                problems.append(problem)
    return problems[:limit]


def _with_condition(problem: SchemaProblem, error, root: dict) -> SchemaProblem:
    """A problem that only holds under an if/then ("dimensions takes at most 0 items") says when: "when output is
    'scalar'"."""
    path = [part for part in getattr(error, "absolute_schema_path", ()) if part != "$ref"]
    if "then" not in path:
        return problem
    holder = _walk_to(root, path[:path.index("then")])
    condition = holder.get("if", {}) if isinstance(holder, dict) else {}
    fixed = [f"{key} is {value['const']!r}" for key, value in condition.get("properties", {}).items()
             if isinstance(value, dict) and "const" in value]
    if not fixed:
        return problem
    return SchemaProblem(problem.pointer, f"{problem.message} when {' and '.join(fixed)}"[:MAX_MESSAGE],
                         problem.keyword, problem.allowed, problem.bound)


def _walk_to(root: dict, path: list):
    """The schema at `path` (a schema path, references followed): from the root, or (a validator built on one
    definition reports paths from it) from each definition, the first where the whole path exists."""
    for start in [root, *root.get("definitions", {}).values(), *root.get("$defs", {}).values()]:
        node = start
        for part in path:
            node = resolve_local(root, node) if isinstance(node, dict) else node
            if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) \
                    and part < len(node):
                node = node[part]
            else:
                break
        else:
            return node
    return None


def _most_relevant_first(errors) -> list:
    """jsonschema's own order of relevance (its best_match takes the greatest)."""
    return sorted(errors, key=jsonschema.exceptions.relevance, reverse=True)


def _pointer_of(path) -> str:
    return "".join(f"/{str(part).replace('~', '~0').replace('/', '~1')}" for part in path)


# --- choosing the shape a value was meant to be ------------------------------------------------------------


class _Explainer:
    def __init__(self, root: dict) -> None:
        self.root = root

    def followed(self, errors: list) -> list:
        """`errors` with every oneOf/anyOf error replaced by the errors of its likeliest shape."""
        found = []
        for error in errors:
            if error.validator in ("oneOf", "anyOf") and error.context:
                found += self._branch_errors(error)
            else:
                found.append(error)
        return found

    def _branch_errors(self, error) -> list:
        branches: dict[int, list] = defaultdict(list)
        for sub in error.context:
            branches[sub.relative_schema_path[0]].append(sub)
        shapes = [resolve_local(self.root, shape) for shape in error.validator_value]
        instance = error.instance
        def overlap(i: int) -> int:
            return len(set(instance) & set(shapes[i].get("properties", {}))) if isinstance(instance, dict) else 0

        fitting = [i for i in branches if not _mismatched(branches[i])]
        # A shape that declares none of the value's keys fits it less than one whose fixed value it missed: a
        # condition with an unknown op is a condition with a wrong op, not a wrong `all`.
        if fitting and max(map(overlap, fitting)) == 0 and any(overlap(i) for i in branches):
            fitting = []
        if not fitting:
            wrong_type = [e for i in branches for e in branches[i] if _root_type(e)]
            if len(wrong_type) == len(branches):  # of no shape's type at all: say which types are allowed
                return [_TypeError(error, [t for e in wrong_type for t in _types(e.validator_value)])]
            # every shape fixes another value there: say which values are allowed
            return [_ChoiceError(error, _discriminator(shapes, instance))]

        scored = sorted(fitting, key=lambda i: (-overlap(i), len(branches[i]), i))
        best = scored[0]
        rivals = [i for i in scored[1:] if overlap(i) == overlap(best)]
        if rivals and all(e.validator == "required" for e in branches[best]):
            return [_ShapesError(error, [shapes[i] for i in [best, *rivals]])]
        return self.followed(_most_relevant_first(branches[best]))


def _mismatched(errors: list) -> bool:
    """The shape fixes a value (const/enum) of a key the value has, and the value has another; or the value
    is of another type altogether."""
    for error in errors:
        relative = [part for part in error.relative_schema_path if part != "$ref"]
        if error.validator in ("const", "enum") and len(relative) == 4 and relative[1] == "properties":
            return True
        if _root_type(error):
            return True
    return False


def _root_type(error) -> bool:
    """A shape's own type refused the value (not the type of something inside it)."""
    return error.validator == "type" and len([p for p in error.relative_schema_path if p != "$ref"]) == 2


def _types(value) -> list[str]:
    return list(value) if isinstance(value, list) else [value]


def resolve_local(root: dict, schema: object) -> dict:
    """`schema`, or what its local `$ref` (`#` or `#/json/pointer`) points at in `root`'s own text."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        schema = resolve_pointer(root, schema["$ref"])
    return schema if isinstance(schema, dict) else {}


def resolve_pointer(root: dict, ref: str) -> object:
    """A local reference in the schema's own text; ValueError if it is not one or points at nothing."""
    if ref != "#" and not ref.startswith("#/"):
        raise ValueError(f"{ref!r} is not a JSON pointer into the schema")
    node: object = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise ValueError(f"{ref!r} points at nothing")
    return node


def _discriminator(shapes: list[dict], instance) -> tuple[str, tuple]:
    """The key whose fixed value matched no shape, and every value the shapes allow for it."""
    if not isinstance(instance, dict):
        return "", ()
    allowed: dict[str, list] = defaultdict(list)
    for shape in shapes:
        for key, schema in shape.get("properties", {}).items():
            for value in _fixed(schema):
                if value not in allowed[key]:
                    allowed[key].append(value)
    for key in instance:
        if key in allowed and instance[key] not in allowed[key]:
            return key, tuple(allowed[key])
    return "", ()


def _fixed(schema) -> list:
    if not isinstance(schema, dict):
        return []
    if "const" in schema:
        return [schema["const"]]
    return list(schema.get("enum", []))


class _ChoiceError:
    """A value that matched no shape by a fixed key (an unknown op, kind …)."""

    validator = "enum"

    def __init__(self, error, discriminator: tuple[str, tuple]) -> None:
        self.error, (self.key, self.allowed) = error, discriminator


class _TypeError:
    """A value of none of the types its shapes take."""

    validator = "type"

    def __init__(self, error, types: list[str]) -> None:
        self.error, self.types = error, list(dict.fromkeys(types))


class _ShapesError:
    """A value that lacks keys, and could be any of several shapes."""

    validator = "oneOf"

    def __init__(self, error, shapes: list) -> None:
        self.error, self.shapes = error, shapes


# --- wording -------------------------------------------------------------------------------------------------


def _problems(error) -> list[SchemaProblem]:
    if isinstance(error, _ChoiceError):
        base = error.error
        if not error.key:
            return [_problem(base.absolute_path, f"{base.json_path} matches none of the allowed shapes", "oneOf")]
        return [_problem([*base.absolute_path, error.key], f"{_join(base.json_path, error.key)} must be "
                         f"{_either(repr(v) for v in error.allowed)}", "enum", allowed=error.allowed)]
    if isinstance(error, _TypeError):
        base = error.error
        return [_problem(base.absolute_path, f"{base.json_path} must be "
                         f"{_either(_ARTICLES.get(t, f'a {t}') for t in error.types)}, got {_json_type(base.instance)}",
                         "type", allowed=tuple(error.types))]
    if isinstance(error, _ShapesError):
        base = error.error
        shapes = tuple(_shape_words(shape) for shape in error.shapes)
        return [_problem(base.absolute_path, f"{base.json_path} needs the keys of one shape: "
                                             f"{'; '.join(shapes)}", "oneOf", allowed=shapes)]
    path, where, keyword = list(error.absolute_path), error.json_path, str(error.validator)
    if keyword == "required" and isinstance(error.instance, dict):
        missing = [n for n in error.validator_value if n not in error.instance]
        return [_problem([*path, name], f"{_join(where, name)} is required", "required") for name in missing[:1]]
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        declared = tuple(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in declared and not _by_pattern(k, error.schema)]
        return [_problem([*path, key], f"{_join(where, key)} is not allowed here; the keys are "
                                       f"{', '.join(declared) or 'none'}", keyword, allowed=declared)
                for key in unknown[:3]]
    if keyword == "dependencies" and isinstance(error.instance, dict):
        for key, needed in error.validator_value.items():
            if key in error.instance and isinstance(needed, list):
                missing = [n for n in needed if n not in error.instance]
                if missing:
                    return [_problem([*path, missing[0]], f"{_join(where, missing[0])} is required with "
                                                          f"{key}", "required")]
    if keyword in ("enum", "const"):
        allowed = tuple(error.validator_value) if keyword == "enum" else (error.validator_value,)
        return [_problem(path, f"{where} must be {_either(repr(v) for v in allowed)}", keyword, allowed=allowed)]
    if keyword == "type":
        expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return [_problem(path, f"{where} must be {_either(_ARTICLES.get(t, f'a {t}') for t in expected)}, got "
                               f"{_json_type(error.instance)}", keyword, allowed=tuple(expected))]
    if keyword in _BOUND_WORDS:
        bound = error.validator_value
        return [_problem(path, f"{where} {_BOUND_WORDS[keyword].format(bound=bound)}", keyword, bound=bound)]
    if keyword == "pattern":
        return [_problem(path, f"{where} must match {error.validator_value}", keyword,
                         allowed=(error.validator_value,))]
    return [_problem(path, f"{where}: {error.message}", keyword)]


def _problem(path, message: str, keyword: str, **more) -> SchemaProblem:
    return SchemaProblem(_pointer_of(path), message[:MAX_MESSAGE], keyword, **more)


def _by_pattern(key: str, schema: dict) -> bool:
    return any(re.search(pattern, key) for pattern in schema.get("patternProperties", {}))


def _shape_words(shape: dict) -> str:
    """`{id, metric}: A catalog metric.`: a shape's required keys (with their fixed values) and description."""
    keys = []
    for key in shape.get("required", []):
        fixed = _fixed(shape.get("properties", {}).get(key))
        keys.append(f"{key}={fixed[0]!r}" if len(fixed) == 1 else key)
    text = shape.get("description", "")
    return f"{{{', '.join(keys)}}}" + (f" ({text})" if text else "")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]"


def _json_type(value: object) -> str:
    if isinstance(value, bool):  # before numbers: a bool is an int in Python
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), type(value).__name__)


def _either(options) -> str:
    options = list(options)
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"
