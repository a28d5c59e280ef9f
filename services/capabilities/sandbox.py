"""The box every stdio MCP server the broker starts runs in (§8), with Debian's bubblewrap.

Outside tool servers are the least trusted code in the system, so a boxed server has:
- its own user, mount, PID, IPC, UTS and network namespaces (cgroup too where the kernel allows), every
  capability dropped, no user namespace of its own inside, a session of its own (no terminal to inject
  into), a seccomp filter (syscall_filter) over calls no tool server needs, and it dies with the broker;
- no network at all: its namespace holds only a loopback of its own, so no service port, no bridge socket
  and no abstract socket of the host is reachable. A server that needs hosts is run as a streamable-HTTP
  server instead (its own pod, or a box of its own), where egress can be filtered;
- read-only: the system's /usr with the usual /bin, /lib… links, the few /etc files a dynamic binary reads,
  the Python installation when its command is the broker's own interpreter, and the paths its policy lists
  under `read`. The var folder (every service's keys and databases) and the folders of keys (the
  certificates, the operator CLI's) are covered wherever a bound path holds them, compared resolved; a
  read path inside one, or a data folder holding one, is refused (the server is then not started);
- writable: a private /tmp, and the `data` folder its policy declares (created 0700), which is also its
  working directory;
- exactly the environment variables its policy declares. bubblewrap's own pid 1 in the box keeps the
  environment bubblewrap was started with (clearing the environment inside is not enough), so bubblewrap
  starts with none: the SDK starts `box_exec`, which hands bubblewrap its options, the variables among
  them, through a pipe (`--args FD`: never on a command line another process can read; only the server's
  command is) and replaces itself with bubblewrap under an empty environment.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from services.capabilities import syscall_filter
from shared.paths import cert_dir, cli_dir, var_dir

# A box's arguments travel through one pipe written before bubblewrap runs, so they must fit its buffer.
MAX_ARGUMENT_BYTES = 60_000
SUPPORT_CHECK_SECONDS = 10.0
NAMESPACES = ("--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
              "--unshare-cgroup-try")
# --disable-userns: no namespace of its own inside the box (where most kernel escapes start).
HARDENING = ("--die-with-parent", "--new-session", "--cap-drop", "ALL", "--disable-userns",
             "--hostname", "tool-server")
# Top-level links (or folders, on systems without a merged /usr) a dynamic binary resolves through.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/alternatives")
SHIM = "services.capabilities.box_exec"
SPEC_VARIABLE = "TESSERA_BOX"


class SandboxUnavailable(Exception):
    """A server that must be boxed cannot be here: it is not started. The message says why."""


@dataclass(frozen=True)
class Box:
    """One server's box, its paths filled in: what it may read, the folder it may write (or none)."""

    read: tuple[Path, ...] = ()
    data: Path | None = None


@dataclass(frozen=True)
class Launch:
    """How the SDK starts a boxed server: the shim's command and the environment that carries the box."""

    command: list[str]
    env: dict[str, str]


def bwrap_path() -> str | None:
    return shutil.which("bwrap", path=os.environ.get("PATH") or "/usr/bin:/bin")


