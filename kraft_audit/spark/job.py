"""The streaming auditor: inputs → keyed stateful audit → Delta + /metrics.

    events  = inputs.all_events(spark, cfg.sources)              (source.py, inputs.py)
    output  = operator.audit_stream(events, OperatorConfig.of(cfg.audit))  (per bucket)
    output.writeStream.foreachBatch(BatchWriter)                  (sinks.py, metrics.py)

`cfg` is the validated, frozen `kraft_audit.config.Config` (`load_config`).

`BatchWriter` runs in the driver once per micro-batch: it executes the batch
(Spark 4.2 requires foreachBatch to consume the stateful output), splits the
rows by table, writes them exactly once through `DeltaSinks` (Delta app
transactions keyed by the query id and batch id), then updates the metrics
and appends one `progress` row.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from kraft_audit import tables
from kraft_audit.errors import MetricsPortUnavailable  # noqa: F401 (exported here too)
from kraft_audit.spark import operator as op
from kraft_audit.tables.rows import Progress, ProgressCluster, row_dict

if TYPE_CHECKING:
    from kraft_audit.config import Config

log = logging.getLogger("kraft_audit.job")

# operator output -> Delta tables it feeds (from each table's declaration)
_TABLE_ROUTES = tables.routes()


def query_id(checkpoint: str) -> str | None:
    """The streaming query's id, kept in its checkpoint (stable across restarts)."""
    try:
        return json.loads((Path(checkpoint) / "metadata").read_text().splitlines()[0])["id"]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def split_rows(arrow_table) -> tuple[dict[str, Any], list[dict]]:
    """Operator output → (rows by Delta table, the groups' stats rows). A
    table's rows are a pyarrow Table of its core columns (the tables the
    operator sends as Arrow) or a list of row dicts (gauges)."""
    decoded = op.decode_output_arrow(arrow_table.column("table").to_pylist(),
                                     _buffers(arrow_table.column("rows")))
    by_table: dict[str, Any] = {}
    for table, rows in decoded.items():
        for target in _TABLE_ROUTES.get(table, ()):  # one operator table per Delta table
            by_table[target] = rows
    return by_table, decoded.get(op.T_STATS, [])


def _buffers(column) -> list:
    """The binary cells as zero-copy Arrow buffers (pickle and IPC read them)."""
    return [scalar.as_buffer() for chunk in column.chunks for scalar in chunk]


def _violation_rows(rows) -> list[dict]:
    """What the metrics count of each violation."""
    import pyarrow as pa

    if isinstance(rows, pa.Table):
        return rows.select(["cluster_id", "rule_id", "severity"]).to_pylist()
    return rows


