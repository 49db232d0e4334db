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
#   PYSPARK_VENV      a venv-pack/conda-pack archive with this project and its
#                     dependencies, shipped to the executors (else they must
#                     have them installed)
#   SPARK_SUBMIT      the spark-submit to run (default: spark-submit on PATH)
#   KRAFT_AUDIT_*     any job setting, e.g. KRAFT_AUDIT_METRICS_PORT=9464
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPARK_SUBMIT="${SPARK_SUBMIT:-spark-submit}"
SPARK_MASTER="${SPARK_MASTER:-local[2]}"
DEPLOY_MODE="${DEPLOY_MODE:-client}"
DELTA_BACKEND="${DELTA_BACKEND:-deltalake}"
# Delta Lake 4.4 publishes one artifact per Spark line; this one is Spark 4.2 / Scala 2.13.
DELTA_SPARK_PACKAGE="io.delta:delta-spark_4.2_2.13:4.4.1"

args=(--master "$SPARK_MASTER" --deploy-mode "$DEPLOY_MODE" --name kraft-audit
      --conf spark.sql.session.timeZone=UTC)

case "$DELTA_BACKEND" in
  deltalake) ;;
  delta-spark)
    args+=(--packages "$DELTA_SPARK_PACKAGE"
           --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
           --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog) ;;
  *) echo "DELTA_BACKEND must be deltalake or delta-spark, not '$DELTA_BACKEND'" >&2; exit 2 ;;
esac

# The package itself goes to the executors as a zip (the operator's code runs there).
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
(cd "$REPO" && python3 -m zipfile -c "$build/kraft_audit.zip" kraft_audit)
args+=(--py-files "$build/kraft_audit.zip")

if [[ -n "${PYSPARK_VENV:-}" ]]; then
  args+=(--archives "$PYSPARK_VENV#environment" --conf spark.pyspark.python=./environment/bin/python)
fi

# Under spark-submit the master comes from the command line, not from the job's config.
export KRAFT_AUDIT_SPARK_MASTER=null
export KRAFT_AUDIT_SINK_BACKEND="$DELTA_BACKEND"

"$SPARK_SUBMIT" "${args[@]}" "$REPO/jobs/audit_job.py" "$@"