@functools.cache
def unavailable() -> str:
    """Why no server can be boxed on this machine ("" when one can): bubblewrap missing, or no user
    namespaces. Checked once per process by making a real (empty) box."""
    bwrap = bwrap_path()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed: `make setup` installs Debian's package"
    try:
        result = subprocess.run([bwrap, *NAMESPACES, *HARDENING, "--ro-bind", "/", "/", "true"], env={},
                                stdin=subprocess.DEVNULL, capture_output=True, timeout=SUPPORT_CHECK_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not make a box: {type(exc).__name__}: {exc}"[:300]
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip() or f"exit status {result.returncode}"
        return f"bubblewrap could not make a box (user namespaces unavailable?): {detail}"[:300]
    return ""


def _interpreter_paths() -> list[Path]:
    """What the broker's own interpreter needs to run a module: its virtualenv and the installation the
    virtualenv points at, as named and resolved (links into them land inside the box), nothing around them."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return sorted({Path(p) for p in prefixes} | {Path(os.path.realpath(p)) for p in prefixes})


def _system_arguments() -> list[str]:
    arguments = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINKS:
        if os.path.islink(name):
            arguments += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            arguments += ["--ro-bind", name, name]
    for name in SYSTEM_FILES:
        arguments += ["--ro-bind-try", name, name]
    return arguments


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class Hidden:
    """Folders no box shows: the var folder (every service's keys and databases; a server's data folder
    may lie inside it) and the folders of keys (the certificates, the operator CLI's: nothing of a box may
    lie inside them). Compared resolved, so `..`, links and relative settings cannot slip past."""

    var: Path
    keys: tuple[Path, ...]

    @classmethod
    def here(cls) -> Hidden:
        return cls(_real(var_dir()), (_real(cert_dir()), _real(cli_dir())))

    @property
    def folders(self) -> tuple[Path, ...]:
        return (self.var, *self.keys)


def problem(box: Box, hidden: Hidden) -> str:
    """Why this box cannot be made, "" if it can: a read path that does not exist or lies in a hidden
    folder, a data folder that holds a hidden folder or lies in a folder of keys."""
    for path in box.read:
        if not path.exists():
            return f"the box's read path {path} does not exist"
        if inside := next((f for f in hidden.folders if _inside(_real(path), f)), None):
            return f"the box's read path {path} lies in {inside}, which holds keys or databases"
    if box.data is not None:
        data = _real(box.data)
        if held := next((f for f in hidden.folders if _inside(f, data)), None):
            return f"the box's data folder {box.data} holds {held}, which holds keys or databases"
        if inside := next((f for f in hidden.keys if _inside(data, f)), None):
            return f"the box's data folder {box.data} lies in {inside}, a folder of keys"
    return ""


def bwrap_arguments(command: list[str], env: dict[str, str], box: Box, hidden: Hidden) -> list[str]:
    """bubblewrap's options for running `command` boxed (the command itself follows them on bubblewrap's
    command line): namespaces and hardening, the file system and the environment. Each read path is bound
    read-only where the server names it, from where it really is; a hidden folder inside one is covered by
    an empty tmpfs at its place in the box; the data folder is bound writable last."""
    arguments = [*NAMESPACES, *HARDENING, *_system_arguments(), "--proc", "/proc", "--dev", "/dev",
                 "--tmpfs", "/tmp"]
    readable = list(box.read)
    if command and command[0] == sys.executable:
        readable = _interpreter_paths() + readable
    masks = []
    for path in readable:
        source = _real(path)
        arguments += ["--ro-bind", str(source), str(path)]
        masks += [path / folder.relative_to(source) for folder in hidden.folders if _inside(folder, source)]
    for mask in masks:
        arguments += ["--tmpfs", str(mask)]
    if box.data is not None:
        arguments += ["--bind", str(_real(box.data)), str(box.data)]
    arguments += ["--chdir", str(box.data or "/")]
    for name, value in sorted(env.items()):
        arguments += ["--setenv", name, value]
    return arguments


def enclose(command: list[str], env: dict[str, str], box: Box, hidden: Hidden | None = None) -> Launch:
    """The launch of `command` in its box, or SandboxUnavailable (never an unboxed start)."""
    hidden = hidden or Hidden.here()
    reason = unavailable() or problem(box, hidden)
    if reason:
        raise SandboxUnavailable(reason)
    if box.data is not None:
        box.data.mkdir(mode=0o700, parents=True, exist_ok=True)
        box.data.chmod(0o700)
    arguments = bwrap_arguments(command, env, box, hidden)
    if sum(len(part.encode()) + 1 for part in arguments) > MAX_ARGUMENT_BYTES:
        raise SandboxUnavailable(f"the box's command, paths and environment exceed {MAX_ARGUMENT_BYTES} bytes")
    seccomp = syscall_filter.program()
    spec = json.dumps({"bwrap": bwrap_path(), "arguments": arguments, "command": command,
                       "seccomp": seccomp.hex() if seccomp else ""})
    return Launch([sys.executable, "-m", SHIM], {SPEC_VARIABLE: spec})
