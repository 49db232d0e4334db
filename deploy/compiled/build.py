"""The optional compiled fast path: the core's hot modules built with mypyc (part of mypy)
into extension modules beside their sources, which Python imports instead of them.

    python deploy/compiled/build.py           # build in place (`make compiled`)
    python deploy/compiled/build.py --clean   # remove what it built (`make compiled-clean`)

Nothing else changes: without the build, or after --clean, the same sources run as Python
(tests/test_compiled.py holds both to the same bytes). Every module not listed here stays
interpreted (dump's line writers among them: source the codec execs at import).
docs/ARCHITECTURE.md ("Where the time goes") has the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A partition change's path through the core: the event loop, the replay, the Watch and the
# rules an ISR change runs. Each must type-check clean (mypyc enforces the annotations at
# run time).
MODULES = [
    "kraft_audit/core/events.py",
    "kraft_audit/core/codec/batches.py",  # framing, CRC and the turn into events
    "kraft_audit/core/codec/generated_decoders.py",  # the record decoders (codec/codegen.py)
    "kraft_audit/core/event_loop.py",
    "kraft_audit/core/findings.py",
    "kraft_audit/core/watch.py",
    "kraft_audit/core/replay/partition.py",
    "kraft_audit/core/replay/state.py",
    "kraft_audit/core/replay/sharded.py",
    "kraft_audit/core/replay/conditions.py",
    "kraft_audit/core/rules/check.py",
    "kraft_audit/core/rules/registry.py",
    "kraft_audit/core/rules/kip966.py",
    "kraft_audit/core/rules/kraft.py",
    "kraft_audit/core/rules/records.py",
]
GROUP = "kraft_audit._compiled"  # the shared library: kraft_audit/_compiled__mypyc.*.so
WORK = ROOT / "build" / "compiled"  # the generated C and objects (ignored by git)


def built() -> list[Path]:
    """The extension modules the build left in the package."""
    names = [m[:-3] for m in MODULES] + [GROUP.replace(".", "/") + "__mypyc"]
    return [p for name in names for p in (ROOT / name).parent.glob(Path(name).name + ".*.so")]


def clean() -> None:
    for path in built():
        path.unlink()
    shutil.rmtree(WORK, ignore_errors=True)


def build() -> None:
    from mypyc.build import mypycify
    from setuptools import setup

    # other modules are read for their types only: their own type errors do not stop the build
    flags = ["--ignore-missing-imports", "--follow-imports=silent"]
    extensions = mypycify(flags + MODULES, opt_level="3", group_name=GROUP,
                          target_dir=str(WORK / "c"))
    setup(name="kraft-audit-compiled", ext_modules=extensions,
          script_args=["build_ext", "--inplace", "--build-temp", str(WORK / "temp"), "--quiet"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    args = parser.parse_args(argv)
    clean()  # a module dropped from the list must not stay compiled
    if not args.clean:
        os.chdir(ROOT)  # mypyc names modules by their paths from here
        build()
        print(f"compiled {len(built()) - 1} modules (make compiled-clean removes them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
