"""Watching the cyclic garbage collector from a test: which of its passes start inside the
work a test names (core/collector.py's pause is meant to leave none there)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def passes_inside(*functions: str) -> Iterator[list[int]]:
    """The generations of the collector's passes that start while a function of one of these
    names is running (on the stack), listed as they start. The threshold is 1 meanwhile, so
    with the collector on nearly every allocation starts a pass; the collector's state, its
    thresholds and callbacks are as they were afterwards."""
    names = frozenset(functions)
    passes: list[int] = []

    def watch(phase: str, info: dict) -> None:
        if phase != "start":
            return
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name in names:
                passes.append(info["generation"])
                return
            frame = frame.f_back

    thresholds, collecting = gc.get_threshold(), gc.isenabled()
    gc.callbacks.append(watch)
    gc.set_threshold(1)
    try:
        yield passes
    finally:
        gc.callbacks.remove(watch)
        gc.set_threshold(*thresholds)
        gc.enable() if collecting else gc.disable()
