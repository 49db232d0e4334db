"""The streaming operator called without a query (tests and benches): events routed to
buckets as the Spark expression in `operator.with_buckets` routes them, and its output
decoded back into row dicts. tests/test_spark_e2e.py holds the routing equal to Spark's."""

from __future__ import annotations

import zlib
from typing import Any, Iterable

import pyarrow as pa

from kraft_audit.spark.operator import BUCKET0_ONLY_TYPES, decode_output_arrow, is_partition_scoped


def bucket_of(topic_id: str, partition: int, buckets: int) -> int:
    """The value of the bucket expression in `with_buckets`."""
    return zlib.crc32(f"{topic_id}:{partition}".encode()) % buckets


def target_buckets(type_: str, topic_id: Any, partition_id: Any, buckets: int) -> list[int]:
    """The buckets an event goes to: what `with_buckets` computes in Spark."""
    if is_partition_scoped(type_, topic_id, partition_id):
        return [bucket_of(topic_id, int(partition_id), buckets)]
    if type_ in BUCKET0_ONLY_TYPES:
        return [0]
    return list(range(buckets))


def decode_output(table_names: Iterable[str], blobs: Iterable[bytes]) -> dict[str, list[dict]]:
    """The operator's output columns back into row dicts by table."""
    return {table: rows.to_pylist() if isinstance(rows, pa.Table) else rows
            for table, rows in decode_output_arrow(table_names, blobs).items()}
