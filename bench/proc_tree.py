"""The processes under this one, read from /proc: what the benches sample (the CPU of the
JVM and of Spark's Python processes, their RSS)."""

from __future__ import annotations

import os
from pathlib import Path


def descendants(root: int | None = None) -> dict[int, tuple[str, list[str]]]:
    """pid -> (command line, the fields of /proc/<pid>/stat after the command's name) of every
    process under `root` (this process)."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    found: dict[int, tuple[str, list[str]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # gone meanwhile
                continue
            parents[int(entry.name)], found[int(entry.name)] = int(fields[1]), (cmd, fields)

    def under(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == root:
                return True
        return False

    return {pid: found[pid] for pid in found if under(pid)}


def program(cmd: str) -> str:
    """The name of the program a command line runs (`java`, `python3.11`)."""
    return os.path.basename(cmd.split(" ")[0])


def is_jvm(cmd: str) -> bool:
    return program(cmd) == "java"


def is_python(cmd: str) -> bool:
    """Spark's Python processes (daemons, workers, planners) are the Python programs under
    the JVM; the JVM's own command line names pyspark's jars and the worker daemon's module."""
    return "python" in program(cmd)


def cpu_seconds() -> dict:
    """utime + stime of this process ("driver": the driver's Python, the Delta writes and the
    compaction thread included) and of its descendants (the JVM; Spark's Python processes),
    their reaped children included, by kind."""
    ticks = os.sysconf("SC_CLK_TCK")
    own = os.times()
    out = {"driver": own.user + own.system, "jvm": 0.0, "python": 0.0}
    for cmd, fields in descendants().values():  # utime, stime, cutime, cstime
        out["jvm" if is_jvm(cmd) else "python"] += sum(int(v) for v in fields[11:15]) / ticks
    return out
