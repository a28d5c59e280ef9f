"""A drafted answer as a UI proposal: the embedded planner's `compose()` step.

Every figure in the words is bound to a cell of the result (the planner never sees values), and the words
say only what the draft computed; the caption under the answer says the rest (dates, roles, how many).
"""

from __future__ import annotations

from dataclasses import replace

from services.agent.drafting import Drafted, Listing
from services.agent.time_words import describe
from services.agent.understanding import Reading, lower_first


def _quoted(values) -> str:
    return " or ".join(f"\u201c{v}\u201d" for v in values)


def qualifiers(reading: Reading, drafted: Drafted) -> str:
    """The filters and the time span in words: " where sales channel is “web” in 2025"."""
    had = drafted.had
    parts = [f"{lower_first(f.field['label'])} is {_quoted(f.values)}" for f in reading.filters if f not in had]
    where = f" where {' and '.join(parts)}" if parts else ""
    if reading.time is not None and (reading.has_rows is None or reading.had_ever):
        # dated by what the question named ("signed up"): said, not implied
        dated = f" with {lower_first(reading.time_field['label'])}" if reading.time_field else ""
        where += f"{dated} {describe(reading.time)}"
    if reading.has_rows is not None:  # "customers who bought online this year"
        rows = [f"{lower_first(f.field['label'])} {_quoted(f.values)}" for f in had]
        if reading.time is not None and drafted.time_field is not None and not reading.had_ever:
            rows.append(f"{lower_first(drafted.time_field['label'])} {describe(reading.time)}")  # (the date the
            # draft limits them by)
        some = "no" if reading.had_none else "at least one"
        where += (", " if reading.had_ever and reading.time else " ") + \
            f"with {some} {lower_first(reading.has_rows['label'])}" + (f" with {' and '.join(rows)}" if rows else "")
    if reading.lacks_rows is not None:  # "… but never returned anything"
        where += f" and no {lower_first(reading.lacks_rows['label'])}"
    if reading.threshold is not None:  # "regions under 15k in sales"
        op, value = reading.threshold
        where += f", only where {lower_first(drafted.primary_label)} is {_BOUNDS[op]} {value:,.10g}"
    return where


_BOUNDS = {"gt": "over", "gte": "at least", "lt": "under", "lte": "at most"}


def subject(reading: Reading, drafted: Drafted) -> str:
    """What was computed, in words, for the answer line."""
    measures = " and ".join(m["label"] for m in reading.measures[:4]) if drafted.primary.startswith("m") \
        else drafted.primary_label
    dimensions = [b["label"] for b in reading.dimensions]
    if "t" in drafted.dimensions and drafted.time_field is not None:
        grain = next(d["grain"] for d in drafted.draft["dimensions"] if d["id"] == "t")
        dimensions.insert(0, f"{drafted.time_field['label']} ({grain})")
    if reading.split is not None:
        dimensions.append(f"{lower_first(reading.split.field['label'])} ({_quoted(reading.split.values)})")
    text = measures + (f" by {', '.join(lower_first(b) for b in dimensions)}" if dimensions else "")
    if reading.share is not None and drafted.primary.startswith("m"):  # (a share's label names its part)
        text += f" with {lower_first(reading.share.field['label'])} {_quoted(reading.share.values)}"
    return text + qualifiers(reading, drafted)


