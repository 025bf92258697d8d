"""Docker backend: the container spec it builds, checked for each protection the local backend
has (no engine needed), and live runs where an engine with the sandbox image answers."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import struct
import sys

import pytest
from docker_engine import require_engine

from harness_learning.harnesses.sandbox import Limits, Worker, imports, seccomp
from harness_learning.harnesses.sandbox.docker_backend import (
    EMPTY,
    WALK_ONLY,
    Demux,
    DockerBackend,
    container_config,
)
from harness_learning.harnesses.sandbox.local import SYSTEM_DIRS, view_mounts
from harness_learning.harnesses.seeds import seed_source

from .conftest import ScriptedToolbox

WORKER = ["-m", "harness_learning.harnesses.sandbox.worker"]


def spec(limits: Limits | None = None) -> dict:
    return container_config(WORKER, limits or Limits(), {"HARNESS_BRIDGE_FD": "stdio"}, "img")


def mounts_of(config: dict, kind: str) -> dict[str, dict]:
    """The container's mounts of `kind` ("bind" or "tmpfs") by target."""
    return {m["Target"]: m for m in config["mounts"] if m["Type"] == kind}


def profile_of(config: dict) -> dict:
    (opt,) = [o for o in config["security_opt"] if o.startswith("seccomp=")]
    return json.loads(opt.removeprefix("seccomp="))


