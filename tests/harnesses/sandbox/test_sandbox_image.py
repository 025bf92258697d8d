"""The Docker backend's image (`harness-learn sandbox build-image`): its rootfs is a fixed
skeleton with nothing importable in it, so the container's import surface is the allowlisted
view its binds bring; checked on the tar itself (no engine needed), on a stand-in engine, and
live where an engine answers."""

from __future__ import annotations

import asyncio
import io
import os
import sys
import tarfile
from typing import Any

import docker.errors
import pytest
from cli_run import cli, error_line

from harness_learning.harnesses.sandbox import Limits, image, imports
from harness_learning.harnesses.sandbox.docker_backend import (
    DEFAULT_IMAGE,
    DockerBackend,
    container_config,
)
from harness_learning.harnesses.sandbox.view import view_mounts


def members() -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(image.rootfs_tar())) as tar:
        return {m.name.rstrip("/"): m for m in tar.getmembers()}


def test_the_rootfs_is_the_same_bytes_on_every_build():
    assert image.rootfs_tar() == image.rootfs_tar()
    assert image.rootfs_digest() == "sha256:" + image.ROOTFS_SHA256
    assert all(m.uid == m.gid == 0 and m.mtime == 0 and not m.uname for m in members().values())


def test_the_rootfs_is_a_skeleton_with_nothing_to_import():
    got = members()
    assert set(got) == {*image.DIRECTORIES, *image.FILES}
    assert {n for n, m in got.items() if m.isfile()} == {"etc/passwd", "etc/group"}
    assert oct(got["tmp"].mode) == oct(got["scratch"].mode) == oct(0o1777)
    passwd = image.FILES["etc/passwd"]
    assert f"nobody:x:{image.SANDBOX_UID}:{image.SANDBOX_UID}:" in passwd  # the sandbox user
    site_names = set(os.listdir(imports.site_tree()[0]))
    assert any(n.startswith("reasoning_gym") for n in site_names)  # excluded from the view...
    assert not any("reasoning_gym" in n or "python" in n or "site-packages" in n for n in got)


def test_the_image_holds_nothing_under_the_view_the_container_binds():
    """Every path the sandbox imports from is a bind (or an emptied tmpfs) the image has no
    file under: the allowlisted view is all a harness sees, whatever the image held."""
    config = container_config(["-c", "0"], Limits(), {}, DEFAULT_IMAGE)
    targets = {m["Target"] for m in config["mounts"]}
    view_targets = {t for _, t in view_mounts()}
    assert view_targets <= targets
    site, view = imports.site_tree()
    assert any(m["Source"] == view and m["Target"] == site for m in config["mounts"])
    files = ["/" + n for n, m in members().items() if m.isfile()]
    assert not [(f, t) for f in files for t in view_targets if f == t or f.startswith(t + "/")]


@pytest.mark.parametrize(("name", "split"), [
    ("harness-learning-sandbox:latest", ("harness-learning-sandbox", "latest")),
    ("sandbox", ("sandbox", "latest")),
    ("localhost:5000/sandbox", ("localhost:5000/sandbox", "latest")),
    ("localhost:5000/sandbox:v2", ("localhost:5000/sandbox", "v2")),
])
def test_an_image_name_splits_into_repository_and_tag(name, split):
    assert image.split_tag(name) == split


class Engine:
    """The parts of `docker.DockerClient` that `build_image` uses: one image store whose
    imports record the layer they were given (or `layer`, an engine that alters it)."""

    def __init__(self, layer: str | None = None) -> None:
        self.held: dict[str, list[str]] = {}
        self.imports: list[str] = []
        self.layer = layer
        self.api, self.images = self, self

    def import_image_from_data(self, data: bytes, repository: str, tag: str) -> None:
        self.imports.append(f"{repository}:{tag}")
        self.held[f"{repository}:{tag}"] = [self.layer or image.rootfs_digest(data)]

    def get(self, name: str) -> Any:
        if name not in self.held:
            raise docker.errors.ImageNotFound(name)
        return type("Image", (), {"id": "sha256:" + "0" * 64,
                                  "attrs": {"RootFS": {"Layers": self.held[name]}}})()


def test_a_build_imports_once_and_a_rebuild_keeps_the_image():
    engine = Engine()
    assert image.build_image(engine, "sb:1")[1] is True
    assert image.build_image(engine, "sb:1")[1] is False
    assert engine.imports == ["sb:1"]
    engine.held["sb:1"] = ["sha256:" + "f" * 64]  # some other image under the name: replaced
    assert image.build_image(engine, "sb:1")[1] is True and engine.imports == ["sb:1", "sb:1"]


def test_an_engine_that_alters_the_layer_fails_the_build():
    with pytest.raises(RuntimeError, match="not the sandbox rootfs"):
        image.build_image(Engine(layer="sha256:" + "e" * 64), "sb:1")


def test_the_command_writes_the_rootfs_without_an_engine(tmp_path):
    path = tmp_path / "rootfs.tar"
    result = cli("sandbox", "build-image", "--rootfs", path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert path.read_bytes() == image.rootfs_tar()
    assert image.ROOTFS_SHA256 in result.stdout


def test_without_an_engine_the_command_says_how_to_start_one():
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    result = cli("sandbox", "build-image", timeout=120, env=env)
    assert result.returncode == 4, result.stderr
    assert "cannot build harness-learning-sandbox:latest" in error_line(result)
    assert "make sandbox-image" in error_line(result)


TEST_TAG = "harness-learning-sandbox:image-test"


def engine() -> Any:
    """A client of the Docker engine that answers here; skips without one, fails under CI=true
    (`make sandbox-image` starts one where the machine allows)."""
    try:
        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no Docker engine answers ({exc}); `make sandbox-image`")
        pytest.skip("no Docker engine answers here")


def test_live_the_built_image_runs_the_sandbox_on_the_rootfs_layer():
    """Built under its own tag (the backend's image is left as it is): its one layer is the
    rootfs, a rebuild keeps it, and a sandboxed interpreter runs on it from the binds."""
    client = engine()
    try:
        image_id, _ = image.build_image(client, TEST_TAG)
        assert client.images.get(TEST_TAG).attrs["RootFS"]["Layers"] == [image.rootfs_digest()]
        assert image.build_image(client, TEST_TAG) == (image_id, False)

        async def run() -> bytes:
            process = await DockerBackend(image=TEST_TAG, client=client).spawn(
                ["-c", "import sys, os; print(sys.prefix, os.getuid(), sep='\\n')"], Limits(), {})
            try:
                out = await asyncio.wait_for(process.proc.stdout.read(), 60)
                assert await process.proc.wait() == 0
            finally:
                await process.cleanup()
            return out

        # one per line: a clone's path may hold spaces
        assert asyncio.run(run()).decode().splitlines() == [sys.prefix, str(image.SANDBOX_UID)]
    finally:
        client.images.remove(TEST_TAG, force=True)
