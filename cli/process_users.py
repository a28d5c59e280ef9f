"""One user per service when the launcher runs as root: which uid each service gets and which files it owns.

Allocated the way systemd's DynamicUser does it: a uid from the range systemd reserves for that (61184-65519),
derived from the service's name and the var folder so the same deployment gets the same uid every time (its
files stay its own across runs), moved on to the next free one if /etc/passwd, /etc/group or a running process
already uses it. A uid held only by this deployment's own service (its var folder is already that uid's, and
every process holding the uid is that service or descends from it, like the broker's boxed tool servers) is
kept: a second `tessera up` beside a running one must not hand the running service's files to another uid. No
/etc/passwd entry is made, so nothing else on the machine learns that these uids are taken (systemd's own
DynamicUser allocation among them); each service's group has its uid's number.

Each service then owns its own files, 0700 folders and 0600 files: its identity folder, ready-file folder, home,
log, its folder under the var folder (var/<name>, where its defaults put its database) and the folder of any
SQLite or DuckDB database its own settings name. The warehouse is the one file two services hold: the resources
service owns it (its read-only credential) and the broker's group may write it (the broker's change credential),
0660 in a 2770 folder; the broker can therefore change what the resources service reads there.

What this separates, and what it does not: ownership and modes keep one service's uid out of another's files and
/proc entries, inside its box or not; the var folder and the launcher's run folder, root's and 0700, keep it out
of whatever else lies in them (a file an operator left 0644 there). The repository, the virtual environment and
the interpreter are read-only to the services because their box mounts the whole system read-only
(cli/service_box.py), not because of who owns them; outside a box their own modes apply. The broker's MCP tool
servers run under the broker's uid: only their own box (services/capabilities/sandbox.py) separates them from
the broker, and a tool server may write its data folder (var/capabilities/tickets), which is the broker's. Root,
handing these folders over at every start, therefore never follows a symbolic link in them, nor hands over a
hard-linked file or anything but plain files and folders (give_tree): those are passed over and reported.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cli.service_box import Grant, interpreter_paths
from shared.paths import DATABASE_SIDE_FILES, REPO_ROOT

RESERVED_IDS = range(61184, 65520)  # systemd's DynamicUser range
DATABASE_SCHEMES = ("sqlite:///", "duckdb:///")
# The warehouse's owner reads it; the broker writes proposed data changes into it through its group.
WAREHOUSE_READER, WAREHOUSE_WRITER = "resources", "capabilities"
WAREHOUSE_SETTINGS = {WAREHOUSE_READER: "TESSERA_RESOURCES_WAREHOUSE_URL",
                      WAREHOUSE_WRITER: "TESSERA_CAPABILITIES_CHANGES_URL"}


class OwnershipError(Exception):
    """A file a service would need that the launcher may not hand it; the message says which and why."""


@dataclass(frozen=True)
class ServiceUser:
    """What one service runs as and may see."""

    name: str
    uid: int
    grants: tuple[Grant, ...]
    hidden: tuple[Path, ...]
    # Found among its files and left as they were (symbolic links, sockets, hard-linked files): the operator is
    # told, since a service has no reason to leave such things there.
    passed_over: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Holder:
    """Who holds an id: a table (/etc/passwd, /etc/group) or a running process, then with the command lines of
    that process and of each ancestor up the chain that holds the same id (the process's own first)."""

    what: str
    lineage: tuple[str, ...] = ()

    def of_service(self, name: str) -> bool:
        """Whether this is service `name`'s process or descends from it under its id: the service itself, or
        what it started (the broker's boxed tool servers: `bwrap ... -- python -m services.mcp_tickets`)."""
        return any(command.endswith(f" -m services.{name}") for command in self.lineage)


def _processes() -> dict[int, tuple[int, frozenset[int], str]]:
    """Every running process: pid → (parent pid, the uids and gids it holds, its command line)."""
    found = {}
    for process in Path("/proc").glob("[0-9]*"):
        try:
            lines = (process / "status").read_text().splitlines()
            command = (process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # the process ended meanwhile
            continue
        fields = {line.split(":", 1)[0]: line.split()[1:] for line in lines if ":" in line}
        if fields.get("State", [""])[0] == "Z":
            # A zombie runs nothing and holds no file; its uid is freed once it is reaped. Some are reaped late:
            # bubblewrap's intermediate process, reparented to a pid 1 that does not reap (a container's).
            continue
        ids = frozenset(int(value) for key in ("Uid", "Gid") for value in fields.get(key, []))
        found[int(process.name)] = (int(fields.get("PPid", ["0"])[0]), ids, command)
    return found


def ids_in_use() -> dict[int, set[Holder]]:
    """uids and gids named in /etc/passwd and /etc/group or held by a running process → who holds each."""
    used: dict[int, set[Holder]] = {}
    for table in (Path("/etc/passwd"), Path("/etc/group")):
        try:
            lines = table.read_text().splitlines()
        except OSError:
            continue
        for fields in (line.split(":") for line in lines):
            if len(fields) > 2 and fields[2].isdigit():
                used.setdefault(int(fields[2]), set()).add(Holder(str(table)))
    processes = _processes()
    for pid, (_, ids, command) in processes.items():
        for held in ids:
            lineage, ancestor, seen = [command], processes[pid][0], {pid}
            while ancestor in processes and ancestor not in seen and held in processes[ancestor][1]:
                seen.add(ancestor)
                lineage.append(processes[ancestor][2])
                ancestor = processes[ancestor][0]
            used.setdefault(held, set()).add(Holder(command, tuple(lineage)))
    return used


def _owner(path: Path) -> int | None:
    try:
        return path.lstat().st_uid
    except OSError:
        return None


def _free_for(name: str, uid: int, holders: set[Holder], owner: int | None) -> bool:
    """Whether `uid` may be service `name`'s: nothing holds it, or this deployment's `name` still runs as it (its
    var folder is already uid's, and every holder is that service or descends from it under the same uid), whose
    files must then not change hands."""
    return not holders or (owner == uid and all(holder.of_service(name) for holder in holders))


def allocate_ids(names: Iterable[str], var_dir: Path, used: Mapping[int, set[Holder]] | None = None,
                 owners: Mapping[str, int | None] | None = None) -> dict[str, int]:
    """A stable uid for each service of the deployment kept in `var_dir`, used by nothing else. `owners`: who
    owns each service's var folder now (read from var_dir by default)."""
    used = ids_in_use() if used is None else used
    chosen: dict[str, int] = {}
    for name in names:
        owner = _owner(var_dir / name) if owners is None else owners.get(name)
        digest = hashlib.sha256(f"{var_dir.resolve()}\0{name}".encode()).digest()
        start = int.from_bytes(digest[:8], "big") % len(RESERVED_IDS)
        free = (RESERVED_IDS[(start + step) % len(RESERVED_IDS)] for step in range(len(RESERVED_IDS)))
        uid = next((uid for uid in free if _free_for(name, uid, used.get(uid, set()), owner)
                    and uid not in chosen.values()), None)
        if uid is None:
            raise OwnershipError(f"no free uid left in {RESERVED_IDS.start}-{RESERVED_IDS.stop - 1} for {name}")
        chosen[name] = uid
    return chosen


def database_file(url: str) -> Path | None:
    """The file of a SQLite or DuckDB URL (relative paths from the repository, where services start)."""
    for scheme in DATABASE_SCHEMES:
        if url.startswith(scheme):
            path = url.removeprefix(scheme).split("?", 1)[0]
            return (REPO_ROOT / path).resolve() if path and path != ":memory:" else None
    return None


def _database_files(name: str, env: Mapping[str, str]) -> list[Path]:
    """The database files the service's own settings name (TESSERA_<NAME>_*_URL)."""
    own = f"TESSERA_{name.upper()}_"
    found = [database_file(value) for key, value in env.items() if key.startswith(own) and key.endswith("_URL")]
    return [path for path in found if path is not None]


def _named_paths(name: str, env: Mapping[str, str]) -> list[Grant]:
    """Files and folders the service's own settings name (policies, semantic models) and PYTHONPATH's entries:
    read-only, reachable from its box."""
    own = f"TESSERA_{name.upper()}_"
    values = [value for key, value in env.items() if key.startswith(own)]
    values += env.get("PYTHONPATH", "").split(os.pathsep)
    return [Grant(Path(value)) for value in values if os.path.isabs(value) and os.path.exists(value)]


def _companions(database: Path) -> list[Path]:
    return [database] + [database.with_name(database.name + suffix) for suffix in DATABASE_SIDE_FILES]


def _holds_only(folder: Path, databases: list[Path]) -> bool:
    """Whether `folder` holds nothing but these databases and their journals: a folder of their own."""
    allowed = {path.name for database in databases for path in _companions(database)}
    return folder.is_dir() and all(entry.name in allowed for entry in folder.iterdir())


# Opens a file or folder itself, never what a symbolic link in its place points to; a FIFO without waiting for
# a writer. Changing mode and owner through the open descriptor cannot be redirected by a path swapped meanwhile.
_OWN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _open_own(name: str | Path, dir_fd: int | None) -> int | None:
    """A descriptor of the regular file or folder `name` itself (relative to `dir_fd`); None for a symbolic link,
    anything not a regular file or folder (a socket, a device) and a file with other hard links: root must not
    hand over what may also live outside the folder it is handing over."""
    try:
        fd = os.open(name, _OWN, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):  # a symbolic link; a socket
            return None
        raise
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_nlink == 1):
        return fd
    os.close(fd)
    return None


def _hand_over(fd: int, uid: int, gid: int, mode: int) -> None:
    os.fchown(fd, uid, gid)
    os.fchmod(fd, mode)


def give(path: Path, uid: int, gid: int, mode: int) -> list[Path]:
    """Make `path` itself uid's, with `mode`; never a symbolic link's target. What was passed over: `path`, if it
    is a symbolic link or not a plain file or folder of its own."""
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = _open_own(path.name, parent)
    finally:
        os.close(parent)
    if fd is None:
        return [path]
    try:
        _hand_over(fd, uid, gid, mode)
    finally:
        os.close(fd)
    return []


def give_tree(folder: Path, uid: int, gid: int | None = None, folder_mode: int = 0o700,
              file_mode: int = 0o600) -> list[Path]:
    """`folder` and everything in it, uid's (group `gid`, the uid's own by default). The folder may hold what a
    less trusted uid put there (its owner's, from an earlier run), so the walk goes from descriptor to
    descriptor and never follows a symbolic link; what it passed over (links, sockets, hard-linked files) is
    returned, left as it was."""
    gid = uid if gid is None else gid
    try:  # a path the launcher chose: a symbolic link here is refused, not passed over
        top = os.open(folder, _OWN | os.O_DIRECTORY)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise OwnershipError(f"{folder} is a symbolic link or no folder; a service's own folders must be real "
                             "ones") from None
    passed: list[Path] = []
    try:
        _give_folder(top, folder, uid, gid, folder_mode, file_mode, passed)
    finally:
        os.close(top)
    return passed


def _give_folder(fd: int, shown: Path, uid: int, gid: int, folder_mode: int, file_mode: int,
                 passed: list[Path]) -> None:
    _hand_over(fd, uid, gid, folder_mode)
    for name in os.listdir(fd):
        entry = _open_own(name, fd)
        if entry is None:
            passed.append(shown / name)
            continue
        try:
            if stat.S_ISDIR(os.fstat(entry).st_mode):
                _give_folder(entry, shown / name, uid, gid, folder_mode, file_mode, passed)
            else:
                _hand_over(entry, uid, gid, file_mode)
        finally:
            os.close(entry)


def _own_folder(folder: Path, uid: int, writable: bool = True, passed: list[Path] | None = None) -> Grant:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    found = give_tree(folder, uid)
    if passed is not None:
        passed += found
    return Grant(folder, writable)


@dataclass(frozen=True)
class _Warehouse:
    file: Path
    grant: Grant
    passed_over: list[Path]


def _shared_warehouse(envs: Mapping[str, Mapping[str, str]], default_url: str) -> Path | None:
    """The warehouse file, if its reader and its writer both run here and name the same existing one."""
    if not all(name in envs for name in WAREHOUSE_SETTINGS):
        return None
    files = {database_file(envs[name].get(setting) or default_url) for name, setting in WAREHOUSE_SETTINGS.items()}
    warehouse = files.pop() if len(files) == 1 else None
    return warehouse if warehouse is not None and warehouse.exists() else None


def _warehouse(envs: Mapping[str, Mapping[str, str]], default_url: str, ids: Mapping[str, int]) -> _Warehouse | None:
    """The shared warehouse's grant: the reader owns it, the writer's group writes it. A folder of its own is
    shared whole (SQLite writes its journal beside the database); in a folder that holds anything else, only
    the files are (see warehouse_note)."""
    warehouse = _shared_warehouse(envs, default_url)
    if warehouse is None:
        return None
    reader, writer = ids[WAREHOUSE_READER], ids[WAREHOUSE_WRITER]
    if _holds_only(warehouse.parent, [warehouse]):
        passed = give_tree(warehouse.parent, reader, writer, folder_mode=0o2770, file_mode=0o660)
        return _Warehouse(warehouse, Grant(warehouse.parent, writable=True), passed)
    passed = [path for companion in _companions(warehouse) if os.path.lexists(companion)
              for path in give(companion, reader, writer, 0o660)]
    return _Warehouse(warehouse, Grant(warehouse, writable=True), passed)


def warehouse_note(envs: Mapping[str, Mapping[str, str]], default_url: str) -> str | None:
    """What the operator should know when the broker cannot write proposed data changes into the warehouse."""
    warehouse = _shared_warehouse(envs, default_url)
    if warehouse is None or _holds_only(warehouse.parent, [warehouse]):
        return None
    return (f"the broker cannot write data changes into {warehouse}: as a user of its own it may write the file "
            f"but not create SQLite's journal in {warehouse.parent}, which holds other files; give the warehouse a "
            "folder of its own (TESSERA_RESOURCES_WAREHOUSE_URL and TESSERA_CAPABILITIES_CHANGES_URL)")


def settle(ids: Mapping[str, int], private: Mapping[str, list[Grant]], envs: Mapping[str, Mapping[str, str]],
           var_dir: Path, secret_folders: list[Path], default_warehouse_url: str) -> dict[str, ServiceUser]:
    """Give each service its files and say what its box shows. `private` are the launcher's folders for it (made
    its own here, writable or not as granted); then its var folder and the databases its settings name. The
    interpreter and the repository are read-only to all; `secret_folders` (the deployment's keys, the CLI's)
    and every other service's own folders are hidden."""
    warehouse = _warehouse(envs, default_warehouse_url, ids)
    owned: dict[str, list[Grant]] = {}
    passed: dict[str, list[Path]] = {name: [] for name in ids}
    if warehouse is not None:
        passed[WAREHOUSE_READER] += warehouse.passed_over
    for name, uid in ids.items():
        grants = [_own_folder(grant.path, uid, grant.writable, passed[name]) for grant in private[name]]
        grants.append(_own_folder(var_dir / name, uid, passed=passed[name]))
        for database in _database_files(name, envs[name]):
            if warehouse is None or database != warehouse.file:
                grants.append(_database_grant(name, database, uid, var_dir, passed[name]))
        if warehouse is not None and name in WAREHOUSE_SETTINGS:
            grants.append(warehouse.grant)
        grants += [grant for grant in _named_paths(name, envs[name])
                   if not any(grant.path.is_relative_to(mine.path) for mine in grants)]
        owned[name] = list(dict.fromkeys(grants))
    shared_reads = [Grant(path) for path in interpreter_paths()] + [Grant(REPO_ROOT)]
    users = {}
    for name, uid in ids.items():
        others = [grant.path for other, grants in owned.items() if other != name for grant in grants
                  if grant.path.is_dir() and grant not in owned[name]]
        users[name] = ServiceUser(name, uid, tuple(shared_reads + owned[name]),
                                  tuple(dict.fromkeys(secret_folders + others)), tuple(passed[name]))
    return users


def _database_grant(name: str, database: Path, uid: int, var_dir: Path, passed: list[Path]) -> Grant:
    """A database the service's settings name: inside its own var folder it is already its own; elsewhere its
    folder becomes its own if it holds nothing but that database (never a folder other things live in)."""
    if database.is_relative_to(var_dir / name):
        return Grant(var_dir / name, writable=True)
    if not database.parent.exists():
        return _own_folder(database.parent, uid, passed=passed)
    if not _holds_only(database.parent, [database]):
        raise OwnershipError(
            f"{name}'s database {database} is in a folder that holds other files; running as root, tessera gives "
            f"each service a user of its own, and can hand {name} only a folder of its own: move the database "
            f"into one (or under {var_dir / name})")
    passed += give_tree(database.parent, uid)
    return Grant(database.parent, writable=True)
