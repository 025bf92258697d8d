"""The worker's filesystem view holds on every path to the environment: through a symlink to
it (bound at the real path too), from a clone under the sandbox's own writable /tmp, from a
path with a space. Each test starts a real worker with another interpreter: the environment
is what the sandbox is built from, so it cannot be moved inside one process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from harness_learning.harnesses.sandbox import imports

from .conftest import node_harness

pytestmark = pytest.mark.reliability

DRIVER = """
import asyncio, json, sys
from harness_learning.harnesses.sandbox import Limits, ToolReply, Worker
from harness_learning.harnesses.sandbox.local import LocalBackend

class Box:
    async def call(self, tool, args):
        return ToolReply("Answer: 4")

async def go():
    limits = Limits(memory_mb=1536, pids=32, problem_timeout_s=60.0)
    async with Worker(Box(), limits, backend=LocalBackend()) as worker:
        await worker.load(sys.stdin.read())
        out = await worker.run("p", {"question": "q"})
    print(json.dumps({"answer": out.answer, "error": out.error}))

asyncio.run(go())
"""


def run_worker(python: str, source: str) -> dict:
    """Run `source` for one problem in a worker started by the interpreter `python`."""
    done = subprocess.run([python, "-c", DRIVER], input=source, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "TMPDIR": "/tmp"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


EXPOSED = """
import glob
found, exposed = [], []
for root in sorted({sys.prefix, os.path.realpath(sys.prefix), REAL}):
    for site in glob.glob(root + "/lib/python3*/site-packages"):
        names = os.listdir(site)
        found.append(site)
        if any(n.startswith("reasoning_gym") for n in names) or "langgraph" not in names:
            exposed.append(site)
sys.path += found
try:
    import reasoning_gym
    exposed.append("imported " + reasoning_gym.__file__)
except ImportError:
    pass
answer = json.dumps({"found": found, "exposed": exposed})
"""


def test_a_symlinked_environment_shows_the_view_at_every_path(need_bwrap, tmp_path):
    real = os.path.realpath(sys.prefix)
    if not any(n.startswith("reasoning_gym") for n in os.listdir(imports.site_view()[0])):
        pytest.skip("reasoning_gym is not installed here: nothing to hide")
    link = tmp_path / "env-link"
    link.symlink_to(real, target_is_directory=True)
    source = node_harness(EXPOSED.replace("REAL", repr(real)), imports="import json")
    got = run_worker(str(link / "bin" / "python"), source)
    assert got["answer"] is not None, got
    seen = json.loads(got["answer"])
    assert len(seen["found"]) == 2, seen  # the symlink's path and the real one
    assert seen["exposed"] == [], seen


def clone_environment(root: Path) -> Path:
    """A virtualenv at `root` holding only what the sandbox binds (hard links where the
    filesystem allows), plus a path file naming this environment's site-packages for the
    parent side's own packages (it is no entry of the view, so the worker never reads it)."""
    venv.create(root, symlinks=True, with_pip=False)
    site, entries = imports.site_view()
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    target = root / "lib" / version / "site-packages"
    for entry in entries:
        src = Path(site) / entry
        if src.is_dir():
            shutil.copytree(src, target / entry, copy_function=imports._link_or_copy)
        else:
            imports._link_or_copy(str(src), str(target / entry))
    (target / "zz_parent_packages.pth").write_text(site + "\n")
    return root


READ_ONLY = """
import errno, glob
site = glob.glob(sys.prefix + "/lib/python3*/site-packages")[0]
refused = []
for path in (sys.prefix + "/pyvenv.cfg", site + "/planted.py", sys.prefix + "/new.txt"):
    try:
        with open(path, "a") as f:
            f.write("owned")
        refused.append("written " + path)
    except OSError as exc:
        refused.append(errno.errorcode[exc.errno])
import langgraph.graph as lg
answer = json.dumps({"prefix": sys.prefix, "refused": refused, "langgraph": lg.__file__})
"""


