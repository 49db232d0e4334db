"""What the optional compiled build (mypyc: `make compiled`, docs/ARCHITECTURE.md) reads
from the sources, and nothing when they run as Python."""

from __future__ import annotations

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # pure Python: mypy_extensions comes with mypy, which only the build needs
    def mypyc_attr(*_args, **_kwargs):  # type: ignore[misc]
        return lambda cls: cls

__all__ = ["mypyc_attr"]
