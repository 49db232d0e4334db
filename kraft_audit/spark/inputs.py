"""Every configured input as one stream of event rows (`event_rows` schema).

- KRaft log dirs: the `kraft-log` source (`source.py`).
- kafka-dump-log output: Spark's file source, one row per *whole file*
  (`wholetext`): dump-log batch lines mark the atomic batch limits of the
  records under them, so a file is parsed as a unit by the codec's
  `parse_dump_log`.
- Broker registration events: JSON lines → kind "registration",
  type BROKER_REGISTRATION_REQUEST.
- Log-dir inventories (`kafka-log-dirs --describe` output, one file per
  inventory) → one event per broker, kind "log_dirs", type BROKER_LOG_DIRS,
  data {brokerId, logDirs}.

The line parsers are plain functions (no Spark), so they are tested directly
and could be reused by the single-process CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from kraft_audit.events import (
    BROKER_LOG_DIRS,
    BROKER_REGISTRATION_REQUEST,
    KIND_LOG_DIRS,
    KIND_REGISTRATION,
    NO_OFFSET,
    MetadataEvent,
    Quarantined,
)
from kraft_audit.spark import event_rows

UNKNOWN_CLUSTER = "unknown"
_REQUIRED_REGISTRATION = {"brokerId": int, "incarnationId": str}


# ----------------------------------------------------------- plain parsers

def registration_events(lines: Iterable[str], cluster_id: str | None, source: str
                        ) -> Iterator[MetadataEvent | Quarantined]:
    """Broker registration requests, one JSON object per line."""
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            yield Quarantined(cluster_id or UNKNOWN_CLUSTER, source, number,
                              f"registration line is not JSON: {exc}", text.encode()[:4096])
            continue
        problem = _registration_problem(data)
        if problem:
            yield Quarantined(cluster_id or UNKNOWN_CLUSTER, source, number,
                              f"registration event {problem}", text.encode()[:4096])
            continue
        cid = data.get("clusterId") or cluster_id or UNKNOWN_CLUSTER
        if cluster_id and data.get("clusterId") and data["clusterId"] != cluster_id:
            yield Quarantined(cluster_id, source, number,
                              f"registration event is for cluster {data['clusterId']}, "
                              f"this input is configured for {cluster_id}", text.encode()[:4096])
            continue
        yield MetadataEvent(
            cluster_id=cid, source=source, position=number, offset=NO_OFFSET,
            batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET,
            timestamp_ms=int(data.get("timestampMs") or 0), kind=KIND_REGISTRATION,
            type=BROKER_REGISTRATION_REQUEST, version=int(data.get("requestVersion") or 0),
            data=data)


def _registration_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "is not a JSON object"
    for name, typ in _REQUIRED_REGISTRATION.items():
        if not isinstance(data.get(name), typ) or isinstance(data.get(name), bool):
            return f"lacks {name} ({typ.__name__})"
    for name in ("previousBrokerEpoch", "timestampMs", "requestVersion"):
        if name in data and data[name] is not None and not isinstance(data[name], int):
            return f"has a non-integer {name}: {data[name]!r}"
    return None


def log_dir_events(text: str, cluster_id: str | None, source: str, timestamp_ms: int
                   ) -> Iterator[MetadataEvent | Quarantined]:
    """One inventory file (kafka-log-dirs --describe): an event per broker.

    The tool prints a couple of status lines before the JSON; the JSON starts
    at the first line that starts with '{' (and may span lines).
    """
    cid = cluster_id or UNKNOWN_CLUSTER
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if first is None:
        yield Quarantined(cid, source, 1, "log-dir inventory holds no JSON object",
                          text.encode()[:4096])
        return
    number = first + 1
    body = "\n".join(lines[first:])
    try:
        doc = json.loads(body)
        brokers = doc["brokers"]
        if not isinstance(brokers, list):
            raise TypeError("`brokers` is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        yield Quarantined(cid, source, number, f"log-dir inventory is not kafka-log-dirs JSON: {exc}",
                          body.encode()[:4096])
        return
    for i, b in enumerate(brokers):
        if not isinstance(b, dict) or not isinstance(b.get("broker"), int):
            yield Quarantined(cid, source, number, f"log-dir inventory entry {i} has no broker id",
                              json.dumps(b).encode()[:4096])
            continue
        yield MetadataEvent(
            cluster_id=cid, source=source, position=i, offset=NO_OFFSET,
            batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET, timestamp_ms=timestamp_ms,
            kind=KIND_LOG_DIRS, type=BROKER_LOG_DIRS, version=int(doc.get("version") or 0),
            data={"brokerId": b["broker"], "logDirs": b.get("logDirs") or []})


def dump_log_events(text: str, cluster_id: str | None, source: str
                    ) -> Iterator[MetadataEvent | Quarantined]:
    """One kafka-dump-log output file, through the codec's parser."""
    from kraft_audit.codec.dumplog import parse_dump_log

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
            yield event_rows.to_record_batch(items)
    return mapper


def _parse_dump_file(text, cluster_id, source, mtime):
    return dump_log_events(text, cluster_id, source)


def _parse_registration_file(text, cluster_id, source, mtime):
    return registration_events(text.splitlines(), cluster_id, source)


def _parse_inventory_file(text, cluster_id, source, mtime):
    return log_dir_events(text, cluster_id, source, _epoch_ms(mtime))


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
    parse = {"dump_logs": _parse_dump_file, "registrations": _parse_registration_file,
             "log_dir_inventories": _parse_inventory_file}[kind]
    return _whole_files(spark, path, max_files).mapInArrow(
        _arrow_mapper(parse, cluster_id), event_rows.EVENT_DDL)


def log_dir_stream(spark, log_dirs: list[dict], starting_position: str = "earliest",
                   max_records: int | None = None, max_bytes: int | None = None):
    reader = (spark.readStream.format("kraft-log")
              .option("logDirs", json.dumps(log_dirs))
              .option("startingPosition", starting_position))
    if max_records:
        reader = reader.option("maxRecordsPerTrigger", str(max_records))
    if max_bytes:
        reader = reader.option("maxBytesPerTrigger", str(max_bytes))
    return reader.load()


def all_events(spark, sources: dict) -> Any:
    """The union of every configured input (the `sources` config section)."""
    streams = []
    # Side files rarely name their cluster (kafka-log-dirs output never does):
    # with one log dir configured, they belong to its cluster.
    default_cluster = None
    if len(sources.get("log_dirs") or []) == 1:
        from kraft_audit.spark.source import log_dir_cluster_id

        only = sources["log_dirs"][0]
        default_cluster = log_dir_cluster_id(only["path"], only.get("cluster_id"))
    if sources.get("log_dirs"):
        streams.append(log_dir_stream(spark, sources["log_dirs"], sources.get("starting_position", "earliest"),
                                      sources.get("max_records_per_trigger"),
                                      sources.get("max_bytes_per_trigger")))
    for kind in ("dump_logs", "registrations", "log_dir_inventories"):
        for entry in sources.get(kind) or []:
            streams.append(file_stream(spark, entry["path"], entry.get("cluster_id") or default_cluster, kind))
    if not streams:
        raise ValueError("no input configured")
    events = streams[0]
    for s in streams[1:]:
        events = events.unionByName(s)
    return events
