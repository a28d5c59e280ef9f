"""Split the flat, pinned requirements.txt for the image build.

    python3 requirements_filter.py runtime requirements.txt dev-only.txt  -> the pins to install
    python3 requirements_filter.py pins requirements.txt NAME...          -> just those pins

Standard library only: it runs on the host (to fill the wheelhouse) and in the build stage.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def names(path: str) -> list[str]:
    """Non-empty lines without comments: one project name each."""
    out = []
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(canonical(line))
    return out


def pins(path: str) -> list[tuple[str, str]]:
    """(canonical name, requirement line) for each requirement in a pip requirements file."""
    out = []
    for raw in Path(path).read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            sys.exit(f"requirements_filter: options are not supported here: {line!r}")
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
        if not match:
            sys.exit(f"requirements_filter: cannot read {line!r}")
        out.append((canonical(match.group(0)), line))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in {"runtime", "pins"}:
        print(__doc__, file=sys.stderr)
        return 2
    mode, requirements, rest = argv[0], argv[1], argv[2:]
    pinned = pins(requirements)
    known = {name for name, _ in pinned}
    if mode == "runtime":
        wanted = set(names(rest[0]))
        for name in sorted(wanted - known):
            print(f"requirements_filter: note: {name} (in {rest[0]}) is not in {requirements}", file=sys.stderr)
        lines = [line for name, line in pinned if name not in wanted]
    else:
        wanted = {canonical(n) for n in rest}
        missing = wanted - known
        if missing:
            sys.exit(f"requirements_filter: not pinned in {requirements}: {', '.join(sorted(missing))}")
        lines = [line for name, line in pinned if name in wanted]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
