"""Every configured input as one stream of event rows (`event_rows` schema): the
Spark plumbing only; what a file means is the core's business
(`kraft_audit.core.codec.dumplog`, `kraft_audit.sideinputs`).

- KRaft log dirs: the `kraft-log` source (`source.py`).
- kafka-dump-log output: Spark's file source, one row per *whole file*
  (`wholetext`): dump-log batch lines mark the atomic batch limits of the
  records under them, so a file is parsed as a unit by the codec's
  `parse_dump_log`.
- Broker registration requests (the controller's request log, or JSON lines):
  the `kraft-lines` source (`lines_source.py`) tails the files, so lines
  appended to a file and files rotated by log4j are read.
- The shipper's topics (`kraft-audit ship`): Spark's own Kafka source
  (`kafka_input.py`), each message one batch decoded by the same codec.
- Log-dir inventories (`kafka-log-dirs --describe` output, one file per run):
  Spark's file source, one row per new file, parsed by
  `kraft_audit.sideinputs.parse_inventory`; a broker's log dir itself (it holds
  meta.properties): the `kraft-logdir-scan` source, a new inventory whenever
  its replica directories change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kraft_audit.config import LogSource, SourcesConfig
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.sideinputs import parse_inventory
from kraft_audit.sideinputs.inventories import is_kafka_log_dir
from kraft_audit.sideinputs.registrations import UNKNOWN_CLUSTER
from kraft_audit.spark import event_rows


def dump_log_events(text: str, cluster_id: str | None, source: str
                    ) -> Iterator[MetadataEvent | Quarantined]:
    """One kafka-dump-log output file, through the codec's parser."""
    from kraft_audit.core.codec.dumplog import parse_dump_log

    result = parse_dump_log(text.splitlines(), cluster_id or UNKNOWN_CLUSTER, source)
    if hasattr(result, "events"):  # a result object rather than a stream
        yield from result.events
        yield from getattr(result, "quarantined", [])
    else:
        yield from result
    # A dump file is a whole log (or its end): side inputs need not wait longer.
    yield event_rows.log_tail_marker(cluster_id or UNKNOWN_CLUSTER, source)


# ------------------------------------------------------------ Spark glue

def _arrow_mapper(parse_file, cluster_id: str | None):
    """mapInArrow function: (value, file_path, mtime) rows → event rows.

    Never raises on content: a parser failure becomes a quarantine row.
    """
    def mapper(batches):
        for batch in batches:
            cols = batch.to_pydict()
            items: list = []
            for value, path, mtime in zip(cols["value"], cols["file_path"], cols["mtime"]):
                source = os.path.basename(path or "")
                try:
                    items.extend(parse_file(value or "", cluster_id, source, mtime))
                except Exception as exc:  # noqa: BLE001 - keep the query alive
                    items.append(Quarantined(cluster_id or UNKNOWN_CLUSTER, source, 0,
                                             f"could not parse {source}: {type(exc).__name__}: {exc}",
                                             (value or "").encode()[:4096]))
            yield event_rows.to_record_batch(items, epochs=True)  # a dump's batches keep their epochs
    return mapper


def _parse_dump_file(text, cluster_id, source, mtime):
    return dump_log_events(text, cluster_id, source)


def _parse_inventory_file(text, cluster_id, source, mtime):
    return parse_inventory(text, cluster_id, source, _epoch_ms(mtime))


def _epoch_ms(mtime) -> int:
    if mtime is None:
        return 0
    if hasattr(mtime, "timestamp"):
        return int(mtime.timestamp() * 1000)
    return int(mtime)


def _whole_files(spark, path: str, max_files: int | None):
    """A stream of (value, file_path, mtime), one row per new file under `path`."""
    from pyspark.sql import functions as F

    p = Path(path)
    reader = spark.readStream.format("text").option("wholetext", "true")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", str(max_files))
    if p.is_file():  # the file source watches directories: watch this one file
        reader = reader.option("pathGlobFilter", p.name)
        p = p.parent
    df = reader.load(str(p))
    return df.select(F.col("value"), F.col("_metadata.file_path").alias("file_path"),
                     F.col("_metadata.file_modification_time").alias("mtime"))


def file_stream(spark, path: str, cluster_id: str | None, kind: str, max_files: int | None = None):
    parse = {"dump_logs": _parse_dump_file, "log_dir_inventories": _parse_inventory_file}[kind]
    return _whole_files(spark, path, max_files).mapInArrow(
        _arrow_mapper(parse, cluster_id), event_rows.EVENT_DDL)


def registration_stream(spark, entries: Sequence[LogSource], default_cluster: str | None):
    """Registration requests, tailed from their files (kafka.request.logger output or
    JSON lines) by the `kraft-lines` source: lines appended to a file are read too."""
    paths = [{"path": e.path, "cluster_id": e.cluster_id or default_cluster} for e in entries]
    return spark.readStream.format("kraft-lines").option("paths", json.dumps(paths)).load()


def log_dir_stream(spark, log_dirs: Sequence[LogSource], starting_position: str = "earliest",
                   max_records: int | None = None, max_bytes: int | None = None,
                   bootstrap_controllers: Sequence[str] = ()):
    reader = (spark.readStream.format("kraft-log")
              .option("logDirs", json.dumps([{"path": d.path, "cluster_id": d.cluster_id} for d in log_dirs]))
              .option("startingPosition", starting_position))
    if bootstrap_controllers:
        reader = reader.option("bootstrapControllers", ",".join(bootstrap_controllers))
    if max_records:
        reader = reader.option("maxRecordsPerTrigger", str(max_records))
    if max_bytes:
        reader = reader.option("maxBytesPerTrigger", str(max_bytes))
    return reader.load()


def all_events(spark, sources: SourcesConfig) -> Any:
    """The union of every configured input (the configuration's `sources`)."""
    streams = []
    # Side files rarely name their cluster (kafka-log-dirs output never does):
    # with one log dir configured, they belong to its cluster.
    default_cluster = None
    if len(sources.log_dirs) == 1:
        from kraft_audit.spark.source import log_dir_cluster_id

        only = sources.log_dirs[0]
        default_cluster = log_dir_cluster_id(only.path, only.cluster_id)
    if sources.log_dirs:
        streams.append(log_dir_stream(spark, sources.log_dirs, sources.starting_position,
                                      sources.max_records_per_trigger, sources.max_bytes_per_trigger,
                                      sources.bootstrap_controllers))
    scans = []
    for kind in ("dump_logs", "log_dir_inventories"):
        for entry in getattr(sources, kind):
            cluster_id = entry.cluster_id or default_cluster
            if kind == "log_dir_inventories" and is_kafka_log_dir(entry.path):
                scans.append({"path": entry.path, "cluster_id": cluster_id})
                continue
            streams.append(file_stream(spark, entry.path, cluster_id, kind))
    if scans:
        streams.append(spark.readStream.format("kraft-logdir-scan").option("paths", json.dumps(scans))
                       .load())
    if sources.registrations:
        streams.append(registration_stream(spark, sources.registrations, default_cluster))
    if sources.kafka:
        from kraft_audit.spark.kafka_input import kafka_stream

        streams += [kafka_stream(spark, entry) for entry in sources.kafka]
    if not streams:
        raise ValueError("no input configured")
    events = streams[0]
    for s in streams[1:]:
        events = events.unionByName(s)
    return events
