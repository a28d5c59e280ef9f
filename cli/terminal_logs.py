"""Where a command's own log lines go: a file beside the services' logs, never the person's terminal.

The CLI's channels log what the services log (the channel bridge naming the address that refused, a call
nobody answered with gRPC's own text, shared.rpc.errors). Without a handler Python prints warnings on stderr,
where they would read as the command's answer; the person is told a reason and a sentence instead, and
the text stays in `<var>/run/logs/cli.log` for whoever looks into it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from shared.logs import JsonFormatter


def log_to_file(path: Path) -> None:
    """This process's log lines, JSON as the services write theirs, appended to `path` from now on."""
    root = logging.getLogger()
    if any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path.absolute() for h in root.handlers):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:  # not ours to write (another user's set): the lines are dropped, still never printed
        handler = logging.NullHandler()
    handler.setFormatter(JsonFormatter("cli"))
    root.addHandler(handler)  # with a handler, Python no longer prints warnings on stderr by itself
    root.setLevel(logging.INFO)
