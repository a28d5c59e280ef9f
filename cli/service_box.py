"""The view of the file system a service gets when it runs as a user of its own, and the command that starts it.

Ownership and modes are what keep one service out of another's files; the box adds a second wall and makes the
service's own paths reachable at all. bubblewrap, run by root without a user namespace (so it keeps the right to
mount), builds a private mount namespace: the whole system read-only, a private /tmp and /dev/shm, every folder
named in `hidden` replaced by an empty one, and only the service's own paths bound back (writable where granted).
A folder on the way to a granted path that the service's uid may not enter (/root, a 0700 run folder) becomes an
empty 0755 tmpfs holding only the granted paths beneath it. Then `setpriv` drops to the service's uid and group
with no capabilities and no way to regain any, and starts the service.
"""

from __future__ import annotations

import shutil
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class BoxUnavailable(Exception):
    """What a box needs is missing (bubblewrap or setpriv); the message says how to get it."""


@dataclass(frozen=True)
class Grant:
    """A path the service may read (or, if writable, also write) inside its box."""

    path: Path
    writable: bool = False


def interpreter_paths() -> list[Path]:
    """Where the running Python really lives, read-only for every service: the installation (a pyenv build under
    /root, say, which a non-root uid could not even enter) and the virtual environment pointing at it."""
    found = {Path(sys.base_prefix).resolve(), Path(sys.base_exec_prefix).resolve(), Path(sys.prefix).resolve()}
    executable = Path(sys.executable).resolve()
    if not any(executable.is_relative_to(prefix) for prefix in found):
        found.add(executable.parent)
    return sorted(found)


def tools() -> tuple[str, str]:
    """bubblewrap and setpriv, by their full paths."""
    bwrap, setpriv = shutil.which("bwrap"), shutil.which("setpriv")
    if not bwrap:
        raise BoxUnavailable("running as root, each service needs its own user and that needs bubblewrap "
                             "('make sandbox' installs it), or run tessera as a normal user")
    if not setpriv:
        raise BoxUnavailable("running as root, each service needs its own user and that needs setpriv "
                             "(util-linux)")
    return bwrap, setpriv


def can_enter(folder: Path, uid: int, gid: int) -> bool:
    """Whether `uid` (in group `gid` only) may pass through `folder`."""
    info = folder.stat()
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _under(path: Path, roots: Iterable[Path]) -> Path | None:
    """The root among `roots` that holds `path` (or is it), if any."""
    return next((root for root in roots if path.is_relative_to(root)), None)


def mounts(uid: int, grants: list[Grant], hidden: list[Path]) -> list[str]:
    """bubblewrap's mount arguments for a service running as `uid` (its group has the same number).

    Order matters: bubblewrap reads a bind's source outside the box, so a bind of a folder would undo any mount
    made inside it before. Mounts therefore go from the shallowest path to the deepest, and hiding comes last."""
    emptied = [Path("/tmp"), Path("/dev/shm")]
    for grant in grants:  # a folder the uid cannot pass on the way to something granted
        for folder in reversed(grant.path.parents):
            if _under(folder, emptied):
                break
            if not can_enter(folder, uid, uid):
                emptied.append(folder)
                break
    # Shown again inside an emptied folder, or writable: everything else is visible, read-only, as it is.
    bound = [grant for grant in grants if grant.writable or _under(grant.path, emptied)]
    steps: list[tuple[int, list[str]]] = [(len(folder.parts), ["--perms", "0755", "--tmpfs", str(folder)])
                                          for folder in emptied[2:]]
    made = {grant.path for grant in bound}  # made by its bind
    for grant in bound:
        root = _under(grant.path.parent, emptied)
        for folder in reversed(grant.path.parents):
            if root is not None and folder.is_relative_to(root) and folder != root and folder not in made:
                steps.append((len(folder.parts), ["--perms", "0755", "--dir", str(folder)]))
                made.add(folder)
        steps.append((len(grant.path.parts), ["--bind" if grant.writable else "--ro-bind", str(grant.path),
                                              str(grant.path)]))
    # /proc stays the system's and writable: the broker's own unprivileged bubblewrap (its MCP servers' boxes)
    # writes its uid map there and mounts a proc of its own, which the kernel allows only beside a full one.
    args = ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--bind", "/proc", "/proc",
            "--perms", "1777", "--tmpfs", "/dev/shm", "--perms", "1777", "--tmpfs", "/tmp"]
    for _, step in sorted(steps, key=lambda item: item[0]):  # stable: a folder's --dir before its bind
        args += step
    for folder in sorted(set(hidden)):
        visible = not _under(folder, emptied) or _under(folder, [grant.path for grant in bound])
        if folder.is_dir() and visible and not any(grant.path.is_relative_to(folder) for grant in grants):
            args += ["--perms", "0700", "--tmpfs", str(folder)]
    return args


def boxed_command(uid: int, program: list[str], grants: list[Grant], hidden: list[Path], workdir: Path,
                  info_fd: int) -> list[str]:
    """The command that starts `program` as `uid` in its box; bubblewrap writes the program's pid, as JSON, to
    `info_fd` and closes it. bubblewrap stays as the program's parent: it exits with the program's status, or
    with 128 + N when signal N ended it. `--die-with-parent` changes nothing in that (the launcher stays
    bubblewrap's parent and waits for it): it kills the box's process if bubblewrap dies while the box is being
    made, though no longer once setpriv has changed its uid (the kernel forgets a parent-death signal then),
    which is why the launcher ends a box that failed by its whole process group."""
    bwrap, setpriv = tools()
    return [bwrap, *mounts(uid, grants, hidden), "--chdir", str(workdir), "--die-with-parent", "--info-fd",
            str(info_fd), "--",
            setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--", *program]


def exit_status(code: int) -> int:
    """bubblewrap's exit status as subprocess reports a process's own: -N for a program ended by signal N."""
    return -(code - 128) if code > 128 else code

