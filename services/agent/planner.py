"""The embedded planner: the default model, deterministic and offline.

It is a model like any other: it sees only tool results (through the same
bridge, schemas and shapes) and answers with tool calls. It plans a total, a
breakdown by one dimension, a trend over a time grain, or a top-N ranking of
one metric, and composes a fitting surface. A question it cannot plan gets a
plain "I can't answer that" and no UI.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from shared.tool_bridge import ToolResult

CallTool = Callable[[str, dict], Awaitable[ToolResult]]
_WORD = re.compile(r"[a-z0-9]+")
_GRAINS = {"hour": "hour", "hourly": "hour", "day": "day", "daily": "day", "week": "week", "weekly": "week",
           "month": "month", "monthly": "month", "quarter": "quarter", "quarterly": "quarter", "year": "year",
           "yearly": "year", "annual": "year", "trend": "month", "time": "month"}
_STOP = {"what", "is", "our", "the", "by", "of", "per", "show", "me", "top", "how", "many", "a", "an", "and",
         "in", "for", "over", "each", "which", "are", "were", "was", "total"}


def _words(text: str) -> set[str]:
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        found.add(word)
        if len(word) > 4 and word.endswith("s"):
            found.add(word[:-1])
    return found


def _score(question: set[str], item: dict) -> int:
    return len(question & _words(" ".join([item["label"], *item.get("synonyms", [])])))


_SEARCH_TICKETS = re.compile(r"\b(?:search (?:the )?(?:support )?tickets for|tickets? (?:that )?(?:mention|mentions|"
                             r"mentioning|about|containing|contain)) (.+?)[?.!]*$")
_OPEN_TICKET = re.compile(r"(?:please )?(?:open|create|file) a (?:support )?ticket(?: about| for|:)\s*(.+?)[.!]*$")
_FLAG_ORDER = re.compile(r"\bflag order #?(\d{1,12})\b")
_READ_TICKET = re.compile(r"\b(?:what does ticket #?(\d{1,12}) say|read ticket #?(\d{1,12}))\b")


@dataclass
class Plan:
    answer: str
    answered: bool


class EmbeddedPlanner:
    name = "embedded"

    async def run(self, question: str, call: CallTool) -> Plan:
        context = await call("inspect_current_context", {})
        if not context.ok:
            return Plan(f"I could not read the data context ({context.error_code}).", False)
        unavailable = {u["tool"]: u["reason"] for u in context.content.get("unavailable", [])}
        needed = [tool for tool in ("inspect_catalog", "run_analysis", "present_ui") if tool in unavailable]
        if needed:  # say so plainly rather than half-answer
            return Plan(f"I can't answer that right now: {', '.join(needed)} "
                        f"{'is' if len(needed) == 1 else 'are'} unavailable ({unavailable[needed[0]]}).", False)
        tools = set(context.content.get("tools", []))
        external = await self._external(question, tools, unavailable, call)
        if external is not None:
            return external
        catalog = await call("inspect_catalog", {"question": question})
        entities = catalog.content.get("entities", []) if catalog.ok else []
        asked = _words(question)
        if re.match(r"\s*(list|which)\b", question.lower()) or re.search(r"\b(latest|recent|newest)\b",
                                                                           question.lower()):
            return await self._records(question, entities, asked, call)
        grain = next((_GRAINS[w] for w in _WORD.findall(question.lower()) if w in _GRAINS), None)
        dimension = None
        if not grain:
            # The breakdown first: its words ("by region") must not pick the measure ("number of regions").
            breakdown = re.search(r"\b(?:by|per|each|across|top \d+)\b(.*)", question.lower())
            if breakdown:
                wanted = _words(breakdown.group(1)) or asked
                fields = [f for e in entities for f in e["fields"]
                          if f["exposure"] == "bounded-values" and f["type"] in ("string", "boolean")]
                candidates = sorted(((_score(wanted, f), i, f) for i, f in enumerate(fields)),
                                    key=lambda t: (-t[0], t[1]))
                if not candidates or candidates[0][0] == 0:
                    return Plan("I can't answer that: I found no way to break the measure down as asked.", False)
                dimension = candidates[0][2]
        measure_words = asked - (_words(" ".join([dimension["label"], *dimension.get("synonyms", [])]))
                                 if dimension else set())
        metrics = [(m, e["id"]) for e in entities for m in e["metrics"]]
        scored = sorted(((_score(measure_words, m), i, m, owner) for i, (m, owner) in enumerate(metrics)),
                        key=lambda t: (-t[0], t[1]))
        if not scored or scored[0][0] == 0:
            return Plan("I can't answer that from this data: I found no measure that matches the question.", False)
        _, _, metric, owner = scored[0]
        if dimension is not None and dimension["id"] not in {
                f["id"] for e in entities if e["id"] in self._reachable(entities, owner) for f in e["fields"]}:
            return Plan(f"I can't answer that: {metric['label']} cannot be broken down by "
                        f"{dimension['label'].lower()}.", False)
        if grain:
            dimension = self._time_field(entities, owner)
            if dimension is None:  # ask the catalog for time explicitly, then give up honestly
                more = await call("inspect_catalog", {"question": f"{question} date time when"})
                if more.ok:  # the later view of an entity lists the relationships of the wider slice
                    merged = {e["id"]: e for e in entities}
                    merged.update({e["id"]: e for e in more.content.get("entities", [])})
                    entities = list(merged.values())
                    dimension = self._time_field(entities, owner)
            if dimension is None:
                return Plan("I can't answer that: I found no date or time to group this measure by.", False)
        top = re.search(r"\btop\s+(\d{1,3})\b", question.lower())
        draft: dict = {"mode": "aggregate", "measures": [{"id": "value", "metric": metric["id"]}]}
        if dimension is None:
            draft["output"] = "scalar"
        else:
            entry = {"id": "group", "field": dimension["id"]}
            if grain:
                entry["grain"] = grain
                draft["output"] = "series"
            elif top:
                draft["output"] = "ranking"
                draft["order_by"] = [{"output": "value", "direction": "desc"}]
            else:
                draft["output"] = "table"
                draft["order_by"] = [{"output": "value", "direction": "desc"}]
            draft["dimensions"] = [entry]
        condition = await self._value_filter(question, entities, owner, dimension, call)
        if condition is not None:
            draft["filter"] = {k: v for k, v in condition.items() if k != "field_label"}
        else:
            unresolved = self._proper_nouns(question, entities)
            if unresolved:  # answering without it would silently answer a different question
                return Plan(f"I can't answer that: I could not find what {unresolved[0]!r} refers to in this "
                            "data.", False)
        analysis = await call("run_analysis", {"draft": draft})
        if not analysis.ok:
            return Plan(f"The analysis was refused ({analysis.error_code}): {analysis.error_message}", False)
        resource = analysis.content["resource"]
        frozen = await call("present_ui", {})
        if not frozen.ok:
            return _display_failed(frozen)
        view = frozen.content["slice"]
        proposal = self._compose(question, view, metric, dimension, grain, top, condition)
        # The embedded planner composes only from what the slice offers, so a refusal is not
        # something it could repair: it says so instead of retrying.
        outcome = await call("present_ui", {"proposal": proposal})
        if not outcome.ok or not outcome.content.get("revision"):
            return Plan("I prepared the analysis but the display was refused; nothing was shown.", False)
        subject = metric["label"] + (f" by {dimension['label'].lower()}" if dimension else "")
        if condition is not None:
            subject += f" where {condition['field_label'].lower()} is {condition['value']!r}"
        shape = "a chart and a table" if dimension else "a headline figure"
        count = f" ({resource['rows']} rows{', truncated' if resource['truncated'] else ''})" if dimension else ""
        return Plan(f"Here is {subject}: {shape}{count}, with where the numbers came from.", True)

    async def _value_filter(self, question: str, entities: list[dict], owner: str, dimension, call) -> dict | None:
        """"… in the West Coast region": find the value with a value-domain probe and filter on it.

        Only fields the catalog marks as bounded-values are probed, at most two, and only
        fields that sit on the metric's entity or ones it belongs to (a filter through a
        one-to-many join would change the question's meaning and is refused anyway).
        """
        if not re.search(r"\b(in|for|from|where|only|at)\b", question.lower()):
            return None
        reachable = self._reachable(entities, owner)
        lowered = question.lower()
        candidates = [f for e in entities if e["id"] in reachable for f in e["fields"]
                      if f["exposure"] == "bounded-values" and f["type"] == "string"
                      and (dimension is None or f["id"] != dimension["id"])]
        candidates.sort(key=lambda f: -_score(_words(question), f))
        for field in candidates[:2]:
            probe = await call("probe_data", {"kind": "value-domain", "field_id": field["id"]})
            if not probe.ok:
                continue
            for value in sorted(probe.content.get("untrusted_values", []), key=len, reverse=True):
                if len(value) >= 3 and value.lower() in lowered:
                    return {"field": field["id"], "op": "eq", "value": value, "field_label": field["label"]}
        return None

    @staticmethod
    def _proper_nouns(question: str, entities: list[dict]) -> list[str]:
        """Capitalised words after the first that no label or synonym of the slice explains."""
        explained = set()
        for entity in entities:
            for item in [entity, *entity["fields"], *entity["metrics"]]:
                explained |= _words(" ".join([item["label"], *item.get("synonyms", [])]))
        words = re.findall(r"[A-Za-z][A-Za-z'-]+", question)[1:]
        return [w for w in words if w[0].isupper() and w.lower() not in explained
                and w.lower().rstrip("s") not in explained and w.lower() not in _STOP]

    @staticmethod
    def _reachable(entities: list[dict], owner: str) -> list[str]:
        """Entities the owner belongs to (many-to-one, transitively), nearest first, itself included."""
        by_id = {e["id"]: e for e in entities}
        order, frontier = [owner], [owner]
        while frontier:
            following = []
            for entity_id in frontier:
                for relationship in by_id.get(entity_id, {}).get("relationships", []):
                    if relationship["from"] == entity_id and relationship["kind"] in ("many_to_one", "one_to_one") \
                            and relationship["to"] not in order:
                        order.append(relationship["to"])
                        following.append(relationship["to"])
            frontier = following
        return order

    async def _records(self, question: str, entities: list[dict], asked: set[str], call) -> Plan:
        """"List the latest orders": a record listing of the best-matching entity, newest first."""
        ranked = sorted(entities, key=lambda e: -_score(asked, {"label": e["label"], "synonyms": []}))
        entity = next((e for e in ranked if any(f["exposure"] == "bounded-values" for f in e["fields"])), None)
        if entity is None:
            return Plan("I can't list that: I found no records I may show.", False)
        fields = [f for f in entity["fields"] if f["exposure"] == "bounded-values"][:6]
        time_field = next((f for f in fields if f["type"] in ("timestamp", "date")), fields[0])
        draft = {"mode": "records", "entity": entity["id"],
                 "fields": [{"id": f"c{i}", "field": f["id"]} for i, f in enumerate(fields)],
                 "order_by": [{"output": f"c{fields.index(time_field)}", "direction": "desc"}]}
        analysis = await call("run_analysis", {"draft": draft})
        if not analysis.ok:
            return Plan(f"The listing was refused ({analysis.error_code}): {analysis.error_message}", False)
        frozen = await call("present_ui", {})
        if not frozen.ok:
            return _display_failed(frozen)
        view = frozen.content["slice"]
        ids = {c["name"]: c["id"] for c in view["components"]}
        resource = view["resources"][-1]
        binding = {"ref": resource["id"], "offer": resource["offer"]}
        rows = view["resources"][-1]["rows"]
        latest = f"c{fields.index(time_field)}"
        dated = time_field["type"] in ("timestamp", "date")
        sentence = ({"id": "answer-text", "component": ids["Text"], "data": {
            "text": f"No {entity['label'].lower()} records matched." if rows == 0 else
                    f"{entity['label']} records, by {time_field['label'].lower()} (last first)."}}
            if rows == 0 or not dated else
            {"id": "answer-text", "component": ids["FigureText"], "data": {
                "text": f"{entity['label']} records, newest first by {time_field['label'].lower()}; the newest is "
                        "{latest}.", "figures": {"latest": {"resource": binding, "row": 0, "column": latest}}}})
        children = ["title", "answer-text", "table"] + (["evidence"] if view["evidence"] else [])
        blocks = [{"id": "main", "component": ids["Column"], "data": {}, "children": children},
                  {"id": "title", "component": ids["Heading"], "data": {"text": question[:120]}}, sentence,
                  {"id": "table", "component": ids["DataTable"], "data": {
                      "resource": binding, "columns": [f"c{i}" for i in range(len(fields))], "page_size": 25}}]
        if view["evidence"]:
            blocks.append({"id": "evidence", "component": ids["EvidenceNote"],
                           "data": {"evidence": view["evidence"][-1]["id"]}})
        outcome = await call("present_ui", {"proposal": {"version": 1, "id": "answer", "title": question[:120],
                                                         "blocks": blocks}})
        if not outcome.ok or not outcome.content.get("revision"):
            return Plan("I prepared the listing but the display was refused; nothing was shown.", False)
        rows = analysis.content["resource"]
        return Plan(f"Here are the {entity['label'].lower()} records, newest first: {rows['rows']} rows"
                    f"{' (capped)' if rows['truncated'] else ''}.", True)

    async def _external(self, question: str, tools: set[str], unavailable: dict, call: CallTool) -> Plan | None:
        """Questions for the external tools (through the broker), or None for a data question."""
        lowered = question.lower().strip()
        search = _SEARCH_TICKETS.search(lowered)
        opening = _OPEN_TICKET.match(lowered)
        flagging = _FLAG_ORDER.search(lowered)
        if opening:  # before the search: "open a ticket about X" is not a search for X
            return await self._open_ticket(question, opening.group(1).strip(), tools, unavailable, call)
        if search:
            return await self._search_tickets(search.group(1).strip(" '\""), tools, unavailable, call)
        if flagging:
            return await self._flag_order(question, int(flagging.group(1)), call)
        reading = _READ_TICKET.search(lowered)
        if reading:
            return await self._read_ticket(int(reading.group(1) or reading.group(2)), tools, unavailable, call)
        return None

    async def _read_ticket(self, ticket_id: int, tools: set[str], unavailable: dict, call: CallTool) -> Plan:
        missing = self._missing("tickets.get_ticket", tools, unavailable)
        if missing:
            return missing
        read = await call("tickets.get_ticket", {"ticket_id": ticket_id})
        if not read.ok:
            return Plan(f"I could not read ticket {ticket_id} ({read.error_code}).", False)
        data = read.content["untrusted_data"]
        answer = f"Ticket {ticket_id} holds {len(data['text'])} characters of customer-written text."
        if data.get("flags"):
            answer += (f" Parts of it read like instructions ({', '.join(data['flags'])}); I treated them as data "
                       "and did not act on them.")
        return Plan(answer, True)

    @staticmethod
    def _missing(tool: str, tools: set[str], unavailable: dict) -> Plan | None:
        if tool in tools:
            return None
        why = unavailable.get(tool, "it is not in the reviewed tool policy")
        return Plan(f"I can't do that right now: the tool {tool} is unavailable ({why}).", False)

    async def _search_tickets(self, phrase: str, tools: set[str], unavailable: dict, call: CallTool) -> Plan:
        missing = self._missing("tickets.search_tickets", tools, unavailable)
        if missing:
            return missing
        found = await call("tickets.search_tickets", {"query": phrase[:100], "limit": 20})
        if not found.ok:
            return Plan(f"The ticket search failed ({found.error_code}): {found.error_message}", False)
        data = found.content["untrusted_data"]
        ids = re.findall(r"\bticket (\d+)\b", data["text"])
        answer = (f"The ticket system has {len(ids)} ticket{'s' if len(ids) != 1 else ''} mentioning {phrase!r}"
                  f"{' (ids ' + ', '.join(ids) + ')' if ids else ''}. Their text is customer-written data.")
        if data.get("flags"):
            answer += " Some of it reads like instructions; I treated it as data and did not act on it."
        return Plan(answer, True)

    async def _open_ticket(self, question: str, subject: str, tools: set[str], unavailable: dict,
                           call: CallTool) -> Plan:
        missing = self._missing("tickets.create_ticket", tools, unavailable)
        if missing:
            return missing
        asked = await call("tickets.create_ticket", {"subject": subject[:120], "body": question[:2000]})
        if not asked.ok:
            return Plan(f"I could not ask for the ticket ({asked.error_code}): {asked.error_message}", False)
        return Plan(f"I asked to open a ticket {subject[:120]!r}. Nothing is created until a person approves "
                    f"request {asked.content['approval_id']}.", True)

    async def _flag_order(self, question: str, order_id: int, call: CallTool) -> Plan:
        """A button for the order the person named; pressing it asks for approval (the model never acts)."""
        frozen = await call("present_ui", {})
        if not frozen.ok:
            return _display_failed(frozen)
        view = frozen.content["slice"]
        action = next((a["id"] for a in view.get("actions", []) if a["action"] == "orders.flag_for_review"), None)
        if action is None:
            return Plan("I can't offer that: flagging orders for review is not available here.", False)
        ids = {c["name"]: c["id"] for c in view["components"]}
        proposal = {"version": 1, "id": "answer", "title": question[:120], "blocks": [
            {"id": "main", "component": ids["Column"], "data": {}, "children": ["title", "note", "flag"]},
            {"id": "title", "component": ids["Heading"], "data": {"text": f"Flag order {order_id} for review"}},
            {"id": "note", "component": ids["Text"], "data": {
                "text": "Pressing the button asks for the change; a person approves it before anything changes."}},
            {"id": "flag", "component": ids["ActionButton"], "data": {
                "label": "Flag for review", "action": action, "input": {"record_id": order_id}}}]}
        outcome = await call("present_ui", {"proposal": proposal})
        if not outcome.ok or not outcome.content.get("revision"):
            return Plan("I prepared the request but the display was refused; nothing was shown.", False)
        return Plan(f"Press 'Flag for review' to ask for order {order_id} to be flagged; a person approves it "
                    "before anything changes.", True)

    @staticmethod
    def _time_field(entities: list[dict], owner: str) -> dict | None:
        """A time field of the metric's entity, or of one it belongs to (many-to-one), nearest first."""
        by_id = {e["id"]: e for e in entities}
        for entity_id in EmbeddedPlanner._reachable(entities, owner):
            for field in by_id.get(entity_id, {}).get("fields", []):
                if field["type"] in ("timestamp", "date") and field["exposure"] == "bounded-values":
                    return field
        return None

    @staticmethod
    def _compose(question: str, view: dict, metric: dict, dimension, grain, top, condition=None) -> dict:
        ids = {c["name"]: c["id"] for c in view["components"]}
        resource = view["resources"][-1]
        binding = {"ref": resource["id"], "offer": resource["offer"]}
        evidence = view["evidence"][-1]["id"] if view["evidence"] else None
        blocks = [{"id": "title", "component": ids["Heading"], "data": {"text": question[:120]}}]
        children = ["title"]
        sentence = _answer_sentence(ids, binding, resource["rows"], metric, dimension, grain, condition)
        if sentence is not None:
            blocks.append(sentence)
            children.append(sentence["id"])
        if dimension is None:
            blocks.append({"id": "figure", "component": ids["Metric"], "data": {
                "label": metric["label"][:80], "resource": binding, "column": "value"}})
            children.append("figure")
        else:
            recipe = {"recipe": "line", "x": "group", "y": ["value"]} if grain else {
                "recipe": "bar", "x": "group", "y": "value"}
            chart = {"title": metric["label"][:80], "resource": binding, "spec": recipe}
            if top and not grain:  # "top 10": exactly ten bars (the table below pages through all of them)
                chart["top"] = max(1, min(int(top.group(1)), 12))
            blocks.append({"id": "chart", "component": ids["Chart"], "data": chart})
            blocks.append({"id": "table", "component": ids["DataTable"], "data": {
                "resource": binding, "columns": ["group", "value"],
                "page_size": min(int(top.group(1)), 100) if top and int(top.group(1)) >= 5 else 25}})
            children += ["chart", "table"]
        if evidence:
            blocks.append({"id": "evidence", "component": ids["EvidenceNote"], "data": {"evidence": evidence}})
            children.append("evidence")
        return {"version": 1, "id": "answer", "title": question[:120],
                "blocks": [{"id": "main", "component": ids["Column"], "data": {}, "children": children}, *blocks]}


