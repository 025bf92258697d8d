"""The Docker backend's image (`docker_backend.DEFAULT_IMAGE`), built from local files: no
registry is needed, and the image can hold nothing a sandboxed harness could import.

The container runs this machine's interpreter from read-only binds (the system directories, the
interpreter, the project's layers and the allowlisted site-packages view: `view.view_mounts`),
so the image only gives the container a root to mount them on. It is therefore a skeleton: the
mount points the spec always needs (/etc, /tmp, the scratch directory) and an /etc/passwd and
/etc/group naming root and the sandbox user for a host without them (the host's are bound over
them where they exist). No interpreter, no package, no shell: whatever the binds do not bring is
absent, so the allowlist is the only import surface by construction, not by the image's care.

The rootfs tar is the same bytes on every machine (sorted, owner 0, mtime 0), so the image's
layer digest is fixed (`ROOTFS_SHA256` checks it), and a rebuild leaves an image that holds
it as it is.
`build_image` imports it with the engine's API (`docker import` does the same from a file).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from typing import TYPE_CHECKING

from harness_learning.harnesses.sandbox.local import SCRATCH

if TYPE_CHECKING:
    from docker import DockerClient

SANDBOX_UID = 65534
DIRECTORIES = ("etc", "tmp", SCRATCH.lstrip("/"), "dev", "proc", "sys")
"""Mount points the spec always uses, and the kernel filesystems Docker mounts."""
FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                  f"nobody:x:{SANDBOX_UID}:{SANDBOX_UID}:nobody:/nonexistent:/usr/sbin/nologin\n",
    "etc/group": f"root:x:0:\nnogroup:x:{SANDBOX_UID}:\n",
}
DIRECTORY_MODES = {"tmp": 0o1777, SCRATCH.lstrip("/"): 0o1777}
ROOTFS_SHA256 = "724a1d4cd8335cca8effdd249ce0d08a7bb3a1e1fd9f6e23eb0b9eaba581b3a9"
"""sha256 of `rootfs_tar()`: the image's one layer, the same wherever it is built."""


def _member(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    """A tar entry with nothing of the machine in it: owner root, mtime 0."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size = kind, mode, size
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def rootfs_tar() -> bytes:
    """The image's root filesystem as an uncompressed tar (the layer `docker import` makes)."""
    entries: dict[str, tuple[bytes, int, bytes]] = {
        d: (tarfile.DIRTYPE, DIRECTORY_MODES.get(d, 0o755), b"") for d in DIRECTORIES}
    entries |= {f: (tarfile.REGTYPE, 0o644, text.encode()) for f, text in FILES.items()}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(entries):
            kind, mode, data = entries[name]
            tar.addfile(_member(name, kind, mode, len(data)), io.BytesIO(data) if data else None)
    return buffer.getvalue()


def rootfs_digest(data: bytes | None = None) -> str:
    """`sha256:<hex>` of the rootfs tar: the layer's diff id as the engine reports it."""
    return "sha256:" + hashlib.sha256(rootfs_tar() if data is None else data).hexdigest()


def split_tag(image: str) -> tuple[str, str]:
    """(repository, tag) of `image` (`latest` when it names none; a registry port is no tag)."""
    repository, _, tag = image.rpartition(":")
    if not repository or "/" in tag:
        return image, "latest"
    return repository, tag


def layers_of(client: DockerClient, image: str) -> list[str] | None:
    """The diff ids of `image`'s layers in the engine, or None when it holds no such image."""
    import docker.errors

    try:
        return list(client.images.get(image).attrs.get("RootFS", {}).get("Layers", []))
    except docker.errors.ImageNotFound:
        return None


def build_image(client: DockerClient, image: str) -> tuple[str, bool]:
    """(id, whether it was imported now) of `image` in the engine `client` (a
    `docker.DockerClient`), imported from the rootfs unless it holds exactly that layer already
    (an import always makes a new id, since the engine stamps its creation time). Fails when the
    engine's layer is not the rootfs this module made."""
    data = rootfs_tar()
    digest = rootfs_digest(data)
    imported = layers_of(client, image) != [digest]
    if imported:
        repository, tag = split_tag(image)
        client.api.import_image_from_data(data, repository=repository, tag=tag)
    if (layers := layers_of(client, image)) != [digest]:
        raise RuntimeError(f"{image}: the engine holds layers {layers}, not the sandbox rootfs "
                           f"{digest}")
    return str(client.images.get(image).id), imported