def compose(view: dict, reading: Reading, drafted: Drafted, rows: int, empty_note: str = "") -> dict:
    """The surface answering the question as read: its sentence, then its figures or a chart and a table. With no rows,
    the sentence alone says so (and `empty_note`, why): no blank chart, no empty table."""
    ids = {c["name"]: c["id"] for c in view["components"]}
    resource = view["resources"][-1]
    binding = {"ref": resource["id"], "offer": resource["offer"]}
    heading = reading_heading(reading, drafted)
    blocks = [{"id": "title", "component": ids["Heading"], "data": {"text": heading}}]
    sentence = _sentence(ids, binding, rows, reading, drafted, empty_note)
    if sentence is not None:
        blocks.append(sentence)
    shows_rows = rows > 0 or not drafted.dimensions  # (none to show: the sentence says so, nothing blank)
    if shows_rows and (not drafted.dimensions or drafted.dimensions == ["s"]):
        blocks += _figures(ids, binding, reading, drafted)
    elif shows_rows:
        which_way = drafted.later_period is not None
        if which_way and rows == 2:  # (with one period empty there is no change to show)
            blocks += _which_way_figures(ids, binding, drafted)
        blocks.append({"id": "chart", "component": ids["Chart"], "data": _chart(binding, reading, drafted)})
        # A which-way table is the two periods; each one's change against the period before it is not asked.
        columns = [*drafted.dimensions, *[m["id"] for m in drafted.draft["measures"]],
                   *[c["id"] for c in drafted.draft.get("calculations", []) if not which_way]]
        page = min(max(reading.limit or 25, 5), 100)
        blocks.append({"id": "table", "component": ids["DataTable"], "data": {
            "resource": binding, "columns": columns[:12], "page_size": page}})
    if view["evidence"]:
        blocks.append({"id": "evidence", "component": ids["EvidenceNote"],
                       "data": {"evidence": view["evidence"][-1]["id"]}})
    main = {"id": "main", "component": ids["Column"], "data": {}, "children": [b["id"] for b in blocks]}
    return {"version": 1, "id": "answer", "title": heading, "blocks": [main, *blocks]}


def reading_heading(reading: Reading, drafted: Drafted) -> str:
    """The answer's heading: the question as it was read, in words ("and just for 2023" after "revenue by month"
    is "Net revenue by order time (month) in 2023"), so an answer says what it answers wherever it is shown."""
    text = subject(reading, drafted) + compared_and_ranked(reading)
    return (text[:1].upper() + text[1:])[:120]


def compared_and_ranked(reading: Reading) -> str:
    """What the reading compares against and how it ranks, in words: " vs the same period last year, top 5"."""
    said = ""
    if reading.compare == "same_period_last_year":
        said += ", year over year" if reading.compare_grain == "year" else " vs the same period last year"
    elif reading.compare and reading.compare_grain:
        said += f" compared to the previous {reading.compare_grain}"
    if reading.limit:
        said += f", {'top' if reading.direction == 'desc' else 'bottom'} {reading.limit}"
    elif reading.direction:
        said += f", {'highest' if reading.direction == 'desc' else 'lowest'} first"
    return said


def compose_listing(view: dict, listing: Listing) -> dict:
    """The records of a listing as a table, under a sentence naming the newest (bound to its cell)."""
    ids = {c["name"]: c["id"] for c in view["components"]}
    resource = view["resources"][-1]
    binding = {"ref": resource["id"], "offer": resource["offer"]}
    entity, order = listing.entity["label"], listing.order_field["label"].lower()
    heading = f"{entity} records by {order}"[:120]  # what was listed, in words, as an analysis's heading is
    if resource["rows"] == 0 or not listing.dated:
        sentence = {"id": "answer-text", "component": ids["Text"], "data": {
            "text": f"No {entity.lower()} records matched." if resource["rows"] == 0 else
                    f"{entity} records, by {order} (last first)."}}
    else:
        sentence = {"id": "answer-text", "component": ids["FigureText"], "data": {
            "text": f"{entity} records, newest first by {order}; the newest is {{latest}}.",
            "figures": {"latest": {"resource": binding, "row": 0, "column": listing.order_output}}}}
    children = ["title", "answer-text", "table"] + (["evidence"] if view["evidence"] else [])
    blocks = [{"id": "main", "component": ids["Column"], "data": {}, "children": children},
              {"id": "title", "component": ids["Heading"], "data": {"text": heading}}, sentence,
              {"id": "table", "component": ids["DataTable"], "data": {
                  "resource": binding, "columns": [f"c{i}" for i in range(len(listing.fields))], "page_size": 25}}]
    if view["evidence"]:
        blocks.append({"id": "evidence", "component": ids["EvidenceNote"],
                       "data": {"evidence": view["evidence"][-1]["id"]}})
    return {"version": 1, "id": "answer", "title": heading, "blocks": blocks}