def _answer_sentence(ids: dict, binding: dict, rows: int, metric: dict, dimension, grain, condition) -> dict | None:
    """The answer in words, its figures bound to cells of the result: the person reads the numbers, the
    planner never sees them. Every sentence says only what the draft computed (the caption under it says
    the rest)."""
    label = metric["label"]
    where = f" where {condition['field_label'].lower()} is \u201c{condition['value']}\u201d" if condition else ""

    def cell(column: str, row: int = 0) -> dict:
        return {"resource": binding, "row": row, "column": column}

    if rows == 0:
        return {"id": "answer-text", "component": ids["Text"], "data": {"text": f"No rows matched{where}."}}
    if "FigureText" not in ids:
        return None
    if dimension is None:
        text, figures = f"{label}{where}: {{value}}.", {"value": cell("value")}
    elif grain:
        last = min(rows, 1000) - 1
        if last == 0:
            text, figures = f"{label}{where} was {{last}} in {{last_period}}.", {
                "last": cell("value"), "last_period": cell("group")}
        else:
            text = f"{label}{where} was {{last}} in {{last_period}}, against {{first}} in {{first_period}}."
            figures = {"last": cell("value", last), "last_period": cell("group", last), "first": cell("value"),
                       "first_period": cell("group")}
    else:  # ordered by the measure, highest first
        text = f"{{group}} has the highest {label[:1].lower() + label[1:]}{where}: {{value}}."
        figures = {"group": cell("group"), "value": cell("value")}
    return {"id": "answer-text", "component": ids["FigureText"], "data": {"text": text[:600], "figures": figures}}


def _display_failed(result) -> Plan:
    """The host could not freeze a slice: the person learns why in its words (say, a service restarting)."""
    return Plan(f"I could not prepare the display: {result.error_message} ({result.error_code}).", False)
