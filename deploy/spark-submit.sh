#!/usr/bin/env bash
# Submit the kraft-audit streaming job to a Spark cluster (or local Spark).
#
#   deploy/spark-submit.sh --config conf/default.yaml [more job flags]
#
# Environment (all optional):
#   SPARK_MASTER      spark://host:7077, yarn, k8s://https://..., local[2] (default)
#   DEPLOY_MODE       client (default: the driver, its /metrics and the delta-rs
#                     writes run on this host) or cluster
#   DELTA_BACKEND     deltalake (default: delta-rs from the driver, pip only) or
#                     delta-spark (Spark's Delta connector: fetches its jar with --packages)
#   KAFKA_SOURCE      1: the job reads a shipper's topic (sources.kafka): Spark's Kafka
#                     source, from .cache/spark-kafka (make spark-kafka) or --packages
#   PYSPARK_PYTHON    the executors' Python, with the project's dependencies (default:
#                     this host's python3, which must then exist at the same path on
#                     every node); the package itself is shipped with --py-files
#   PYSPARK_DRIVER_PYTHON  the driver's Python (default: this host's python3)
#   PYSPARK_VENV      a venv-pack/conda-pack archive with this project and its
#                     dependencies, shipped to the executors (instead of PYSPARK_PYTHON)
#   SPARK_SUBMIT      the spark-submit to run (default: spark-submit on PATH)
#   KRAFT_AUDIT_*     any configuration key, e.g. KRAFT_AUDIT_METRICS_PORT=9464
#
# SIGTERM or SIGINT stops the job after its running micro-batch (the driver exits 0,
# then this script, with spark-submit's status): see "Signals" below and
# docs/operations.md, "Restarts".
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPARK_SUBMIT="${SPARK_SUBMIT:-spark-submit}"
SPARK_MASTER="${SPARK_MASTER:-local[2]}"
DEPLOY_MODE="${DEPLOY_MODE:-client}"
DELTA_BACKEND="${DELTA_BACKEND:-deltalake}"
# Delta Lake 4.4 publishes one artifact per Spark line; this one is Spark 4.2 / Scala 2.13.
DELTA_SPARK_PACKAGE="io.delta:delta-spark_4.2_2.13:4.4.0"  # Maven Central has no 4.4.1

SPARK_KAFKA_PACKAGE="org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"

args=(--master "$SPARK_MASTER" --deploy-mode "$DEPLOY_MODE" --name kraft-audit
      --conf spark.sql.session.timeZone=UTC)
packages=()

case "$DELTA_BACKEND" in
  deltalake) ;;
  delta-spark)
    packages+=("$DELTA_SPARK_PACKAGE")
    args+=(--conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
           --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog) ;;
  *) echo "DELTA_BACKEND must be deltalake or delta-spark, not '$DELTA_BACKEND'" >&2; exit 2 ;;
esac

if [[ "${KAFKA_SOURCE:-0}" == 1 ]]; then
  kafka_jars=("$REPO"/.cache/spark-kafka/4.2.0/*.jar)
  if [[ -e "${kafka_jars[0]}" ]]; then
    args+=(--jars "$(IFS=,; echo "${kafka_jars[*]}")")
  else
    packages+=("$SPARK_KAFKA_PACKAGE")
  fi
fi
if (( ${#packages[@]} )); then
  args+=(--packages "$(IFS=,; echo "${packages[*]}")")
fi

# The package itself goes to the executors as a zip (the operator's code runs there).
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
python="$(command -v python3)"
(cd "$REPO" && "$python" -m zipfile -c "$build/kraft_audit.zip" kraft_audit)
args+=(--py-files "$build/kraft_audit.zip")
# Spark 4.2 plans a Python data source (the kraft-log source) in a Python worker of the
# driver's JVM, which is not given the --py-files: it finds the package through the
# JVM's own PYTHONPATH.
export PYTHONPATH="$build/kraft_audit.zip${PYTHONPATH:+:$PYTHONPATH}"

# Without these, spark-submit and the executors run whatever `python3` is on their
# PATH, which may lack pandas and pyarrow.
export PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-$python}"
if [[ -n "${PYSPARK_VENV:-}" ]]; then
  args+=(--archives "$PYSPARK_VENV#environment" --conf spark.pyspark.python=./environment/bin/python)
else
  export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$python}"
fi

# Under spark-submit the master comes from the command line, not from the job's config.
export KRAFT_AUDIT_SPARK_MASTER=null
export KRAFT_AUDIT_SINK_BACKEND="$DELTA_BACKEND"

# Signals. spark-submit runs in the background with its own process group (set -m), so
# that a terminal's Ctrl-C reaches this script only, and this script waits for it:
# the trap below then removes the zip. SIGTERM or SIGINT here goes to the Python driver
# (jobs/audit_job.py, which writes its pid to $AUDIT_JOB_PID_FILE): it stops the query
# after the running micro-batch, closes /metrics and exits 0; the spark-submit JVM then
# exits with it, and so does this script, with spark-submit's status. A second signal
# is forwarded too (the driver then exits at once, 143 or 130). Before the driver has
# started, or in cluster mode (the driver runs elsewhere), the signal goes to
# spark-submit itself.
pid_file="$build/driver.pid"
if [[ "$DEPLOY_MODE" == client ]]; then
  export AUDIT_JOB_PID_FILE="$pid_file"
fi
set -m
"$SPARK_SUBMIT" "${args[@]}" "$REPO/jobs/audit_job.py" "$@" &
submit=$!
set +m

forward() {
  local driver=""
  [[ -s "$pid_file" ]] && driver="$(<"$pid_file")"
  if [[ -n "$driver" ]] && kill -0 "$driver" 2>/dev/null; then
    kill -s "$1" "$driver" 2>/dev/null || true
  else
    kill -s "$1" "$submit" 2>/dev/null || true
  fi
}
trap 'forward TERM' TERM
trap 'forward INT' INT
trap 'forward TERM' HUP  # the terminal went away: stop as on SIGTERM

status=0
wait "$submit" || status=$?
while kill -0 "$submit" 2>/dev/null; do  # wait was cut short by a forwarded signal
  status=0
  wait "$submit" || status=$?
done
exit "$status"
