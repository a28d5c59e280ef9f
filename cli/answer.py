"""The answer at the terminal, as the person's screen shows it (§10b).

After a turn commits, `tessera ask` reads the surface the way the browser does: the trusted stream's
data model (descriptors with formats and the gateway's captions), and windows it asks the host for under
grants: one cell per Metric and per FigureText figure, the first rows of each DataTable. It prints the
filled answer sentence, each figure and each table, formatted, with what was computed under each. Rows
reach the terminal only this way, never through the agent.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import grpc
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.formats import column_format, format_value, terminal_locale
from cli.output import TABLE_ROWS
from shared.rpc.contracts import invoke, invoke_stream
from shared.rpc.errors import error_details
from shared.safety.printable import printable
from shared.ui.template import TemplateError, fill
from tessera.host.v1 import host_pb2

WAIT_SECONDS = 30.0


@dataclass
class SurfaceData:
    """The data model entries and windows seen on the surface stream so far."""

    entries: dict[str, object] = field(default_factory=dict)
    # (resource, node, binding prop, offset) → window
    windows: dict[tuple[str, str, str, int], dict] = field(default_factory=dict)
    failed: str = ""


class SurfaceReader:
    """Follows a surface's stream on a thread until closed; `wait` blocks until a condition holds."""

    def __init__(self, host, person, session_id: str, surface_id: str) -> None:
        self.data = SurfaceData()
        self._changed = threading.Condition()
        self._call = invoke_stream(host, "host", "Subscribe", host_pb2.SubscribeRequest(
            actor=person, session_id=session_id, surface_id=surface_id, max_envelopes=64), timeout=WAIT_SECONDS * 4)
        self._closing = False
        self._thread = threading.Thread(target=self._follow, name="surface-reader", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            for reply in self._call:
                for envelope in (reply.envelope, *reply.following):
                    if envelope.WhichOneof("payload") == "a2ui":
                        self._take(json.loads(envelope.a2ui.message_json))
        except grpc.RpcError as exc:
            if not self._closing:  # our own cancel ends it quietly; a host that stopped (CANCELLED too) is said
                with self._changed:
                    details = error_details(exc, "host")  # in words: gRPC's own text is not for the terminal
                    self.data.failed = f"{details.reason}: {details.message}"
                    self._changed.notify_all()

    def _take(self, message: dict) -> None:
        update = message.get("updateDataModel")
        if not update:
            return
        with self._changed:
            path, value = update["path"], update.get("value")
            if path.endswith("/window") and isinstance(value, dict):
                resource = path.removesuffix("/window").rsplit("/", 1)[-1]
                self.data.windows[(resource, value.get("node", ""), value.get("prop", ""),
                                   value.get("offset", 0))] = value
            else:
                self.data.entries[path] = value
            self._changed.notify_all()

    def wait(self, condition, timeout: float = WAIT_SECONDS) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self.data) and not self.data.failed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return condition(self.data)

    def close(self) -> None:
        self._closing = True
        self._call.cancel()
        self._thread.join(timeout=5)


@dataclass(frozen=True)
class WindowAsk:
    node: str
    prop: str
    offset: int
    limit: int
    resource: str  # the resource id whose descriptor formats it

    @property
    def key(self) -> tuple[str, str, str, int]:
        return self.resource, self.node, self.prop, self.offset


def _asks(blocks: list[dict], rows: int) -> list[WindowAsk]:
    """The windows the printed answer needs: one cell per figure, the first `rows` rows of each table."""
    asks = []
    for block in blocks:
        data = block["data"]
        if block["component"] == "Metric":
            asks.append(WindowAsk(block["id"], "/resource", data.get("row", 0), 1, data["resource"]["resource"]))
        elif block["component"] == "FigureText":
            asks += [WindowAsk(block["id"], f"/figures/{name}", figure.get("row", 0), 1,
                               figure["resource"]["resource"]) for name, figure in data["figures"].items()]
        elif block["component"] == "DataTable":
            asks.append(WindowAsk(block["id"], "/resource", 0, rows, data["resource"]["resource"]))
    return asks


def _in_order(document: dict) -> list[dict]:
    """Blocks in reading order: the tree from the top, depth first."""
    by_id = {b["id"]: b for b in document["blocks"]}
    ordered, pending = [], list(reversed(document.get("top", [])))
    while pending:
        block = by_id.get(pending.pop())
        if block is None:
            continue
        ordered.append(block)
        pending += list(reversed(block.get("children", [])))
    return ordered


