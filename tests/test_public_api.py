"""The package's public API: every name in kraft_audit.__all__ resolves, the errors share
one base, and the documented example runs on a real log."""

from __future__ import annotations

from pathlib import Path

import kraft_audit
from kraft_audit import errors

REAL = Path(__file__).parent / "fixtures" / "kraft-real" / "Niloufar1171__LDI-POC"


def test_every_public_name_resolves():
    for name in kraft_audit.__all__:
        assert getattr(kraft_audit, name) is not None, name


def test_the_documented_example_runs():
    from kraft_audit import Auditor, load_catalog, read_log_dir

    auditor = Auditor(load_catalog(), {"min_insync_replicas_default": 2})
    out = auditor.process(read_log_dir(REAL))
    assert out.applied == 4929 and auditor.gauges().leaderless == 54


def test_every_error_kraft_audit_raises_on_purpose_has_one_base():
    raised = [obj for obj in vars(errors).values()
              if isinstance(obj, type) and issubclass(obj, Exception) and obj is not errors.KraftAuditError]
    assert len(raised) >= 15 and all(issubclass(e, errors.KraftAuditError) for e in raised)
    # and the modules that raise them still export them
    from kraft_audit.config import ConfigError
    from kraft_audit.core.replay.state import ReplayError
    assert ConfigError is errors.ConfigError and ReplayError is errors.ReplayError
