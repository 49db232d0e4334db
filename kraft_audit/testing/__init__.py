"""What the tests, benches and `make demo-kafka` use to exercise kraft-audit, and the
product does not: real Kafka clusters on loopback from Maven Central jars (`realkafka`),
the kill -9 / restart checks of the streaming job (`crash_check`), the
million-partition logs of the benches (`bulk`) and the operator called without a
query (`operator_calls`). Like dbt's
`dbt.tests`: shipped in the package so the benches and demos can import it, never imported
by the product itself (tests/test_core_boundary.py holds that)."""