def compose_flag_button(question: str, view: dict, action: str, order_id: int) -> dict:
    """A button that asks for the order to be flagged (a person approves before anything changes)."""
    ids = {c["name"]: c["id"] for c in view["components"]}
    return {"version": 1, "id": "answer", "title": question[:120], "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["title", "note", "flag"]},
        {"id": "title", "component": ids["Heading"], "data": {"text": f"Flag order {order_id} for review"}},
        {"id": "note", "component": ids["Text"], "data": {
            "text": "Pressing the button asks for the change; a person approves it before anything changes."}},
        {"id": "flag", "component": ids["ActionButton"], "data": {
            "label": "Flag for review", "action": action, "input": {"record_id": order_id}}}]}


def _figures(ids: dict, binding: dict, reading: Reading, drafted: Drafted) -> list[dict]:
    """One headline figure per thing asked: the share or ratio first, then each measure."""
    shown = []
    if drafted.primary in ("share", "per"):
        shown.append((drafted.primary, drafted.primary_label))
    shown += [(m["id"], measure["label"]) for m, measure in zip(drafted.draft["measures"], reading.measures,
                                                                 strict=False)]
    # The headline is "figure"; any further ones are named by their column.
    return [{"id": "figure" if index == 0 else f"figure-{column}", "component": ids["Metric"], "data": {
        "label": label[:80], "resource": binding, "column": column}} for index, (column, label) in enumerate(shown[:4])]


def _which_way_figures(ids: dict, binding: dict, drafted: Drafted) -> list[dict]:
    """Which way the later of two periods went: its figure, the earlier one's, the change and the growth, each
    from the later period's row (the second)."""
    label = drafted.primary_label
    shown = [("figure", drafted.primary, f"{label} {describe(drafted.later_period)}"),
             ("figure-prior", "prior", f"{label}, {_before(drafted)}"),
             ("figure-change", "change", f"Change in {lower_first(label)}"),
             ("figure-growth", "growth", f"Growth of {lower_first(label)}")]
    return [{"id": node, "component": ids["Metric"], "data": {
        "label": text[:80], "resource": binding, "column": column, "row": 1}} for node, column, text in shown]


def _before(drafted: Drafted) -> str:
    """The earlier of a which-way answer's periods, in words: "the quarter before", "the same month a year
    before", and, when the later one runs to date, "to the same day"."""
    grain = next(d["grain"] for d in drafted.draft["dimensions"] if d["id"] == "t")
    against = next(c["against"] for c in drafted.draft["calculations"] if c["id"] == "prior")
    said = f"the {grain} before" if against == "previous_period" else f"the same {grain} a year before"
    return said + (", to the same day" if drafted.later_period.op == "to_date" else "")


def _chart(binding: dict, reading: Reading, drafted: Drafted) -> dict:
    dims = drafted.dimensions
    primary = drafted.primary
    if dims == ["t"] and reading.direction:  # periods ranked: bars, highest (or lowest) first
        spec = {"recipe": "bar", "x": "t", "y": primary}
    elif dims[0] == "t" and len(dims) == 1:
        y = [primary, "prior"] if reading.compare else [m["id"] for m in drafted.draft["measures"]
                                                         if m["id"] != "per_count"][:4]
        spec = {"recipe": "line", "x": "t", "y": y if primary.startswith("m") else [primary]}
    elif len(dims) >= 2 and dims[-1] != "s":
        spec = {"recipe": "grouped_bar", "x": dims[0], "series": dims[1], "y": primary}
    else:
        spec = {"recipe": "bar", "x": dims[0], "y": primary}
    chart = {"title": drafted.primary_label[:80], "resource": binding, "spec": spec}
    if reading.limit and spec["recipe"] == "bar":
        chart["top"] = max(1, min(reading.limit, 12))
    return chart


