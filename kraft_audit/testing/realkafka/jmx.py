"""A node's JMX metrics, read once with Kafka's own JmxTool (one JVM per node and call)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kraft_audit.testing.realkafka.tools import JMX_TOOL

if TYPE_CHECKING:
    from kraft_audit.testing.realkafka.cluster import KafkaNode


CONTROLLER_METRICS = {
    "unclean_elections": ("kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec",
                          "Count"),
    "elr_elections": ("kafka.controller:type=ControllerStats,"
                      "name=ElectionFromEligibleLeaderReplicasPerSec", "Count"),
    "offline_partitions": ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount",
                           "Value"),
    "fenced_brokers": ("kafka.controller:type=KafkaController,name=FencedBrokerCount", "Value"),
    "active_brokers": ("kafka.controller:type=KafkaController,name=ActiveBrokerCount", "Value"),
    "partitions": ("kafka.controller:type=KafkaController,name=GlobalPartitionCount", "Value"),
}
BROKER_METRICS = {
    "under_min_isr": ("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value"),
}


def read_metrics(node: "KafkaNode", metrics: dict[str, tuple[str, str]]) -> dict[str, float | None]:
    """{our name: value} for the given (object name, attribute) pairs; None for a metric this
    Kafka version does not have."""
    url = f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{node.jmx_port}/jmxrmi"
    args = ["--jmx-url", url, "--one-time", "true", "--report-format", "properties"]
    for object_name, _ in metrics.values():
        args += ["--object-name", object_name]
    text = node.cluster.tools.run(JMX_TOOL, *args, check=False)
    return {name: _value(text, f"{obj}:{attr}") for name, (obj, attr) in metrics.items()}


def _value(text: str, key: str) -> float | None:
    """JmxTool prints `<object name>:<attribute>=<value>` (one line each, or inside one
    `{...}` map per report, depending on the version)."""
    m = re.search(re.escape(key) + r"=([-0-9.Ee]+)", text)
    return float(m.group(1)) if m else None
