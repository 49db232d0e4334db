"""spark-submit entry point of the streaming auditor.

    spark-submit --master spark://host:7077 jobs/audit_job.py --config conf/prod.yaml

Takes the same flags as `kraft-audit run`. The master and resources come
from spark-submit, not from the configuration (unless --master is given).
Spark's Python workers import the package: deploy/spark-submit.sh ships it
as a zip (--py-files), so executors need only its dependencies.
"""

from __future__ import annotations

import argparse
import sys

from kraft_audit.cli import run as run_command
from kraft_audit.cli.main import UsageError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="audit_job.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    run_command.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.master is None:
        args.set = [*args.set, "spark.master=null"]  # spark-submit decides
    try:
        return run_command.run(args)
    except UsageError as exc:
        print(f"audit_job.py: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
