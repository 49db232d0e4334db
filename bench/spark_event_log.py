"""What Spark's event log says of one run, per micro-batch: the query's phases
(`durationMs` of its progress) and the stages that ran for it (tasks, their wall, the
tasks' JVM CPU, and the Python operators' SQL metrics: time in Python, workers' start).
bench_run_once.py --event-log prints it; so does

    python bench/spark_event_log.py EVENT_LOG_FILE
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

PROGRESS_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"
# the query's phases, in the order a micro-batch runs them
PHASES = ("latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets", "triggerExecution")
# task metrics (accumulables of a stage): name -> (label, divisor to seconds)
TASK_METRICS = {
    "internal.metrics.executorRunTime": ("run", 1e3),
    "internal.metrics.executorCpuTime": ("JVM CPU", 1e9),
    "internal.metrics.jvmGCTime": ("GC", 1e3),
    "internal.metrics.executorDeserializeTime": ("deser", 1e3),
}


def _seconds(name: str, value: str) -> tuple[str, float] | None:
    """A SQL metric that is a time, as (label, seconds); None for the others. Spark renders
    timings as "total (min, med, max ...)" strings in some versions, numbers in others."""
    low = name.lower()
    if "time" not in low or name.startswith("internal."):
        return None
    try:
        number = float(str(value).split()[0].replace(",", ""))
    except ValueError:
        return None
    # SQL timing metrics are in ms but the shuffle's, in ns
    return name, number / (1e9 if low == "shuffle write time" else 1e3)


def summarize(path: Path) -> str:
    batches: list[dict] = []
    stage_batch: dict[int, str] = {}
    stages: dict[int, dict] = {}
    for line in Path(path).read_text().splitlines():
        ev = json.loads(line)
        kind = ev.get("Event")
        if kind == PROGRESS_EVENT:
            batches.append(ev["progress"])
        elif kind == "SparkListenerJobStart":
            found = re.search(r"\bbatch = (\d+)", (ev.get("Properties") or {}).get("spark.job.description") or "")
            for sid in ev.get("Stage IDs", []):
                stage_batch[sid] = found.group(1) if found else "-"
        elif kind == "SparkListenerStageCompleted":
            info = ev["Stage Info"]
            metrics: dict[str, float] = defaultdict(float)
            for acc in info.get("Accumulables", []):
                name, value = acc.get("Name", ""), acc.get("Value")
                if name in TASK_METRICS:
                    label, div = TASK_METRICS[name]
                    metrics[label] += float(value) / div
                else:
                    timed = _seconds(name, value)
                    if timed is not None:
                        metrics[timed[0]] += timed[1]
            wall = (info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1e3
            stages[info["Stage ID"]] = {"name": info.get("Stage Name", "")[:60],
                                        "tasks": info.get("Number of Tasks"), "wall": wall,
                                        "metrics": dict(metrics)}
    out = []
    for p in batches:
        d = p.get("durationMs", {})
        state = sum(o.get("allUpdatesTimeMs", 0) + o.get("commitTimeMs", 0) for o in p.get("stateOperators", []))
        out.append(f"micro-batch {p['batchId']}: {sum(src.get('numInputRows', 0) for src in p.get('sources', []))} input rows, state store "
                   f"updates + commit {state / 1e3:.2f} s; "
                   + ", ".join(f"{k} {d[k] / 1e3:.2f}" for k in PHASES if k in d) + " s")
    by_batch: dict[str, list[int]] = defaultdict(list)
    for sid, batch in stage_batch.items():
        if sid in stages:
            by_batch[str(batch)].append(sid)
    for batch in sorted(by_batch, key=lambda b: (b == "-", b.zfill(6))):
        out.append(f"stages of micro-batch {batch}:")
        for sid in sorted(by_batch[batch]):
            s = stages[sid]
            out.append(f"  {sid:>3} {s['tasks']:>3} tasks, wall {s['wall']:6.2f} s: "
                       + ", ".join(f"{k} {v:.2f}" for k, v in sorted(s["metrics"].items()) if v)
                       + f"  [{s['name']}]")
    return "\n".join(out)


def newest_log(folder: Path) -> Path | None:
    logs = sorted((p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith(".")),
                  key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else None


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1])))
