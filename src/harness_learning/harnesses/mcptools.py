"""An MCP server's tools as user tools: `--tools "mcp:COMMAND ARGS..."` starts a server over
stdio, `--tools mcp+http://HOST:PORT/PATH` connects to one over streamable HTTP.

Each tool the server lists becomes a LangChain tool that runs in the parent, like any user
tool (`harnesses.usertools`): a harness calls it with `tools.call(name, **args)` or through
`tools.langchain_tools()`, and its arguments are checked against the tool's input schema
before the call. The server's session lives on an event loop of its own, on a daemon thread:
an MCP session (anyio streams, a child process) is bound to the loop that opened it, while
its tools are called from the adapter's loop, a server's, or `harness-learn run`'s. One
session per reference per process (`McpServer.shared`), so checking a run's inputs and then
running it starts the server once; every session closes at exit (`close_servers`).

A stdio command's `python`/`python3` is the running interpreter (`sys.executable`): a server
written against this environment's `mcp` runs in it, not in whatever `python3` is first on PATH.
Files a stdio command names by a relative path (`mcp:python3 server.py`) are kept with the run
(`server_files`, copied by `graphs.adapter.inputs`) and the kept copy is what a run started,
resumed or served from any directory uses (`kept_ref`).

A server that does not start or answer, or a tool whose name or input schema a harness cannot
call, is a `ToolSetupError`: one line naming the server and the tool.

Why a client of our own on the `mcp` SDK, not `langchain-mcp-adapters` (0.3.2, measured on
tests/support/mcp_sums/server.py, 2 cores under load): its `MultiServerMCPClient.get_tools()`
tools open a session per call, starting the server each time: 1.4-2.7 s a call (median 2.0 s)
against 5-38 ms (median 9 ms) on a held session. Its held session (`client.session()` with
`load_mcp_tools`) is bound to the loop that opened it: the same tool awaited from another
thread's loop, as the bridge serves a sandbox's calls, hung until a 10 s timeout and broke the
session. Its stdio sessions take no `errlog`, so a server's stderr goes to ours (a failed start
read "McpError: Connection closed", its reason printed apart, not in the one error line). Its
tools return LangChain content blocks, the structured result only as a ToolCall's artifact,
and by default an error result as ordinary content. Keeping the loop thread, the stderr file
and the result conversion, it would have replaced only the listing and the tool wrapping.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import shlex
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.usertools import RESERVED_NAMES, ToolSetupError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

STDIO_PREFIX = "mcp:"
HTTP_PREFIXES = ("mcp+http://", "mcp+https://")
START_TIMEOUT_S = 60.0
"""Longest wait for a server to start, answer `initialize` and list its tools."""
CALL_TIMEOUT_S = 300.0
CLOSE_TIMEOUT_S = 5.0
STDERR_CHARS = 300
PYTHON_NAMES = frozenset({"python", "python3"})
"""Commands that mean "this environment's interpreter" in an `mcp:` reference."""


class McpToolError(RuntimeError):
    """The server answered a call with an error result (the harness sees its text)."""


def is_mcp(ref: str) -> bool:
    """`ref` names an MCP server rather than Python code."""
    return ref.startswith(STDIO_PREFIX) or ref.startswith(HTTP_PREFIXES)


def stdio_argv(ref: str) -> list[str]:
    """The command line of a stdio reference, `python`/`python3` as the running interpreter."""
    argv = shlex.split(ref[len(STDIO_PREFIX):])
    if argv and argv[0] in PYTHON_NAMES:
        argv[0] = sys.executable
    return argv


def server_files(ref: str) -> list[Path]:
    """The files a stdio reference names by a relative path that exist here (the server's
    script, say): what a run keeps in its inputs. Absolute paths and options are left alone."""
    if not ref.startswith(STDIO_PREFIX):
        return []
    found = []
    for arg in shlex.split(ref[len(STDIO_PREFIX):]):
        path = Path(arg)
        if not arg.startswith("-") and not path.is_absolute() and path.is_file():
            found.append(path)
    return found


def kept_ref(ref: str, base: Path | None) -> str:
    """`ref` with each relative file argument replaced by its kept copy in `base` (a run's
    inputs folder) where one is there; `ref` itself when nothing is kept."""
    if base is None or not ref.startswith(STDIO_PREFIX):
        return ref
    argv = shlex.split(ref[len(STDIO_PREFIX):])
    changed = False
    for i, arg in enumerate(argv):
        path = Path(arg)
        copy = base / path.name
        if not arg.startswith("-") and not path.is_absolute() and path.name and copy.is_file():
            argv[i], changed = str(copy.resolve()), True
    return STDIO_PREFIX + shlex.join(argv) if changed else ref


def mcp_tools(ref: str) -> list[Any]:
    """The tools of the server `ref` names, as LangChain tools bound to its session (started
    here, or the one this process already holds)."""
    return McpServer.shared(ref).langchain_tools()


class McpServer:
    """One MCP client session, held open on its own event loop until `close`."""

    _shared: dict[str, McpServer] = {}
    _lock = threading.Lock()

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self.tools: list[Tool] = []
        """The server's `mcp.types.Tool`s, as listed at start."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"mcp:{ref[:40]}")
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._held: concurrent.futures.Future[None] | None = None
        # the server's stderr, read back when it fails; open as long as the session
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8",  # noqa: SIM115
                                              errors="replace")

    @classmethod
    def shared(cls, ref: str) -> McpServer:
        """The open session of `ref`, started on first use (then listed and checked)."""
        with cls._lock:
            server = cls._shared.get(ref)
            if server is None or not server.alive:
                server = cls(ref)
                server.start()
                cls._shared[ref] = server
            return server

    @property
    def alive(self) -> bool:
        return self._held is not None and not self._held.done()

    def start(self) -> None:
        """Start the server (or connect), initialise and list its tools; raises
        `ToolSetupError` naming the server when any of it fails or takes too long."""
        self._thread.start()
        ready: concurrent.futures.Future[list[Tool]] = concurrent.futures.Future()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            self.tools = ready.result(START_TIMEOUT_S)
        except Exception as exc:
            why = (f"did not answer within {START_TIMEOUT_S:g} s"
                   if isinstance(exc, concurrent.futures.TimeoutError)
                   else f"did not start ({_reason(exc)})")
            message = f"tool {self.ref}: the MCP server {why}{self._stderr_tail()}"
            self.close()
            raise ToolSetupError(message) from None
        try:
            for tool in self.tools:
                check_tool(self.ref, tool)
        except ToolSetupError:
            self.close()
            raise

    async def _hold(self, ready: concurrent.futures.Future[list[Tool]]) -> None:
        """Open the transport and the session, list the tools, then keep both open until
        `close`: anyio requires them to be entered and left in this one task."""
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await session.initialize()
                tools = await _list_all(session)
                self._session = session
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError | Exception):
                raise

    def _transport(self) -> Any:
        if self.ref.startswith(HTTP_PREFIXES):
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.ref[len("mcp+"):])
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv = stdio_argv(self.ref)
        if not argv:
            raise ToolSetupError(f"tool {self.ref}: expected mcp:COMMAND ARGS...")
        # The user's own server, run like their module:attr tools: with their environment.
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        return stdio_client(params, errlog=self._stderr)

    async def acall(self, name: str, args: dict[str, Any]) -> Any:
        """Call tool `name` from any event loop; its structured result, else its text."""
        future = asyncio.run_coroutine_threadsafe(self._call(name, args), self._loop)
        return await asyncio.wrap_future(future)

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        if self._session is None or not self.alive:
            raise McpToolError(f"the MCP server {self.ref} is closed")
        from datetime import timedelta

        result = await self._session.call_tool(
            name, args, read_timeout_seconds=timedelta(seconds=CALL_TIMEOUT_S))
        return call_result(name, result, self._tool(name))

    def _tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def langchain_tools(self) -> list[Any]:
        """One LangChain tool per listed tool, its schema the tool's input schema."""
        from langchain_core.tools import StructuredTool

        made = []
        for tool in self.tools:
            async def run(_name: str = tool.name, **args: object) -> Any:
                return await self.acall(_name, args)

            made.append(StructuredTool(
                name=tool.name, description=tool.description or tool.title or tool.name,
                args_schema=tool.inputSchema, coroutine=run,
                metadata={"mcp_server": self.ref}))
        return made

    def close(self) -> None:
        """End the session (a stdio server's process with it) and stop the loop."""
        if self._loop.is_closed():
            return
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._held is not None:
            with contextlib.suppress(Exception):
                self._held.result(CLOSE_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
        self._stderr.close()

    def _stderr_tail(self) -> str:
        """The server's last words on stderr, for the one line that says it failed."""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = " ".join(self._stderr.read().split())
        except (OSError, ValueError):
            return ""
        return f"; its stderr: …{text[-STDERR_CHARS:]}" if text else ""


async def _list_all(session: ClientSession) -> list[Tool]:
    """Every tool, following the listing's pages."""
    tools, cursor = [], None
    while True:
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        tools += page.tools
        cursor = page.nextCursor
        if not cursor:
            return tools


def check_tool(ref: str, tool: Tool) -> None:
    """A harness calls a tool as `tools.NAME(**args)`: its name and its arguments' names must
    be identifiers, and its input schema an object schema."""
    where = f"tool {ref}: MCP tool {tool.name!r}"
    if not tool.name.isidentifier() or tool.name in RESERVED_NAMES:
        raise ToolSetupError(f"{where}: its name is not usable as tools.{tool.name} (an "
                             f"identifier, not one of {', '.join(sorted(RESERVED_NAMES))})")
    schema = tool.inputSchema
    if not isinstance(schema, dict) or schema.get("type", "object") != "object" or not \
            isinstance(schema.get("properties", {}), dict):
        raise ToolSetupError(f"{where}: its input schema is not an object schema with "
                             f"properties ({str(schema)[:120]})")
    odd = [k for k in schema.get("properties", {}) if not k.isidentifier()]
    if odd:
        raise ToolSetupError(f"{where}: argument name(s) {', '.join(map(repr, odd))} cannot "
                             "be passed as keywords")


def call_result(name: str, result: CallToolResult, tool: Tool | None = None) -> Any:
    """A `CallToolResult` as JSON data: the structured content (FastMCP's `{"result": x}`
    wrapper of a plain return value taken off), else the text blocks joined. An error result
    raises `McpToolError` with its text, which the harness sees as the tool's error. A
    single text block holding a JSON object or list (what FastMCP sends for a `dict` return)
    is that data."""
    texts = [getattr(b, "text", None) or f"[{getattr(b, 'type', 'content')}]"
             for b in result.content or []]
    if result.isError:
        raise McpToolError(f"{name}: {' '.join(texts) or 'error'}")
    data = result.structuredContent
    if data is not None:
        schema = getattr(tool, "outputSchema", None) or {}
        if list(data) == ["result"] and set(schema.get("properties", {})) == {"result"}:
            return data["result"]
        return data
    text = texts[0] if len(texts) == 1 else "\n".join(texts)
    if text[:1] in "{[":  # a dict or list the server sent as JSON text
        with contextlib.suppress(ValueError):
            return json.loads(text)
    return text


def _reason(exc: BaseException) -> str:
    """An exception's message, looking into anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}".strip()


def close_server(ref: str) -> None:
    """Close the session of `ref`, if this process holds one (the next use starts another)."""
    with McpServer._lock:
        server = McpServer._shared.pop(ref, None)
    if server is not None:
        server.close()


@atexit.register
def close_servers() -> None:
    """Close every session this process holds (at exit; tests call it too)."""
    with McpServer._lock:
        servers, McpServer._shared = list(McpServer._shared.values()), {}
    for server in servers:
        server.close()