@pytest.mark.parametrize("where", ["under-tmp", "with a space"])
def test_an_environment_under_a_writable_sandbox_mount_stays_read_only(need_bwrap,
                                                                      tmp_path, where):
    assert str(tmp_path).startswith("/tmp/"), tmp_path  # the sandbox's own tmpfs is at /tmp
    root = clone_environment(tmp_path / where / "venv")
    before = (root / "pyvenv.cfg").read_bytes()
    got = run_worker(str(root / "bin" / "python"),
                     node_harness(READ_ONLY, imports="import json"))
    assert got["answer"] is not None, got
    seen = json.loads(got["answer"])
    assert seen["prefix"] == str(root) and seen["langgraph"].startswith(str(root)), seen
    assert all(not r.startswith("written") for r in seen["refused"]), seen
    assert (root / "pyvenv.cfg").read_bytes() == before
    assert not (root / "new.txt").exists()
    assert not list(root.glob("lib/python3*/site-packages/planted.py"))


SPEC = """
import json
from harness_learning.harnesses.sandbox.docker_backend import container_config
from harness_learning.harnesses.sandbox.limits import Limits
from harness_learning.harnesses.sandbox import imports
config = container_config(["-c", "pass"], Limits(), {}, "img")
print(json.dumps({"mounts": config["mounts"], "site": imports.site_tree()}))
"""


@pytest.mark.parametrize("where", ["under-tmp", "with a space"])
def test_the_docker_spec_keeps_an_environment_under_tmp_read_only(tmp_path, where):
    from .test_docker_backend import walk_and_write_problems

    root = clone_environment(tmp_path / where / "venv")
    done = subprocess.run([str(root / "bin" / "python"), "-c", SPEC], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TMPDIR": "/tmp"})
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads(done.stdout.strip().splitlines()[-1])
    assert walk_and_write_problems(config) == []
    binds = {m["Target"]: m for m in config["mounts"] if m["Type"] == "bind"}
    site, view = config["site"]
    assert str(root) in binds and binds[str(root)]["ReadOnly"], sorted(binds)
    assert binds[site]["Source"] == view and site.startswith(str(root))
    order = [m["Target"] for m in config["mounts"]]
    assert order.index("/tmp") < order.index(str(root)) < order.index(site)


def test_package_directories_are_empty_at_every_system_path(sandbox, need_bwrap):
    """On a merged /usr, /lib is /usr/lib bound a second time: a package directory emptied at
    one path must be empty at the other too."""
    outcome = sandbox.run_one(node_harness("""
import glob
dirs = [d for root in ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")
        for d in glob.glob(root + "/python3*/*-packages")]
full = [d for d in dirs if os.listdir(d)]
answer = json.dumps({"dirs": dirs, "full": full})
""", imports="import json"))
    seen = json.loads(outcome.answer)
    assert seen["dirs"] and seen["full"] == [], seen


def test_no_mount_but_tmp_scratch_and_shm_takes_a_write(sandbox, need_bwrap):
    """The emptied package directories are tmpfs mounts of their own: `--remount-ro /` does
    not reach them, so each is remounted read-only (else: writable space, kept across the
    worker's problems)."""
    outcome = sandbox.run_one(node_harness("""
written, tried = [], 0
for line in open("/proc/self/mountinfo"):
    point = line.split()[4].replace("\\\\040", " ")
    if point in ("/tmp", "/scratch", "/dev/shm") or point.startswith("/proc"):
        continue
    tried += 1
    try:
        with open(os.path.join(point, ".hl-owned"), "w") as f:
            f.write("owned")
        written.append(point)
    except OSError:
        pass
answer = json.dumps({"tried": tried, "written": written})
""", imports="import json"))
    seen = json.loads(outcome.answer)
    assert seen["tried"] > 5 and seen["written"] == [], seen


def test_the_docker_spec_binds_the_view_at_both_paths_of_a_symlinked_environment(tmp_path):
    real = os.path.realpath(sys.prefix)
    link = tmp_path / "env-link"
    link.symlink_to(real, target_is_directory=True)
    done = subprocess.run([str(link / "bin" / "python"), "-c", SPEC], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TMPDIR": "/tmp"})
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads(done.stdout.strip().splitlines()[-1])
    site, view = config["site"]
    rel = os.path.relpath(site, str(link))
    binds = {m["Target"]: m["Source"] for m in config["mounts"] if m["Type"] == "bind"}
    assert binds[site] == view and binds[os.path.join(real, rel)] == view, sorted(binds)
