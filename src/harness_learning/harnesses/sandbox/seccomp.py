"""A seccomp filter for harness code, assembled here as a classic BPF program (no dependency).

Why: the sandbox drops every capability, but some system calls reach large kernel surfaces
without one (io_uring, perf_event_open, keyctl, bpf, userfaultfd) or undo the sandbox's shape
(ptrace of a sibling, mount, unshare/setns into new namespaces). None of them is needed to run
Python, LangGraph or Solver-written code, so they fail with EPERM. `clone3` answers ENOSYS: its
flags live in memory a filter cannot read, and glibc then falls back to `clone`, whose flags
bubblewrap's `--disable-userns` and the dropped capabilities already bound.

The program is handed to bubblewrap (`--seccomp FD`), which installs it after its own setup,
so only the sandboxed program and what it starts run under it. A process of another
architecture than the filter's is killed; on x86_64 the x32 ABI is refused as a whole.

Also refused: `modify_ldt` (x86 segment tables, a history of kernel bugs), SysV shared memory
(`shmget`, `shmat`, `shmctl`, `shmdt`: segments outlive the process that made them and sit
outside the tmpfs sizes that bound /dev/shm and the scratch directory), `personality` except the
query 0xffffffff (an execution domain such as READ_IMPLIES_EXEC or ADDR_NO_RANDOMIZE weakens the
next exec), and `socket(AF_NETLINK, ...)` (the routing, audit and uevent interfaces of the
kernel; the sandbox's network namespace has nothing to configure). The two last are decided on
their first argument's low 32 bits, which is all the kernel reads of it (an `int`).

Why the risky calls that stay allowed do (this is a deny list over calls Python needs; Docker's
default profile is an allow list, and one here would have to follow every glibc and CPython
release, so the refusals are named instead):
- `clone`, `fork`, `execve`, `execveat`: `subprocess` and `tools.python` need them; the
  candidate's cgroup bounds the processes, `--disable-userns` and the dropped capabilities bound
  the flags (`clone3` answers ENOSYS, see above).
- `socket` of other families, `socketpair`, `connect`: the bridge is a Unix socket; the network
  namespace has only its own loopback.
- `prctl`, `seccomp`: threads name themselves, and a filter can only be narrowed; bubblewrap
  sets no_new_privs, so no set-uid program gains anything.
- `mmap`/`mprotect` with PROT_EXEC, `memfd_create`: ctypes and extension modules load code;
  a memfd is charged to the candidate's memory cgroup like any page.
- `ioctl`: terminals are not reachable (`--new-session`, /dev is bubblewrap's minimal one).
- SysV message queues and semaphores (`msgget`, `semget`, ...): small, bounded per IPC
  namespace by the kernel, and the namespace is the sandbox's own.
- `pidfd_open`, `pidfd_getfd`, `process_madvise`, `move_pages`, `kill`: they reach only
  processes the caller may ptrace-access, and the sandbox's PID namespace holds only the
  candidate's own processes.
- `personality(0xffffffff)`: reads the current domain; glibc and Python may ask.

The Docker backend gets the same lists as a Docker seccomp profile (`docker_profile`), so there
is one list of refused calls. Docker has no `--disable-userns`, so its profile also refuses
`clone` with any namespace flag (what Docker's own default profile does; without a capability
only a user namespace could be made, and from it the rest).
"""

from __future__ import annotations

import errno
import json
import os
import platform
import struct

# Syscalls refused with EPERM, by name; numbers per architecture below.
DENIED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open", "bpf",
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen",
    "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at", "userfaultfd", "fanotify_init", "swapon",
    "swapoff", "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "acct", "quotactl", "lookup_dcookie", "syslog", "settimeofday",
    "clock_settime", "adjtimex", "clock_adjtime", "vhangup", "modify_ldt", "shmget", "shmat",
    "shmctl", "shmdt",
)
"""Refused whatever their arguments (a name missing from an architecture's table does not
exist there: modify_ldt is x86 only)."""
NOT_IMPLEMENTED = ("clone3",)
AF_NETLINK = 16
PERSONALITY_QUERY = 0xFFFFFFFF
REFUSED_WHEN = (("socket", AF_NETLINK, True), ("personality", PERSONALITY_QUERY, False))
"""(call, value of its first argument, refused when equal (True) or when not equal (False))."""

X86_64 = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "perf_event_open": 298, "bpf": 321, "keyctl": 250, "add_key": 248, "request_key": 249,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
    "setns": 308, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "userfaultfd": 323, "fanotify_init": 300, "swapon": 167,
    "swapoff": 168, "reboot": 169, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "acct": 163,
    "quotactl": 179, "lookup_dcookie": 212, "syslog": 103, "settimeofday": 164,
    "clock_settime": 227, "adjtimex": 159, "clock_adjtime": 305, "vhangup": 153,
    "clone3": 435, "modify_ldt": 154, "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67,
    "socket": 41, "personality": 135,
}
AARCH64 = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "perf_event_open": 241, "bpf": 280, "keyctl": 219, "add_key": 217, "request_key": 218,
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
    "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
    "open_tree": 428, "mount_setattr": 442, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "userfaultfd": 282, "fanotify_init": 262, "swapon": 224,
    "swapoff": 225, "reboot": 142, "kexec_load": 104, "kexec_file_load": 294,
    "init_module": 105, "finit_module": 273, "delete_module": 106, "acct": 89,
    "quotactl": 60, "lookup_dcookie": 18, "syslog": 116, "settimeofday": 170,
    "clock_settime": 112, "adjtimex": 171, "clock_adjtime": 266, "vhangup": 58, "clone3": 435,
    "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "socket": 198, "personality": 92,
}
# (audit architecture, syscall table, lowest number of a foreign ABI to refuse or None)
ARCHES = {"x86_64": (0xC000003E, X86_64, 0x40000000), "aarch64": (0xC00000B7, AARCH64, None),
          "arm64": (0xC00000B7, AARCH64, None)}

