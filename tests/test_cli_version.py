"""`kraft-audit --version` names the installed package's version (exit 0)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def test_version():
    done = subprocess.run([sys.executable, "-m", "kraft_audit.cli.main", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kraft-audit {importlib.metadata.version('kraft-audit')}"
