"""kraft-audit: a streaming auditor of Kafka KRaft controller metadata logs.

The public API, for scripts and notebooks (the functional core: no Spark):

    from kraft_audit import Auditor, load_catalog, read_log_dir
    auditor = Auditor(load_catalog(), {"min_insync_replicas_default": 2})
    out = auditor.process(read_log_dir("/var/lib/kafka/metadata"))
    out.violations, auditor.gauges(), auditor.open_conditions()

Names are imported when first used, so `import kraft_audit` stays cheap.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# name -> module that defines it
_EXPORTS = {
    "Auditor": "kraft_audit.core.audit",
    "AuditOutput": "kraft_audit.core.audit",
    "load_catalog": "kraft_audit.core.rules.catalog",
    "Catalog": "kraft_audit.core.rules.catalog",
    "CoreSettings": "kraft_audit.core.replay.settings",
    "ClusterState": "kraft_audit.core.replay.state",
    "read_log_dir": "kraft_audit.core.codec.logdir",
    "read_segment": "kraft_audit.core.codec.logdir",
    "parse_dump_log": "kraft_audit.core.codec.dumplog",
    "MetadataEvent": "kraft_audit.core.events",
    "Quarantined": "kraft_audit.core.events",
    "Violation": "kraft_audit.core.rows",
    "ConditionChange": "kraft_audit.core.rows",
    "PartitionRow": "kraft_audit.core.rows",
    "BrokerRow": "kraft_audit.core.rows",
    "ClusterGauges": "kraft_audit.core.rows",
    "KraftAuditError": "kraft_audit.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kraft_audit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
