"""Writes a simulation to a directory: the metadata log (through the codec's
LogDirWriter) and the side files the auditor and the tests read.

    OUT/
      meta.properties, bootstrap.checkpoint
      __cluster_metadata-0/   NNNNNNNNNNNNNNNNNNNN.log segments, <end>-<epoch>.checkpoint snapshots
      registrations.jsonl     one BrokerRegistration request per line
      log-dirs/<time>-broker-<id>.json   kafka-log-dirs --describe output of one broker
      faults.json             the injected faults (ground truth)
      final-state.json        every partition as the simulator left it
      summary.json            counts, offsets, cluster id, unfired faults
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Iterable

from kraft_audit.core.codec.logdir import LogDirWriter

Record = tuple[str, int, dict]

DEFAULT_SEGMENT_BYTES = 8 << 20  # small enough that a simulation rolls segments


class Pacer:
    """Live mode: spaces batches out in wall-clock time, `rate` batches a second."""

    def __init__(self, rate: float, sleep=time.sleep, clock=time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be > 0")
        self.interval = 1.0 / rate
        self._sleep = sleep
        self._clock = clock
        self._next = clock()

    def wait(self) -> None:
        now = self._clock()
        if now < self._next:
            self._sleep(self._next - now)
        self._next = max(now, self._next) + self.interval


class OutputWriter:
    """The model's LogSink, writing a real log dir plus side files."""

    def __init__(
        self,
        out_dir: str | os.PathLike,
        cluster_id: str,
        *,
        node_id: int,
        bootstrap_records: list[Record],
        metadata_version: int,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        pacer: Pacer | None = None,
    ) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "log-dirs").mkdir(exist_ok=True)
        self.log = LogDirWriter(
            self.out,
            cluster_id,
            node_id=node_id,
            segment_bytes=segment_bytes,
            metadata_version=metadata_version,
            bootstrap_records=bootstrap_records,
        )
        if self.log.next_offset != 0:
            raise ValueError(
                f"{self.out} already holds a metadata log; choose an empty --out directory"
            )
        self.pacer = pacer
        self._registrations = open(self.out / "registrations.jsonl", "w", encoding="utf-8")
        self.bytes_written = 0

    # -- LogSink

    def append(
        self, records: list[Record], base_offset: int, timestamp_ms: int, epoch: int
    ) -> None:
        if self.pacer:
            self.pacer.wait()
        base, _last = self.log.append(records, timestamp_ms, epoch)
        assert base == base_offset, f"model offset {base_offset} != log offset {base}"

    def append_control(
        self, record: Record, base_offset: int, timestamp_ms: int, epoch: int
    ) -> None:
        if self.pacer:
            self.pacer.wait()
        offset = self.log.append_control(record[0], record[2], timestamp_ms, epoch)
        assert offset == base_offset, f"model offset {base_offset} != log offset {offset}"

    def registration(self, event: dict) -> None:
        self._registrations.write(json.dumps(event) + "\n")
        self._registrations.flush()

    def log_dirs(self, broker_id: int, inventory: dict, timestamp_ms: int) -> None:
        target = self.out / "log-dirs" / f"{timestamp_ms:013d}-broker-{broker_id}.json"
        target.write_text(json.dumps(inventory, separators=(",", ":")), encoding="utf-8")
        os.utime(target, ns=(timestamp_ms * 1_000_000, timestamp_ms * 1_000_000))

    # -- the rest

    def write_snapshot(
        self, records: list[Record], end_offset: int, epoch: int, timestamp_ms: int
    ) -> Path:
        return self.log.write_snapshot(records, end_offset, epoch, timestamp_ms)

    def close(self) -> None:
        self.log.close()
        self._registrations.close()

    def finish(self, faults: list[dict], final_state: Iterable[dict], summary: dict) -> None:
        self.log.flush()
        self.close()
        (self.out / "faults.json").write_text(json.dumps(faults, indent=1), encoding="utf-8")
        with open(self.out / "final-state.json", "w", encoding="utf-8") as fh:
            # streamed: a million partitions should not build one big string
            fh.write("[")
            for i, row in enumerate(final_state):
                fh.write(("\n" if i == 0 else ",\n") + json.dumps(row, separators=(",", ":")))
            fh.write("\n]\n")
        self.bytes_written = sum(f.stat().st_size for f in self.out.rglob("*") if f.is_file())
        summary = {**summary, "bytes_written": self.bytes_written}
        (self.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")


def read_output(out_dir: str | os.PathLike):
    """Every event of a simulation directory in the order a controller and its
    brokers produced them: the log (through the codec's reader) with the
    registration requests and log-dir inventories merged in by time (a side
    event goes before the first batch written after its time; the model
    writes nothing else in the millisecond of a side event)."""
    from kraft_audit.core.codec.logdir import log_dir_evidence, read_log_dir
    from kraft_audit.core.events import (
        BROKER_LOG_DIRS,
        BROKER_REGISTRATION_REQUEST,
        KIND_LOG_DIRS,
        KIND_REGISTRATION,
        MetadataEvent,
    )

    out = Path(out_dir)
    log = read_log_dir(out)
    first = next(log, None)
    cluster_id = getattr(first, "cluster_id", "") or ""
    yield log_dir_evidence(out, cluster_id)  # the newest snapshot: its end is committed
    side: list[tuple[int, int, MetadataEvent]] = []
    with open(out / "registrations.jsonl", encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            data = json.loads(line)
            side.append(
                (
                    data["timestampMs"],
                    len(side),
                    MetadataEvent(
                        cluster_id,
                        "registrations.jsonl",
                        number,
                        -1,
                        -1,
                        -1,
                        data["timestampMs"],
                        KIND_REGISTRATION,
                        BROKER_REGISTRATION_REQUEST,
                        0,
                        data,
                    ),
                )
            )
    for path in sorted((out / "log-dirs").glob("*.json")):
        timestamp_ms = int(path.name.split("-", 1)[0])
        for number, broker in enumerate(json.loads(path.read_text(encoding="utf-8"))["brokers"], 1):
            side.append(
                (
                    timestamp_ms,
                    len(side),
                    MetadataEvent(
                        cluster_id,
                        f"log-dirs/{path.name}",
                        number,
                        -1,
                        -1,
                        -1,
                        timestamp_ms,
                        KIND_LOG_DIRS,
                        BROKER_LOG_DIRS,
                        0,
                        {"brokerId": broker["broker"], "logDirs": broker["logDirs"]},
                    ),
                )
            )
    side.sort(key=lambda item: (item[0], item[1]))
    i = 0
    for event in ([first] if first is not None else []) + list(log):
        starts_batch = getattr(event, "offset", None) == getattr(event, "batch_base_offset", None)
        if starts_batch:
            while i < len(side) and side[i][0] < event.timestamp_ms:
                yield side[i][2]
                i += 1
        yield event
    for _, _, event in side[i:]:
        yield event
