"""The seccomp filter of a tool server's box: system calls no tool server needs, which an escape would.

A classic-BPF program (what bubblewrap's `--seccomp FD` loads) that answers EPERM for a short deny list —
tracing and reading other processes' memory, kernel keyrings, BPF and perf, userfaultfd and io_uring,
mounts and namespaces, modules, kexec, reboot, swap, accounting, the kernel log — and kills a process that
calls in through another architecture's ABI (on x86_64 the 32-bit and x32 entry points), which would
otherwise bypass the numbers below. Written out here rather than through libseccomp: its Python binding is
not on PyPI, and the program is a few dozen fixed instructions.
"""

from __future__ import annotations

import platform
import struct

# linux/audit.h, linux/seccomp.h, linux/filter.h
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM = 1
LOAD_WORD, JUMP_IF_EQUAL, JUMP_IF_AT_LEAST, RETURN = 0x20, 0x15, 0x35, 0x06
ARCH_OFFSET, NUMBER_OFFSET = 4, 0  # struct seccomp_data: nr, then arch

# x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl).
DENIED_X86_64 = {
    "ptrace": 101, "syslog": 103, "pivot_root": 155, "acct": 163, "mount": 165, "umount2": 166, "swapon": 167,
    "swapoff": 168, "reboot": 169, "init_module": 175, "delete_module": 176, "quotactl": 179,
    "lookup_dcookie": 212, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
    "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
}


def _instruction(code: int, k: int, true_jump: int = 0, false_jump: int = 0) -> bytes:
    return struct.pack("<HBBI", code, true_jump, false_jump, k)


def program() -> bytes | None:
    """The filter for this machine, or None where no deny list is written for its architecture (the box
    then relies on its namespaces and dropped capabilities alone)."""
    if platform.machine() != "x86_64":
        return None
    numbers = sorted(DENIED_X86_64.values())
    # Layout: 4 checks, one comparison per number, then allow, deny, kill. A jump's offset counts the
    # instructions it skips after its own.
    allow_at = 4 + len(numbers)
    deny_at, kill_at = allow_at + 1, allow_at + 2
    code = [_instruction(LOAD_WORD, ARCH_OFFSET),
            _instruction(JUMP_IF_EQUAL, AUDIT_ARCH_X86_64, 0, kill_at - 2),
            _instruction(LOAD_WORD, NUMBER_OFFSET),
            _instruction(JUMP_IF_AT_LEAST, X32_SYSCALL_BIT, kill_at - 4, 0)]
    code += [_instruction(JUMP_IF_EQUAL, number, deny_at - (4 + index) - 1, 0) for index, number in enumerate(numbers)]
    code += [_instruction(RETURN, SECCOMP_RET_ALLOW),
             _instruction(RETURN, SECCOMP_RET_ERRNO | EPERM),
             _instruction(RETURN, SECCOMP_RET_KILL_PROCESS)]
    return b"".join(code)