class BatchWriter:
    """The foreachBatch function (driver side)."""

    def __init__(self, cfg: Config, metrics=None, spark=None,
                 after_write: Callable[[int], None] | None = None):
        self.cfg = cfg
        self.metrics = metrics
        self.spark = spark
        self.after_write = after_write  # tests: crash between the sink write and Spark's commit
        self.after_compare: Callable[[int], None] | None = None  # tests: crash before the sink write
        self.sinks = None
        self.app_id: str | None = None
        self.batches = 0  # micro-batches this process wrote (a restart starts again at 0)
        self.first_batch_id: int | None = None
        self.last_batch_id: int | None = None
        self.last_progress: dict | None = None
        self.last_stats: list[dict] = []  # the groups' own figures (state size, time) of the last batch
        self.totals: dict[str, int] = defaultdict(int)
        self.counts: dict[str, int] = defaultdict(int)  # BALANCE's progress columns, this run
        self._applied: dict[str, int] = {}
        self._compaction: threading.Thread | None = None
        self._uncompacted = [0, 0]  # micro-batches and partition_history rows since the last one
        self.compactions = 0
        from kraft_audit.spark.source import LogDirPlanner

        # snapshots compared with their log (cluster/file) -> the micro-batch holding their findings
        self._snapshots: dict[str, int] | None = None
        self._snapshots_file = Path(cfg.checkpoint) / "kraft-audit-snapshots.json"
        self._catalog = None
        self._planners = {}
        for d in cfg.sources.log_dirs:
            p = LogDirPlanner(d.path, d.cluster_id)
            self._planners[p.cluster_id] = p

    def _ensure_sinks(self) -> None:
        if self.sinks is not None:
            return
        from kraft_audit.spark.sinks import DeltaSinks

        qid = query_id(self.cfg.checkpoint) or "no-checkpoint"
        self.app_id = f"{self.cfg.sink.app_id}-{qid}"
        self.sinks = DeltaSinks(self.cfg.tables, self.cfg.sink.backend, app_id=self.app_id,
                                spark=self.spark)

    def __call__(self, df, batch_id: int) -> None:
        started_ms = int(time.time() * 1000)
        t0 = time.perf_counter()
        # Runs the whole micro-batch (decode, audit); also what lets the
        # state stores commit (they must see the batch consumed).
        arrow = df.toArrow()
        if arrow.num_rows == 0:
            return  # a no-data batch in which no group timed out: nothing to record
        rows_by_table, stats = split_rows(arrow)
        row = self._progress(started_ms, stats, rows_by_table)
        self._ensure_sinks()
        self._snapshot_findings(batch_id, rows_by_table)
        row.violations = len(rows_by_table.get(tables.VIOLATIONS.name, []))
        row.duration_seconds = round(time.perf_counter() - t0, 6)
        written = self.sinks.write_batch(batch_id, {**rows_by_table, tables.PROGRESS.name: [row]})
        progress = {"batch_id": batch_id, **row_dict(row)}
        if self.metrics is not None:
            self.metrics.update(batch_id, rows_by_table.get(tables.GAUGES.name, []), progress,
                                _violation_rows(rows_by_table.get(tables.VIOLATIONS.name, [])))
        self.batches += 1
        if self.first_batch_id is None:
            self.first_batch_id = batch_id
        self.last_batch_id = batch_id
        self.last_progress = progress
        self.last_stats = stats
        for table, n in written.items():
            self.totals[table] += n
        for name in BALANCE:
            self.counts[name] += progress[name]
        self.counts["held"] = progress["held"]
        self._maybe_compact(written.get(tables.PARTITION_HISTORY.name, 0))
        if self.after_write is not None:
            self.after_write(batch_id)
        log.info("batch %d: %s; %d violations, %.2fs", batch_id, balance_line(progress),
                 progress["violations"], progress["duration_seconds"])

    def _maybe_compact(self, history_rows: int) -> None:
        """Start a compaction of partition_state in the background when one is due
        and none is running: it rewrites most of the table, which no micro-batch
        waits for (readers add the rows it has not merged yet)."""
        self._uncompacted[0] += 1
        self._uncompacted[1] += history_rows
        every, rows = self.cfg.sink.compact_every, self.cfg.sink.compact_tail_rows
        due = every > 0 and (self._uncompacted[0] >= every or self._uncompacted[1] >= rows)
        if not due or (self._compaction is not None and self._compaction.is_alive()):
            return
        self._uncompacted = [0, 0]
        self._compaction = threading.Thread(target=self._compact, name="kraft-audit-compaction",
                                            daemon=True)  # kill -9 safe: one atomic commit
        self._compaction.start()

    def _compact(self) -> None:
        try:
            t0 = time.perf_counter()
            merged = self.sinks.compact()
            self.compactions += 1
            log.info("compacted partition_state: %d rows merged in %.2fs", merged,
                     time.perf_counter() - t0)
        except Exception:  # noqa: BLE001 - the next one merges the same tail; readers add it meanwhile
            log.exception("compaction of partition_state failed")

    def finish(self) -> None:
        """At the end of a run: wait for a running compaction, then compact what is left,
        so partition_state at rest holds every row by itself."""
        if self._compaction is not None:
            self._compaction.join()
        if self.sinks is not None:
            self._compact()

    def _snapshot_findings(self, batch_id: int, rows_by_table: dict[str, Any]) -> None:
        """Each snapshot of a log dir the job has read past, compared once with the image the
        log builds to its end (kraft.snapshot-equals-log, image.py): in the driver, from the
        files, replaying from offset 0 or the snapshot before it; its findings join the batch's
        violations.

        Exactly once: `kraft-audit-snapshots.json` beside the checkpoint gives each compared
        snapshot the micro-batch that carries its findings, and is written before that batch's
        Delta write. A replayed batch compares its own snapshots again (the violations' app
        transaction drops them if they were written), and takes no new one once its
        violations are committed (the next batch does)."""
        if not self._planners:
            return
        from kraft_audit.core.audit import Auditor
        from kraft_audit.core.image import verify_snapshots
        from kraft_audit.core.rules.catalog import load_catalog

        if self._snapshots is None:
            self._snapshots = _read_compared(self._snapshots_file)
        written = self._violations_written(batch_id)
        found, tagged = [], False
        for cid, planner in self._planners.items():
            applied = self._applied.get(cid)
            for comparison in verify_snapshots(planner.dir, cid):
                name = f"{cid}/{comparison.file}"
                held = self._snapshots.get(name)
                if held is None:
                    if written or applied is None or comparison.end_offset - 1 > applied:
                        continue
                    self._snapshots[name], tagged = batch_id, True
                elif held != batch_id:
                    continue
                if self._catalog is None:
                    self._catalog = load_catalog(self.cfg.audit.rules_dir)
                found += Auditor(self._catalog).judge_snapshot(comparison, cid).violations
        if tagged:
            tmp = self._snapshots_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(self._snapshots, sort_keys=True))
            os.replace(tmp, self._snapshots_file)
        if self.after_compare is not None:
            self.after_compare(batch_id)
        if found:
            new = tables.core_to_arrow(tables.VIOLATIONS, found)
            held = rows_by_table.get(tables.VIOLATIONS.name)
            if held is None or len(held) == 0:
                rows_by_table[tables.VIOLATIONS.name] = new
            else:
                import pyarrow as pa
                if not isinstance(held, pa.Table):
                    held = tables.core_to_arrow(tables.VIOLATIONS, held)
                rows_by_table[tables.VIOLATIONS.name] = pa.concat_tables([held, new.cast(held.schema)])

    def _violations_written(self, batch_id: int) -> bool:
        """Whether the violations table already holds this micro-batch (a replay)."""
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.sinks.path(tables.VIOLATIONS.name)):
            return False
        committed = self.sinks.committed_batch(tables.VIOLATIONS.name)
        return committed is not None and committed >= batch_id

    def _progress(self, started_ms: int, stats: list[dict],
                  rows_by_table: dict[str, Any]) -> Progress:
        """The batch's progress row from the groups' stats rows (`GroupStats` as dicts)."""
        clusters: dict[str, ProgressCluster] = {}
        for s in stats:
            c = clusters.setdefault(s["cluster_id"], ProgressCluster(s["cluster_id"]))
            c.records += s["records"]
            for key, pick in (("min_offset", min), ("max_offset", max), ("last_timestamp_ms", max)):
                value = s["max_timestamp_ms"] if key == "last_timestamp_ms" else s[key]
                if value is not None:
                    held = getattr(c, key)
                    setattr(c, key, value if held is None else pick(held, value))
        for cid, planner in self._planners.items():
            c = clusters.setdefault(cid, ProgressCluster(cid))
            if c.max_offset is not None:
                self._applied[cid] = max(self._applied.get(cid, -1), c.max_offset)
            newest, newest_ts = planner.newest()
            c.newest_offset = newest
            if self.cfg.sources.bootstrap_controllers and self.metrics is not None:
                # the source reads only what the quorum committed: how far that is, and what waits
                self.metrics.note_commit(cid, planner.commit.refresh(list(self.cfg.sources.bootstrap_controllers)),
                                         newest + 1, planner.commit.quorum_error)
            applied = self._applied.get(cid)
            c.lag_records = max(newest - applied, 0) if applied is not None else None
            c.lag_seconds = (max(newest_ts - c.last_timestamp_ms, 0) / 1000
                             if newest_ts is not None and c.last_timestamp_ms is not None else None)
        return Progress(
            started_ms=started_ms,
            records=sum(s["records"] for s in stats),
            applied=sum(s["applied"] for s in stats),
            duplicates=sum(s["duplicates"] for s in stats),
            quarantined=sum(s["quarantined"] for s in stats),
            side_inputs=sum(s["side_inputs"] for s in stats),
            unreadable=sum(s["unreadable"] for s in stats),
            held=sum(s["held"] for s in stats if s["bucket"] == 0),
            violations=len(rows_by_table.get(tables.VIOLATIONS.name, [])),
            process_seconds=round(sum(s["duration_ms"] for s in stats) / 1000, 6),
            clusters=sorted(clusters.values(), key=lambda c: c.cluster_id),
        )


