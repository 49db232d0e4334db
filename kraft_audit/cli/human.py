"""How the text views write times and ages for a person: ISO-8601 UTC, and ages
both from the wall clock and within the log (whose newest record may be old)."""

from __future__ import annotations

import datetime as dt
import time


def iso(ms: int | None) -> str:
    """A record time (epoch ms) as ISO-8601 UTC to the second; "-" when unknown."""
    if ms is None or ms <= 0:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds: float) -> str:
    """1d02h03m, 2h03m04s or 3m04s."""
    minutes, secs = divmod(int(round(max(seconds, 0))), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def since(start_ms: int, log_now_ms: int, wall_now_ms: int | None = None) -> str:
    """'since <time> (<age> ago; <age> before the log's newest record)'."""
    wall_now_ms = int(time.time() * 1000) if wall_now_ms is None else wall_now_ms
    return (f"since {iso(start_ms)} ({duration((wall_now_ms - start_ms) / 1000)} ago; "
            f"{duration((log_now_ms - start_ms) / 1000)} before the log's newest record)")