def _sentence(ids: dict, binding: dict, rows: int, reading: Reading, drafted: Drafted,
              empty_note: str = "") -> dict | None:
    """The answer in words, each figure bound to its cell."""
    where = qualifiers(reading, drafted)
    if rows == 0:
        return {"id": "answer-text", "component": ids["Text"], "data": {
            "text": f"No rows matched{where}.{empty_note}"[:600]}}
    if "FigureText" not in ids:
        return None

    def cell(column: str, row: int = 0) -> dict:
        return {"resource": binding, "row": row, "column": column}

    label = drafted.primary_label
    dims = drafted.dimensions
    if not dims or dims == ["s"]:
        text, figures = _headline(reading, drafted, where, cell)
    elif dims == ["t"] and not reading.direction:
        last = min(rows, 1000) - 1
        if reading.compare:
            against = "the same period a year earlier" if reading.compare == "same_period_last_year" else \
                "the period before"
            text = f"{label}{where} was {{value}} in {{period}}, against {{prior}} in {against} ({{growth}})."
            figures = {"value": cell(drafted.primary, last), "period": cell("t", last), "prior": cell("prior", last),
                       "growth": cell("growth", last)}
        elif drafted.later_period is not None and last == 1:
            apart = qualifiers(replace(reading, time=None), drafted)  # (the period is the figure's own, said by it)
            text = (f"{label}{apart} was {{value}} in {{period}}, against {{prior}} {_before(drafted)}: a change of "
                    f"{{change}} ({{growth}}).")
            figures = {"value": cell(drafted.primary, 1), "period": cell("t", 1), "prior": cell("prior", 1),
                       "change": cell("change", 1), "growth": cell("growth", 1)}
        elif last == 0:
            text, figures = f"{label}{where} was {{last}} in {{last_period}}.", {
                "last": cell(drafted.primary), "last_period": cell("t")}
        else:
            text = f"{label}{where} was {{last}} in {{last_period}}, against {{first}} in {{first_period}}."
            figures = {"last": cell(drafted.primary, last), "last_period": cell("t", last),
                       "first": cell(drafted.primary), "first_period": cell("t")}
    elif "order_by" in drafted.draft and (dims[0] != "t" or reading.direction):
        ends = "lowest" if reading.direction == "asc" else "highest"
        groups = [d for d in dims if d != "s"]
        if len(groups) == 1:
            text = f"{{group}} has the {ends} {lower_first(label)}{where}: {{value}}."
            figures = {"group": cell(groups[0]), "value": cell(drafted.primary)}
        else:  # the first row is one combination of the dimensions: the words name all of it
            names = " and ".join(f"{{g{i}}}" for i in range(len(groups)))
            text = f"The {ends} {lower_first(label)}{where} is {{value}}, for {names}."
            figures = {"value": cell(drafted.primary), **{f"g{i}": cell(g) for i, g in enumerate(groups)}}
        if reading.limit:
            text += f" These are the {'bottom' if ends == 'lowest' else 'top'} {reading.limit}."
    else:  # several dimensions over time: the chart and table say it all, no single figure does
        return {"id": "answer-text", "component": ids["Text"], "data": {
            "text": f"{subject(reading, drafted)[:1].upper()}{subject(reading, drafted)[1:]}."[:600]}}
    return {"id": "answer-text", "component": ids["FigureText"], "data": {"text": text[:600], "figures": figures}}


def _headline(reading: Reading, drafted: Drafted, where: str, cell) -> tuple[str, dict]:
    if drafted.primary == "share":
        part = f"{lower_first(reading.share.field['label'])} {_quoted(reading.share.values)}"
        noun = lower_first(reading.measures[0]["label"])
        return (f"{{share}} of {noun}{where} had {part}: {{count}}.",
                {"share": cell("share"), "count": cell("m0")})
    if drafted.primary == "per":
        return f"{drafted.primary_label}{where}: {{value}}.", {"value": cell("per")}
    if len(reading.measures) == 1:
        return f"{drafted.primary_label}{where}: {{value}}.", {"value": cell("m0")}
    parts = [f"{m['label']}: {{v{i}}}" for i, m in enumerate(reading.measures[:4])]
    suffix = f" ({where.strip()})" if where else ""
    return "; ".join(parts) + suffix + ".", {f"v{i}": cell(f"m{i}") for i in range(len(parts))}
