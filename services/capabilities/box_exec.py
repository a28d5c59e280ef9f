"""python -m services.capabilities.box_exec: become bubblewrap, with an empty environment.

The MCP SDK starts a stdio server as a command with an environment; a boxed server's bubblewrap must
start with no environment at all (its pid 1 in the box keeps what it started with) and with the server's
variables on no command line. So the SDK starts this shim instead: it reads the box (sandbox.enclose)
from TESSERA_BOX, writes bubblewrap's options into a pipe, and replaces itself with
`bwrap --args <pipe> -- <server command>` under an empty environment: the only copy of the variables
outside the box goes with the exec. Standard library only: it runs on every (re)start of every boxed server.
"""

import json
import os
import sys


def main() -> None:
    spec = json.loads(os.environ["TESSERA_BOX"])
    options = ["--args", str(_pipe(b"".join(part.encode() + b"\0" for part in spec["arguments"])))]
    if spec.get("seccomp"):
        options += ["--seccomp", str(_pipe(bytes.fromhex(spec["seccomp"])))]
    os.execve(spec["bwrap"], [spec["bwrap"], *options, "--", *spec["command"]], {})


def _pipe(payload: bytes) -> int:
    """A pipe holding `payload`, its read end left open across the exec for bubblewrap to read. Written
    whole first: sandbox.enclose keeps what goes through it within a pipe's buffer."""
    read_end, write_end = os.pipe()
    written = 0
    while written < len(payload):
        written += os.write(write_end, payload[written:])
    os.close(write_end)
    os.set_inheritable(read_end, True)
    return read_end


if __name__ == "__main__":
    try:
        main()
    except (KeyError, ValueError, OSError) as exc:
        print(f"tool server box: could not start bubblewrap: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)
