"""Mid-stage checkpoints of an SFT run: which one a rerun resumes from.

With `save_steps` set, the trainer writes OUT/trainer/checkpoint-N (the LoRA adapter, the
optimiser, the scheduler, the random states and the data position) every N steps, keeping the
last two. A rerun with the same OUT and configuration resumes from the newest one that is
whole, so a killed stage repeats at most N steps and draws the same batches, giving the same
loss curve. A checkpoint cut off mid-save or damaged is never loaded and never deleted: it is
moved aside as OUT/trainer/refused-checkpoint-N, said in one line, and the previous one is used.
"""

from __future__ import annotations

import json
import logging
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_TORCH_FILES = ("optimizer.pt", "scheduler.pt", "rng_state.pth")
_NOT_THE_CURVE = {"save", "save_steps"}
"""Config fields a resumed run may change: they do not touch the loss curve."""


def checkpoint_step(folder: Path | None) -> int:
    """The optimizer step a checkpoint folder was saved at (0: none)."""
    match = _CHECKPOINT.match(folder.name) if folder is not None else None
    return int(match.group(1)) if match else 0


def checkpoint_problem(folder: Path) -> str | None:
    """Why `folder` cannot be resumed from (None: it is whole). The trainer writes
    trainer_state.json last, and every file is read back: a truncated safetensors header or a
    zip whose CRC fails is caught here instead of deep inside the trainer."""
    state = folder / "trainer_state.json"
    if not state.is_file():
        return "trainer_state.json missing: the save was cut off"
    try:
        json.loads(state.read_text())["global_step"]
    except (ValueError, KeyError) as err:
        return f"trainer_state.json unreadable ({type(err).__name__})"
    weights = next((folder / n for n in ("adapter_model.safetensors", "model.safetensors")
                    if (folder / n).is_file()), None)
    if weights is None:
        return "no adapter_model.safetensors"
    try:
        from safetensors import safe_open

        with safe_open(str(weights), "pt") as f:
            for key in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                f.get_tensor(key)
    except Exception as err:  # noqa: BLE001 (safetensors raises its own and OS errors)
        return f"{weights.name} unreadable ({type(err).__name__}: {str(err)[:60]})"
    for name in _TORCH_FILES:
        path = folder / name
        if not path.is_file():
            return f"{name} missing"
        try:
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
        except (zipfile.BadZipFile, OSError) as err:
            return f"{name} unreadable ({err})"
        if bad is not None:
            return f"{name} damaged ({bad} fails its checksum)"
    return None


def _set_aside(folder: Path) -> Path:
    target = folder.with_name(f"refused-{folder.name}")
    n = 1
    while target.exists():
        n += 1
        target = folder.with_name(f"refused-{folder.name}.{n}")
    folder.rename(target)
    return target


def resume_point(trainer_dir: Path, say: Callable[[str], None] = log.warning) -> Path | None:
    """The newest whole checkpoint under `trainer_dir` (None: start from step 0); each broken
    newer one is moved aside with one line through `say`."""
    found = sorted((p for p in trainer_dir.glob("checkpoint-*") if p.is_dir()
                    and _CHECKPOINT.match(p.name)), key=checkpoint_step, reverse=True)
    for folder in found:
        problem = checkpoint_problem(folder)
        if problem is None:
            return folder
        kept = _set_aside(folder)
        later = [p.name for p in found if checkpoint_step(p) < checkpoint_step(folder)]
        say(f"SFT checkpoint {folder} refused: {problem}; kept as {kept.name}, "
            + (f"resuming from {later[0]}" if later else "starting again from step 0"))
    return None


def check_same_run(out: Path, config: dict[str, Any]) -> None:
    """Refuse to resume checkpoints written under another configuration (one line naming the
    fields that differ): resuming them would mix two runs' curves."""
    previous = out / "config.json"
    if not previous.is_file():
        return
    try:
        before = json.loads(previous.read_text())
    except ValueError:
        return
    changed = sorted(k for k in set(before) | set(config) if k not in _NOT_THE_CURVE
                     and before.get(k) != config.get(k))
    if changed:
        raise ValueError(f"{out} holds SFT checkpoints of another configuration ("
                         + ", ".join(f"{k}: {before.get(k)!r} -> {config.get(k)!r}"
                                     for k in changed[:3])
                         + f"): give a new --out, or delete {out / 'trainer'} to start over")
