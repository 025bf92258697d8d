"""A throwaway PostgreSQL server for tests: a fresh cluster in a temporary directory, on a free
loopback port, stopped and deleted afterwards. Importable as `pg_server`.

The server binaries are found with `pg_config --bindir`, then /usr/lib/postgresql/*/bin, then
PATH. PostgreSQL refuses to run as root, and the tests run as root here and in CI: the cluster
then belongs to `nobody` and initdb and pg_ctl run as that user (`runuser`, else `setpriv`).
Authentication is trust on loopback and the socket, except for the role `PASSWORD_ROLE`, which
must give its password (scram), so tests can check that a password reaches the server.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PASSWORD_ROLE, PASSWORD = "hl_secret", "s3cret-pw"
UNPRIVILEGED = "nobody"
HBA = f"""\
local all all trust
host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
"""


class NoServer(RuntimeError):
    """No PostgreSQL server binaries here (the message says where they were looked for)."""


def bindir() -> Path:
    """The directory holding initdb and pg_ctl."""
    candidates: list[str] = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).resolve().parent))
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    raise NoServer("no PostgreSQL server binaries (initdb, pg_ctl) via `pg_config --bindir`, "
                   "in /usr/lib/postgresql/*/bin or on PATH: install the `postgresql` package "
                   "(`make postgres-server` does)")


def _as_owner(argv: list[str]) -> list[str]:
    """`argv` run as the unprivileged owner when we are root (postgres refuses root)."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("runuser"):
        return ["runuser", "-u", UNPRIVILEGED, "--", *argv]
    entry = pwd.getpwnam(UNPRIVILEGED)
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups",
            *argv]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(_as_owner(argv), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr[-2000:]}")


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a cluster; yields its URL (superuser `postgres`, database `postgres`)."""
    bins = bindir()
    root = Path(tempfile.mkdtemp(prefix="hl-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        entry = pwd.getpwnam(UNPRIVILEGED)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    port = _free_port()
    try:
        _run([str(bins / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
              "--encoding=UTF8", "--locale=C", "--no-sync"], "initdb")
        (data / "pg_hba.conf").write_text(HBA)  # root writes; the server only reads it
        options = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories="
                   f"{root} -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                   "-c max_connections=60 -c shared_buffers=32MB")
        _run([str(bins / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"),
              "-w", "-t", "60", "start"], "pg_ctl start")
        try:
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            _create_password_role(bins, root, port)
            yield url
        finally:
            _run([str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                 "pg_ctl stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _create_password_role(bins: Path, root: Path, port: int) -> None:
    sql = f"CREATE ROLE {PASSWORD_ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'"
    _run([str(bins / "psql"), "-h", str(root), "-p", str(port), "-U", "postgres", "-d",
          "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], "creating the password role")
