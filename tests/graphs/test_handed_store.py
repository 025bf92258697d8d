"""A run directory someone hands you may name a PostgreSQL server of theirs in config.json.
`show`, `report`, `resume`, `approve` and `eval` never connect to it on the run directory's
word: each refuses in one line naming config.json, and the server sees no connection. Given
with `--store`, the server is connected to, but PGPASSWORD and the password file libpq reads
(both holding a password for it here) are not sent: only a password the URL itself carries.

The server is a loopback listener speaking just enough of PostgreSQL's protocol to ask for the
password in clear text, recording every byte it receives."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import threading
from pathlib import Path

import pytest
from cli_run import cli, error_line

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.run import prepare
from harness_learning.harnesses.rundir import RunDir

pytest.importorskip("psycopg")

ENV_SECRET, FILE_SECRET, URL_SECRET = "env-s3cret", "file-s3cret", "url-s3cret"
SSL_REQUEST, GSSENC_REQUEST = 80877103, 80877104
CLEARTEXT_PASSWORD = b"R" + struct.pack("!ii", 8, 3)


class FakePostgres:
    """Accepts connections on 127.0.0.1; to each, after its startup packet, answers 'send
    your password in clear text' and records what comes back until the client hangs up."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.received = bytearray()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(20)
                with contextlib.suppress(OSError):  # a client that hangs up early
                    self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        while True:  # SSL and GSS encryption requests are declined; then the startup packet
            head = _exactly(conn, 8)
            self.received += head
            length, code = struct.unpack("!ii", head)
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                conn.sendall(b"N")
                continue
            self.received += _exactly(conn, length - 8)
            break
        conn.sendall(CLEARTEXT_PASSWORD)
        while chunk := conn.recv(4096):
            self.received += chunk

    def close(self) -> None:
        self.listener.close()


def _exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("the client hung up")
        data += chunk
    return data


@pytest.fixture
def server():
    fake = FakePostgres()
    yield fake
    fake.close()


def handed_run(run_dir: Path, url: str, home: Path) -> dict[str, str]:
    """A run directory whose config.json names `url`, and an environment in which libpq
    would find a password for it twice over (PGPASSWORD, and a password file)."""
    prepare(AdaptConfig(task="rg:basic_arithmetic", run_dir=str(run_dir), rounds=1, store=url))
    RunDir(run_dir).store_pointer.write_text(json.dumps({"url": url, "schema": "hl_run_x"}))
    pgpass = home / "pgpass"
    pgpass.write_text(f"*:*:*:*:{FILE_SECRET}\n")
    pgpass.chmod(0o600)
    return {**os.environ, "PGPASSWORD": ENV_SECRET, "PGPASSFILE": str(pgpass)}


def test_a_store_named_only_by_the_run_directory_is_never_connected_to(server, tmp_path):
    url = f"postgresql://victim@127.0.0.1:{server.port}/db"
    run_dir = tmp_path / "run"
    env = handed_run(run_dir, url, tmp_path)
    for command in ("show", "report", "resume", "approve", "eval"):
        result = cli(command, run_dir, env=env, timeout=300)
        line = error_line(result)
        assert result.returncode == 2, (command, result.stderr[-2000:])
        assert line.startswith(f"harness-learn: error: {RunDir(run_dir).config} names the "
                               f"PostgreSQL log store {url}, which was not given"), line
        assert "--store URL" in line and "Traceback" not in result.stderr
    assert server.connections == 0 and not server.received


def test_given_with_store_only_the_urls_own_password_is_sent(server, tmp_path):
    url = f"postgresql://victim@127.0.0.1:{server.port}/db"
    run_dir = tmp_path / "run"
    env = handed_run(run_dir, url, tmp_path)

    asked = cli("show", run_dir, "--store", url, env=env, timeout=300)
    assert asked.returncode == 4 and "no password supplied" in error_line(asked), \
        asked.stderr[-2000:]
    assert server.connections >= 1 and b"victim" in server.received  # asked for a password
    assert ENV_SECRET.encode() not in server.received
    assert FILE_SECRET.encode() not in server.received

    carried = url.replace("victim@", f"victim:{URL_SECRET}@")
    cli("show", run_dir, "--store", carried, env=env, timeout=300)
    assert URL_SECRET.encode() in server.received  # what is sent, the server would see
    assert ENV_SECRET.encode() not in server.received