def _read_compared(path: Path) -> dict[str, int]:
    """The compared snapshots' file: {cluster/file: micro-batch}; an older list, or none."""
    try:
        held = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if isinstance(held, list):  # written before batches were kept: all long committed
        return {name: -1 for name in held}
    return {str(k): int(v) for k, v in held.items()}


def build_query(spark, cfg: Config, writer: BatchWriter, available_now: bool | None = None):
    """The streaming query, not yet started."""
    from kraft_audit.spark.inputs import all_events

    events = all_events(spark, cfg.sources)
    output = op.audit_stream(events, op.OperatorConfig.of(cfg.audit, cfg.checkpoint))
    stream = (output.writeStream.outputMode("update").queryName("kraft_audit")
              .option("checkpointLocation", cfg.checkpoint).foreachBatch(writer))
    once = cfg.trigger.available_now if available_now is None else available_now
    return stream.trigger(availableNow=True) if once else stream.trigger(
        processingTime=spark_interval(cfg.trigger.interval))


_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes"}


def spark_interval(text: str) -> str:
    """`trigger.interval` as Spark parses it: it takes no short unit ('500 ms' -> '500
    milliseconds'); the configuration accepts both."""
    number, unit = re.match(r"\s*([\d.]+)\s*(\w+)", text).groups()
    return f"{number} {_UNITS.get(unit, unit)}"