def test_container_has_no_network_no_privileges_and_a_scrubbed_env(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_API_KEY", "sk-planted")
    config = spec()
    assert config["network_mode"] == "none" and config["network_disabled"] is True
    assert config["read_only"] is True and config["privileged"] is False
    assert config["cap_drop"] == ["ALL"] and "no-new-privileges" in config["security_opt"]
    assert config["user"] == "65534:65534" and config["ipc_mode"] == "private"
    assert config["command"] == [sys.executable, "-s", *WORKER]
    assert config["environment"]["HARNESS_BRIDGE_FD"] == "stdio"
    assert "sk-planted" not in config["environment"].values()
    assert "volumes" not in config  # every path is one of the read-only mounts below


@pytest.mark.parametrize("limits", [
    Limits(memory_mb=512, pids=20, cpu_s=30, file_size_mb=8, scratch_mb=48, shm_mb=8,
           cpu_cores=0.5),
    Limits().for_python(),  # a tools.python container
])
def test_memory_pids_cpu_shm_and_files_come_from_the_limits(limits):
    config = spec(limits)
    assert config["mem_limit"] == config["memswap_limit"] == limits.memory_mb << 20  # no swap
    assert config["pids_limit"] == limits.pids
    assert config["nano_cpus"] == int(limits.cpu_cores * 1e9)
    assert config["shm_size"] == limits.shm_mb << 20
    assert {"name": "cpu", "soft": limits.cpu_s, "hard": limits.cpu_s + 5} in config["ulimits"]
    fsize = limits.file_size_mb << 20
    assert {"name": "fsize", "soft": fsize, "hard": fsize} in config["ulimits"]
    scratch = mounts_of(config, "tmpfs")["/scratch"]["TmpfsOptions"]
    assert scratch == {"SizeBytes": limits.scratch_mb << 20, "Mode": 0o1777}


def test_the_container_mounts_only_the_allowlisted_packages_read_only():
    config = spec()
    binds = mounts_of(config, "bind")
    assert binds and all(m["ReadOnly"] is True for m in binds.values())
    assert {m["Type"] for m in config["mounts"]} == {"bind", "tmpfs"}
    by_target = {t: m["Source"] for t, m in binds.items()}
    site, view = imports.site_tree()
    assert by_target[site] == view  # the curated view over the virtualenv's site-packages
    assert site not in by_target.values()  # never the whole site-packages
    shown = set(os.listdir(view)) - {imports.VIEW_COMPLETE}
    assert sorted(shown) == sorted(imports.site_view()[1])
    assert not any(name.startswith("reasoning_gym") for name in os.listdir(view))
    # The same view as the local backend: every bind and every emptied directory of it.
    for source, target in view_mounts():
        if source is None:
            hide = mounts_of(config, "tmpfs")[target]
            assert hide["ReadOnly"] is True and hide["TmpfsOptions"]["SizeBytes"] == EMPTY[0]
        else:
            assert by_target[target] == source


def walk_and_write_problems(config: dict) -> list[str]:
    """What breaks "the sandbox user can walk to every bind and write to none": a bind whose
    top directory is neither a system one nor a tmpfs mounted before it, a mount made before
    one it lies under (the parent would hide it), a writable tmpfs other than /tmp and
    /scratch, a bind that is not read-only."""
    problems, made = [], []
    for mount in config["mounts"]:
        target = mount["Target"]
        top = "/" + target.split("/")[1]
        later = [m for m in made if m != target and m.startswith(target + "/")]
        if later:
            problems.append(f"{target} is mounted after {later}, which it hides")
        if mount["Type"] == "bind":
            if not mount["ReadOnly"]:
                problems.append(f"{target} is writable")
            if not (top in SYSTEM_DIRS or top == "/etc" or top in made):
                problems.append(f"{target} lies under {top}, which nothing mounted before it")
        else:
            mode, ro = mount["TmpfsOptions"].get("Mode"), mount["ReadOnly"]
            if not ro and mode & 0o022 and target not in ("/tmp", "/scratch"):
                problems.append(f"{target} is a tmpfs the sandbox user can write")
        made.append(target)
    return problems


def test_the_sandbox_user_can_walk_to_every_bind_and_write_to_none():
    assert walk_and_write_problems(spec()) == []
    assert WALK_ONLY[1] == 0o755 and not WALK_ONLY[2]  # root-owned: walk, never write


def test_the_seccomp_profile_is_the_bpf_filters_list():
    profile = profile_of(spec())
    assert profile == seccomp.docker_profile()
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    refused = {name: rule["errnoRet"] for rule in profile["syscalls"] if "args" not in rule
               for name in rule["names"]}
    assert refused == {**{n: errno.EPERM for n in seccomp.DENIED},
                       **{n: errno.ENOSYS for n in seccomp.NOT_IMPLEMENTED}}
    assert {"io_uring_setup", "perf_event_open", "keyctl", "bpf", "ptrace", "mount",
            "unshare"} <= set(refused)


@pytest.mark.parametrize(("machine", "arch"), [("x86_64", "SCMP_ARCH_X86_64"),
                                               ("aarch64", "SCMP_ARCH_AARCH64")])
def test_the_profile_lists_only_the_native_abi_and_refuses_namespaced_clones(machine, arch):
    profile = seccomp.docker_profile(machine)
    assert profile["architectures"] == [arch]
    clones = [r for r in profile["syscalls"] if r["names"] == ["clone"]]
    flags = {a["value"] for r in clones for a in r["args"]}
    assert flags == set(seccomp.CLONE_NAMESPACE_FLAGS.values())
    assert all(r["action"] == "SCMP_ACT_ERRNO" and r["errnoRet"] == errno.EPERM
               and r["args"] == [{"index": 0, "value": r["args"][0]["value"],
                                  "valueTwo": r["args"][0]["value"],
                                  "op": "SCMP_CMP_MASKED_EQ"}] for r in clones)


def test_an_unknown_architecture_has_no_profile():
    with pytest.raises(ValueError, match="x86_64"):
        seccomp.docker_profile("sparc64")


def test_the_backend_reports_each_protection():
    have = DockerBackend(client=object()).protections()
    for key in ("network_isolated", "read_only_root", "import_allowlist", "seccomp",
                "userns_disabled", "shm_bounded", "cgroup_memory", "cgroup_pids", "cgroup_cpu",
                "bounded_logs", "line_limit", "auto_remove", "orphan_sweep"):
        assert have[key] is True, key
    # An engine that cannot be asked about its cgroups nests no container in a candidate's.
    assert have["cgroup_per_candidate"] is False
    assert DockerBackend(client=object(), use_cgroup=False).cgroups is None


def test_demux_splits_frames_across_reads():
    frames = (struct.pack(">BxxxI", 1, 5) + b"hello" + struct.pack(">BxxxI", 2, 3) + b"err")
    demux = Demux()
    got = demux.feed(frames[:7]) + demux.feed(frames[7:12]) + demux.feed(frames[12:])
    assert got == [(1, b"hello"), (2, b"err")]


def test_live_docker_worker():
    require_engine()

    async def go():
        async with Worker(ScriptedToolbox(), backend=DockerBackend()) as worker:
            await worker.load(seed_source("reasoning_direct"))
            return await worker.run("p", {"question": "q"})

    assert asyncio.run(go()).answer == "4"


def test_live_tools_python_reads_the_whole_program_and_answers():
    """The program goes in on stdin and is read to its end: the engine must close the
    container's stdin when ours closes, or every `tools.python` call waits out its timeout."""
    require_engine()
    from harness_learning.harnesses.sandbox.python_exec import run_python

    async def go():
        return await run_python("import sys\nprint(6 * 7)\nprint('note', file=sys.stderr)",
                                timeout=20, backend=DockerBackend())

    result = asyncio.run(go())
    assert (result.stdout, result.error) == ("42\n", None), result


def test_the_engine_closes_the_containers_stdin_with_ours():
    from docker.types import ContainerConfig

    config = spec()
    made = ContainerConfig("1.41", "img", config["command"], detach=config["detach"],
                           stdin_open=config["stdin_open"], tty=config["tty"])
    assert made["OpenStdin"] and made["StdinOnce"], made


PROBE = """
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    return 0 if libc.syscall(nr, *args) >= 0 else ctypes.get_errno()
out = {"io_uring_setup": call(IO_URING, 1, 0), "keyctl": call(KEYCTL, 0, 0),
       "unshare_user": 0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno()}
try:
    import reasoning_gym  # noqa: F401
    out["reasoning_gym"] = "importable"
except ImportError:
    out["reasoning_gym"] = "absent"
def error(action):
    try:
        action()
        return 0
    except OSError as exc:
        return exc.errno
def fill_shm():
    with open("/dev/shm/fill", "wb") as f:
        for _ in range(SHM_MB * 2):
            f.write(b"x" * (1 << 20))
out["shm"] = error(fill_shm)
out["root"] = error(lambda: open("/etc/hl-probe", "w"))
out["net"] = error(lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
print(json.dumps(out))
"""


def test_live_container_holds_each_protection():
    """In a real container: the refused calls fail with EPERM, no dataset generator imports,
    /dev/shm fills at its size, the root and the network are closed."""
    require_engine()
    import platform

    table = seccomp.ARCHES[platform.machine()][1]
    limits = Limits(shm_mb=8)
    script = (PROBE.replace("IO_URING", str(table["io_uring_setup"]))
              .replace("KEYCTL", str(table["keyctl"])).replace("SHM_MB", str(limits.shm_mb)))

    async def go() -> dict:
        process = await DockerBackend().spawn(["-c", script], limits, {})
        try:
            out = await asyncio.wait_for(process.proc.stdout.read(), 120)
            await process.proc.wait()
        finally:
            await process.cleanup()
        return json.loads(out.decode().strip().splitlines()[-1])

    got = asyncio.run(go())
    assert got["io_uring_setup"] == got["keyctl"] == got["unshare_user"] == errno.EPERM, got
    assert got["reasoning_gym"] == "absent" and got["shm"] == errno.ENOSPC, got
    assert got["root"] == errno.EROFS and got["net"] != 0, got


class ExitedContainer:
    """What `DockerProcess.usage` reads of a container: its state after `reload`."""

    def __init__(self, oom_killed: bool) -> None:
        self.attrs = {"State": {"OOMKilled": oom_killed, "ExitCode": 137}}

    def reload(self) -> None:
        return None


@pytest.mark.parametrize("oom_killed", [True, False])
def test_a_container_the_oom_killer_ended_reads_as_memory(oom_killed):
    from harness_learning.harnesses.sandbox.docker_backend import DockerProcess, _Proc
    from harness_learning.harnesses.sandbox.kills import death_verdict

    proc = _Proc(ExitedContainer(oom_killed), None, None, None, returncode=137)
    kind, error = death_verdict(137, DockerProcess(proc).usage(), Limits(memory_mb=512), "")
    assert (kind == "memory") is oom_killed, error
    assert ("Limits.memory_mb (512 MB)" in error) is oom_killed, error
