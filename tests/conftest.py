"""Shared fixtures: a fresh deployment CA per test session, and a running set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.launcher import ServiceSet, cli_credentials
from shared.identity.certs import Credentials, issue_deployment
from shared.paths import REPO_ROOT
from tests.fixtures.approvers import operator_key_named
from tests.fixtures.no_payload import leaks, transcript_records

# Fixtures of the UI plane (catalog, frozen slice, proposals), shared by unit and integration tests; real mTLS
# test servers for the channel tests.
pytest_plugins = ["tests.fixtures.ui", "tests.fixtures.tls_servers"]


# Files that take longest (real processes, a browser, a search) go first, so that with a worker per core (make test)
# the many short files fill in at the end instead of one long file running alone: the run ends sooner.
_FIRST_FOLDERS = ("integration", "browser", "polyglot")


def pytest_collection_modifyitems(config, items):
    def folder_rank(item) -> int:
        parts = item.path.relative_to(REPO_ROOT / "tests").parts
        if any(part in _FIRST_FOLDERS for part in parts[:-1]):
            return 0
        # then the searches and the gateway's suites over real warehouses, the longest files run in process
        return 1 if item.path.name.startswith("test_fuzz_") or parts[0] == "resources" else 2

    items.sort(key=folder_rank)  # stable: a file's own tests keep their order


@pytest.fixture(scope="session", autouse=True)
def own_var_dir(tmp_path_factory):
    """Each test session (each pytest-xdist worker) keeps what processes write under var/ by default (the demo
    tickets server's database, MCP server logs) in a folder of its own, never in the repository's var/, which
    parallel workers would share."""
    if os.environ.get("TESSERA_VAR_DIR"):  # the caller chose one
        yield
        return
    os.environ["TESSERA_VAR_DIR"] = str(tmp_path_factory.mktemp("session-var"))
    yield
    os.environ.pop("TESSERA_VAR_DIR", None)


@pytest.fixture(scope="session", autouse=True)
def terminal_approvers(tmp_path_factory):
    """Every broker a test starts inherits an action policy that names the operator key for the tenants the
    tests approve in at the terminal (tests/fixtures/approvers.py says which, and why); a test that needs the
    shipped policy passes TESSERA_CAPABILITIES_ACTIONS_FILE itself."""
    if os.environ.get("TESSERA_CAPABILITIES_ACTIONS_FILE"):  # the caller chose one
        yield
        return
    path = operator_key_named(tmp_path_factory.mktemp("policy") / "actions.yaml")
    os.environ["TESSERA_CAPABILITIES_ACTIONS_FILE"] = str(path)
    yield
    os.environ.pop("TESSERA_CAPABILITIES_ACTIONS_FILE", None)


@pytest.fixture(scope="session", autouse=True)
def own_cli_dir(tmp_path_factory):
    """The CLI's own keys ($XDG_CONFIG_HOME/tessera) that a test's `tessera certs` writes go to a folder of the test
    session's, never to the operator's own ~/.config/tessera."""
    before = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    if before is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = before


@pytest.fixture(scope="session")
def cert_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("certs")
    issue_deployment(directory)
    return directory


@pytest.fixture(scope="session")
def other_ca_dir(tmp_path_factory) -> Path:
    """A second, unrelated deployment: its certificates must be refused."""
    directory = tmp_path_factory.mktemp("other-ca")
    issue_deployment(directory)
    return directory


@pytest.fixture(scope="session")
def credentials(cert_dir):
    def load(principal: str) -> Credentials:
        return cli_credentials(cert_dir, principal)

    load.cert_dir = cert_dir  # where the CLI's signing key is, for tests that sign decisions as the CLI
    return load


WAREHOUSE_SCALE = 5_000  # order items: big enough for every grain, small enough to seed in a second


@pytest.fixture(scope="session")
def warehouse_url(tmp_path_factory) -> str:
    """A small demo warehouse (SQLite), seeded once per test session."""
    from cli.seed import seed

    url = f"sqlite:///{tmp_path_factory.mktemp('warehouse') / 'warehouse.sqlite'}"
    seed(url, scale=WAREHOUSE_SCALE, progress=False)
    return url


@pytest.fixture(scope="session")
def model_transcript(tmp_path_factory, warehouse_url) -> Path:
    """Everything the agent hands a model in this session; scanned for warehouse values when the session ends,
    so every turn any test of this worker ran is covered, not only the golden module's."""
    transcript = tmp_path_factory.mktemp("model") / "transcript.jsonl"
    yield transcript
    leaked = leaks(transcript_records(transcript), warehouse_url)
    assert not leaked, f"warehouse values handed to a model: {leaked[:10]}"


@pytest.fixture(scope="session")
def service_env(warehouse_url, tmp_path_factory, model_transcript) -> dict[str, str]:
    return {
        "TESSERA_RESOURCES_WAREHOUSE_URL": warehouse_url,
        "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{tmp_path_factory.mktemp('store') / 'results.sqlite'}",
        "TESSERA_HOST_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('host') / 'host.sqlite'}",
        # Anything a service keeps under var/ by default (e.g. the demo tickets server's file) goes here.
        "TESSERA_VAR_DIR": str(tmp_path_factory.mktemp("var")),
        "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('broker') / 'broker.sqlite'}",
        # The broker's write credential: the same warehouse file (data change proposals).
        "TESSERA_CAPABILITIES_CHANGES_URL": warehouse_url,
        # Everything the model is handed, for the no-payload scan over real turns.
        "TESSERA_AGENT_MODEL_TRANSCRIPT": str(model_transcript),
        # Secrets a launcher must hand to one process only (test_identity_isolation reads them back):
        # the agent's model key (unused by the embedded planner; the operator's own, when `make eval` runs
        # against a hosted model, is kept), and one from the operator's shell.
        "TESSERA_AGENT_MODEL_API_KEY": os.environ.get("TESSERA_AGENT_MODEL_API_KEY") or "sk-only-the-agent-holds-this",
        "OPERATOR_SHELL_TOKEN": "reaches-no-service",
        # Event streams send a keep-alive comment every second (test_web_api waits for one).
        "TESSERA_WEB_KEEPALIVE_SECONDS": "1",
    }


@pytest.fixture(scope="session")
def running_set(cert_dir, tmp_path_factory, service_env):
    """Every Tessera process, started for real by the launcher `tessera up` uses."""
    services = ServiceSet(cert_dir, tmp_path_factory.mktemp("run"), ephemeral_ports=True, extra_env=service_env)
    services.start()
    yield services
    codes = services.stop()
    assert all(code == 0 for code in codes.values()), f"unclean stop: {codes}"


def run_module(module: str, env: dict[str, str], timeout: float = 20) -> subprocess.CompletedProcess:
    """Run `python -m <module>` from the repo root with `env` added."""
    return subprocess.run(
        [sys.executable, "-m", module], cwd=REPO_ROOT, env={**os.environ, **env},
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )
