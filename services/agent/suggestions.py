"""Questions to offer a person who has not asked yet, worded from the catalog's labels.

Each is phrased the way the embedded planner understands (a total, a trend by month, a breakdown by a field
of the same entity), so a suggestion does not lead to "I can't answer that"; a test asks every one of them.
"""

from __future__ import annotations

from services.agent.drafting import time_field
from services.agent.time_words import spoken
from services.agent.understanding import reachable
from tessera.resources.v1 import resources_pb2

MAX_SUGGESTIONS = 4


def _lower(label: str) -> str:
    return label[:1].lower() + label[1:]


def suggest(outline: resources_pb2.OutlineResponse) -> list[str]:
    """Totals, trends and breakdowns of the entities with measures, taken in turn so the first few are not
    all of one kind. Entities dated by a time field come first: they are what happens (orders, tickets),
    the others mostly describe (products, regions)."""
    ranked = sorted((e for e in outline.entities if e.measures),
                    key=lambda e: (not e.time_fields, -len(e.measures), -len(e.breakdowns)))
    totals = [f"What is the total {_lower(e.measures[0])}?" for e in ranked]
    trends = [f"Show {_lower(e.measures[0])} by month" for e in ranked if e.time_fields]
    breakdowns = [f"What is our {_lower(e.measures[0])} by {_lower(e.breakdowns[0])}?" for e in ranked
                  if e.breakdowns]
    questions: list[str] = []
    for index in range(max(len(totals), len(trends), len(breakdowns), 0)):
        for kind in (breakdowns, trends, totals):
            if index < len(kind) and kind[index] not in questions:
                questions.append(kind[index])
    return questions[:MAX_SUGGESTIONS]


MAX_CLOSEST = 3


def closest(reading, entities: list[dict]) -> list[str]:
    """Up to three questions the embedded planner can answer, nearest to what it understood of one it could
    not: the same measure as a total, by month, and by a breakdown its rows have; with no measure understood,
    the slice's own first measures. Worded the way the planner reads them (a test asks each one)."""
    measures = list(reading.measures) or [{**m, "entity_id": e["id"]} for e in entities for m in e["metrics"]
                                          if m["label"].lower().startswith("number of")][:2]
    by_id = {e["id"]: e for e in entities}
    offered: list[str] = []
    for measure in measures[:2]:
        reach = reachable(entities, measure["entity_id"])
        fields = [f for f in reading.breakdowns if f["entity_id"] in reach] + [
            f for entity_id in reach for f in by_id.get(entity_id, {}).get("fields", [])
            if f["exposure"] == "bounded-values" and f["type"] == "string"]
        label = _lower(measure["label"])
        if fields:
            offered.append(f"{measure['label']} by {_lower(fields[0]['label'])}")
        if time_field(entities, measure["entity_id"]) is not None:
            offered.append(f"{measure['label']} by month")
        offered.append(f"What is the total {label}?")
    return list(dict.fromkeys(offered))[:MAX_CLOSEST]


def as_question(reading) -> str | None:
    """The reading in words the embedded planner reads back as the same reading (the planner checks that
    before offering it), or None when it has no such words (a share of a part, an unsaid period)."""
    if not reading.measures or reading.share is not None or reading.personal:
        return None
    said = " and ".join(m["label"] for m in reading.measures[:4])
    said = said[:1].upper() + _lower(said)[1:]
    if reading.per is not None:
        said += f" per {reading.per['label'].lower()}"
    by = ([reading.grain] if reading.grain else []) + [_lower(b["label"]) for b in reading.breakdowns]
    if by:
        said += f" by {' and '.join(by)}"
    for condition in reading.filters:
        said += f" for {_lower(condition.field['label'])} {' and '.join(condition.values)}"
    if reading.split is not None:
        said += f" for {' vs '.join(reading.split.values)}"
    if reading.time is not None:
        period = spoken(reading.time)
        if period is None:
            return None
        dated = f" with {_lower(reading.time_field['label'])}" if reading.time_field else ""
        said += f"{dated} {period}"
    if reading.compare == "same_period_last_year":
        said += " year over year" if reading.compare_grain == "year" else " vs the same period last year"
    elif reading.compare:
        said += f" compared to the previous {reading.compare_grain}" if reading.compare_grain else " growth"
    if reading.limit:
        said += f", {'top' if reading.direction == 'desc' else 'bottom'} {reading.limit}"
    elif reading.direction:
        said += f", {'highest' if reading.direction == 'desc' else 'lowest'} first"
    return said
