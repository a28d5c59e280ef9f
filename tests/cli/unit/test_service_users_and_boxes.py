"""Which uid each service gets, and what its box shows it (cli/process_users.py, cli/service_box.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cli.process_users import (
    RESERVED_IDS,
    Holder,
    OwnershipError,
    ServiceUser,
    allocate_ids,
    database_file,
    give,
    give_tree,
    settle,
)
from cli.service_box import Grant, exit_status, mounts
from shared.paths import REPO_ROOT

NAMES = ("agent", "compiler", "resources", "capabilities", "host", "web", "mcp")


def test_uids_are_stable_per_deployment_distinct_and_in_systemds_dynamic_range(tmp_path):
    first = allocate_ids(NAMES, tmp_path / "var", used={})
    assert first == allocate_ids(NAMES, tmp_path / "var", used={}), "the same deployment, the same uids"
    assert len(set(first.values())) == len(NAMES) and all(uid in RESERVED_IDS for uid in first.values())
    assert first != allocate_ids(NAMES, tmp_path / "other-var", used={}), "another deployment, other uids"


def _process(*lineage: str) -> Holder:
    return Holder(lineage[0], lineage)


def test_a_uid_in_use_is_passed_over_unless_only_the_service_itself_holds_it(tmp_path):
    wanted = allocate_ids(["host"], tmp_path, used={})["host"]
    after = wanted + 1 if wanted + 1 in RESERVED_IDS else RESERVED_IDS.start
    taken = {wanted: {Holder("/etc/passwd")}, after: {_process("sleep 100")}}
    moved = allocate_ids(["host"], tmp_path, used=taken)["host"]
    assert moved not in taken and moved in RESERVED_IDS
    still_running = {wanted: {_process("/work/main/.venv/bin/python -m services.host")}}
    assert allocate_ids(["host"], tmp_path, used=still_running, owners={"host": wanted})["host"] == wanted, \
        "its files keep their owner"
    web = allocate_ids(["web"], tmp_path, used={})["web"]
    another_service = {web: {_process("/work/main/.venv/bin/python -m services.host")}}
    assert allocate_ids(["web"], tmp_path, used=another_service, owners={"web": web})["web"] != web


BROKER = "/work/main/.venv/bin/python -m services.capabilities"


def test_the_brokers_tool_servers_running_under_its_uid_do_not_move_it(tmp_path):
    """A second `tessera up` beside a running one: the broker's boxed MCP servers hold its uid too, and its files
    must not be handed to another uid while it runs."""
    broker = allocate_ids(["capabilities"], tmp_path, used={})["capabilities"]
    tool_server = "bwrap --args 5 -- /usr/bin/python3 -m services.mcp_tickets"
    running = {broker: {_process(BROKER), _process(tool_server, BROKER),
                        _process("/usr/bin/python3 -m services.mcp_tickets", "bwrap --args 5 -- ...", tool_server,
                                 BROKER)}}
    assert allocate_ids(["capabilities"], tmp_path, used=running, owners={"capabilities": broker}) == \
        {"capabilities": broker}


def test_a_uid_held_by_a_process_apart_from_the_service_or_by_another_deployment_moves_it(tmp_path):
    broker = allocate_ids(["capabilities"], tmp_path, used={})["capabilities"]
    apart = {broker: {_process(BROKER), _process("sleep 100")}}  # not started by the broker
    assert allocate_ids(["capabilities"], tmp_path, used=apart, owners={"capabilities": broker}) != \
        {"capabilities": broker}
    # Another deployment's broker with the same uid: this deployment's var folder is not that uid's.
    assert allocate_ids(["capabilities"], tmp_path, used={broker: {_process(BROKER)}},
                        owners={"capabilities": 0}) != {"capabilities": broker}
    assert allocate_ids(["capabilities"], tmp_path, used={broker: {_process(BROKER)}}) != {"capabilities": broker}


def test_database_files_from_urls():
    assert database_file("sqlite:////srv/host.sqlite") == Path("/srv/host.sqlite")
    assert database_file("duckdb:///var/w.duckdb?x=1") == (REPO_ROOT / "var" / "w.duckdb").resolve()
    assert database_file("sqlite:///:memory:") is None
    assert database_file("postgresql+psycopg://tessera@db/host") is None


def test_bubblewraps_status_reads_like_a_processs_own():
    assert [exit_status(code) for code in (0, 2, 128 + 9, 128 + 15)] == [0, 2, -9, -15]


def _pairs(args: list[str]) -> list[tuple[str, ...]]:
    """bubblewrap's arguments as (option, path[, path]) steps, --perms folded into the step it applies to."""
    steps, index = [], 0
    while index < len(args):
        option = args[index]
        if option == "--perms":
            steps.append((args[index + 2], args[index + 3], args[index + 1]))
            index += 4
        elif option in ("--ro-bind", "--bind", "--dev-bind"):
            steps.append((option, args[index + 1], args[index + 2]))
            index += 3
        else:
            raise AssertionError(f"unexpected {option}")
    return steps


