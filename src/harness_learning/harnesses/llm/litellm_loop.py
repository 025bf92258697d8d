"""Process-wide plumbing: the lazy litellm import and the event loop behind sync calls."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Coroutine
from types import ModuleType
from typing import Any, TypeVar

from harness_learning.harnesses.offline import set_offline_switches

T = TypeVar("T")
_import_lock = threading.Lock()
_litellm: ModuleType | None = None


def import_litellm() -> ModuleType:
    """Import litellm (~3 s) once, offline, with telemetry and logging callbacks off."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            set_offline_switches()  # before the import: it fetches a cost map otherwise
            import litellm

            litellm.telemetry = False
            litellm.suppress_debug_info = True
            litellm.turn_off_message_logging = True
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm._async_success_callback = []
            litellm._async_failure_callback = []
            litellm.callbacks = []
            litellm.set_verbose = False
            _litellm = litellm
    return _litellm


def litellm_if_imported() -> ModuleType | None:
    """The configured litellm module, or None before `import_litellm` ran."""
    return _litellm


class BackgroundLoop:
    """An event loop on a daemon thread; sync callers submit coroutines to it, so litellm's
    connection pools stay bound to one live loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="model-client-loop", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self, timeout_s: float = 5.0) -> None:
        """Cancel what still runs on the loop (litellm's logging worker) and stop it."""
        if self.loop.is_closed():
            return
        cancel_tasks(self.loop, timeout_s)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout_s)
        if not self.thread.is_alive():
            self.loop.close()


def cancel_tasks(loop: asyncio.AbstractEventLoop, timeout_s: float = 5.0) -> None:
    """Cancel every task still pending on `loop`, a loop running on another thread, and wait for
    them to finish. litellm starts a logging worker task on the loop of its first async call;
    a loop stopped with it pending prints "Task was destroyed but it is pending!" when it is
    collected (TRL's reward loop, stopped at exit, did)."""
    if loop.is_closed() or not loop.is_running():
        return

    async def cancel_rest() -> None:
        current = asyncio.current_task()
        rest = [t for t in asyncio.all_tasks() if t is not current]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    with contextlib.suppress(Exception):  # closing anyway; nothing left to report to
        asyncio.run_coroutine_threadsafe(cancel_rest(), loop).result(timeout_s)


_loop_lock = threading.Lock()
_background: BackgroundLoop | None = None


def background_loop() -> BackgroundLoop:
    global _background
    with _loop_lock:
        if _background is None:
            _background = BackgroundLoop()
            atexit.register(_background.close)
        return _background
