"""What the CLI prints for people: long output through their pager only at a terminal, a slow call that says
how long it has been waiting, and what an answer computed said once."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import grpc
from rich.console import Console

from cli.answer import AnswerPrinter
from cli.policy import waited_for
from shared.paths import REPO_ROOT

LONG = "\n".join(f"row {n}" for n in range(200))
PRINT_PAGED = (f"from rich.console import Console\nfrom cli.output import paged\nconsole = Console(highlight=False)\n"
               f"with paged(console):\n    console.print({LONG!r})\n")


def _run(stdout, tmp_path, **env):
    return subprocess.run([sys.executable, "-c", PRINT_PAGED], cwd=REPO_ROOT, stdout=stdout, stdin=stdout,
                          stderr=subprocess.PIPE, timeout=60, env={"PATH": os.environ["PATH"], "TERM": "xterm",
                                                                   **env})


def test_at_a_terminal_long_output_goes_through_the_persons_pager(tmp_path):
    paged_copy = tmp_path / "paged.txt"
    controller, terminal = pty.openpty()
    try:
        done = _run(terminal, tmp_path, PAGER=f"cat > {paged_copy}")
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    assert paged_copy.read_text().splitlines() == LONG.splitlines()


def test_piped_output_never_waits_in_a_pager(tmp_path):
    paged_copy = tmp_path / "paged.txt"
    done = _run(subprocess.PIPE, tmp_path, PAGER=f"cat > {paged_copy}")
    assert done.returncode == 0 and not paged_copy.exists()


class _SlowCall:
    """A call whose answer comes after `waits` timeouts, as grpc's Future reports them."""

    def __init__(self, waits: int) -> None:
        self.waits, self.cancelled = waits, False

    def result(self, timeout):
        if self.waits:
            self.waits -= 1
            raise grpc.FutureTimeoutError()
        return "the review"

    def cancel(self):
        self.cancelled = True


def test_a_slow_call_is_said_every_interval_until_it_answers():
    said = []
    call = _SlowCall(waits=3)
    assert waited_for(call, said.append, began=0.0, every=0.01) == "the review"
    assert len(said) == 3 and all(line.startswith("  still asking (") for line in said)
    assert call.cancelled  # harmless once answered; a Ctrl-C in between leaves nothing running


def test_an_answer_says_what_was_computed_once_and_a_block_its_own_where_it_differs():
    console = Console(record=True, width=200, highlight=False)
    total, yearly = "Net revenue · no filter", "Net revenue · Order time 1 Jan 2024 – 31 Dec 2024"
    AnswerPrinter(console).print_records([
        {"kind": "heading", "text": "Net revenue"},
        {"kind": "sentence", "text": "Net revenue: $1.00.", "computed": [total]},
        {"kind": "metric", "label": "Net revenue", "shown": "$1.00", "computed": total},
        {"kind": "metric", "label": "Net revenue in 2024", "shown": "$0.40", "computed": yearly}])
    printed = console.export_text().splitlines()
    assert [line for line in printed if "computed:" in line] == [f"    computed: {yearly}", f"  computed: {total}"]
    assert printed.index(f"    computed: {yearly}") == printed.index("  Net revenue in 2024: $0.40") + 1
