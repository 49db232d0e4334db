"""`run`'s progress lines go to stderr as it is when each line is written: a second run in
the same process (a notebook, a test) after the first one's stderr was replaced and closed
still logs, instead of Python's "--- Logging error --- I/O operation on closed file"."""

from __future__ import annotations

import io
import logging
import sys

from kraft_audit.cli.run import _log_progress


def test_progress_lines_follow_stderr_when_it_is_replaced(monkeypatch):
    logger = logging.getLogger("kraft_audit")
    monkeypatch.setattr(logger, "handlers", [])
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    _log_progress()
    logging.getLogger("kraft_audit.test").info("batch 0")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    _log_progress()  # the second run keeps the one handler
    logging.getLogger("kraft_audit.test").info("batch 1")
    assert len(logger.handlers) == 1
    assert second.getvalue().endswith("kraft_audit.test batch 1\n")
