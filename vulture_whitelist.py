"""What vulture reports as unused but is called from outside our code. Run:
`pip install vulture && vulture` (settings in pyproject.toml, [tool.vulture]).
Anything else it reports is dead code and goes."""

# ruff: noqa
_ = object()

# Spark's Python data source API calls these (spark/source.py).
_.getDefaultReadLimit
_.prepareForTriggerAvailableNow
_.latestOffset
_.reportLatestOffset
_.commit
_.streamReader
# prometheus_client's Collector protocol (spark/metrics.py).
_.collect
# pytest reads it (module markers).
_.pytestmark
# http.server calls these (the webhook receiver in tests/test_alerts_e2e.py).
_.do_POST
_.log_message
# argparse reads it (cli/simulate.py).
_.formatter_class
# Row fields read through dataclasses.asdict (outputs.py), and the gauges the
# Auditor sets on ClusterGauges (audit.py).
_.violation_id
_.broker_epoch
_.unclean_recovery
_.manual_election_required
_.elr_in_use
_.electable_leaders
# Fields of a parsed batch header, kept for completeness and read in tests.
_.max_timestamp