@dataclass
class ReadAnswer:
    """A committed answer as the person may see it: its blocks in reading order, the data model and windows
    the host sent for them, why the data could not be read ("" when it was), and how many rows of a table."""

    blocks: list[dict]
    data: SurfaceData
    problem: str
    rows: int


def read_answer(host, person, session_id: str, surface_id: str, revision_id: str, document: dict,
                rows: int = TABLE_ROWS) -> ReadAnswer:
    """Ask the host for the windows the answer shows (each table's first `rows` rows) and wait for them on
    the surface's stream, as the browser does."""
    blocks = _in_order(document)
    asks = _asks(blocks, rows)
    resources = {f"/resources/{a.resource}" for a in asks}
    reader = SurfaceReader(host, person, session_id, surface_id)
    try:
        described = reader.wait(lambda d: resources <= d.entries.keys())
        refused = _request(host, person, session_id, surface_id, revision_id, asks)
        reader.wait(lambda d: all(a.key in d.windows for a in asks if a not in refused))
    finally:
        reader.close()
    problem = "" if described and not reader.data.failed else reader.data.failed or "timed out"
    return ReadAnswer(blocks, reader.data, problem, rows)


def _request(host, person, session_id, surface_id, revision_id, asks) -> dict[WindowAsk, str]:
    refused = {}
    for ask in asks:
        try:
            invoke(host, "host", "SendCommand", host_pb2.SendCommandRequest(
                actor=person, session_id=session_id, surface_id=surface_id, revision_id=revision_id,
                command_id=f"cli-window-{secrets.token_hex(6)}", resource_window=host_pb2.ResourceWindowCommand(
                    node_id=ask.node, prop=ask.prop, offset=ask.offset, limit=ask.limit)), timeout=30)
        except grpc.RpcError as exc:
            refused[ask] = exc.code().name
    return refused


