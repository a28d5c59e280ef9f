"""Fail when a third-party module imported by the app is missing from the venv.

    python check_imports.py APP_DIR

Reads every .py file under APP_DIR/{services,shared,cli} (not shared/gen), collects the
top-level names of absolute imports, drops the standard library and the project's own
packages, adds the modules deploy/policy/tools.yaml starts with `python -m` (MCP servers
such as mcp_server_time), and asks the running interpreter to find each one. Run with the runtime venv's
python in the build stage, so a package the app imports but pyproject.toml declares only as a dev
extra (so requirements/runtime.txt lacks it) breaks the build rather than a service at start-up.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

FIRST_PARTY = {"services", "shared", "cli", "tessera"}


def imported(app: Path) -> dict[str, str]:
    """Top-level module name -> first file importing it."""
    found: dict[str, str] = {}
    for package in ("services", "shared", "cli"):
        for path in sorted((app / package).rglob("*.py")):
            if "gen" in path.relative_to(app).parts[1:2]:
                continue
            tree = ast.parse(path.read_bytes(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    found.setdefault(module.split(".")[0], str(path.relative_to(app)))
    tools = app / "deploy" / "policy" / "tools.yaml"
    if tools.exists():
        for module in re.findall(r"-\s+-m\s*\n\s*-\s+'?([A-Za-z_][\w.]*)", tools.read_text()):
            found.setdefault(module.split(".")[0], "deploy/policy/tools.yaml")
    return found


def main() -> int:
    app = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    third_party = {
        name: where
        for name, where in imported(app).items()
        if name not in FIRST_PARTY and name not in sys.stdlib_module_names
    }
    missing = {name: where for name, where in third_party.items() if importlib.util.find_spec(name) is None}
    for name, where in sorted(missing.items()):
        print(f"check_imports: {name} (imported by {where}) is not installed", file=sys.stderr)
    if not missing:
        print(f"check_imports: all {len(third_party)} third-party modules found: {', '.join(sorted(third_party))}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
