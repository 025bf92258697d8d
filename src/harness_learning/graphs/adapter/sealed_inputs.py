"""A run's kept inputs are imported only where they were written, or where the user says so.

`adapt` keeps the `.py` files a run's task, metric and tools come from in `RUN_DIR/inputs/`,
and `resume` and `eval` import them in this process (a metric or a task class runs in the
parent by design). A run directory is also a thing people hand each other: a crafted
`inputs/metric.py` would then run its code here on `resume` or `eval`, outside any sandbox.

So `store_inputs` seals the inputs: a digest of every kept file but data files, keyed with a
secret of this user's (`key_path`, made once, readable by the user only), in
`inputs/.sealed.json`. Before anything of the inputs is imported, `check_sealed` recomputes it;
inputs that are not sealed with this user's key, or have changed since, are refused in one line
naming a file, unless the user passed `--trust-inputs` after reading them (which seals them
again, so the next `resume` goes through). Inputs without code (data files, the start
harness, which runs in the sandbox only) need no seal.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from harness_learning.evals.custom.datafile import is_data_path

SEAL = ".sealed.json"
KEY_ENV = "HARNESS_LEARNING_INPUTS_KEY"
"""A file holding the sealing key, where the default place (`key_path`) is not wanted."""
START_HARNESS = "start_harness.py"  # inputs.START_HARNESS (imported from there it would cycle)
TRUST_HELP = ("Import the run directory's kept code (inputs/*.py: its metric, task, tools) "
              "although it was not kept by a run of yours here; read it first.")
HINT = ("read the file first: it would run with your permissions, outside the sandbox; if you "
        "trust it, pass --trust-inputs (the run's inputs are then sealed as yours)")


class UntrustedInputs(ValueError):
    """A run's kept code that this user did not seal: refused before it is imported."""

    hint = HINT


def key_path() -> Path:
    """Where this user's sealing key is kept: `$HARNESS_LEARNING_INPUTS_KEY`, else
    `$XDG_DATA_HOME/harness-learning/inputs.key` (`~/.local/share/...`)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "harness-learning" / "inputs.key"


def user_key() -> bytes:
    """This user's sealing key, made on first use (mode 0600; two processes making it at once
    agree on the first one written)."""
    path = key_path()
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def code_files(folder: Path) -> dict[str, str]:
    """Kept files that may be imported or started, by path inside `folder`: their sha256."""
    found: dict[str, str] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        top = folder / path.relative_to(folder).parts[0]
        if (not path.is_file() or name in (SEAL, SEAL + ".tmp", START_HARNESS)
                or "__pycache__" in path.parts or is_data_path(name)
                or (top != path and is_data_path(str(top)))):  # a saved `datasets` folder
            continue
        found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _mac(files: dict[str, str]) -> str:
    body = json.dumps(files, sort_keys=True).encode("utf-8")
    return hmac.new(user_key(), body, hashlib.sha256).hexdigest()


def seal(folder: Path) -> None:
    """Seal the code kept in `folder` as this user's (nothing to seal: no file written)."""
    files = code_files(folder)
    target = folder / SEAL
    if not files:
        target.unlink(missing_ok=True)
        return
    tmp = target.with_name(SEAL + ".tmp")
    tmp.write_text(json.dumps({"files": files, "mac": _mac(files)}, indent=1), encoding="utf-8")
    os.replace(tmp, target)


def check_sealed(folder: Path, trust: bool = False) -> None:
    """Refuse (`UntrustedInputs`, one line naming a file) code kept in `folder` that this user
    did not seal, or that changed since; with `trust`, seal it instead."""
    files = code_files(folder)
    if not files:
        return
    if trust:
        seal(folder)
        return
    try:
        stored = json.loads((folder / SEAL).read_text(encoding="utf-8"))
        ok = (isinstance(stored, dict) and stored.get("files") == files
              and hmac.compare_digest(str(stored.get("mac", "")), _mac(files)))
    except (OSError, ValueError, RecursionError):
        ok = False
    if not ok:
        first = folder / next(iter(files))
        raise UntrustedInputs(f"{first}: this run directory's code ({len(files)} file(s) in "
                              f"{folder}) was not kept by a run of yours here, or changed since; "
                              "it is not imported")
