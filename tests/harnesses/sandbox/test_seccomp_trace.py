"""The seccomp program's shape and the trace's bounded copies (no sandbox needed)."""

from __future__ import annotations

import struct

import pytest

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.sandbox import seccomp
from harness_learning.harnesses.sandbox.trace import traced_call, trim


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_refuses_every_listed_call_and_allows_the_rest(machine):
    prog = seccomp.build_filter(machine)
    insns = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    arch, table, _ = seccomp.ARCHES[machine]
    assert insns[1] == (seccomp.JEQ_K, 1, 0, arch)
    assert insns[2][3] == seccomp.SECCOMP_RET_KILL_PROCESS
    assert insns[-1] == (seccomp.RET_K, 0, 0, seccomp.SECCOMP_RET_ALLOW)
    checked = {k for code, _, _, k in insns if code == seccomp.JEQ_K}
    assert {table[n] for n in seccomp.DENIED + seccomp.NOT_IMPLEMENTED if n in table} <= checked
    assert len(insns) < 4096  # the kernel's BPF_MAXINSNS


def test_an_unknown_architecture_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="x86_64"):
        seccomp.build_filter("sparc64")


def test_trim_cuts_long_strings_and_counts_what_it_removed():
    value, cut = trim({"a": "x" * 50, "b": ["y" * 5, {"c": "z" * 30}]}, 10)
    assert value["a"].startswith("x" * 10) and cut == 40 + 20
    assert trim("short", 10) == ("short", 0)


def test_traced_call_records_the_original_sizes():
    call = traced_call(ToolCall("llm", {"messages": "m" * 100}, "r" * 30), 20)
    assert call.meta["truncated"] == {"args_chars": 80, "result_chars": 10}