class AnswerPrinter:
    """The answer at the terminal, printed from the same records `tessera ask --json` gives (`answer_blocks`)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)
        self.locale = terminal_locale()

    def show(self, answer: ReadAnswer) -> None:
        if answer.problem:
            self.console.print(f"  (the answer's data could not be read: {answer.problem})")
        self.print_records(answer_blocks(answer, self.locale))

    def print_records(self, records: list[dict]) -> None:
        """Each block, then what was computed once under them all (a block's own only where it differs)."""
        shared = shared_caption(records)
        for record in records:
            self._record(record, shared)
        if shared:
            self.console.print(Text(f"  computed: {shared}", style="dim"))

    def _record(self, record: dict, shared: str | None) -> None:
        kind, say = record["kind"], self.console.print
        if kind == "heading":
            say(f"  [bold]{_escape(record['text'])}[/bold]", markup=True)
        elif kind in ("text", "callout"):
            title = f"{record['title']}: " if record.get("title") else ""
            say(f"  {_escape(title + record['text'])}", markup=True)
        elif kind == "sentence":
            say(f"  {_escape(record['text'])}" if record["text"] is not None else
                "  (this sentence could not be filled)", markup=True)
        elif kind == "metric":
            say(f"  {_escape(record['label'])}: [bold]{_escape(record['shown'] or '(unavailable)')}[/bold]",
                markup=True)
        elif kind == "table":
            self._table(record)
        elif kind == "chart":
            say(f"  Chart: {_escape(record['title'] or 'Chart')} (drawn in the browser)", markup=True)
        elif kind == "placeholder":
            say(f"  (one element could not be displayed: {_escape(record['reason'])})", markup=True)
        for caption in _captions(record):
            if caption != shared:
                say(Text(f"    computed: {caption}", style="dim"))

    def _table(self, record: dict) -> None:
        if record["total_rows"] is None:
            self.console.print("  (the table's rows could not be read)")
            return
        # Titles, labels and cells are text, never console markup (a cell may hold "[bold]").
        title = Text(printable(record["title"])) if record.get("title") else None
        table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
        for column in record["columns"]:
            numeric = column["format"].get("style") in ("integer", "decimal", "currency", "percent")
            table.add_column(Text(printable(column["label"])), justify="right" if numeric else "left")
        for row in record["rows"]:
            table.add_row(*(Text(printable(format_value(v, c["format"], self.locale)))
                            for v, c in zip(row, record["columns"], strict=True)))
        self.console.print(table)
        self.console.print(f"  rows 1–{len(record['rows'])} of {record['total_rows']:,}")


def _captions(record: dict) -> list[str]:
    computed = record.get("computed")
    return list(dict.fromkeys(c for c in (computed if isinstance(computed, list) else [computed]) if c))


def shared_caption(records: list[dict]) -> str | None:
    """One caption per answer, as the page shows it: the one most blocks share (of equals, the first), printed
    once under the answer; a block's own is printed under it only where it differs."""
    counts = Counter(caption for record in records for caption in _captions(record))
    return max(counts, key=counts.__getitem__) if counts else None


def _figure(data: SurfaceData, node: str, prop: str, row: int, column: str, resource: str, locale: str) -> dict:
    """One cell the host sent for a figure: its value as computed and as the page shows it (both None when no
    window holds it)."""
    window = data.windows.get((resource, node, prop, row))
    if not window or not window.get("rows") or column not in window.get("columns", []):
        return {"value": None, "shown": None}
    value = window["rows"][0][window["columns"].index(column)]
    return {"value": value, "shown": format_value(value, column_format(data.entries.get(f"/resources/{resource}"),
                                                                        column), locale)}


def _computed(data: SurfaceData, resource: str) -> str | None:
    """What the gateway says was computed for `resource` (the caption the model cannot change)."""
    return ((data.entries.get(f"/resources/{resource}") or {}).get("interpretation") or {}).get("text")


def answer_blocks(answer: ReadAnswer, locale: str) -> list[dict]:
    """The answer as data for a script (`tessera ask --json`), in reading order: each figure as computed and as
    shown, each table's first rows as the person may see them, each with what was computed."""
    blocks = []
    for block in answer.blocks:
        kind, props, node = block["component"], block["data"], block["id"]
        if kind in ("Heading", "Text", "Callout"):
            blocks.append({"kind": kind.lower(), "text": props["text"]} | (
                {"title": props["title"]} if props.get("title") else {}))
        elif kind == "FigureText":
            figures = {name: _figure(answer.data, node, f"/figures/{name}", figure.get("row", 0), figure["column"],
                                     figure["resource"]["resource"], locale)
                       for name, figure in props["figures"].items()}
            try:
                text = fill(props["text"], {name: f["shown"] or "(unavailable)" for name, f in figures.items()})
            except TemplateError:
                text = None
            resources = dict.fromkeys(f["resource"]["resource"] for f in props["figures"].values())
            blocks.append({"kind": "sentence", "text": text, "figures": figures,
                           "computed": [_computed(answer.data, r) for r in resources]})
        elif kind == "Metric":
            resource = props["resource"]["resource"]
            blocks.append({"kind": "metric", "label": props["label"], **_figure(
                answer.data, node, "/resource", props.get("row", 0), props["column"], resource, locale),
                "computed": _computed(answer.data, resource)})
        elif kind == "DataTable":
            blocks.append(_table_record(block, answer))
        elif kind == "Chart":
            blocks.append({"kind": "chart", "title": props.get("title"),
                           "computed": _computed(answer.data, props["resource"]["resource"])})
        elif kind == "Placeholder":
            blocks.append({"kind": "placeholder", "reason": props.get("reason", "")})
    return blocks


def _table_record(block: dict, answer: ReadAnswer) -> dict:
    resource = block["data"]["resource"]["resource"]
    descriptor = answer.data.entries.get(f"/resources/{resource}") or {}
    window = answer.data.windows.get((resource, block["id"], "/resource", 0))
    labels = {c["id"]: c.get("label", c["id"]) for c in descriptor.get("columns", [])}
    record = {"kind": "table", "title": block["data"].get("title"), "computed": _computed(answer.data, resource)}
    if not window:
        return record | {"columns": [], "rows": [], "total_rows": None, "problem": "the rows could not be read"}
    return record | {"columns": [{"id": c, "label": labels.get(c, c), "format": column_format(descriptor, c)}
                                 for c in window["columns"]],
                     "rows": window["rows"][:answer.rows],  # (the host's first window may hold a page of 25)
                     "total_rows": window.get("totalRows", len(window["rows"]))}


def _escape(text: str) -> str:
    """Text from a model or a warehouse is printed as it is: never read as console markup or terminal codes."""
    return escape(printable(text))
