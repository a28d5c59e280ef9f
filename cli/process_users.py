"""One user per service when the launcher runs as root: which uid each service gets and which files it owns.

Allocated the way systemd's DynamicUser does it: a uid from the range systemd reserves for that (61184-65519),
derived from the service's name and the var folder so the same deployment gets the same uid every time (its
files stay its own across runs), moved on to the next free one if /etc/passwd, /etc/group or a running process
already uses it. No /etc/passwd entry is made; each service's group has its uid's number.

Each service then owns its own files, 0700 folders and 0600 files: its identity folder, ready-file folder, home,
log, its folder under the var folder (var/<name>, where its defaults put its database) and the folder of any
SQLite or DuckDB database its own settings name. The warehouse is the one file two services hold: the resources
service owns it (its read-only credential) and the broker's group may write it (the broker's change credential),
0660 in a 2770 folder. Whatever else the services share (the repository, the virtual environment, the
interpreter) is root's and read-only to them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cli.service_box import Grant, interpreter_paths
from shared.paths import REPO_ROOT

RESERVED_IDS = range(61184, 65520)  # systemd's DynamicUser range
DATABASE_SCHEMES = ("sqlite:///", "duckdb:///")
# The warehouse's owner reads it; the broker writes proposed data changes into it through its group.
WAREHOUSE_READER, WAREHOUSE_WRITER = "resources", "capabilities"
WAREHOUSE_SETTINGS = {WAREHOUSE_READER: "TESSERA_RESOURCES_WAREHOUSE_URL",
                      WAREHOUSE_WRITER: "TESSERA_CAPABILITIES_CHANGES_URL"}
DATABASE_COMPANIONS = ("-journal", "-wal", "-shm")


class OwnershipError(Exception):
    """A file a service would need that the launcher may not hand it; the message says which and why."""


@dataclass(frozen=True)
class ServiceUser:
    """What one service runs as and may see."""

    name: str
    uid: int
    grants: tuple[Grant, ...]
    hidden: tuple[Path, ...]


def ids_in_use() -> dict[int, set[str]]:
    """uids and gids named in /etc/passwd and /etc/group or held by a running process → who holds each (the
    table, or the process's command line)."""
    used: dict[int, set[str]] = {}
    for table in (Path("/etc/passwd"), Path("/etc/group")):
        try:
            lines = table.read_text().splitlines()
        except OSError:
            continue
        for fields in (line.split(":") for line in lines):
            if len(fields) > 2 and fields[2].isdigit():
                used.setdefault(int(fields[2]), set()).add(str(table))
    for process in Path("/proc").glob("[0-9]*"):
        try:
            lines = (process / "status").read_text().splitlines()
            command = (process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # the process ended meanwhile
            continue
        for line in lines:
            if line.startswith(("Uid:", "Gid:")):
                for value in line.split()[1:]:
                    used.setdefault(int(value), set()).add(command)
    return used


def _free_for(name: str, holders: set[str]) -> bool:
    """Whether a uid held by these is still this service's: only its own processes hold it (a set of this
    deployment still running, whose files must not change hands)."""
    return all(holder.endswith(f" -m services.{name}") for holder in holders)


def allocate_ids(names: Iterable[str], var_dir: Path, used: Mapping[int, set[str]] | None = None) -> dict[str, int]:
    """A stable uid for each service of the deployment kept in `var_dir`, used by nothing else."""
    used = ids_in_use() if used is None else used
    chosen: dict[str, int] = {}
    for name in names:
        digest = hashlib.sha256(f"{var_dir.resolve()}\0{name}".encode()).digest()
        start = int.from_bytes(digest[:8], "big") % len(RESERVED_IDS)
        free = (RESERVED_IDS[(start + step) % len(RESERVED_IDS)] for step in range(len(RESERVED_IDS)))
        uid = next((uid for uid in free if _free_for(name, used.get(uid, set())) and uid not in chosen.values()),
                   None)
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
    return [database] + [database.with_name(database.name + suffix) for suffix in DATABASE_COMPANIONS]


def _holds_only(folder: Path, databases: list[Path]) -> bool:
    """Whether `folder` holds nothing but these databases and their journals: a folder of their own."""
    allowed = {path.name for database in databases for path in _companions(database)}
    return folder.is_dir() and all(entry.name in allowed for entry in folder.iterdir())


def give(path: Path, uid: int, gid: int, mode: int) -> None:
    """Make `path` (never a symbolic link's target) uid's, with `mode`."""
    if path.is_symlink():
        raise OwnershipError(f"{path} is a symbolic link; a service's own files must be real files")
    os.chown(path, uid, gid, follow_symlinks=False)
    os.chmod(path, mode)


def give_tree(folder: Path, uid: int, gid: int | None = None, folder_mode: int = 0o700,
              file_mode: int = 0o600) -> None:
    """`folder` and everything in it, uid's (group `gid`, the uid's own by default)."""
    gid = uid if gid is None else gid
    give(folder, uid, gid, folder_mode)
    for root, folders, files in os.walk(folder):
        for entry in folders:
            give(Path(root) / entry, uid, gid, folder_mode)
        for entry in files:
            give(Path(root) / entry, uid, gid, file_mode)


def _own_folder(folder: Path, uid: int, writable: bool = True) -> Grant:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    give_tree(folder, uid)
    return Grant(folder, writable)


@dataclass(frozen=True)
class _Warehouse:
    file: Path
    grant: Grant


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
        give_tree(warehouse.parent, reader, writer, folder_mode=0o2770, file_mode=0o660)
        return _Warehouse(warehouse, Grant(warehouse.parent, writable=True))
    for path in _companions(warehouse):
        if path.exists():
            give(path, reader, writer, 0o660)
    return _Warehouse(warehouse, Grant(warehouse, writable=True))


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
    for name, uid in ids.items():
        grants = [_own_folder(grant.path, uid, grant.writable) for grant in private[name]]
        grants.append(_own_folder(var_dir / name, uid))
        for database in _database_files(name, envs[name]):
            if warehouse is None or database != warehouse.file:
                grants.append(_database_grant(name, database, uid, var_dir))
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
                                  tuple(dict.fromkeys(secret_folders + others)))
    return users


def _database_grant(name: str, database: Path, uid: int, var_dir: Path) -> Grant:
    """A database the service's settings name: inside its own var folder it is already its own; elsewhere its
    folder becomes its own if it holds nothing but that database (never a folder other things live in)."""
    if database.is_relative_to(var_dir / name):
        return Grant(var_dir / name, writable=True)
    if not database.parent.exists():
        return _own_folder(database.parent, uid)
    if not _holds_only(database.parent, [database]):
        raise OwnershipError(
            f"{name}'s database {database} is in a folder that holds other files; running as root, tessera gives "
            f"each service a user of its own, and can hand {name} only a folder of its own: move the database "
            f"into one (or under {var_dir / name})")
    give_tree(database.parent, uid)
    return Grant(database.parent, writable=True)
