"""How a handler waits for the store without holding the event loop: a driver callback's answer, or a worker pool's.

A call of the store's :attr:`~casstor_ops.store.api.Store.callbacks` answers
through ``done(value, error)`` on the driver's thread: :func:`answered`
turns that into a future of the event loop, so no thread waits for the
driver. Every other store call blocks (it drives the driver's futures on its
own thread): :func:`on_pool` runs it on a bounded worker pool.

Example::

    >>> head = await answered(partial(store.callbacks.stat_async, key))   # doctest: +SKIP
    >>> row = await answered(partial(one_row, session, statement, (key,), profile))   # doctest: +SKIP
    >>> out = await on_pool(pool, store.stat, key)                        # doctest: +SKIP

Failures: the error ``done`` is called with, or the one the pool's call
raises, is raised by the ``await``. An answer for a request already cancelled
is dropped, and so is one that comes after the event loop closed (the server
stopped): nobody waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


async def answered(start: Callable[[Callable[[T | None, Exception | None], None]], None]) -> T:
    """What ``start(done)`` answers through ``done(value, error)``, called once on the driver's thread: it
    resolves a future of this loop, so no worker thread waits for the driver."""
    loop = asyncio.get_running_loop()
    answer = loop.create_future()

    def done(value: T | None, error: Exception | None) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, answer, value, error)
        except RuntimeError:  # the loop closed meanwhile (the server stopped): nobody waits for it
            pass

    start(done)
    return await answer


def _resolve(answer: asyncio.Future, value: object, error: Exception | None) -> None:
    if answer.cancelled():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(value)


def one_row(session, statement, values: tuple, profile: object,
            done: Callable[[object, Exception | None], None]) -> None:
    """Start one single-row read; ``done(row or None, error)`` is called on the driver's thread (for
    :func:`answered`)."""
    future = session.execute_async(statement, values, execution_profile=profile)
    future.add_callbacks(lambda rows: done(rows[0] if rows else None, None), lambda error: done(None, error))


async def on_pool(pool: ThreadPoolExecutor, call: Callable[..., T], *args: object) -> T:
    """What ``call(*args)`` returns, run on a thread of ``pool``."""
    return await asyncio.get_running_loop().run_in_executor(pool, call, *args)