# Classic BPF opcodes and seccomp return values.
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
OFFSET_NR, OFFSET_ARCH = 0, 4
OFFSET_ARG0_LOW = 16
"""`struct seccomp_data`: nr, arch, instruction_pointer (8 bytes), then args[6] of 8 bytes each;
the low half of args[0] comes first on the little-endian machines of `ARCHES`."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def build_filter(machine: str | None = None) -> bytes:
    """The filter as bytes of `struct sock_filter`, for `machine` (default: this one).
    Raises ValueError for an architecture without a table."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise ValueError(f"no seccomp syscall table for {machine!r}; known: {sorted(ARCHES)}")
    audit_arch, table, foreign_from = ARCHES[machine]
    eperm = SECCOMP_RET_ERRNO | errno.EPERM
    enosys = SECCOMP_RET_ERRNO | errno.ENOSYS
    allow = SECCOMP_RET_ALLOW
    prog = [_insn(LD_W_ABS, 0, 0, OFFSET_ARCH),
            _insn(JEQ_K, 1, 0, audit_arch),
            _insn(RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
            _insn(LD_W_ABS, 0, 0, OFFSET_NR)]
    if foreign_from is not None:
        prog += [_insn(JGE_K, 0, 1, foreign_from), _insn(RET_K, 0, 0, eperm)]
    for names, ret in ((DENIED, eperm), (NOT_IMPLEMENTED, enosys)):
        for name in names:
            if name in table:
                prog += [_insn(JEQ_K, 0, 1, table[name]), _insn(RET_K, 0, 0, ret)]
    for name, value, refuse_equal in REFUSED_WHEN:
        # nr matches: load the argument, then return EPERM or ALLOW; else skip the block
        on_equal, on_other = (eperm, allow) if refuse_equal else (allow, eperm)
        prog += [_insn(JEQ_K, 0, 4, table[name]), _insn(LD_W_ABS, 0, 0, OFFSET_ARG0_LOW),
                 _insn(JEQ_K, 0, 1, value), _insn(RET_K, 0, 0, on_equal),
                 _insn(RET_K, 0, 0, on_other)]
    prog.append(_insn(RET_K, 0, 0, allow))
    return b"".join(prog)


def filter_fd() -> int:
    """A readable fd holding the filter at offset 0, for bubblewrap's `--seccomp FD` (the
    caller passes it to the child and closes it after the spawn)."""
    data = build_filter()
    fd = os.memfd_create("hl-seccomp")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


DOCKER_ARCHES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64",
                 "arm64": "SCMP_ARCH_AARCH64"}
CLONE_NAMESPACE_FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000,
                         "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000,
                         "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                         "CLONE_NEWNET": 0x40000000}


def docker_profile(machine: str | None = None) -> dict:
    """`DENIED` and `NOT_IMPLEMENTED` as a Docker seccomp profile for `machine` (default: this
    one): everything else allowed, as the BPF filter does, plus `clone` refused with any
    namespace flag. Only the native ABI is listed, so libseccomp refuses others (x32 too).
    Raises ValueError for an architecture without a table."""
    machine = machine or platform.machine()
    if machine not in DOCKER_ARCHES:
        raise ValueError(f"no seccomp syscall table for {machine!r}; known: {sorted(ARCHES)}")
    # The first argument of x86_64 clone and aarch64 clone alike is the flags word.
    no_namespaces = [{"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                      "args": [{"index": 0, "value": flag, "valueTwo": flag,
                                "op": "SCMP_CMP_MASKED_EQ"}]}
                     for flag in CLONE_NAMESPACE_FLAGS.values()]
    table = ARCHES[machine][1]
    # libseccomp compares all 64 bits: the netlink rule masks to the int the kernel reads; the
    # personality rule refuses any other value, high bits included (stricter, never looser).
    by_argument = [{"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                    "args": [{"index": 0, "value": 0xFFFFFFFF, "valueTwo": AF_NETLINK,
                              "op": "SCMP_CMP_MASKED_EQ"}]},
                   {"names": ["personality"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                    "args": [{"index": 0, "value": PERSONALITY_QUERY, "valueTwo": 0,
                              "op": "SCMP_CMP_NE"}]}]
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": [DOCKER_ARCHES[machine]],
        "syscalls": [
            {"names": [n for n in DENIED if n in table], "action": "SCMP_ACT_ERRNO",
             "errnoRet": errno.EPERM},
            {"names": list(NOT_IMPLEMENTED), "action": "SCMP_ACT_ERRNO",
             "errnoRet": errno.ENOSYS},
            *no_namespaces,
            *by_argument,
        ],
    }


def docker_security_opt(machine: str | None = None) -> str:
    """The profile as Docker's `seccomp=` security option. The engine's API takes the profile's
    content (the CLI's `--security-opt seccomp=FILE` reads FILE and sends exactly this)."""
    return "seccomp=" + json.dumps(docker_profile(machine), separators=(",", ":"))
