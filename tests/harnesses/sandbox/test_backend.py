"""Sandbox backends behind one protocol, registered by name."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.sandbox.backend import (
    SandboxBackend,
    SandboxProcess,
    applied,
    backend_class,
    choice_line,
    get_backend,
    ranked_backends,
    sandbox_backend,
)
from harness_learning.harnesses.sandbox.docker_backend import DockerBackend, docker_available
from harness_learning.harnesses.sandbox.local import LocalBackend, sweep_scratch
from harness_learning.harnesses.seeds import seed_source

from .conftest import TEST_LIMITS, ScriptedToolbox


@sandbox_backend("counting-local")
class CountingBackend(LocalBackend):
    """A backend of a user's: the local one, counting the processes it starts."""

    spawned = 0

    async def spawn(self, *args, **kwargs) -> SandboxProcess:
        type(self).spawned += 1
        return await super().spawn(*args, **kwargs)


def test_the_built_in_backends_are_found_by_name():
    assert backend_class("local") is LocalBackend and backend_class("docker") is DockerBackend
    assert issubclass(LocalBackend, SandboxBackend) and LocalBackend.name == "local"
    assert DockerBackend.stdio_bridge and not LocalBackend.stdio_bridge
    assert DockerBackend.available() == docker_available()


def test_auto_ranks_the_available_backends_by_the_protections_they_apply():
    """On this machine: each available backend with its count of true protections (the
    mechanism entries, bwrap and docker, not counted), most first, local first at a tie."""
    counts = dict(ranked_backends())
    assert counts["local"] == applied(LocalBackend().protections())
    assert ("docker" in counts) is docker_available()
    if docker_available():
        assert counts["docker"] == applied(DockerBackend().protections())
    best = "local" if counts["local"] >= max(counts.values()) else "docker"
    assert get_backend("auto").name == best and ranked_backends()[0][0] == best
    assert choice_line("auto").startswith(f"sandbox: {best} (auto: ")


@pytest.fixture
def fake_protections(monkeypatch):
    """Make Docker available and set what each backend reports; the ranking is recomputed."""

    def use(local: int, docker: int) -> None:
        monkeypatch.setattr(DockerBackend, "available", classmethod(lambda cls: True))
        for cls, count in ((LocalBackend, local), (DockerBackend, docker)):
            table = {f"p{i}": i < count for i in range(20)} | {"bwrap": True, "docker": True}
            monkeypatch.setattr(cls, "protections", lambda self, t=table: t)
        ranked_backends.cache_clear()

    yield use
    ranked_backends.cache_clear()


@pytest.mark.parametrize(("local", "docker", "chosen"), [
    (12, 14, "docker"), (14, 12, "local"), (13, 13, "local")])
def test_auto_takes_the_most_protections_and_local_at_a_tie(fake_protections, local, docker,
                                                            chosen):
    fake_protections(local, docker)
    assert ranked_backends()[0] == (chosen, max(local, docker))
    assert type(get_backend("auto")).name == chosen
    assert choice_line("auto") == (f"sandbox: {chosen} (auto: the most protections applied; "
                                   + ", ".join(f"{n} {c}" for n, c in ranked_backends()) + ")")


def test_an_explicit_choice_is_said_as_asked():
    line = choice_line("local")
    assert line == f"sandbox: local (as asked; {applied(LocalBackend().protections())} " \
                   "protections applied)"


def test_an_unknown_backend_is_one_clear_error_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown sandbox backend 'vm'; known: .*docker.*local"):
        get_backend("vm")


def test_a_registered_backend_must_be_a_backend_and_names_are_unique():
    with pytest.raises(TypeError):
        sandbox_backend("plain")(object)  # type: ignore[type-var]
    with pytest.raises(ValueError, match="registered already"):
        sandbox_backend("local")(CountingBackend)


def test_a_worker_runs_on_a_backend_registered_by_name():
    async def go():
        async with Worker(ScriptedToolbox(lambda a: "Answer: 4"), limits=TEST_LIMITS,
                          backend=get_backend("counting-local")) as worker:
            await worker.load(seed_source("reasoning_direct"))
            return await worker.run("p1", {"question": "2+2?"})

    before = CountingBackend.spawned
    outcome = asyncio.run(go())
    assert outcome.error is None and outcome.answer == "4"
    assert CountingBackend.spawned == before + 1


def test_scratch_directories_of_parents_that_died_are_swept(tmp_path):
    """A parent killed outright leaves its scratch directory; the next parent removes its
    user's whose pid no longer runs, and keeps a live parent's, an old unnamed one, a name
    that is no pid, another user's and any other."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead, live = tmp_path / f"hl-sbx-{gone.pid}-x1", tmp_path / f"hl-sbx-{os.getpid()}-x2"
    kept = [live, tmp_path / "hl-sbx-x3", tmp_path / f"other-{gone.pid}-x4",
            tmp_path / f"hl-sbx-{10 ** 30}-x5"]  # no pid: os.kill would overflow
    for path in (dead, *kept):
        path.mkdir()
    if os.geteuid() == 0:  # only root can give a directory to another user
        theirs = tmp_path / f"hl-sbx-{gone.pid}-x6"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        kept.append(theirs)
    (dead / "left.txt").write_text("a problem's file")
    assert sweep_scratch(str(tmp_path)) == [str(dead)]
    assert not dead.exists() and all(path.is_dir() for path in kept)


def test_a_process_scratch_directory_names_its_parent():
    async def go():
        process = await LocalBackend().spawn(["-c", "pass"], TEST_LIMITS, {})
        try:
            await process.proc.wait()
            return os.path.basename(process.scratch), os.path.isdir(process.scratch)
        finally:
            await process.cleanup()

    name, existed = asyncio.run(go())
    assert name.startswith(f"hl-sbx-{os.getpid()}-") and existed
