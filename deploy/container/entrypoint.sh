#!/bin/bash
# The image's entrypoint: `kraft-audit` with the container's arguments (podman run IMAGE check
# /log, the sidecar's `ship ...`), under tini so that SIGTERM reaches it. Two first words are
# Spark's, as its own images take them, because Spark on Kubernetes starts its pods with them:
#   driver ARGS     the driver pod: spark-submit --deploy-mode client ARGS (the Spark operator
#                   passes --properties-file, --class and the application)
#   executor        an executor pod: Spark's Kubernetes executor backend, from SPARK_* variables
set -euo pipefail

case "${1:-}" in
  driver)
    shift
    cmd=("$SPARK_HOME/bin/spark-submit" --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}"
         --deploy-mode client "$@")
    ;;
  executor)
    shift
    java_home="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
    classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:${SPARK_CLASSPATH:-}:$SPARK_HOME/jars/*"
    [[ -n "${SPARK_EXTRA_CLASSPATH:-}" ]] && classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
    # the driver passes the executors' JVM options as SPARK_JAVA_OPT_0, _1, ... in order
    java_opts=()
    while IFS= read -r opt; do java_opts+=("$opt"); done < <(
      env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
    cmd=("$java_home/bin/java" "${java_opts[@]}" "-Xms$SPARK_EXECUTOR_MEMORY" "-Xmx$SPARK_EXECUTOR_MEMORY"
         -cp "$classpath" org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
         --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID"
         --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID"
         --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID"
         --podName "$SPARK_EXECUTOR_POD_NAME")
    ;;
  *)
    cmd=(kraft-audit "$@")
    ;;
esac
mkdir -p "${SPARK_LOCAL_DIRS:-/tmp/spark}" 2>/dev/null || true
exec /usr/bin/tini -s -- "${cmd[@]}"
