"""One way to say no (shared/rpc/refusals.py), one mapping to a gRPC status (shared/rpc/errors.py, `status_of`).

Tessera's code raises refusals; only the mapping makes a status: `status_of` for a refusal, `relayed` for a peer's
refusal passed on, and the interceptor's INTERNAL for what nobody refused. A status built anywhere else is a
second idiom, with its own choice of code for the same refusal.
"""

from __future__ import annotations

import ast
from pathlib import Path

from shared.paths import REPO_ROOT

# The mapping, and the interceptor that applies it (and says INTERNAL for what nobody refused).
MAPPING = {Path("shared/rpc/errors.py"), Path("shared/rpc/interceptor.py")}
CODE = [path for folder in ("services", "shared", "cli") for path in (REPO_ROOT / folder).rglob("*.py")
        if "gen" not in path.relative_to(REPO_ROOT).parts]


# Ways to end a call with a status of one's own choosing, besides raising a refusal: a servicer context's methods
# (a transport's abort() is not one).
_CONTEXT_CALLS = {"abort", "abort_with_status", "set_code"}


def _statuses_built(source: str) -> list[int]:
    """Lines that build a status (a `TesseraError(...)`, a servicer context's abort or set_code, a gRPC status code
    handed to a raise) or raise the bare `Refusal`, whose class says no kind."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        called = getattr(node.func, "id", getattr(node.func, "attr", "")) if isinstance(node, ast.Call) else ""
        on_context = called in _CONTEXT_CALLS and "context" in ast.unparse(getattr(node.func, "value", node.func))
        if called == "TesseraError" or on_context or (called == "Refusal" and isinstance(node.func, ast.Name)):
            lines.add(node.lineno)
        if isinstance(node, ast.Raise) and node.exc is not None and "StatusCode" in ast.unparse(node.exc):
            lines.add(node.lineno)
    return sorted(lines)


def test_only_the_mapping_builds_a_status():
    assert len(CODE) > 100  # the walk sees the code
    built = [f"{path.relative_to(REPO_ROOT)}:{line}" for path in CODE
             if path.relative_to(REPO_ROOT) not in MAPPING for line in _statuses_built(path.read_text())]
    assert not built, built


def test_the_walk_finds_a_status_built_by_hand():
    assert _statuses_built("raise TesseraError(grpc.StatusCode.NOT_FOUND, 'X', 'y')") == [1]
    assert _statuses_built("raise errors.TesseraError(code, 'X', 'y')") == [1]
    assert _statuses_built("raise Failure(grpc.StatusCode.NOT_FOUND)") == [1]
    assert _statuses_built("await context.abort(grpc.StatusCode.NOT_FOUND, 'gone')") == [1]
    assert _statuses_built("raise Refusal('X', 'y')") == [1]
    assert _statuses_built("writer.transport.abort()") == []
    assert _statuses_built("raise NotFound('X', 'y')") == []
