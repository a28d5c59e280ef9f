"""Several variants of one set of Kubernetes objects joined into one template tree: what they share once, the rest
under conditions on the values that choose the variant (cli/helm_text.py writes the tree as text).

A variant is named by its combination, one option per dimension (a dimension is a value the chart reads, such as
`.Values.profile`, and its options). Lists whose items Kubernetes merges by key (containers by name, mounts by path:
deploy_compose.MERGE_KEYS) are joined item by item; an item that differs between variants, and holds no such list,
is written once per distinct form.
"""

from __future__ import annotations

import json
from itertools import product

from cli.deploy_compose import MERGE_KEYS
from cli.helm_text import Switch, When

Combination = tuple[str, ...]
Dimensions = tuple[tuple[str, tuple[str, ...]], ...]


def condition(having: set[Combination], within: set[Combination], dimensions: Dimensions) -> str:
    """A template condition true for the combinations in `having` and false for the rest of `within` (outside
    `within` it does not matter): one test per dimension where that suffices, leaving out each dimension it need
    not name, else one test per combination."""
    chosen = [sorted({combination[index] for combination in having}, key=options.index)
              for index, (_, options) in enumerate(dimensions)]
    if set(product(*chosen)) & within == having:
        for index, (_, options) in enumerate(dimensions):
            wider = [*chosen[:index], list(options), *chosen[index + 1:]]
            if set(product(*wider)) & within == having:
                chosen = wider
        tests = [_one_of(expression, values) for (expression, options), values in zip(dimensions, chosen, strict=True)
                 if len(values) < len(options)]
        return tests[0] if len(tests) == 1 else "and " + " ".join(f"({test})" for test in tests)
    alternatives = ["and " + " ".join(f"({_one_of(expression, [value])})"
                                      for (expression, _), value in zip(dimensions, combination, strict=True))
                    for combination in sorted(having)]
    return "or " + " ".join(f"({alternative})" for alternative in alternatives)


def _one_of(expression: str, values: list[str]) -> str:
    if len(values) == 1:
        return f"eq {expression} {json.dumps(values[0])}"
    return f"has {expression} (list {' '.join(json.dumps(v) for v in values)})"


def ordered(lists: list[list]) -> list:
    """Every key of `lists`, each list's order kept (a key one list lacks goes after the key it follows)."""
    order: list = []
    for keys in lists:
        position = 0
        for key in keys:
            if key in order:
                position = order.index(key) + 1
            else:
                order.insert(position, key)
                position += 1
    return order


def _item_key(item: object, key: str) -> object:
    inner = item.value if isinstance(item, When) else item  # a conditional item keeps its place by its own key
    return inner.get(key) if isinstance(inner, dict) else None


def _holds_merged_list(value: object) -> bool:
    return isinstance(value, dict) and any(
        field in MERGE_KEYS or _holds_merged_list(item) for field, item in value.items())


class Joiner:
    """Joins variants over `dimensions`."""

    def __init__(self, dimensions: Dimensions) -> None:
        self.dimensions = dimensions

    def join(self, variants: dict[Combination, object], merge_key: str | None = None) -> object:
        """One template value for the value each combination has (merged by `merge_key` if a list)."""
        values = list(variants.values())
        if all(value == values[0] for value in values):
            return values[0]
        if all(isinstance(value, dict) for value in values):
            return {field: self.part({c: value[field] for c, value in variants.items() if field in value},
                                     set(variants), MERGE_KEYS.get(field))
                    for field in ordered([list(value) for value in values])}
        if merge_key and all(isinstance(value, list) for value in values):
            return self.items(variants, lambda item: _item_key(item, merge_key))
        return self.cases(variants)

    def items(self, variants: dict[Combination, list], key_of) -> list:
        """Lists joined item by item, items matched by `key_of`."""
        indexed = {c: {key_of(item): item for item in value} for c, value in variants.items()}
        joined = []
        for key in ordered([[key_of(item) for item in value] for value in variants.values()]):
            having = {c: found[key] for c, found in indexed.items() if key in found}
            joined.append(self.part(having, set(variants), whole=not any(map(_holds_merged_list, having.values()))))
        return joined

    def part(self, having: dict, within: set, merge_key: str | None = None, whole: bool = False) -> object:
        """What the combinations in `having` hold at one place (the rest of `within` hold nothing there)."""
        value = self.cases(having) if whole else self.join(having, merge_key)
        return value if set(having) == within else When(condition(set(having), within, self.dimensions), value)

    def cases(self, variants: dict[Combination, object]) -> object:
        """The value, or a Switch over its distinct forms."""
        groups: list[tuple[object, set]] = []
        for combination, value in variants.items():
            group = next((g for g in groups if g[0] == value), None)
            if group is None:
                groups.append((value, {combination}))
            else:
                group[1].add(combination)
        if len(groups) == 1:
            return groups[0][0]
        within = set(variants)
        return Switch(tuple((condition(combinations, within, self.dimensions), value)
                            for value, combinations in groups))
