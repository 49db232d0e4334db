"""Every exception kraft-audit raises on purpose, in one place, under one base class.

`except KraftAuditError` catches them all; each also keeps the built-in base it always
had (ValueError, LookupError, RuntimeError), so existing `except ValueError` still holds.
The modules that raise them import them from here (and so still export them).
"""

from __future__ import annotations


class KraftAuditError(Exception):
    """Base of the errors kraft-audit raises on purpose, each worded for a person."""


# --- input: bytes, records, files
class WireError(KraftAuditError, ValueError):
    """Bytes that do not follow the Kafka wire format."""


class FramingProblem(WireError):
    """A batch's records section that does not frame: the reason, the bytes where reading
    stopped and the offset to quarantine it under (`codec.batches.record_frames`)."""

    def __init__(self, reason: str, raw: bytes, offset: int):
        super().__init__(reason)
        self.reason, self.raw, self.offset = reason, raw, offset


class RecordDecodeError(KraftAuditError, ValueError):
    """A record value that does not decode; the message says what and where."""


class ReplayError(KraftAuditError):
    """A record the state cannot apply; `code` names the input.* rule it breaks."""

    def __init__(self, code: str, message: str, key: tuple | None = None,
                 broker_id: int | None = None):
        super().__init__(message)
        self.code = code
        self.key = key
        self.broker_id = broker_id


class StoredFormatError(KraftAuditError, ValueError):
    """A stored auditor state of a format this kraft-audit cannot read (core/snapshot.py), or a
    streaming state row of an older version (spark/operator.py)."""


class PropertiesError(KraftAuditError, ValueError):
    """A server.properties that cannot say min.insync.replicas."""


# --- configuration, rules, scenarios
class ConfigError(KraftAuditError, ValueError):
    """A configuration mistake, worded for the person who made it."""


class CatalogError(KraftAuditError, ValueError):
    """A rule catalog that cannot be loaded (a bad file, an unknown rule or parameter)."""


class ExpressionError(KraftAuditError, ValueError):
    """A rule expression (rules/*.yaml `expr`) that does not parse or evaluate."""


class ScenarioError(KraftAuditError, ValueError):
    """A scenario that cannot be run: the message names where and why."""


# --- views over the results
class MissingTable(KraftAuditError, LookupError):
    """The tables root does not hold the table a question needs."""


class UnknownName(KraftAuditError, LookupError):
    """A topic, partition, cluster or rule named in a question is not in the tables."""


class MissingColumn(KraftAuditError, ValueError):
    """A row handed to a table lacks one of its columns (kraft_audit.tables)."""


class TimelineError(KraftAuditError, ValueError):
    """The log cannot give the timeline asked for (nothing decoded, no such topic or partition)."""


# --- running
class DeltaJarsMissing(KraftAuditError, RuntimeError):
    """The Delta connector's jars are not where `make delta-spark` puts them (or the Kafka
    source's where `make spark-kafka` does)."""


class MetricsPortUnavailable(KraftAuditError, ValueError):
    """The /metrics address is taken or cannot be bound: a usage error, said in one line."""


class ShipError(KraftAuditError, RuntimeError):
    """The shipper cannot go on: Kafka unreachable past --kafka-timeout, a batch refused for
    good, or the topic absent."""


class KafkaUnreachable(KraftAuditError, ConnectionError):
    """A Kafka call of the shipper that did not get through this time (retried within the
    bound)."""


class QuorumError(KraftAuditError, ConnectionError):
    """No controller of the addresses given answered DescribeQuorum as the quorum's leader."""


class ShipStopped(KraftAuditError):
    """SIGTERM or SIGINT came while the shipper waited for Kafka."""


# --- the command line (kraft_audit.cli.main maps them to exit codes 2 and 3)
class UsageError(KraftAuditError):
    """A user mistake or an unusable input (bad option, missing or empty path,
    nothing decodable, an unknown name): printed without a traceback."""


class RunFailed(KraftAuditError):
    """The command was asked the right thing but could not do it."""
