"""kraft-audit: a streaming auditor of Kafka KRaft controller metadata logs."""
__version__ = "0.1.0"
