"""`harness-learn sandbox build-image`: the Docker backend's image, made from local files (a
skeleton rootfs, `harnesses/sandbox/image.py`), so no registry is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import sandbox_app
from harness_learning.cli._common import console, out


@sandbox_app.command("build-image")
def build_image(
    tag: Annotated[str, typer.Option(help="The image's name (the Docker backend's default).")] = "",
    rootfs: Annotated[Path | None, typer.Option(
        help="Only write the rootfs tar here (for `docker import` elsewhere); no engine needed.",
    )] = None,
) -> None:
    """Import the sandbox rootfs into the Docker engine as the backend's image. It holds no
    interpreter and no package: every container binds this machine's interpreter and the
    allowlisted view read-only, so the image can add nothing importable. A rebuild of an image
    that holds the same layer changes nothing."""
    from harness_learning.cli.errors import EXIT_UNREACHABLE, CliError
    from harness_learning.harnesses.sandbox import image
    from harness_learning.harnesses.sandbox.docker_backend import DEFAULT_IMAGE

    if rootfs is not None:
        rootfs.write_bytes(image.rootfs_tar())
        out.print(f"{rootfs}: {image.rootfs_digest()}")
        return
    name = tag or DEFAULT_IMAGE
    try:
        import docker

        image_id, imported = image.build_image(docker.from_env(timeout=30), name)
    except Exception as err:
        raise CliError(f"cannot build {name}: {err}", "start a Docker engine (`make sandbox-image` "
                       "starts one where it can; docs/SCALE_OUT.md)", EXIT_UNREACHABLE) from None
    console.print(f"{name}: {'imported' if imported else 'already holds the sandbox rootfs'}")
    out.print(f"{name} {image_id} layer {image.rootfs_digest()}", soft_wrap=True)
