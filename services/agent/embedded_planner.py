"""The embedded planner: the default model, deterministic and offline.

It is a model like any other: it sees only tool results (through the same bridge, schemas and shapes) and
answers with tool calls. Its work is three pure steps between the tool calls: `understand()` maps the
question's words to the catalog (understanding.py), `drafting.plan()` turns that reading into an analysis
draft (a listing: `drafting.plan_listing()`), `compose()` builds the surface from the frozen slice
(composing.py; also `compose_listing()`, `compose_flag_button()`). This class only calls the tools and
chains those steps. It plans only when every word that matters was understood; otherwise it says which
words it could not use and offers questions it can answer.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from services.agent import drafting, suggestions
from services.agent.composing import compose, compose_flag_button, compose_listing, subject
from services.agent.contracts import MAX_QUESTION_CHARS
from services.agent.drafting import CannotPlan, Drafted
from services.agent.time_words import TimeSpan
from services.agent.understanding import (
    LISTING_WORDS,
    Reading,
    asks_to_change,
    is_follow_up,
    lower_first,
    spaced_for_values,
    spelled_out,
    time_field,
    understand,
    unexplained_words,
    words,
)
from shared.tools.tool_results import ToolResult

CallTool = Callable[[str, dict], Awaitable[ToolResult]]
MAX_EARLIER = 5  # follow-ups are read against the earlier questions the host sends (its last five)
MAX_MATCH_TEXT = 300
MAX_ROLE_REPAIRS = 3  # each ambiguous place in a draft (a filter, a dimension) is named once

# A search said as one ("tickets mentioning X"): "tickets about late deliveries" asks to read what customers
# wrote, which is never shown, not how many tickets hold those words.
_SEARCH_TICKETS = re.compile(r"\b(?:search (?:the )?(?:support )?tickets for|tickets? (?:that )?(?:mention|mentions|"
                             r"mentioning|containing|contain)) (.+?)[?.!]*$")
_OPEN_TICKET = re.compile(r"(?:please )?(?:open|create|file) a (?:support )?ticket(?: about| for|:)\s*(.+?)[.!]*$")
_FLAG_ORDER = re.compile(r"\bflag order #?(\d{1,12})\b")
_READ_TICKET = re.compile(r"\b(?:what does ticket #?(\d{1,12}) say|read ticket #?(\d{1,12}))\b")


@dataclass(frozen=True)
class Empty:
    """Why an answer has no rows, in words (`note`, a sentence to add), and questions that have some."""

    note: str
    instead: list[str]


@dataclass
class Plan:
    answer: str
    answered: bool
    suggestions: list[str] = field(default_factory=list)  # questions it can answer, closest first


def value_match_text(question: str, earlier: list[str], entities: list[dict]) -> str:
    """What the value-match probe reads: the question, then the earlier ones, cut to MAX_MATCH_TEXT first (so
    the rewriting stays short whatever was asked before), short forms written out ("small biz"), possessives
    and the catalog's hyphenated qualifiers spaced ("high-priority")."""
    asked = " ".join([question, *reversed(earlier)])[:MAX_MATCH_TEXT]
    return spaced_for_values(spelled_out(asked), entities)[:MAX_MATCH_TEXT]


