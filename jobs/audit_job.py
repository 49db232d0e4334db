"""spark-submit entry point of the streaming auditor.

    spark-submit --master spark://host:7077 jobs/audit_job.py --config conf/prod.yaml

Takes the same flags as `kraft-audit run`. The master and resources come
from spark-submit, not from the configuration (unless --master is given).
Spark's Python workers import the package: deploy/spark-submit.sh ships it
as a zip (--py-files), so executors need only its dependencies.

SIGTERM or SIGINT to this process stops the query after the running
micro-batch, closes /metrics and exits 0 (one line on stderr says so); the
JVM spark-submit started then exits too. deploy/spark-submit.sh forwards
the signals it receives here. A signal to the spark-submit JVM instead stops
the SparkContext under the running batch (which the next run replays).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kraft_audit.cli import run as run_command
from kraft_audit.cli.main import UsageError

# Where to write this driver's pid (set by deploy/spark-submit.sh, which sends
# the signals it gets to the Python driver rather than to the spark-submit JVM).
PID_FILE_ENV = "AUDIT_JOB_PID_FILE"  # not KRAFT_AUDIT_*: those are configuration keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="audit_job.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    run_command.add_arguments(parser)
    args = parser.parse_args(argv)
    args.prog = "audit_job.py"
    pid_file = os.environ.get(PID_FILE_ENV)
    if pid_file:  # deploy/spark-submit.sh forwards SIGTERM/SIGINT to this process
        Path(pid_file).write_text(f"{os.getpid()}\n")
    if args.master is None:
        args.set = [*args.set, "spark.master=null"]  # spark-submit decides
    try:
        return run_command.run(args)
    except UsageError as exc:
        print(f"audit_job.py: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from kraft_audit.cli.main import leave

    leave(main())  # the documented code, not delta-rs's abort at interpreter exit (cli/main.py)
