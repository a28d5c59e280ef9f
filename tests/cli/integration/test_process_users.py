"""As root, the launcher runs each service as a user of its own: one compromised service reads nothing of another's.

Checked as an attacker holding one service's uid would try: a probe with that uid reads another service's key,
database and environment (/proc/<pid>/environ), and the CLI's keys — once outside any box,
so that ownership and modes alone must stop it, and once inside the service's own box, with exactly its view.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.launcher import ServiceSet
from cli.process_users import RESERVED_IDS, allocate_ids, ids_in_use
from cli.service_box import boxed_command
from shared.identity.certs import ca_key_path, issue_deployment, key_path, signing_key_path
from shared.identity.principals import PROCESS_NAMES
from shared.paths import REPO_ROOT, cli_dir

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap") or not shutil.which("setpriv"),
    reason="one user per process needs root, bubblewrap ('make sandbox') and setpriv")

# Tries to read each path given; prints {path: "READ" or the error's name}.
PROBE = """
import json, os, sys
found = {}
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as opened:
                opened.read(1)
        found[path] = "READ"
    except OSError as error:
        found[path] = type(error).__name__
print(json.dumps(found))
"""
# Database files the services' default settings keep under var/<name>.
DATABASES = {"host": "host/host.sqlite", "resources": "resources/results.sqlite",
             "capabilities": "capabilities/broker.sqlite"}


@pytest.fixture(scope="module")
def boxed_set(tmp_path_factory):
    base = tmp_path_factory.mktemp("process-users")
    before = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")  # this deployment's CLI keys, apart from its var folder
    var = base / "var"
    var.mkdir(mode=0o755)  # as `tessera up` finds it without a `tessera seed` before
    var.chmod(0o755)
    certs = var / "certs"  # where `tessera up` keeps them
    issue_deployment(certs, cli_directory=cli_dir())
    from cli.seed import seed

    (base / "warehouse").mkdir(mode=0o700)
    warehouse = f"sqlite:///{base / 'warehouse' / 'warehouse.sqlite'}"
    seed(warehouse, scale=2_000, progress=False)
    env = {"TESSERA_VAR_DIR": str(var), "TESSERA_RESOURCES_WAREHOUSE_URL": warehouse,
           "TESSERA_CAPABILITIES_CHANGES_URL": warehouse}
    services = ServiceSet(certs, var / "run", ephemeral_ports=True, extra_env=env, separate_users=True)
    services.start(timeout=120)
    try:
        yield services
    finally:
        codes = services.stop()
        if before is None:
            os.environ.pop("XDG_CONFIG_HOME", None)
        else:
            os.environ["XDG_CONFIG_HOME"] = before
    assert all(code == 0 for code in codes.values()), f"unclean stop: {codes}"


def _ids(pid: int) -> dict[str, list[int]]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {line.split(":")[0]: [int(v, 16) if line.startswith("Cap") else int(v) for v in line.split()[1:]]
            for line in lines if line.startswith(("Uid:", "Gid:", "Groups:", "CapEff:", "CapBnd:", "NoNewPrivs:"))}


def test_each_service_runs_as_a_user_of_its_own(boxed_set):
    uids = {}
    for name, handle in boxed_set.handles.items():
        ids = _ids(handle.pid)
        assert ids["Uid"] == [handle.uid] * 4 and ids["Gid"] == [handle.uid] * 4, (name, ids)
        assert ids["Groups"] == [] and ids["CapEff"] == [0] and ids["CapBnd"] == [0], (name, ids)
        assert ids["NoNewPrivs"] == [1], name
        uids[name] = handle.uid
    assert len(set(uids.values())) == len(PROCESS_NAMES) and all(uid in RESERVED_IDS for uid in uids.values())


def _owned(path: Path, uid: int, mode: int, gid: int | None = None) -> None:
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (uid, uid if gid is None else gid, mode), path


def test_each_service_owns_its_files_and_only_those(boxed_set):
    var = Path(boxed_set.extra_env["TESSERA_VAR_DIR"])
    for name, handle in boxed_set.handles.items():
        folder = boxed_set.identity_dir(name)
        _owned(folder, handle.uid, 0o700)
        for path in folder.iterdir():
            _owned(path, handle.uid, 0o600)
        _owned(handle.ready_file.parent, handle.uid, 0o700)
        _owned(handle.ready_file, handle.uid, 0o600)
        _owned(handle.log_path, handle.uid, 0o600)
        _owned(var / name, handle.uid, 0o700)
        if name in DATABASES:
            _owned(var / DATABASES[name], handle.uid, 0o600)
    # The var folder, the launcher's own folders and the deployment's keys stay root's.
    for folder in (var, boxed_set.run_dir, boxed_set.run_dir / "identity", boxed_set.cert_dir, ca_key_path(
            boxed_set.cert_dir).parent, cli_dir()):
        _owned(folder, 0, 0o700)
    # The warehouse: the resources service's, written by the broker's group (proposed data changes).
    warehouse = Path(boxed_set.extra_env["TESSERA_RESOURCES_WAREHOUSE_URL"].removeprefix("sqlite:///"))
    reader, writer = boxed_set.handles["resources"].uid, boxed_set.handles["capabilities"].uid
    _owned(warehouse.parent, reader, 0o2770, gid=writer)
    _owned(warehouse, reader, 0o660, gid=writer)


def _secrets_of_others(services: ServiceSet, name: str) -> list[Path]:
    """Everything `name` must not read: the other services' keys, databases and environments, the deployment's
    keys (the CA's too) and the CLI's."""
    var = Path(services.extra_env["TESSERA_VAR_DIR"])
    found = [key_path(cli_dir(), "cli"), signing_key_path(cli_dir(), "cli"), ca_key_path(services.cert_dir)]
    for other, handle in services.handles.items():
        if other == name:
            continue
        found += [services.identity_dir(other) / f"{other}.key", services.cert_dir / f"{other}.key",
                  Path(f"/proc/{handle.pid}/environ"), services.home_dir(other)]
        if other in DATABASES:
            found.append(var / DATABASES[other])
    missing = [path for path in found if not path.exists()]
    assert not missing, f"nothing to try on: {missing}"
    return found


def _bridge_folders(pid: int) -> list[Path]:
    """The process's SPIFFE bridge socket folders (TESSERA_CLIENT_TLS=spiffe-bridge), in its box's own /tmp."""
    return list(Path(f"/proc/{pid}/root/tmp").glob("tessera-spiffe-*"))


def test_outside_any_box_a_service_uid_reads_nothing_of_another(boxed_set):
    """Ownership and modes first: a process with a service's uid that left its box (or never had one)."""
    # On gRPC's own TLS, the default, no process holds a plaintext local socket that would speak as it.
    assert [name for name, handle in boxed_set.handles.items() if _bridge_folders(handle.pid)] == []
    shared = REPO_ROOT / "README.md"  # the repository is read-only to every service: the probe reads what it may
    for name, handle in boxed_set.handles.items():
        paths = [shared, *_secrets_of_others(boxed_set, name)]
        # The system's python: the venv's interpreter lives under /root, which this uid cannot enter.
        probe = subprocess.run(["setpriv", f"--reuid={handle.uid}", f"--regid={handle.uid}", "--clear-groups",
                                "/usr/bin/python3", "-I", "-c", PROBE, *map(str, paths)],
                               capture_output=True, text=True, timeout=60, cwd="/")
        found = json.loads(probe.stdout)
        assert found.pop(str(shared)) == "READ", probe.stderr
        assert all(outcome == "PermissionError" for outcome in found.values()), (name, found)


def _in_box(services: ServiceSet, name: str, program: list[str]) -> subprocess.CompletedProcess:
    """`program` run with exactly the view and the uid of the service `name`."""
    user = services.users[name]
    read, write = os.pipe()
    try:
        command = boxed_command(user.uid, program, list(user.grants), list(user.hidden), REPO_ROOT, write)
        return subprocess.run(command, capture_output=True, text=True, timeout=60, pass_fds=(write,))
    finally:
        os.close(write)
        os.close(read)


# Reads the warehouse, then changes a row and takes the change back (SQLite writes its journal beside it).
WAREHOUSE_PROBE = """
import sqlite3, sys
try:
    connection = sqlite3.connect(sys.argv[1], isolation_level=None)
    connection.execute("SELECT count(*) FROM regions").fetchone()
except sqlite3.Error as error:
    print("no access:", error)
    raise SystemExit
try:
    connection.execute("BEGIN IMMEDIATE")
    connection.execute("UPDATE regions SET name = name || ' (changed)'")
    connection.execute("ROLLBACK")
    print("read, write")
except sqlite3.Error as error:
    print("read:", error)
"""


def test_the_warehouse_is_read_by_resources_written_by_the_broker_and_closed_to_the_rest(boxed_set):
    warehouse = boxed_set.extra_env["TESSERA_RESOURCES_WAREHOUSE_URL"].removeprefix("sqlite:///")
    found = {name: _in_box(boxed_set, name, [sys.executable, "-I", "-c", WAREHOUSE_PROBE, warehouse]).stdout.strip()
             for name in boxed_set.users}
    assert found.pop("capabilities") == "read, write", "the broker's change credential"
    assert found.pop("resources").startswith("read"), "the gateway's read credential"
    assert all(outcome.startswith("no access") for outcome in found.values()), found


def test_inside_its_box_a_service_sees_nothing_of_another(boxed_set):
    """The box second: with exactly a service's view, the same paths are gone or closed."""
    for name in boxed_set.users:
        own = boxed_set.identity_dir(name) / f"{name}.key"
        paths = [own, *_secrets_of_others(boxed_set, name)]
        probe = _in_box(boxed_set, name, [sys.executable, "-I", "-c", PROBE, *map(str, paths)])
        assert probe.returncode == 0, probe.stderr
        found = json.loads(probe.stdout)
        assert found.pop(str(own)) == "READ", "the probe reads its own key"
        assert all(outcome in ("PermissionError", "FileNotFoundError") for outcome in found.values()), (name, found)


def test_a_second_start_beside_the_running_set_finds_each_service_its_own_uid(boxed_set):
    """What `tessera up` run again meanwhile would choose: the running services' uids, the broker's too while its
    boxed tool servers run under it, so no running service's files are handed to another uid."""
    var = Path(boxed_set.extra_env["TESSERA_VAR_DIR"])
    running = {name: handle.uid for name, handle in boxed_set.handles.items()}
    broker = boxed_set.handles["capabilities"]
    # The broker opens its tool servers in the background once it serves (warm_up): wait for the tickets
    # server to be running under it, not for a fixed time.
    deadline = time.monotonic() + 90
    while True:
        used = ids_in_use()
        descendants = [holder for holder in used[broker.uid] if holder.what != holder.lineage[-1]]
        if any("services.mcp_tickets" in holder.what for holder in descendants) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert all(holder.of_service("capabilities") for holder in used[broker.uid]), used[broker.uid]
    assert allocate_ids(boxed_set.names, var, used) == running
    # Its tool server as the broker starts it, under the broker's uid: a descendant of the broker.
    assert any("services.mcp_tickets" in holder.what for holder in descendants), used[broker.uid]


def test_a_process_under_a_services_uid_that_the_service_did_not_start_moves_it(boxed_set):
    var = Path(boxed_set.extra_env["TESSERA_VAR_DIR"])
    uid = boxed_set.handles["host"].uid
    stray = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "60"])
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and Path(f"/proc/{stray.pid}/status").read_text().count(f"\t{uid}\t") < 2:
            time.sleep(0.05)
        assert allocate_ids(["host"], var)["host"] != uid
    finally:
        stray.kill()
        stray.wait()
