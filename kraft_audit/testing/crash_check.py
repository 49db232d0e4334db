"""Exactly once across a crash, shown the hard way (shared by the tests and `make
bench-scale`): the real job runs in a child process and is killed with SIGKILL (driver,
JVM and Python workers at once) after some micro-batches have committed; a run resumed
from its checkpoint must then leave the same tables as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_KILLED_RUN = """
import json, sys, time
from kraft_audit.config import load_config
from kraft_audit.spark.job import AuditJob
values, pause = json.loads(sys.argv[1]), float(sys.argv[2])
cfg = load_config(None, values, environ={})
AuditJob(cfg, after_write=lambda batch_id: time.sleep(pause)).run(available_now=True)
"""


def run_then_kill_9(values: dict, commits_before_kill: int = 3, pause_s: float = 0.5,
                    timeout_s: float = 120.0) -> int:
    """Run the job (config overrides `values`, availableNow) in a child process, pausing
    `pause_s` after each micro-batch's write so the kill lands between two of them or in
    one; kill -9 its whole process group once `commits_before_kill` micro-batches are
    committed. Returns the number committed."""
    child = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, json.dumps(values), str(pause_s)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    commits = Path(values["checkpoint"]) / "commits"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and child.poll() is None and \
            len(list(commits.glob("[0-9]*"))) < commits_before_kill:
        time.sleep(0.1)
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    return len(list(commits.glob("[0-9]*")))


_KILLED_AT_SNAPSHOT = """
import json, os, signal, sys
from pathlib import Path
from kraft_audit.config import load_config
from kraft_audit.spark.job import AuditJob
values, point = json.loads(sys.argv[1]), sys.argv[2]
cfg = load_config(None, values, environ={})
job = AuditJob(cfg)
compared = Path(cfg.checkpoint) / "kraft-audit-snapshots.json"

def kill(batch_id):
    if compared.exists() and batch_id in json.loads(compared.read_text()).values():
        os.killpg(os.getpgid(0), signal.SIGKILL)

setattr(job.writer, point, kill)
job.run(available_now=True)
"""


def kill_9_at_snapshot(values: dict, point: str, timeout_s: float = 180.0) -> int:
    """Run the job (config overrides `values`, availableNow) in a child process and kill -9
    it in the micro-batch that compares a snapshot: at `point`, "after_compare" (the compared
    list written, the Delta write not yet) or "after_write" (Delta written, Spark's commit
    not yet). Returns the child's exit code (-9 when killed there)."""
    return _child_exit_code(_KILLED_AT_SNAPSHOT, [json.dumps(values), point], timeout_s)


def _child_exit_code(script: str, args: list[str], timeout_s: float) -> int:
    """Run `script` in a child Python in its own process group; its exit code (-9 when it
    killed itself), the group killed should it outlast `timeout_s`."""
    child = subprocess.Popen([sys.executable, "-c", script, *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        return child.wait(timeout_s)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


_KILLED_IN_COMPACTION = """
import json, os, signal, sys, threading
from kraft_audit.config import load_config
from kraft_audit.spark import sinks
from kraft_audit.spark.job import AuditJob
from kraft_audit.tables.schema import COMPACTION_APP
values, point, after = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
merge, seen = sinks._DeltaRsWriter.merge, []

def kill():
    os.killpg(os.getpgid(0), signal.SIGKILL)

def merge_then_kill(self, table, path, spec, data, app_id, version):
    if app_id == COMPACTION_APP:
        seen.append(version)
        if len(seen) > after and point == "in_merge":  # while it writes files or commits
            threading.Timer(0.01, kill).start()
    merge(self, table, path, spec, data, app_id, version)
    if app_id == COMPACTION_APP and len(seen) > after and point == "after_merge":
        kill()  # committed: the job knows nothing of it

sinks._DeltaRsWriter.merge = merge_then_kill
AuditJob(load_config(None, values, environ={})).run(available_now=True)
"""


def kill_9_in_compaction(values: dict, point: str, after: int = 1, timeout_s: float = 180.0) -> int:
    """Run the job (config overrides `values`, availableNow, delta-rs sink) in a child
    process and kill -9 it in its compaction number `after` + 1 of partition_state: at
    `point`, "in_merge" (10 ms into the MERGE) or "after_merge" (committed). Returns the
    child's exit code (-9 when killed there)."""
    return _child_exit_code(_KILLED_IN_COMPACTION, [json.dumps(values), point, str(after)], timeout_s)


def comparable_rows(tables_root: str, name: str) -> list[dict]:
    """A table's rows without what depends on when and in which micro-batch they were
    written, in a fixed order."""
    from kraft_audit.tables import SINK_COLUMNS
    from kraft_audit.tables.read import read_rows

    rows = [{k: v for k, v in r.items() if k not in SINK_COLUMNS}
            for r in read_rows(tables_root, name)]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
