"""Questions to offer a person: before they ask (worded from the catalog's labels), when a question cannot
be answered (the closest ones the planner can answer), and, when some of its words could not be used, the
closest full reading without them (`exact_reading`).

Each is phrased the way the embedded planner understands (a total, a trend by month, a figure by a field
of the same entity), so a suggestion does not lead to "I can't answer that"; a test asks every one of them.
"""

from __future__ import annotations

from dataclasses import replace

from services.agent.composing import compared_and_ranked
from services.agent.drafting import CannotPlan, plan
from services.agent.time_words import spoken
from services.agent.understanding import NEGATIONS, Reading, lower_first, reachable, time_field, understand
from tessera.resources.v1 import resources_pb2

MAX_SUGGESTIONS = 4


def suggest(outline: resources_pb2.OutlineResponse) -> list[str]:
    """Totals, trends and figures by a dimension of the entities with measures, taken in turn so the first few are not
    all of one kind. Entities dated by a time field come first: they are what happens (orders, tickets),
    the others mostly describe (products, regions)."""
    ranked = sorted((e for e in outline.entities if e.measures),
                    key=lambda e: (not e.time_fields, -len(e.measures), -len(e.dimensions)))
    totals = [f"What is the total {lower_first(e.measures[0])}?" for e in ranked]
    trends = [f"Show {lower_first(e.measures[0])} by month" for e in ranked if e.time_fields]
    by_dimension = [f"What is our {lower_first(e.measures[0])} by {lower_first(e.dimensions[0])}?" for e in ranked
                    if e.dimensions]
    questions: list[str] = []
    for index in range(max(len(totals), len(trends), len(by_dimension), 0)):
        for kind in (by_dimension, trends, totals):
            if index < len(kind) and kind[index] not in questions:
                questions.append(kind[index])
    return questions[:MAX_SUGGESTIONS]


MAX_CLOSEST = 3


def closest(reading, entities: list[dict]) -> list[str]:
    """Up to three questions the embedded planner can answer, nearest to what it understood of one it could
    not: the same measure as a total, by month, and by a dimension its rows have; with no measure understood,
    the slice's own first measures. Worded the way the planner reads them (a test asks each one)."""
    measures = list(reading.measures) or [{**m, "entity_id": e["id"]} for e in entities for m in e["metrics"]
                                          if m["label"].lower().startswith("number of")][:2]
    by_id = {e["id"]: e for e in entities}
    offered: list[str] = []
    for measure in measures[:2]:
        reach = reachable(entities, measure["entity_id"])
        fields = [f for f in reading.dimensions if f["entity_id"] in reach] + [
            f for entity_id in reach for f in by_id.get(entity_id, {}).get("fields", [])
            if f["exposure"] == "bounded-values" and f["type"] == "string"]
        label = lower_first(measure["label"])
        if fields:
            offered.append(f"{measure['label']} by {lower_first(fields[0]['label'])}")
        if time_field(entities, measure["entity_id"]) is not None:
            offered.append(f"{measure['label']} by month")
        offered.append(f"What is the total {label}?")
    return list(dict.fromkeys(offered))[:MAX_CLOSEST]


def as_question(reading: Reading) -> str | None:
    """The reading in words the embedded planner reads back as the same reading (`exact_reading` checks that
    before offering it), or None when it has no such words (a share of a part, an unsaid period)."""
    if not reading.measures or reading.share is not None or reading.personal:
        return None
    labels = [m["label"] for m in reading.measures[:4]]
    said = " and ".join([labels[0][:1].upper() + labels[0][1:], *map(lower_first, labels[1:])])
    if reading.per is not None:
        said += f" per {reading.per['label'].lower()}"
    if reading.compare and not reading.compare_grain:
        said += " growth"
    by = ([reading.grain] if reading.grain else []) + [lower_first(b["label"]) for b in reading.dimensions]
    if by:
        said += f" by {' and '.join(by)}"
    for condition in reading.filters:  # a value as people write it: "small business" for small_business
        values = " and ".join(_spoken_value(v) for v in condition.values)
        said += f" for {lower_first(condition.field['label'])} {values}"
    if reading.split is not None:
        said += f" for {' vs '.join(_spoken_value(v) for v in reading.split.values)}"
    if reading.time is not None:
        period = spoken(reading.time)
        if period is None:
            return None
        dated = f" with {lower_first(reading.time_field['label'])}" if reading.time_field else ""
        said += f"{dated} {period}"
    return said + compared_and_ranked(reading)


def _spoken_value(value: str) -> str:
    return value.replace("_", " ")


def exact_reading(reading: Reading, entities: list[dict], matches: list[dict]) -> str | None:
    """The reading without its unusable words, as a question the embedded planner reads back as exactly that
    reading and can draft (both checked here), or None: also when a dropped word turns the question around,
    asks for the future, or says which rows are meant ("customers who bought": without it, all customers)."""
    if reading.asks_future or reading.asks_other_rows or any(
            word.lower() in NEGATIONS or word.lower().startswith("non-") for word in reading.unknown):
        return None
    kept = replace(reading, unknown=[], reasons={}, follow_up=False, owner_hint=None, counted_by_name=False)
    question = as_question(kept)
    if question is None:
        return None
    again = understand(question, entities, matches)
    if again.unknown or gist(again) != gist(kept):
        return None
    try:
        plan(again, entities)
    except CannotPlan:
        return None
    return question


def gist(reading: Reading) -> tuple:
    """What a reading asks, for telling two readings apart (not how it was worded)."""
    def ids(items) -> tuple:
        return tuple(item["id"] for item in items)

    def condition(found) -> tuple | None:
        return (found.field["id"], tuple(sorted(found.values))) if found is not None else None

    def period(span) -> tuple | None:  # not its words: "in 2024" and "2024" are one period
        return None if span is None else (span.kind, span.start, span.end, span.op, span.unit, span.count,
                                          span.month, tuple(period(part) for part in span.parts))

    return (ids(reading.measures), ids(reading.dimensions), reading.grain,
            tuple(sorted(condition(f) for f in reading.filters)), condition(reading.split), period(reading.time),
            reading.compare, reading.limit, reading.direction, reading.per["id"] if reading.per else None,
            reading.share_of_total, (reading.time_field or {}).get("id"))