def start_metrics(cfg: Config):
    """The collector and, when enabled, its HTTP server: (metrics, port or None)."""
    from kraft_audit.core.rules.catalog import load_catalog
    from kraft_audit.spark.metrics import AuditMetrics

    catalog = load_catalog(cfg.audit.rules_dir)
    metrics = AuditMetrics(tuple((r.rule_id, r.severity) for r in catalog.rules if r.enabled),
                           max_topics=cfg.metrics.max_topics)
    port = None
    if cfg.metrics.enabled:
        host, wanted = cfg.metrics.host, cfg.metrics.port
        try:
            _server, port = metrics.start_server(host, wanted)
        except OSError as exc:
            raise MetricsPortUnavailable(
                f"cannot serve /metrics on {host}:{wanted}: {exc.strerror or exc} (another run "
                "holds it? choose metrics.port, --metrics-port, or 0 for any free port)") from None
    return metrics, port


def session_for(cfg: Config):
    from kraft_audit.spark.session import build_session

    return build_session(cfg.spark.master, shuffle_partitions=cfg.spark.shuffle_partitions,
                         extra_conf={k: str(v) for k, v in cfg.spark.conf.items()},
                         delta_spark=cfg.sink.backend == "delta-spark",
                         kafka_source=bool(cfg.sources.kafka), bounded=cfg.trigger.available_now)