def test_a_folder_the_uid_cannot_enter_becomes_an_empty_tmpfs_with_only_the_granted_paths(tmp_path):
    closed = tmp_path / "run"
    (closed / "identity" / "host").mkdir(parents=True)
    closed.chmod(0o700)
    secret = tmp_path / "certs"
    secret.mkdir()
    steps = _pairs(mounts(61400, [Grant(closed / "identity" / "host")], [secret]))
    assert steps[0] == ("--ro-bind", "/", "/")
    position = {step: index for index, step in enumerate(steps)}
    # tmp_path is under /tmp, which every box empties: the granted folder's ancestors are made again, 0755.
    made = [step for step in steps if step[0] == "--dir"]
    assert ("--dir", str(closed), "0755") in made and ("--dir", str(closed / "identity"), "0755") in made
    bind = ("--ro-bind", str(closed / "identity" / "host"), str(closed / "identity" / "host"))
    assert position[("--dir", str(closed / "identity"), "0755")] < position[bind]
    assert ("--tmpfs", str(secret), "0700") not in steps, "under /tmp it is gone anyway"


def test_hidden_folders_are_emptied_after_every_bind_and_writable_grants_are_bound_writable(tmp_path):
    outside = Path("/work") if Path("/work").is_dir() else Path(REPO_ROOT)
    own = tmp_path / "own"
    own.mkdir()
    steps = _pairs(mounts(61400, [Grant(own, writable=True), Grant(outside)], [REPO_ROOT / "var" / "certs"]))
    assert ("--bind", str(own), str(own)) in steps
    assert not any(step[1] == str(outside) for step in steps), "visible read-only as it is: no bind needed"
    if (REPO_ROOT / "var" / "certs").is_dir():
        assert steps[-1] == ("--tmpfs", str(REPO_ROOT / "var" / "certs"), "0700")


def test_a_hidden_folder_that_holds_a_grant_is_not_hidden(tmp_path):
    parent = REPO_ROOT
    steps = _pairs(mounts(61400, [Grant(REPO_ROOT / "cli", writable=True)], [parent]))
    assert ("--tmpfs", str(parent), "0700") not in steps


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_a_database_in_a_folder_shared_with_other_files_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("someone else's")
    env = {"TESSERA_HOST_DATABASE_URL": f"sqlite:///{shared / 'host.sqlite'}"}
    with pytest.raises(OwnershipError, match="holds other files"):
        settle({"host": 61400}, {"host": []}, {"host": env}, tmp_path / "var", [], "sqlite:///nowhere.sqlite")
    assert shared.stat().st_uid == 0, "nothing was handed over"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_a_database_in_a_folder_of_its_own_becomes_the_services(tmp_path):
    own = tmp_path / "host-db"
    own.mkdir()
    (own / "host.sqlite").write_bytes(b"")
    env = {"TESSERA_HOST_DATABASE_URL": f"sqlite:///{own / 'host.sqlite'}"}
    users = settle({"host": 61400}, {"host": []}, {"host": env}, tmp_path / "var", [], "sqlite:///nowhere.sqlite")
    assert Grant(own, writable=True) in users["host"].grants
    assert (own.stat().st_uid, oct(own.stat().st_mode & 0o777)) == (61400, oct(0o700))
    assert ((own / "host.sqlite").stat().st_uid, (own / "host.sqlite").stat().st_mode & 0o777) == (61400, 0o600)
    assert (tmp_path / "var" / "host").stat().st_uid == 61400


def test_outside_tmp_a_closed_folder_on_the_way_is_replaced_by_an_open_tmpfs(tmp_path):
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="tessera-box-"))  # not a folder every box empties
    try:
        closed = base / "run"
        (closed / "home" / "web").mkdir(parents=True)
        closed.chmod(0o700)
        base.chmod(0o755)
        steps = _pairs(mounts(61400, [Grant(closed / "home" / "web", writable=True)], []))
        tmpfs, made = ("--tmpfs", str(closed), "0755"), ("--dir", str(closed / "home"), "0755")
        bind = ("--bind", str(closed / "home" / "web"), str(closed / "home" / "web"))
        assert steps.index(tmpfs) < steps.index(made) < steps.index(bind)
    finally:
        shutil.rmtree(base)


def test_the_operator_is_told_when_the_broker_could_not_write_data_changes(tmp_path):
    from cli.process_users import warehouse_note

    both = {"resources": {}, "capabilities": {}}
    among_others = tmp_path / "var" / "warehouse.sqlite"
    among_others.parent.mkdir()
    among_others.write_bytes(b"")
    (tmp_path / "var" / "certs").mkdir()
    note = warehouse_note(both, f"sqlite:///{among_others}")
    assert note is not None and str(among_others) in note and "folder of its own" in note
    own = tmp_path / "warehouse" / "warehouse.sqlite"
    own.parent.mkdir()
    own.write_bytes(b"")
    assert warehouse_note(both, f"sqlite:///{own}") is None
    assert warehouse_note({"resources": {}}, f"sqlite:///{among_others}") is None, "no broker here writes it"


