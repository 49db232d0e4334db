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
    "Auditor": "kraft_audit.audit",
    "AuditOutput": "kraft_audit.audit",
    "load_catalog": "kraft_audit.rules.catalog",
    "Catalog": "kraft_audit.rules.catalog",
    "CoreSettings": "kraft_audit.replay.settings",
    "ClusterState": "kraft_audit.replay.state",
    "read_log_dir": "kraft_audit.codec.logdir",
    "read_segment": "kraft_audit.codec.logdir",
    "parse_dump_log": "kraft_audit.codec.dumplog",
    "MetadataEvent": "kraft_audit.events",
    "Quarantined": "kraft_audit.events",
    "Violation": "kraft_audit.outputs",
    "ConditionChange": "kraft_audit.outputs",
    "PartitionRow": "kraft_audit.outputs",
    "BrokerRow": "kraft_audit.outputs",
    "ClusterGauges": "kraft_audit.outputs",
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