class AuditJob:
    """One run of the streaming auditor (what `kraft-audit run`, the demo and
    jobs/audit_job.py start)."""

    def __init__(self, cfg: Config, spark=None, metrics=None,
                 after_write: Callable[[int], None] | None = None):
        self.cfg = cfg
        if metrics is None:  # before Spark starts: a taken port fails at once
            metrics, self.metrics_port = start_metrics(cfg)
        else:
            self.metrics_port = None
        self.spark = spark or session_for(cfg)
        self.metrics = metrics
        Path(cfg.tables).mkdir(parents=True, exist_ok=True)
        self.writer = BatchWriter(cfg, metrics, self.spark, after_write)
        qid = query_id(cfg.checkpoint)
        if qid is not None and hasattr(metrics, "restore"):
            # A restart: counters continue from what the tables hold.
            metrics.restore(cfg.tables, f"{cfg.sink.app_id}-{qid}")
        self.query = None
        self.stopped_by: int | None = None  # the signal that stopped run()

    def start(self, available_now: bool | None = None):
        once = self.cfg.trigger.available_now if available_now is None else available_now
        # The processing-time timeout makes Spark run a no-data batch every
        # trigger (that is how idle groups time out). An AvailableNow run
        # would then never end, so it goes without them: pending matches are
        # settled by event time or by the next run.
        self.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", str(not once).lower())
        self.query = build_query(self.spark, self.cfg, self.writer, once).start()
        return self.query

    def run(self, available_now: bool | None = None, timeout_s: float | None = None) -> bool:
        """Start and wait: until the data available now is audited
        (available_now), or until stopped (SIGINT/SIGTERM) or `timeout_s`.
        Returns False if the query failed.

        A first SIGINT or SIGTERM stops the query at a micro-batch boundary:
        no new micro-batch is triggered from then on, and the one running
        finishes (its Delta writes and its commit to the checkpoint) before the
        query ends (`end_after_running_batch`). `stopped_by` then holds the
        signal. A second signal while stopping exits at once (128 + signal);
        the batch it cuts short is replayed by the next run."""
        query = self.start(available_now)
        stop = threading.Event()

        def _stop(signum, _frame):
            # Only a flag here: the main thread may be inside a py4j call.
            if stop.is_set():
                name = signal.Signals(signum).name
                print(f"kraft-audit: {name} again while stopping: exiting now (the checkpoint "
                      "replays the unfinished micro-batch)", file=sys.stderr, flush=True)
                os._exit(128 + signum)
            log.info("%s: stopping after the current micro-batch", signal.Signals(signum).name)
            self.stopped_by = signum
            stop.set()

        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, _stop)
        try:
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            # A Python wait (not a py4j one) so that a signal is acted on at once.
            while not stop.wait(0.5) and _still_running(query):
                if deadline is not None and time.monotonic() > deadline:
                    break
            if stop.is_set():
                end_after_running_batch(query)
            query.stop()  # (nothing left to stop once the loop has ended)
            self.writer.finish()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return query.exception() is None

    def stop(self, wait_s: float | None = None) -> None:
        """Stop a query `start()` began, at a micro-batch boundary (waiting at most `wait_s`
        for the running one), and close /metrics."""
        if self.query is not None:
            if self.query.isActive:
                end_after_running_batch(self.query, timeout_s=wait_s)
            self.query.stop()
            self.writer.finish()
        self.close()

    def close(self) -> None:
        """Close the /metrics server this job opened (the port is free again)."""
        if self.metrics_port is not None and hasattr(self.metrics, "stop_servers"):
            self.metrics.stop_servers()
            self.metrics_port = None


def _still_running(query) -> bool:
    """The query is active and has not failed (a failure is logged; query.exception() has it)."""
    try:
        return not query.awaitTermination(0.001) and query.isActive
    except Exception as exc:  # noqa: BLE001 - the query failed
        log.error("streaming query failed: %s", str(exc).splitlines()[0])
        return False


def end_after_running_batch(query, timeout_s: float | None = None) -> None:
    """Trigger no new micro-batch and let the running one finish and commit.

    Spark has no public graceful stop: query.stop() interrupts the running batch
    (replayed on restart, since the writes are exactly once, but it is work
    lost), and waiting for a moment between two batches fails when they run
    back to back (a backlog): a new one starts at once. Spark's own trigger
    loop ends when the query's state leaves ACTIVE; AvailableNow sets it to
    TERMINATED from inside that loop, and query.stop() sets it before it
    interrupts. Setting it alone is the graceful half of stop(): the running
    batch goes on to its commit and no next one starts. A batch still being
    planned is dropped by Spark's own check after planning, before it runs or
    writes anything (its offsets are replayed by the next run); an idle query
    ends at its next trigger time. So the stop takes at most the rest of one
    micro-batch, or of one trigger interval. Where the state cannot be reached
    (another Spark), it falls back to waiting for a moment between batches.
    `timeout_s`: give up waiting after it (the caller's query.stop() then cuts
    the batch)."""
    thread = _leave_active(query)
    if thread is None:
        _await_batch_boundary(query, timeout_s=timeout_s)
        return
    # (query.awaitTermination answers at once: it reads the state just set)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while thread.isAlive() and (deadline is None or time.monotonic() < deadline):
        thread.join(500)


