"""Every Tessera service has one shape (§3), so whoever knows one knows them all:

- `config.py` its settings; `wiring.py` a frozen, keyword-only `<Name>Parts` dataclass and `build`, the one place
  its parts are made (stores, warehouse, keys, peers, clock);
- a gRPC service: `server.py` one servicer over those parts, converting between protobuf and the domain and making
  nothing (no engine, key, channel or settings of its own), and `__main__.py` serving `serving(build, Servicer)`;
- an HTTP front (web, the MCP front): `app.py` serving over the parts `build` made, loading no key itself.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib

import pytest

from shared.paths import REPO_ROOT
from shared.rpc.contracts import SERVICES

GRPC = sorted(SERVICES)
HTTP = ["mcp", "web"]
# Processes under services/ that are not Tessera services, and why they keep a shape of their own.
NOT_SERVICES = {
    "mcp_bridge": "the SPIFFE client bridge beside a service (one job: relay bytes over mTLS), no parts to wire",
    "mcp_tickets": "the demo's outside MCP tool server, the kind of code the broker boxes: it must not be ours",
}
# What a servicer must not make for itself: wiring.py makes it and hands it over.
MADE_IN_WIRING = ("sqlalchemy", "shared.identity.certs", "shared.rpc.channels", "shared.rpc.runtime", "shared.config")
MAKERS = {"from_cert_dir", "load_signing_key", "load_verify_key", "load_secret", "engine_for", "create_engine",
          "open_store", "open_gateway", "aio_channel", "sync_channel", "ThreadPoolExecutor"}


def _tree(path) -> ast.Module:
    return ast.parse(path.read_text())


def _imports(tree: ast.Module) -> set[str]:
    """Every module and name imported, in full (`from shared.rpc import channels` is `shared.rpc.channels`)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_every_process_under_services_is_a_service_or_says_why_not():
    processes = sorted(p.parent.name for p in REPO_ROOT.glob("services/*/__main__.py"))
    assert processes == sorted([*GRPC, *HTTP, *NOT_SERVICES])


@pytest.mark.parametrize("name", [*GRPC, *HTTP])
def test_its_parts_are_one_frozen_keyword_only_dataclass_made_by_build(name):
    folder = REPO_ROOT / "services" / name
    for module in ("__main__.py", "config.py", "wiring.py", "server.py" if name in GRPC else "app.py"):
        assert (folder / module).is_file(), f"services/{name}/{module} is missing"
    wiring = importlib.import_module(f"services.{name}.wiring")
    parts = [value for key, value in vars(wiring).items()
             if key.endswith("Parts") and dataclasses.is_dataclass(value) and value.__module__ == wiring.__name__]
    assert len(parts) == 1, f"services/{name}/wiring.py: one <Name>Parts dataclass, found {parts}"
    assert parts[0].__dataclass_params__.frozen, f"{parts[0].__name__}: frozen=True"
    assert all(f.kw_only for f in dataclasses.fields(parts[0])), f"{parts[0].__name__}: kw_only=True"
    assert callable(getattr(wiring, "build", None)), f"services/{name}/wiring.py has no build()"
    if name in GRPC:
        assert "lifecycle" in {f.name for f in dataclasses.fields(parts[0])}, f"{parts[0].__name__}.lifecycle"


@pytest.mark.parametrize("name", GRPC)
def test_a_grpc_servicer_only_converts_over_the_parts_it_is_given(name):
    tree = _tree(REPO_ROOT / "services" / name / "server.py")
    servicers = [node for node in tree.body if isinstance(node, ast.ClassDef)
                 and any(ast.unparse(base).endswith("Servicer") for base in node.bases)]
    assert len(servicers) == 1, f"services/{name}/server.py: one servicer class"
    init = next(node for node in servicers[0].body if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    assert [a.arg for a in init.args.args] == ["self", "parts"] and not init.args.kwonlyargs, \
        f"{servicers[0].name}.__init__(self, parts): everything it works with comes in its parts"
    made_here = {m for m in _imports(tree) if m.startswith(MADE_IN_WIRING) or m == f"services.{name}.config"}
    made_here |= {ast.unparse(node.func) for node in ast.walk(servicers[0]) if isinstance(node, ast.Call)
                  and ast.unparse(node.func).split(".")[-1] in MAKERS}
    assert not made_here, f"services/{name}/server.py makes what wiring.py should hand it: {sorted(made_here)}"
    main = ast.unparse(_tree(REPO_ROOT / "services" / name / "__main__.py"))
    assert f"from services.{name}.wiring import build" in main
    assert f"serving(build, {servicers[0].name})" in main


@pytest.mark.parametrize("name", HTTP)
def test_an_http_front_serves_over_the_parts_build_made(name):
    tree = _tree(REPO_ROOT / "services" / name / "app.py")
    assert f"services.{name}.wiring" in _imports(tree)
    called = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert "build" in called and "load_signing_key" not in called, \
        f"services/{name}/app.py: its parts come from wiring.build, which loads its keys"