class EmbeddedPlanner:
    name = "embedded"

    def __init__(self, earlier_questions: list[str] | tuple[str, ...] = ()) -> None:
        self.earlier = [q for q in earlier_questions if q.strip()][-MAX_EARLIER:]
        self.follows: str | None = None  # the earlier question this one was read against (a follow-up of it)

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
        if not words(question):
            return Plan("I need a question in words, for example \u201cnet revenue by month\u201d.", False)
        if asks_to_change(question):
            return await self._cannot_change(call)
        entities, matches = await self._slice(question, call)
        reading = self._read(question, entities, matches)
        if reading.needs_latest and reading.measures and not reading.personal:
            # "Q1 vs Q2", "since March": which ones depends on what "now" is (and words read only once it is
            # known, "compare with the year before" after "last year", are judged on the second reading)
            entities = await self._dated(question, reading, entities, call)
            latest = await self._now(reading, entities, context.content.get("time_anchor"), call)
            if isinstance(latest, Plan):
                return latest
            reading = self._read(question, entities, matches, latest)
        unusable = set(reading.unknown) - LISTING_WORDS
        if reading.listing and not (reading.dimensions or reading.grain or reading.filters or reading.time
                                    or unusable or reading.personal or _names_a_measure(question, reading)):
            return await self._records(question, entities, set(words(question)), call)
        if reading.unknown and (reading.grain or reading.time or reading.compare):
            entities = await self._dated(question, reading, entities, call)  # the reading offered is drafted
        refusal = self._refusal(question, reading, entities, matches)
        if refusal is not None:
            refusal.suggestions = refusal.suggestions or await self._general_suggestions(call)
            return refusal
        return await self._answer(question, reading, entities, matches, call)

    # --- understand --------------------------------------------------------------------------------------

    async def _slice(self, question: str, call: CallTool) -> tuple[list[dict], list[dict]]:
        """The catalog slice for the question (and the earlier ones a follow-up leans on), and the values
        it names, found with one value-match probe; entities those values belong to join the slice."""
        asked = spelled_out(" ".join([*self.earlier, question]))[-MAX_QUESTION_CHARS:]  # "rev" asks for revenue
        catalog = await call("inspect_catalog", {"question": asked})
        entities = catalog.content.get("entities", []) if catalog.ok else []
        if not unexplained_words(" ".join([*self.earlier, question]), entities):
            return entities, []  # every word is the catalog's own: no values to look for, no probe spent
        text = value_match_text(question, self.earlier, entities)
        probe = await call("probe_data", {"kind": "value-match", "text": text})
        matches = probe.content.get("matches", []) if probe.ok else []
        known = {e["id"] for e in entities}
        new = sorted({m["entity_id"] for m in matches} - known)[:4]
        if new:  # ask the catalog again with their names, so the paths to them come too
            described = await call("describe_data", {"entity_ids": new})
            labels = [e["label"] for e in described.content.get("entities", [])] if described.ok else []
            wider = await call("inspect_catalog", {"question": f"{asked} {' '.join(labels)}"[-MAX_QUESTION_CHARS:]})
            if wider.ok:
                entities = merge_entities(entities, wider.content.get("entities", []))
        return entities, matches

    def _read(self, question: str, entities: list[dict], matches: list[dict], latest: dt.date | None = None
              ) -> Reading:
        earlier, earlier_question = None, None
        for asked in self.earlier:  # each earlier question read on top of the one before it
            reading = understand(asked, entities, matches, earlier, latest)
            if reading.measures and not reading.unknown and not reading.personal:
                earlier, earlier_question = reading, asked
        reading = understand(question, entities, matches, earlier, latest)
        # (a question read against the earlier one only because it named no measure of its own, "what is the
        # weather?", refines nothing: it is refused for its own words)
        leaned = reading.against_earlier or reading.period_kept or reading.follow_up and (
            is_follow_up(question) or not reading.unknown)
        self.follows = earlier_question if leaned else None
        return reading

    async def _now(self, reading: Reading, entities: list[dict], anchor: str | None,
                   call: CallTool) -> dt.date | None | Plan:
        """What "now" is for a month or quarter named without a year: today, or, when the catalog counts
        relative periods from its latest data, the latest date of the measure's time field (a time-bounds
        probe). None when the measure has no date: the draft says so."""
        if anchor != "latest_data":
            return dt.datetime.now(dt.UTC).date()
        when = time_field(entities, reading.measures[0]["entity_id"])
        if when is None:
            return None
        bounds = await call("probe_data", {"kind": "time-bounds", "field_id": when["id"]})
        latest = bounds.content.get("latest") if bounds.ok else None
        if not latest:
            return Plan(f"I can't answer that: I could not tell which {reading.time.words.strip()} is meant: "
                        f"{when['label'].lower()} has no latest date to count from.", False)
        return dt.date.fromisoformat(latest[:10])

    async def _dated(self, question: str, reading: Reading, entities: list[dict], call: CallTool) -> list[dict]:
        """The slice with a date for the measure: dates often live on what its rows belong to (an item's
        order), so time is asked for explicitly when the slice has none."""
        if not reading.measures or time_field(entities, reading.measures[0]["entity_id"]) is not None:
            return entities
        wider = await call("inspect_catalog", {"question": f"{question} date time when"[-MAX_QUESTION_CHARS:]})
        return merge_entities(entities, wider.content.get("entities", [])) if wider.ok else entities

    def _refusal(self, question: str, reading: Reading, entities: list[dict], matches: list[dict]) -> Plan | None:
        """Nothing is answered unless everything that matters was understood. Words that could not be used are
        named (with why, where that is known), and the closest full reading without them is offered first."""
        offered = suggestions.closest(reading, entities)
        if reading.personal:
            return Plan(f"That is not available to me: the data I may use has no "
                        f"{', '.join(dict.fromkeys(reading.personal))} of people, and I cannot look it up.",
                        False, offered)
        if reading.written:
            return Plan("That is not available to me: I am never given the text people wrote (messages, tickets, "
                        "notes), only figures about it; I can count or break down those records instead.", False,
                        offered)
        if reading.unknown:
            unknown = list(dict.fromkeys(reading.unknown))
            unclear = [f"\u201c{_as_written(w, question)}\u201d" for w in unknown if w not in reading.reasons][:5]
            said = [f"I did not understand {', '.join(unclear)} in this question"] if unclear else []
            said += [f"for \u201c{_as_written(w, question)}\u201d, {reading.reasons[w]}" for w in unknown
                     if w in reading.reasons]
            answer = f"I can't answer that exactly: {'; '.join(said)}.{_assumed(reading)}"
            exact = suggestions.exact_reading(reading, entities, matches)
            if exact:
                answer += f" Did you mean: {exact}?"
                offered = [exact, *[o for o in offered if o != exact]][:suggestions.MAX_CLOSEST]
            return Plan(answer, False, offered)
        if not reading.measures and self.earlier and not reading.follow_up:
            # (a follow-up of questions none of which was answered: nothing to carry over is the real reason)
            return Plan("I can't answer that from this data: I found no measure in the question, and the earlier "
                        "questions were not answered, so there is none to carry over.", False, offered)
        if not reading.measures:
            return Plan("I can't answer that from this data: I found no measure in the question.", False, offered)
        return None

    async def _general_suggestions(self, call: CallTool) -> list[str]:
        """When nothing of the question was understood: counts the catalog offers, things that happen first."""
        catalog = await call("inspect_catalog", {"question": "number count total"})
        if not catalog.ok:
            return []
        entities = sorted(catalog.content.get("entities", []), key=lambda e: not any(
            f["type"] in ("date", "timestamp") and f["exposure"] == "bounded-values" for f in e["fields"]))
        return suggestions.closest(Reading(), entities)

    # --- plan and compose --------------------------------------------------------------------------------

    async def _answer(self, question: str, reading: Reading, entities: list[dict], matches: list[dict],
                      call: CallTool) -> Plan:
        if reading.grain or reading.time or reading.compare:
            entities = await self._dated(question, reading, entities, call)
        try:
            drafted = drafting.plan(reading, entities)
        except CannotPlan as exc:
            return Plan(f"I can't answer that: {exc}.", False, suggestions.closest(reading, entities))
        analysis, role = await self._analyze(drafted, entities, call)
        if not analysis.ok:
            return Plan(f"The analysis was refused ({analysis.error_code}): {analysis.error_message}", False,
                        suggestions.closest(reading, entities))
        frozen = await call("present_ui", {})
        if not frozen.ok:
            return _display_failed(frozen)
        rows = analysis.content["resource"]["rows"]
        empty = await self._why_empty(reading, entities, matches, call) if rows == 0 else None
        proposal = compose(frozen.content["slice"], reading, drafted, rows, empty.note if empty else "")
        # It composes only from what the slice offers, so a refusal is not something it could repair.
        outcome = await call("present_ui", {"proposal": proposal})
        if not outcome.ok or not outcome.content.get("revision"):
            return Plan("I prepared the analysis but the display was refused; nothing was shown.", False)
        if empty is not None:  # said in words, with what can be asked instead: no blank chart, no empty table
            return Plan(f"Nothing matched: there are no rows for {lower_first(subject(reading, drafted))}."
                        f"{empty.note}", True, empty.instead)
        truncated = ", truncated" if analysis.content["resource"]["truncated"] else ""
        shape = "a headline figure" if not drafted.dimensions or drafted.dimensions == ["s"] else \
            f"a chart and a table ({rows} rows{truncated})"
        through = f", counted through {role}" if role else ""
        kept = " The period is your earlier question's: name another to change it." if reading.period_kept else ""
        return Plan(f"Here is {lower_first(subject(reading, drafted))}{through}: {shape}, with where the numbers came "
                    f"from.{kept}{_assumed(reading)}", True)

    async def _why_empty(self, reading: Reading, entities: list[dict], matches: list[dict],
                         call: CallTool) -> Empty:
        """An answer with no rows: when a period was asked for, the span the data holds (a time-bounds probe)
        and the same question for its latest year; else the nearest questions that have rows to show."""
        when = time_field(entities, reading.measures[0]["entity_id"]) if reading.time is not None else None
        bounds = await call("probe_data", {"kind": "time-bounds", "field_id": when["id"]}) if when else None
        earliest, latest = (bounds.content.get("earliest"), bounds.content.get("latest")) if bounds and bounds.ok \
            else (None, None)
        nearest = suggestions.closest(reading, entities)
        if not (earliest and latest):
            return Empty("", nearest)
        first, last = dt.date.fromisoformat(earliest[:10]), dt.date.fromisoformat(latest[:10])
        note = f" In the data, {lower_first(when['label'])} runs from {first:%B %Y} to {last:%B %Y} only."
        latest_year = TimeSpan("between", f"in {last.year}", dt.date(last.year, 1, 1), dt.date(last.year + 1, 1, 1))
        same_then = suggestions.exact_reading(replace(reading, time=latest_year, compare=None, compare_grain=None),
                                              entities, matches)
        return Empty(note, list(dict.fromkeys([q for q in (same_then, *nearest) if q])))

    async def _analyze(self, drafted: Drafted, entities: list[dict], call: CallTool) -> tuple[ToolResult, str]:
        """Run the draft; when a field is reached two ways, take the shortest and say which it was (a split
        filters and groups by one field: each place is named in turn), quoted for the answer."""
        labels = {r["id"]: r["label"] for e in entities for r in e.get("relationships", [])}
        chosen: list[str] = []
        for _ in range(MAX_ROLE_REPAIRS + 1):
            analysis = await call("run_analysis", {"draft": drafted.draft})
            roles = analysis.allowed or []  # each role a list of relationship ids, the shortest path first
            target = _at({"draft": drafted.draft}, analysis.pointer) if not analysis.ok else None
            if analysis.ok or analysis.error_code != "AMBIGUOUS_PATH" or not roles or not isinstance(
                    roles[0], list) or target is None or "via" in target:
                break
            target["via"] = roles[0]
            chosen.append(labels.get(target["via"][-1], ""))
        return analysis, " and ".join(f"\u2018{role}\u2019" for role in dict.fromkeys(chosen) if role)

    async def _cannot_change(self, call: CallTool) -> Plan:
        """A request to change data: only reviewed actions change anything, and none does it this way."""
        frozen = await call("present_ui", {})
        actions = sorted({_action_words(a["action"]) for a in frozen.content["slice"].get("actions", [])}) \
            if frozen.ok else []
        offer = f" What I can offer: {'; '.join(actions)} (each asks a person to approve first)." if actions else \
            " No action that changes data is offered here."
        return Plan(f"I can't change data that way: I only read it, and changes go through reviewed actions.{offer}",
                    False)

    async def _records(self, question: str, entities: list[dict], asked: set[str], call: CallTool) -> Plan:
        """"List the latest orders": a record listing of the best-matching entity, newest first."""
        listing = drafting.plan_listing(entities, asked)
        if listing is None:
            return Plan("I can't list that: I found no records I may show.", False)
        analysis = await call("run_analysis", {"draft": listing.draft})
        if not analysis.ok:
            return Plan(f"The listing was refused ({analysis.error_code}): {analysis.error_message}", False)
        frozen = await call("present_ui", {})
        if not frozen.ok:
            return _display_failed(frozen)
        outcome = await call("present_ui", {"proposal": compose_listing(frozen.content["slice"], listing)})
        if not outcome.ok or not outcome.content.get("revision"):
            return Plan("I prepared the listing but the display was refused; nothing was shown.", False)
        rows = analysis.content["resource"]
        return Plan(f"Here are the {listing.entity['label'].lower()} records, newest first: {rows['rows']} rows"
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
        proposal = compose_flag_button(question, view, action, order_id)
        outcome = await call("present_ui", {"proposal": proposal})
        if not outcome.ok or not outcome.content.get("revision"):
            return Plan("I prepared the request but the display was refused; nothing was shown.", False)
        return Plan(f"Press 'Flag for review' to ask for order {order_id} to be flagged; a person approves it "
                    "before anything changes.", True)


def _assumed(reading: Reading) -> str:
    """" I read “stroe” as “store”.": a near spelling taken for a value is said, so a wrong guess is seen."""
    if not reading.assumed:
        return ""
    return " I read " + ", ".join(f"\u201c{said}\u201d as \u201c{value}\u201d" for said, value in
                                  dict.fromkeys(reading.assumed)) + "."


def _display_failed(result) -> Plan:
    """The host could not freeze a slice: the person learns why in its words (say, a service restarting)."""
    return Plan(f"I could not prepare the display: {result.error_message} ({result.error_code}).", False)


def merge_entities(entities: list[dict], more: list[dict]) -> list[dict]:
    """Two slices as one: each view of an entity lists the relationships among its own slice, so the
    relationships are united, never replaced (a later, narrower slice must not cut a path)."""
    merged = {e["id"]: dict(e) for e in entities}
    for entity in more:
        if entity["id"] not in merged:
            merged[entity["id"]] = dict(entity)
            continue
        known = {r["id"] for r in merged[entity["id"]].get("relationships", [])}
        merged[entity["id"]]["relationships"] = [*merged[entity["id"]].get("relationships", []),
                                                 *[r for r in entity.get("relationships", []) if r["id"] not in known]]
    return list(merged.values())


def _action_words(action_id: str) -> str:
    """"orders.flag_for_review" as "flag for review (orders)"."""
    scope, _, name = action_id.rpartition(".")
    return f"{name.replace('_', ' ')} ({scope.replace('_', ' ')})" if scope else name.replace("_", " ")



def _at(draft: dict, pointer: str) -> dict | None:
    """The object at a JSON pointer into the arguments (a dimension, a filter of the draft), or None."""
    node = draft
    for part in [p for p in pointer.split("/") if p]:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node if isinstance(node, dict) else None


def _names_a_measure(question: str, reading: Reading) -> bool:
    """A measure named by its own label ("net revenue of the latest orders") makes it an analysis."""
    return any(m["label"].lower() in question.lower() and not m["label"].lower().startswith("number of")
               for m in reading.measures)


def _as_written(word: str, question: str) -> str:
    """A word as the person wrote it (the reading works in lower case)."""
    found = re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", question, re.IGNORECASE)
    return found.group(0) if found else word