def _leave_active(query):
    """Set the query's state from ACTIVE to TERMINATED without interrupting it: its
    execution thread (a py4j handle), or None when that cannot be done."""
    try:
        execution = query._jsq.streamingQuery()
        state = execution.state()
        active = state.get()
        name = active.getClass().getName()
        if not name.endswith("ACTIVE$"):
            return None
        from pyspark import SparkContext

        terminated = SparkContext._jvm.java.lang.Class.forName(name[:-len("ACTIVE$")] + "TERMINATED$") \
            .getField("MODULE$").get(None)
        thread = execution.queryExecutionThread()
        return thread if state.compareAndSet(active, terminated) else None
    except Exception as exc:  # noqa: BLE001 - a Spark whose internals differ
        log.warning("cannot end the trigger loop gracefully (%s): waiting for a moment "
                    "between micro-batches", str(exc).splitlines()[0])
        return None


def _await_batch_boundary(query, poll_s: float = 0.1, timeout_s: float | None = None) -> None:
    """Wait until no trigger is running (the micro-batch in flight has written
    its tables and committed): the fallback of `end_after_running_batch`. A
    trigger that starts in the instant between this check and stop() is
    cancelled and replayed, which is safe (the writes are exactly once).
    `timeout_s`: give up waiting after it."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while query.isActive and (deadline is None or time.monotonic() < deadline):
        try:
            if not query.status.get("isTriggerActive"):
                return
        except Exception:  # noqa: BLE001 - the query ended meanwhile (a py4j error)
            return
        time.sleep(poll_s)


# The progress columns that account for every input: the first three are what was
# read, the last three what became of it (equal sums, per micro-batch and in total).
BALANCE = ("records", "side_inputs", "unreadable", "applied", "duplicates", "quarantined")


def balance_line(counts) -> str:
    """What was read and what became of it, in the words of progress and /metrics."""
    c = {k: counts.get(k) or 0 for k in (*BALANCE, "held")}

    def n(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    read = [n(c["records"], "log record")]
    if c["side_inputs"] or c["held"]:
        read.append(n(c["side_inputs"], "side input"))
    if c["unreadable"]:
        read.append(f"{c['unreadable']} unreadable")
    line = (f"read {' + '.join(read)} = {c['applied']} applied + {n(c['duplicates'], 'duplicate')} "
            f"+ {c['quarantined']} quarantined")
    if c["held"]:
        line += f" ({n(c['held'], 'side input')} held until the log reaches its time)"
    return line


def summary(cfg: Config, writer: BatchWriter) -> str:
    """What this run did and what the tables hold now: a merge table holds fewer rows
    than were written to it (a row per key), and an earlier run's rows are there too."""
    from kraft_audit.questions import partial_logs
    from kraft_audit.tables.read import MissingTable, count_rows

    ids = f" (batch ids {writer.first_batch_id}..{writer.last_batch_id})" if writer.batches else ""
    lines = [f"micro-batches this run: {writer.batches}{ids}",
             f"  {balance_line(writer.counts)}",
             f"  {'table':<18} {'written':>8} {'in table':>9}  path"]
    for table in sorted(set(writer.totals) | set(_tables_in(cfg.tables))):
        try:
            held = str(count_rows(cfg.tables, table))
        except (MissingTable, ValueError):  # not written, or not a table of this release
            held = "-"
        lines.append(f"  {table:<18} {writer.totals.get(table, 0):>8} {held:>9}  "
                     f"{os.path.join(cfg.tables, table)}")
    return "\n".join(lines + partial_logs(cfg.tables))


def _tables_in(root: str) -> list[str]:
    return [p.name for p in Path(root).iterdir() if (p / "_delta_log").is_dir()] if Path(root).is_dir() else []
