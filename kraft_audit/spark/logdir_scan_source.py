"""`spark.readStream.format("kraft-logdir-scan")`: brokers' log dirs read as
log-dir inventories (`kraft_audit.sideinputs.inventories.scan_log_dir`).

kafka-log-dirs never lists the replicas Kafka renamed `*-stray` at startup;
the log dir itself does. The offset per path is the digest of its replica
directory names and a sequence number: a new inventory is taken when a
replica directory appears, goes or is renamed, not at every trigger (segment
sizes change all the time).

Options: `paths`, a JSON list of {"path", "cluster_id"}.
"""

from __future__ import annotations

import hashlib
import json
import os

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit

from kraft_audit.sideinputs.inventories import scan_log_dir
from kraft_audit.spark import event_rows


def listing_digest(path: str) -> str:
    try:
        names = sorted(e.name for e in os.scandir(path) if e.is_dir())
    except FileNotFoundError:
        names = []
    return hashlib.sha1("\n".join(names).encode()).hexdigest()


class ScanPartition(InputPartition):
    def __init__(self, payload: str):
        super().__init__(payload)
        self.payload = payload


class LogDirScanReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        entries = json.loads(options.get("paths") or "[]")
        if not entries:
            raise ValueError("kraft-logdir-scan source needs option `paths`")
        self.entries = [(e["path"], e.get("cluster_id")) for e in entries]

    def initialOffset(self) -> dict:
        return {"scans": {}}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        scans = dict((start or {}).get("scans", {}))
        for path, _ in self.entries:
            digest = listing_digest(path)
            seen = scans.get(path)
            if seen is None or seen["digest"] != digest:
                scans[path] = {"digest": digest, "seq": (seen or {"seq": 0})["seq"] + 1}
        return {"scans": scans}

    def partitions(self, start: dict, end: dict):
        before = (start or {}).get("scans", {})
        return [ScanPartition(json.dumps({"path": path, "cluster_id": cluster_id}))
                for path, cluster_id in self.entries
                if end["scans"].get(path) and end["scans"][path] != before.get(path)]

    def read(self, partition: ScanPartition):
        p = json.loads(partition.payload)
        yield event_rows.to_record_batch(list(scan_log_dir(p["path"], p["cluster_id"])))

    def commit(self, end: dict) -> None:
        pass


class LogDirScanSource(DataSource):
    """spark.readStream.format("kraft-logdir-scan").option("paths", JSON).load()"""

    @classmethod
    def name(cls) -> str:
        return "kraft-logdir-scan"

    def schema(self) -> str:
        return event_rows.EVENT_DDL

    def streamReader(self, schema) -> LogDirScanReader:
        return LogDirScanReader(self.options)
