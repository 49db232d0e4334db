"""The cyclic garbage collector paused around work that allocates many objects but no cycles.

The audit, the decoder and the Spark job's calls allocate hundreds of thousands of small
acyclic objects (events, states, rows, frames). With the collector running they reach its
oldest generation and set off full passes over everything alive: in a long-lived process
(a Spark worker keeping its auditors, `check` holding a cluster's image) most of the CPU
outside the work itself. Their memory is freed by reference counting either way.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


class collector_paused:  # noqa: N801 - a context manager, named as contextlib's are
    """The collector off while the block runs and left as it was found, even if the block
    raises. `freeze_after`: what is alive at the end is kept out of the collector's reach for
    good (gc.freeze), for a process whose work is done and whose result is no garbage. A class,
    not a generator: turning the collector back on is the last thing it does, so nothing it
    allocates afterwards sets off a pass in the block's name."""

    __slots__ = ("_freeze_after", "_collecting")

    def __init__(self, freeze_after: bool = False):
        self._freeze_after = freeze_after
        self._collecting = False

    def __enter__(self) -> None:
        self._collecting = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info) -> bool:
        if self._freeze_after:
            gc.freeze()
        if self._collecting:
            gc.enable()
        return False


_END = object()


def paused_each(items: Iterator[T]) -> Iterator[T]:
    """Each item of `items` made with the collector paused, and handed on with the collector
    as it was: the caller's code (Spark's, between the chunks of a task) runs as usual."""
    while True:
        with collector_paused():
            item = next(items, _END)
        if item is _END:
            return
        yield item
