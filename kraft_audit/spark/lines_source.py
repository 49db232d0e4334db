"""`spark.readStream.format("kraft-lines")`: broker registration requests tailed
from line files (the controller's `kafka.request.logger` output, or JSON lines).

Spark's file source reads a file once, when it appears; a request log grows
and rotates. This source follows each configured path with the core's
`kraft_audit.sideinputs.tail`: the streaming offset is, per path and followed
file name, {"ino", "pos"} (the inode being read and the byte position of its
next line), so a rotated file's last lines are read before the new file, and a
half-written last line waits for the next trigger. Parsing is the core's
`parse_registration_line`, on the executors.

Options: `paths`, a JSON list of {"path", "cluster_id"}.
"""

from __future__ import annotations

import json

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, SupportsTriggerAvailableNow

from kraft_audit.core.events import Quarantined
from kraft_audit.sideinputs import registration_span_items
from kraft_audit.sideinputs.registrations import UNKNOWN_CLUSTER
from kraft_audit.sideinputs.tail import Span, plan_all
from kraft_audit.spark import event_rows


class SpanPartition(InputPartition):
    def __init__(self, payload: str):
        super().__init__(payload)
        self.payload = payload


class LinesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]):
        entries = json.loads(options.get("paths") or "[]")
        if not entries:
            raise ValueError("kraft-lines source needs option `paths`")
        self.entries = [(e["path"], e.get("cluster_id")) for e in entries]
        self._target: dict | None = None

    def initialOffset(self) -> dict:
        return {"paths": {}}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # Everything the files hold now, and no more.
        self._target = {path: plan_all(path, None)[1] for path, _ in self.entries}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self._target is not None:
            return {"paths": self._target}
        begun = (start or {}).get("paths", {})
        return {"paths": {path: plan_all(path, begun.get(path))[1] for path, _ in self.entries}}

    def partitions(self, start: dict, end: dict):
        parts = []
        for path, cluster_id in self.entries:
            begin = (start or {}).get("paths", {}).get(path)
            target = (end or {}).get("paths", {}).get(path) or {}
            spans, notes = _spans_between(path, begin, target)
            payload = {"cluster_id": cluster_id, "spans": [s.to_dict() for s in spans],
                       "notes": [[path, n] for n in notes]}
            if spans or notes:
                parts.append(SpanPartition(json.dumps(payload)))
        return parts

    def read(self, partition: SpanPartition):
        payload = json.loads(partition.payload)
        cluster_id = payload["cluster_id"]
        items: list = [Quarantined(cluster_id or UNKNOWN_CLUSTER, path, 0, note)
                       for path, note in payload["notes"]]
        for s in payload["spans"]:
            items.extend(registration_span_items(Span(**s), cluster_id))
        if items:
            yield event_rows.to_record_batch(items)

    def commit(self, end: dict) -> None:
        pass


def _spans_between(path: str, begin: dict | None, target: dict) -> tuple[list[Span], list[str]]:
    """The spans from `begin` up to the planned `target` positions (per followed name):
    planning again from `begin` may see more; what lies past the target is cut off."""
    spans, _, notes = plan_all(path, begin)
    kept = []
    for s in spans:
        t = target.get(s.followed)
        if t is None:
            continue
        # Files are read in order up to the target inode and position.
        if s.ino == t["ino"]:
            if t["pos"] > s.start:
                kept.append(Span(s.path, s.ino, s.start, min(s.end, t["pos"]), s.followed))
            target = {k: v for k, v in target.items() if k != s.followed}  # none after it
        else:
            kept.append(s)
    return kept, notes


class LinesSource(DataSource):
    """spark.readStream.format("kraft-lines").option("paths", JSON).load()"""

    @classmethod
    def name(cls) -> str:
        return "kraft-lines"

    def schema(self) -> str:
        return event_rows.EVENT_DDL

    def streamReader(self, schema) -> LinesStreamReader:
        return LinesStreamReader(self.options)
