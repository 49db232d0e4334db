"""The functional core: decode (codec), replay, rules and the auditor over them.

Nothing here imports Spark, Delta, matplotlib or the CLI (tests/test_core_boundary.py):
it runs single-process in `kraft-audit check`, the benches and the fast tests, and
inside the Spark shell's stateful operator.
"""
