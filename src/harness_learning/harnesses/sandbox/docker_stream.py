"""The Docker backend's attach stream: the container's stdin, stdout and stderr over one socket
(the engine client's, a blocking one), handled in threads of its own so that the event loop,
perhaps a server's, never waits on the engine: `Demux` splits the multiplexed frames, `pump`
feeds them to asyncio readers with the bridge's line bound, `SocketWriter` sends the bridge's
lines, `exit_waiter` awaits the container's exit from before it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import struct
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

    from docker.models.containers import Container


class Demux:
    """Split Docker's multiplexed attach stream into stdout and stderr payloads."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= 8:
            stream, length = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + length:
                break
            frames.append((stream, bytes(self.buffer[8:8 + length])))
            del self.buffer[:8 + length]
        return frames


class SocketWriter:
    """A stream writer over the attach socket (the worker's stdin). The socket is a blocking
    one (the engine client's), so a thread sends what `write` queues: the event loop, perhaps
    a server's, never waits on it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.queued = 0
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        threading.Thread(target=self._send, daemon=True).start()

    @property
    def transport(self) -> SocketWriter:
        """The client asks its writer's transport how much is buffered."""
        return self

    def get_write_buffer_size(self) -> int:
        return self.queued

    def write(self, data: bytes) -> None:
        with self._lock:
            self.queued += len(data)
        self._queue.put(data)

    async def drain(self) -> None:
        while self.queued > DRAIN_TO_BYTES:
            await asyncio.sleep(0.005)

    def close(self) -> None:
        self._queue.put(None)

    def _send(self) -> None:
        while (data := self._queue.get()) is not None:
            with contextlib.suppress(OSError):  # the container went away: the rest is dropped
                self.sock.sendall(data)
            with self._lock:
                self.queued -= len(data)
        with contextlib.suppress(OSError):
            self.sock.shutdown(1)


DRAIN_TO_BYTES = 64 * 1024
"""`drain` returns once the sending thread has at most this much left to send."""


def pump(sock: socket.socket, out: asyncio.StreamReader, err: asyncio.StreamReader,
          loop: asyncio.AbstractEventLoop, line_bytes: int) -> None:
    """Split the attach stream into the two readers. Past a stdout line of `line_bytes` the
    reader has what it needs to fail (the client kills the worker as a protocol violation),
    so the rest of the stream is read and dropped: it never piles up in the parent."""
    demux = Demux()
    pending = 0  # bytes of stdout since its last newline
    with contextlib.suppress(OSError):
        while data := sock.recv(65536):
            for stream, payload in demux.feed(data):
                if stream != 1:
                    loop.call_soon_threadsafe(err.feed_data, payload)
                    continue
                if pending > line_bytes:
                    continue
                newline = payload.rfind(b"\n")
                pending = len(payload) - newline - 1 if newline >= 0 else pending + len(payload)
                loop.call_soon_threadsafe(out.feed_data, payload)
    loop.call_soon_threadsafe(out.feed_eof)
    loop.call_soon_threadsafe(err.feed_eof)


def exit_waiter(container: Container) -> asyncio.Future[dict[str, Any]]:
    """A future of the engine's wait result for `container`, asked now, before it starts: the
    engine removes it once it exits, and a wait asked after that finds nothing (the condition
    is `removed`: asked late, it fails at once rather than waiting for an exit that has passed).
    A thread of its own, not the loop's executor: it is held for the container's whole life."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[dict[str, Any]] = loop.create_future()

    def settle(outcome: Any, failed: bool) -> None:
        if not future.done():
            (future.set_exception if failed else future.set_result)(outcome)

    def wait() -> None:
        try:
            outcome, failed = container.wait(condition="removed"), False
        except Exception as exc:
            outcome, failed = exc, True
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(settle, outcome, failed)

    threading.Thread(target=wait, daemon=True).start()
    return future
