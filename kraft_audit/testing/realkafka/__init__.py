"""A real KRaft cluster on loopback, run from Kafka's own jars (`make kafka`), for the
real-Kafka tests and `make demo-kafka`. Spark only in live_audit and demo.

    from kraft_audit.testing.realkafka import KafkaCluster
    with KafkaCluster("4.4.0", workdir, brokers=3) as cluster:
        cluster.start()
        cluster.tools.create_topic("t", partitions=2, replication_factor=3, min_isr=2)
        cluster.broker(2).kill()
"""

from kraft_audit.testing.realkafka.cluster import KafkaCluster, KafkaNode, kafka_jars, wait_until
from kraft_audit.testing.realkafka.tools import KafkaTools, ToolError

__all__ = ["KafkaCluster", "KafkaNode", "KafkaTools", "ToolError", "kafka_jars", "wait_until"]
