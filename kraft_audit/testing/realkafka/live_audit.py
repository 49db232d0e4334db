"""The streaming job tailing a running cluster's controller log while faults happen: what
the real-Kafka tests and `make demo-kafka` watch. The only part of realkafka that needs
Spark (the job is started in this process, on the caller's SparkSession)."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from kraft_audit.testing.realkafka.cluster import KafkaCluster, free_port, wait_until


class LiveAudit:
    """`kraft-audit run` on the cluster's live metadata log (and the controller's request log
    when the cluster logs requests at TRACE), with /metrics on a free loopback port.
    `via_topic`: the fleet layout instead: `kraft-audit ship` beside the controller produces
    the log to that topic of the cluster, which the job reads with Spark's Kafka source."""

    def __init__(self, spark, cluster: KafkaCluster, workdir: Path, trigger: str = "2 seconds",
                 via_topic: str | None = None):
        from kraft_audit.config import load_config
        from kraft_audit.spark.job import AuditJob

        self.cluster = cluster
        self.tables = workdir / "tables"
        self.shipper = None
        if via_topic is not None:
            from kraft_audit.testing.realkafka.ship_process import ShipProcess, create_topic

            create_topic(cluster, via_topic)
            self.shipper = ShipProcess(cluster, workdir / "ship-logs", via_topic)
            self.shipper.start()
            source = {"sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": via_topic}]}
        else:
            source = {"sources.log_dirs": str(cluster.metadata_log_dir)}
        overrides = {**source,
                     "checkpoint": str(workdir / "checkpoint"), "tables": str(self.tables),
                     "trigger.interval": trigger, "audit.buckets": 2,
                     "metrics.port": free_port()}
        if cluster.controller.request_log is not None:
            overrides["sources.registrations"] = str(cluster.controller.request_log)
        self.cfg = load_config(None, overrides, environ={})
        self.job = AuditJob(self.cfg, spark=spark)
        self.query = self.job.start(available_now=False)

    def stop(self) -> None:
        # between triggers: stopping in the middle of one interrupts its Python workers,
        # and Spark fails noisily (a StackOverflowError in its error-message regex)
        self.job.stop(wait_s=30)
        if self.shipper is not None:
            self.shipper.stop()

    def failed(self) -> str | None:
        exc = self.query.exception()
        return None if exc is None else str(exc).splitlines()[0]

    # --- what the job wrote
    def rows(self, table) -> list[dict]:
        """A table's rows (a declaration from kraft_audit.tables, or its name)."""
        from kraft_audit.tables.read import read_rows

        return read_rows(str(self.tables), table)

    def intervals(self, topic: str, partition: int = 0) -> list[dict]:
        """The partition's condition intervals, in start order."""
        rows = [r for r in self.rows("conditions")
                if r["topic"] == topic and r["partition"] == partition]
        return sorted(rows, key=lambda r: (r["start_offset"], r["condition"]))

    def wait_open(self, condition: str, topic: str, partition: int = 0,
                  is_open: bool = True, timeout: float = 60.0) -> dict:
        """Wait (a few triggers) until the job has written `condition` as open (or closed)
        for the partition; returns the interval."""
        def found():
            matching = [r for r in self.intervals(topic, partition) if r["condition"] == condition]
            if not matching:
                return None
            last = matching[-1]
            return last if (last["end_offset"] is None) == is_open else None
        state = "open" if is_open else "closed"
        return wait_until(f"the streaming job writes {condition} {state} for {topic}-{partition}",
                          found, timeout)

    # --- its /metrics, scraped over HTTP
    def metrics(self) -> dict[str, float]:
        """{sample name without the kraft_audit_ prefix: value} for this cluster."""
        from prometheus_client.parser import text_string_to_metric_families

        url = f"http://127.0.0.1:{self.job.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        out = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.labels.get("cluster") == self.cluster.cluster_id and \
                        set(sample.labels) == {"cluster"}:
                    out[sample.name.removeprefix("kraft_audit_")] = sample.value
        return out