def _ids_and_mode(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid, info.st_mode & 0o7777


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_handing_a_folder_over_never_follows_a_link_planted_in_it(tmp_path):
    """A service's folder holds what its uid (or a boxed tool server under it) put there; root hands it over at
    every start. A link to a root-owned file outside must not make root give that file away."""
    outside = tmp_path / "outside"
    outside.mkdir()
    passwd = outside / "passwd"
    passwd.write_text("root:x:0:0::/root:/bin/sh\n")
    passwd.chmod(0o644)
    own = tmp_path / "capabilities"
    (own / "tickets").mkdir(parents=True)
    (own / "tickets" / "tickets.sqlite").write_bytes(b"")
    (own / "tickets" / "tickets.sqlite-journal").symlink_to(passwd)
    (own / "elsewhere").symlink_to(outside, target_is_directory=True)
    os.link(passwd, own / "hard")  # hard-linked: the same file as outside
    passed = give_tree(own, 61400)
    assert sorted(passed) == sorted([own / "tickets" / "tickets.sqlite-journal", own / "elsewhere", own / "hard"])
    assert _ids_and_mode(passwd) == (0, 0, 0o644) and _ids_and_mode(outside)[:2] == (0, 0)
    assert _ids_and_mode(own / "tickets" / "tickets.sqlite") == (61400, 61400, 0o600)
    assert _ids_and_mode(own / "tickets") == (61400, 61400, 0o700)
    assert give(own / "tickets" / "tickets.sqlite-journal", 61400, 61400, 0o660) == \
        [own / "tickets" / "tickets.sqlite-journal"]
    assert _ids_and_mode(passwd) == (0, 0, 0o644)
    link = tmp_path / "linked"
    link.symlink_to(own, target_is_directory=True)
    with pytest.raises(OwnershipError, match="symbolic link"):
        give_tree(link, 61400)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_what_was_passed_over_is_reported_per_service(tmp_path):
    var = tmp_path / "var"
    (var / "host").mkdir(parents=True)
    (var / "host" / "shadow").symlink_to("/etc/shadow")
    before = _ids_and_mode(Path("/etc/shadow"))
    users = settle({"host": 61400}, {"host": []}, {"host": {}}, var, [], "sqlite:///nowhere.sqlite")
    assert users["host"].passed_over == (var / "host" / "shadow",)
    assert _ids_and_mode(Path("/etc/shadow")) == before


# Stands in for bubblewrap: starts a "service" in its own process group, says where, never reports its pid.
SILENT_BOX = """
import subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(60)
"""
FAILING_BOX = "import sys; print('bwrap: Can\\'t mkdir /nowhere: Read-only file system'); sys.exit(1)"


def _boxed_set(tmp_path, monkeypatch, script: str):
    import sys

    from cli import launcher

    services = launcher.ServiceSet(tmp_path / "certs", tmp_path / "run", names=("host",), ephemeral_ports=True)
    handle = services.handles["host"]
    handle.log_path.parent.mkdir(parents=True)
    handle.ready_file.parent.mkdir(parents=True)
    handle.uid, handle.home = os.getuid(), tmp_path
    services.users["host"] = ServiceUser("host", os.getuid(), (), ())
    monkeypatch.setattr(launcher, "BOX_SETUP_SECONDS", 1.0)
    monkeypatch.setattr(launcher, "boxed_command",
                        lambda *args: [sys.executable, "-c", script, str(tmp_path / "child.pid")])
    return services, handle


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_box_that_does_not_say_its_processs_pid_is_ended_whole_and_is_a_failed_start(tmp_path, monkeypatch):
    from cli.launcher import StartupError

    services, handle = _boxed_set(tmp_path, monkeypatch, SILENT_BOX)
    with pytest.raises(StartupError, match="host did not start: bubblewrap did not report"):
        services._spawn(handle, truncate_log=True)
    child = int((tmp_path / "child.pid").read_text())
    assert handle.process.returncode is not None, "bubblewrap itself is ended"
    deadline = time.monotonic() + 5
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), "nothing it started is left holding the port"
    assert handle.pid != handle.process.pid, "never bubblewrap's own pid, which a SIGTERM would not stop"


def test_a_box_that_failed_first_is_a_failed_start_with_its_message(tmp_path, monkeypatch):
    from cli.launcher import StartupError

    services, handle = _boxed_set(tmp_path, monkeypatch, FAILING_BOX)
    with pytest.raises(StartupError, match=r"status 1\): bwrap: Can't mkdir /nowhere"):
        services._spawn(handle, truncate_log=True)


def test_a_restart_whose_box_failed_counts_as_a_crash_and_does_not_end_supervision(tmp_path, monkeypatch):
    from cli.supervisor import Supervisor

    services, handle = _boxed_set(tmp_path, monkeypatch, FAILING_BOX)
    said: list[str] = []
    supervisor = Supervisor(services, say=said.append)
    supervisor._watches["host"].restart_at = 0.0
    supervisor.poll()  # the restart fails: said, not raised
    assert said and "host did not start" in said[-1]
    supervisor.poll()  # the failed start is seen as a crash, and another restart is due
    assert supervisor._watches["host"].restart_at is not None and supervisor._watches["host"].streak == 1
