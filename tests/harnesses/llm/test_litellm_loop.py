"""Event loops on other threads are left with nothing pending (litellm's logging worker would
otherwise print "Task was destroyed but it is pending!" when the loop is collected)."""

from __future__ import annotations

import asyncio
import threading

from harness_learning.harnesses.llm.litellm_loop import BackgroundLoop, cancel_tasks


def test_cancel_tasks_cancels_what_is_pending_and_leaves_the_loop_running():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def forever() -> None:
        await asyncio.Event().wait()

    async def start() -> asyncio.Task:
        return asyncio.get_running_loop().create_task(forever())

    task = asyncio.run_coroutine_threadsafe(start(), loop).result(5)
    assert not task.done()
    cancel_tasks(loop)
    assert task.cancelled() and loop.is_running()

    async def alive() -> int:
        return 7

    assert asyncio.run_coroutine_threadsafe(alive(), loop).result(5) == 7  # still serves
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()
    cancel_tasks(loop)  # a closed loop: nothing to do, no error


def test_background_loop_close_cancels_its_tasks_and_stops():
    background = BackgroundLoop()

    async def start() -> asyncio.Task:
        return asyncio.get_running_loop().create_task(asyncio.Event().wait())

    task = background.run(start())
    background.close()
    assert task.cancelled() and background.loop.is_closed()
