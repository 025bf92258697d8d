"""The calls the seccomp filter refuses by name or by argument, tried from harness code in the
real sandbox (and from a `tools.python` program): each fails with EPERM, while the query
`personality(0xffffffff)` and ordinary sockets still work. The filter's program is also run
here, instruction by instruction, for both architectures."""

from __future__ import annotations

import errno
import json
import struct

import pytest

from harness_learning.harnesses.sandbox import Limits, seccomp
from harness_learning.harnesses.toolbox import Toolbox

from .conftest import node_harness, run_alone

pytestmark = pytest.mark.reliability

PROBE = """
import ctypes, json, os, platform, socket
# the kernel's numbers, spelled here so the probe does not depend on the code it checks
table = ({"modify_ldt": 154, "personality": 135, "shmget": 29, "shmat": 30, "shmctl": 31,
          "shmdt": 67} if platform.machine() == "x86_64" else
         {"personality": 92, "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197})
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, *args):
    if name not in table:
        return "absent"
    args = [ctypes.c_ulong(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    return 0 if libc.syscall(table[name], *args) != -1 else ctypes.get_errno()
def netlink():
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
        return 0
    except OSError as exc:
        return exc.errno
buf = ctypes.create_string_buffer(64)
got = {
    "modify_ldt": call("modify_ldt", 0, buf, 64),
    "personality": call("personality", 0x0040000),
    "personality_query": call("personality", 0xFFFFFFFF),
    "netlink_socket": netlink(),
    "shmget": call("shmget", 0, 4096, 0o1600),
    "shmat": call("shmat", 0, 0, 0),
    "shmctl": call("shmctl", 0, 0, 0),
    "shmdt": call("shmdt", buf),
}
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    got["inet_socket"] = 0
except OSError as exc:
    got["inet_socket"] = exc.errno
print(json.dumps(got))
"""
REFUSED = ("modify_ldt", "personality", "netlink_socket", "shmget", "shmat", "shmctl", "shmdt")


@pytest.fixture(scope="module")
def from_harness(protections) -> dict:
    if not protections["seccomp"]:
        pytest.skip("bubblewrap cannot install a seccomp filter here")
    limits = Limits(memory_mb=1536, pids=32, problem_timeout_s=60.0)
    body = "import contextlib, io\nout = io.StringIO()\nwith contextlib.redirect_stdout(out):\n"
    body += "".join(f"    {line}\n" for line in PROBE.strip().splitlines())
    body += "answer = out.getvalue()"
    outcome, _ = run_alone(node_harness(body), limits)
    assert outcome.answer is not None, outcome
    return json.loads(outcome.answer)


@pytest.mark.parametrize("name", REFUSED)
def test_the_call_is_refused_in_harness_code(from_harness, name):
    if from_harness[name] == "absent":
        pytest.skip(f"{name} does not exist on this architecture")
    assert from_harness[name] == errno.EPERM, from_harness


def test_what_python_needs_still_works_in_harness_code(from_harness):
    assert from_harness["personality_query"] == 0 and from_harness["inet_socket"] == 0, from_harness


def test_a_python_program_is_refused_the_same_calls(need_bwrap, protections):
    if not protections["seccomp"]:
        pytest.skip("bubblewrap cannot install a seccomp filter here")
    limits = Limits(memory_mb=1536, pids=32, problem_timeout_s=60.0)
    outcome, _ = run_alone(node_harness(f"""
out = tools.python({PROBE!r}, 30)
answer = out.stdout if not out.error else "error " + out.error
"""), limits, Toolbox(python_limits=limits))
    got = json.loads(outcome.answer)
    assert all(got[n] in (errno.EPERM, "absent") for n in REFUSED), got
    assert got["personality_query"] == 0 and got["inet_socket"] == 0, got


def run_filter(prog: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """The classic BPF program's return value for one call (the few opcodes it uses)."""
    insns = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    data = {seccomp.OFFSET_NR: nr, seccomp.OFFSET_ARCH: arch,
            seccomp.OFFSET_ARG0_LOW: arg0 & 0xFFFFFFFF}
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == seccomp.RET_K:
            return k
        if code == seccomp.LD_W_ABS:
            acc, pc = data[k], pc + 1
        elif code in (seccomp.JEQ_K, seccomp.JGE_K):
            hit = acc == k if code == seccomp.JEQ_K else acc >= k
            pc += 1 + (jt if hit else jf)
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_program_decides_each_call_by_name_and_argument(machine):
    prog = seccomp.build_filter(machine)
    arch, table, _ = seccomp.ARCHES[machine]
    eperm, allow = seccomp.SECCOMP_RET_ERRNO | errno.EPERM, seccomp.SECCOMP_RET_ALLOW
    for name in seccomp.DENIED:
        if name in table:
            assert run_filter(prog, arch, table[name]) == eperm, name
    assert run_filter(prog, arch, table["socket"], seccomp.AF_NETLINK) == eperm
    assert run_filter(prog, arch, table["socket"], (1 << 32) | seccomp.AF_NETLINK) == eperm
    assert run_filter(prog, arch, table["socket"], 2) == allow  # AF_INET
    assert run_filter(prog, arch, table["personality"], 0xFFFFFFFF) == allow
    assert run_filter(prog, arch, table["personality"], 0x0040000) == eperm
    assert run_filter(prog, arch, table["personality"], 0) == eperm
    assert run_filter(prog, arch, 0) == allow  # read on x86_64, io_setup on aarch64
    assert run_filter(prog, arch ^ 1, 0) == seccomp.SECCOMP_RET_KILL_PROCESS
