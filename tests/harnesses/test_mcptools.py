"""An MCP server's tools as user tools, against a real stdio server process
(tests/support/mcp_sums/server.py): listed with their schemas, called from another event loop,
their results as data, their errors as the tool's error; a server that does not start and a
tool a harness cannot call are one line naming them."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import pytest

from harness_learning.harnesses.mcptools import (
    McpServer,
    McpToolError,
    close_server,
    close_servers,
    kept_ref,
    mcp_tools,
    server_files,
    stdio_argv,
)
from harness_learning.harnesses.usertools import (
    ToolArgumentError,
    ToolSetupError,
    UserToolError,
    build_user_tools,
)

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_sums" / "server.py"
REF = f"mcp:{shlex.join([sys.executable, str(SERVER)])}"  # quoted: a clone path may hold spaces


@pytest.fixture(scope="module")
def sums():
    yield build_user_tools([mcp_tools(REF)], [REF])
    close_servers()


def test_the_servers_tools_are_user_tools_with_their_schemas(sums) -> None:
    assert sums.names == ["add", "unit_price"]
    add = sums.tools["add"]
    assert add.description == "The sum of two integers."
    assert add.parameters["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert add.parameters["required"] == ["a", "b"]
    assert "tools.call('add', **args)" in sums.describe()


def test_calls_run_on_the_servers_session_from_any_loop(sums) -> None:
    async def calls() -> list:
        return [(await sums.call("add", {"a": 2, "b": 40})).result,
                (await sums.call("unit_price", {"item": "pear"})).result]

    assert asyncio.run(calls()) == [42, {"price": 0.75, "currency": "EUR"}]
    assert asyncio.run(calls()) == [42, {"price": 0.75, "currency": "EUR"}]  # a new loop
    assert McpServer.shared(REF) is McpServer.shared(REF)  # one session per reference


def test_a_wrong_call_is_the_harnesss_error_and_a_failing_tool_the_tools(sums) -> None:
    with pytest.raises(ToolArgumentError, match="missing argument 'b'"):
        asyncio.run(sums.call("add", {"a": 1}))
    with pytest.raises(UserToolError, match="no price for 'kiwi'") as failed:
        asyncio.run(sums.call("unit_price", {"item": "kiwi"}))
    assert isinstance(failed.value.__cause__, McpToolError), "the server's error, as the cause"


def test_a_server_over_streamable_http(tmp_path) -> None:
    import socket
    import subprocess
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ref = f"mcp+http://127.0.0.1:{port}/mcp"

    def listening() -> bool:
        with socket.socket() as client:
            return client.connect_ex(("127.0.0.1", port)) == 0

    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not listening():
            assert server.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        tools = build_user_tools([mcp_tools(ref)], [ref])
        assert tools.names == ["add", "unit_price"]
        assert asyncio.run(tools.call("add", {"a": 20, "b": 22})).result == 42
    finally:
        close_server(ref)
        server.terminate()
        server.wait(10)
        log.close()


def test_a_server_that_does_not_start_is_one_line_with_its_stderr() -> None:
    with pytest.raises(ToolSetupError) as failed:
        mcp_tools(f"{REF} --crash")
    message = str(failed.value)
    assert message.startswith(f"tool {REF} --crash: the MCP server did not start")
    assert "refusing to start: --crash" in message and "\n" not in message
    with pytest.raises(ToolSetupError, match="/no/such/server.*did not start.*FileNotFound"):
        mcp_tools("mcp:/no/such/server")
    with pytest.raises(ToolSetupError, match="127.0.0.1:9/mcp: the MCP server did not start"):
        mcp_tools("mcp+http://127.0.0.1:9/mcp")


def test_a_tool_a_harness_cannot_call_is_named() -> None:
    with pytest.raises(ToolSetupError, match=r"--bad-name: MCP tool 'get-time': its name is "
                                             r"not usable as tools.get-time"):
        mcp_tools(f"{REF} --bad-name")


def test_python_in_a_command_is_this_environments_interpreter(monkeypatch, tmp_path) -> None:
    """With nothing on PATH, `mcp:python3 server.py` still starts: `python3` is sys.executable
    (the server imports `mcp`, which this environment has and a system python3 may lack)."""
    assert stdio_argv(f"mcp:python {SERVER} --x")[0] == sys.executable
    assert stdio_argv("mcp:node server.js")[0] == "node"
    monkeypatch.setenv("PATH", str(tmp_path))
    ref = f"mcp:python3 {shlex.quote(str(SERVER))}"
    try:
        tools = build_user_tools([mcp_tools(ref)], [ref])
        assert asyncio.run(tools.call("add", {"a": 1, "b": 2})).result == 3
    finally:
        close_server(ref)


def test_relative_server_files_are_named_and_their_kept_copies_used(monkeypatch, tmp_path) -> None:
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "server.py").write_text("# a server\n")
    kept = tmp_path / "run" / "inputs"
    kept.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    ref = f"mcp:python3 srv/server.py --port 3 {SERVER}"
    assert server_files(ref) == [Path("srv/server.py")]  # relative and present; not options
    assert server_files("mcp+http://127.0.0.1:9/mcp") == []
    assert kept_ref(ref, kept) == ref  # nothing kept yet
    (kept / "server.py").write_text("# a server\n")
    assert kept_ref(ref, kept) == (f"mcp:python3 {shlex.quote(str(kept.resolve() / 'server.py'))}"
                                   f" --port 3 {shlex.quote(str(SERVER))}")
    assert kept_ref(ref, None) == ref
