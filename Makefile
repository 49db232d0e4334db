# The two commands the README opens with: `make demo` and `make test`.
# Both install what they need first (a venv in .venv; Prometheus from Debian for the tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WORKDIR ?= demo-out

.PHONY: install podman image test-image test-variants test-raft-faults prometheus jmx-exporter spark-kafka k8s-schemas kafka kafka-matrix kafka-facts test-kafka-matrix kafka-release-check test-bugs controller-mutants-deps test-controller-mutants test-controller-mutants-full test-mutations fixtures-story fixtures-liveness delta-spark demo demo-kafka test test-fast compiled compiled-clean test-compiled bench bench-scale clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,delta-spark,ship]'
	# an editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set no import
	# writes bytecode: every process (each Spark Python worker too) would compile the sources
	$(BIN)/python -m compileall -q kraft_audit
	# and every Python process Spark starts (workers, the data sources' planners) would compile
	# pyspark from its pyspark.zip, which pip ships without bytecode
	$(BIN)/python -m kraft_audit.spark.pyspark_bytecode
	touch $@

# promtool, the prometheus server and Alertmanager (with amtool) are used by the tests
# (scrape, alert rules, alert routing).
prometheus:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null && \
	  command -v prometheus-alertmanager >/dev/null && command -v amtool >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null)

# Kafka's own jars from Maven Central (deploy/kafka/pom.xml) into an ignored cache, one folder per
# version: the real-cluster tests (pytest -m kafka) run brokers and controllers from them.
# `make kafka` resolves the two versions `make test` runs (the first the newest release, whose jars
# tests/test_release_check.py also reads); `make kafka-matrix` every release line.
KAFKA_CACHE ?= .cache/kafka
KAFKA_4 := 4.4.0
KAFKA_3 := 3.9.2
KAFKA_MATRIX ?= 3.7.2 3.8.1 3.9.2 4.0.2 4.1.2 4.2.2 4.3.2 4.4.0
# org.apache.kafka:kafka-shell is not on Maven Central for every release. A shell reads only the
# metadata versions and jars of its own line, so a release borrows the shell of the newest release
# of its line that has one, and a line with none gets no shell (the oracles then say so).
KAFKA_SHELL_FOR_4.2.2 := 4.2.1
KAFKA_SHELL_FOR_4.3.2 := 4.3.1
KAFKA_SHELL_FOR_4.4.0 := none
kafka_shell_flag = $(if $(filter none,$(KAFKA_SHELL_FOR_$(1))),-Dkafka.shell.none,$(if $(KAFKA_SHELL_FOR_$(1)),-Dkafka.shell.version=$(KAFKA_SHELL_FOR_$(1))))
kafka: $(KAFKA_CACHE)/$(KAFKA_4)/.resolved $(KAFKA_CACHE)/$(KAFKA_3)/.resolved
kafka-matrix: $(foreach v,$(KAFKA_MATRIX),$(KAFKA_CACHE)/$(v)/.resolved)

# 3.x logs through reload4j, 4.x through log4j2: the pom's two profiles
$(KAFKA_CACHE)/%/.resolved: deploy/kafka/pom.xml
	rm -rf $(@D)
	mvn -q -B -f deploy/kafka/pom.xml -P $(if $(filter 3.%,$*),kafka-3,kafka-4) -Dkafka.version=$* $(call kafka_shell_flag,$*) \
	  dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(@D)
	touch $@

# The Delta Lake Spark connector's jars from Maven Central (deploy/delta-spark/pom.xml) into an
# ignored cache: backend delta-spark puts them on the session's classpath (spark.jars).
DELTA_VERSION := 4.4.0
DELTA_CACHE ?= .cache/delta-spark
delta-spark: $(DELTA_CACHE)/$(DELTA_VERSION)/.resolved

$(DELTA_CACHE)/$(DELTA_VERSION)/.resolved: deploy/delta-spark/pom.xml
	rm -rf $(@D)
	mvn -q -B -f deploy/delta-spark/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(@D)
	touch $@

# Spark's own Kafka source (deploy/spark-kafka/pom.xml) into an ignored cache: the job's
# `sources.kafka` input (the shipper's topic) puts them on the session's classpath.
SPARK_KAFKA_VERSION := 4.2.0
SPARK_KAFKA_CACHE ?= .cache/spark-kafka
spark-kafka: $(SPARK_KAFKA_CACHE)/$(SPARK_KAFKA_VERSION)/.resolved

$(SPARK_KAFKA_CACHE)/$(SPARK_KAFKA_VERSION)/.resolved: deploy/spark-kafka/pom.xml
	rm -rf $(@D)
	mvn -q -B -f deploy/spark-kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(@D)
	touch $@

# The Prometheus JMX exporter java agent (deploy/jmx-exporter/pom.xml) into an ignored cache.
JMX_EXPORTER_CACHE ?= .cache/jmx-exporter
jmx-exporter: $(JMX_EXPORTER_CACHE)/.resolved

$(JMX_EXPORTER_CACHE)/.resolved: deploy/jmx-exporter/pom.xml
	rm -rf $(@D)
	mvn -q -B -f deploy/jmx-exporter/pom.xml dependency:copy-dependencies -DexcludeTransitive=true \
	  -DoutputDirectory=$(CURDIR)/$(@D)
	touch $@

# The Spark operator's SparkApplication CRD into an ignored cache: its openAPIV3Schema (v1beta2)
# checks the SparkApplication in deploy/kubernetes/ (tests/test_kubernetes_manifests.py, which
# reads the version here). It comes from the operator's Go module (`go mod download`; the module
# carries config/crd/bases/). The core Kubernetes schemas come with kubernetes-validate (pip).
SPARK_OPERATOR_VERSION := v2.5.0
SPARK_APP_CRD := .cache/k8s-schemas/spark-operator-$(SPARK_OPERATOR_VERSION)/sparkoperator.k8s.io_sparkapplications.yaml
k8s-schemas: $(SPARK_APP_CRD)

$(SPARK_APP_CRD):
	@command -v go >/dev/null || { echo "k8s-schemas: go is needed (the CRD comes from the operator's Go module)"; exit 1; }
	mkdir -p $(@D)
	dir=$$(cd $(@D) && go mod download -json github.com/kubeflow/spark-operator/v2@$(SPARK_OPERATOR_VERSION) | \
	  $(PYTHON) -c 'import json, sys; m = json.load(sys.stdin); sys.exit(m["Error"]) if "Error" in m else print(m["Dir"])') && \
	  cp "$$dir/config/crd/bases/$(@F)" $@.tmp && chmod u+w $@.tmp && mv $@.tmp $@

# The container image (deploy/container/): built with podman from a debootstrapped Debian
# bookworm (no registry image), Debian packages, PyPI and Maven Central; named as the Kubernetes
# manifests name it. Storage: overlay where the kernel has it (a container starts in a second),
# else vfs (every container a full copy of the image, ~30 s); PODMAN_STORAGE_DRIVER chooses.
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
IMAGE ?= localhost/kraft-audit:$(VERSION)
BASE_IMAGE ?= localhost/kraft-audit-base:bookworm
PODMAN_STORAGE_DRIVER ?= $(if $(shell grep -qw overlay /proc/filesystems && echo y),overlay,vfs)
PODMAN := podman --storage-driver $(PODMAN_STORAGE_DRIVER)
# the CA bundle pip trusts here, lent to pip in the build (a build secret, not a layer)
CA_BUNDLE ?= $(or $(PIP_CERT),$(SSL_CERT_FILE),/etc/ssl/certs/ca-certificates.crt)
IMAGE_CONTEXT := build/image
image test-image: export CONTAINERS_CONF := $(CURDIR)/deploy/container/containers.conf
image test-image: export KRAFT_TEST_IMAGE := $(IMAGE)
image test-image: export KRAFT_TEST_PODMAN := $(PODMAN)

# podman and runc run the containers, debootstrap makes the base (Debian's packages)
podman:
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >/dev/null)

image: install podman spark-kafka delta-spark
	rm -rf $(IMAGE_CONTEXT) build/lib build/bdist.*
	mkdir -p $(IMAGE_CONTEXT)/jars/spark-kafka $(IMAGE_CONTEXT)/jars/delta-spark
	$(BIN)/python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	  print(*p["dependencies"], *p["optional-dependencies"]["ship"], *p["optional-dependencies"]["delta-spark"], sep="\n")' \
	  >$(IMAGE_CONTEXT)/requirements.txt
	SOURCE_DATE_EPOCH=315532800 $(BIN)/pip wheel --quiet --no-deps --wheel-dir $(IMAGE_CONTEXT) .
	cp $(SPARK_KAFKA_CACHE)/$(SPARK_KAFKA_VERSION)/*.jar $(IMAGE_CONTEXT)/jars/spark-kafka/
	cp $(DELTA_CACHE)/$(DELTA_VERSION)/*.jar $(IMAGE_CONTEXT)/jars/delta-spark/
	cp jobs/audit_job.py deploy/container/entrypoint.sh kraft_audit/spark/pyspark_bytecode.py $(IMAGE_CONTEXT)/
	$(PODMAN) image exists $(BASE_IMAGE) || PODMAN="$(PODMAN)" deploy/container/base-image.sh $(BASE_IMAGE)
	$(PODMAN) build --quiet --layers --network host --secret id=cacert,src=$(CA_BUNDLE) --build-arg BASE=$(BASE_IMAGE) \
	  --build-arg PROJECT_SHA256=$$(cat $(IMAGE_CONTEXT)/*.whl $(IMAGE_CONTEXT)/*.py $(IMAGE_CONTEXT)/*.sh | sha256sum | cut -c1-64) \
	  -f deploy/container/Containerfile -t $(IMAGE) $(IMAGE_CONTEXT)
	@$(PODMAN) image inspect --format '$(IMAGE): {{.Size}} bytes' $(IMAGE)

# The image run as a user runs it (tests/test_image.py, pytest -m image): --version, check, demo,
# the Spark operator's driver and executor commands, ship into a real Kafka on this host with the job in a
# second container, /metrics scraped from the host (about 3.5 minutes once the image is built).
test-image: image $(KAFKA_CACHE)/$(KAFKA_4)/.resolved
	$(BIN)/python -m pytest -q -m image tests/test_image.py

demo: install
	$(BIN)/kraft-audit demo --workdir $(WORKDIR)

# A real three-broker Kafka through a short fault story, audited live (about 3 minutes).
demo-kafka: install kafka spark-kafka
	$(BIN)/python -m kraft_audit.testing.realkafka.demo --workdir demo-kafka-out

test: install prometheus kafka delta-spark spark-kafka k8s-schemas
	$(BIN)/python -m pytest -q --durations=15

# Further variants of slow tests `make test` runs one of (three signal variants; the real-Kafka
# tests on the second Kafka line, 3.9.2; a kill -9 just after a compaction's commit, after a
# snapshot comparison's Delta write and mid-stream; the delta-spark backend's crash and
# restart, and its tables continued by the other backend; a standalone cluster, a worker killed and the shipper's topic read on it), kept out
# of it for its 25-minute budget; CI runs them (about 20 minutes).
test-variants: install prometheus kafka delta-spark spark-kafka
	$(BIN)/python -m pytest -q -m variants

# A randomised fault loop on a real quorum for FAULT_SECONDS (default 240; FAULT_SEED to repeat
# one): kill -9, SIGSTOP/SIGCONT and a cut-off leader among controllers, shippers and the job,
# then every table equal to the committed log's audit (about 7 minutes).
test-raft-faults: install kafka spark-kafka
	$(BIN)/python -m pytest -q -s -m faults tests/test_kafka_faults.py

# The contributors' loop: the tests that need no Spark, Kafka, Prometheus or Maven (pip and the
# Spark operator's CRD), about 30 s.
FAST := not spark and not kafka and not cluster and not prometheus and not image and not mutations and not compiled
test-fast: install k8s-schemas
	$(BIN)/python -m pytest -q -m "$(FAST)"

# The optional compiled fast path: the core's hot modules built by mypyc (mypy, the `compiled`
# extra) into extension modules beside their sources (deploy/compiled/build.py; about 3 min,
# 2 of CPU, on 2 cores: the record decoders' module is most of it). Nothing needs them:
# `make compiled-clean` goes back to pure Python.
# test-compiled holds the two to the same bytes (tests/test_compiled.py).
compiled: install $(VENV)/.compiled-deps
	$(BIN)/python deploy/compiled/build.py

$(VENV)/.compiled-deps: pyproject.toml
	$(BIN)/pip install --quiet -e '.[compiled]'
	touch $@

compiled-clean:
	$(BIN)/python deploy/compiled/build.py --clean

test-compiled: compiled
	$(BIN)/python -m pytest -q -m compiled tests/test_compiled.py

# Mutation testing over the real logs in tests/fixtures: the score per class of controller
# mistake, before and with the rules that raised it (docs/rules.md keeps the table; about 5 minutes).
test-mutations: install
	$(BIN)/python -m pytest -q -s -m mutations tests/test_mutations.py

# The "every record type" story (kraft_audit/testing/realkafka/story.py) on both lines `make test`
# and `make test-variants` run, its controller logs kept as fixtures in
# tests/fixtures/kraft-story/<version>/ (a few minutes).
fixtures-story: install kafka
	for v in $(KAFKA_4) $(KAFKA_3); do \
	  $(BIN)/python -m kraft_audit.testing.realkafka.story $$v tests/fixtures/kraft-story/$$v || exit 1; done

# The periodic preferred election and the controller's own unclean election
# (kraft_audit/testing/realkafka/liveness.py) on both lines, each controller log kept with its
# controller's server.properties in tests/fixtures/kraft-liveness/<version>/ (about 1.5 minutes a line).
fixtures-liveness: install kafka
	for v in $(KAFKA_4) $(KAFKA_3); do \
	  $(BIN)/python -m kraft_audit.testing.realkafka.liveness $$v tests/fixtures/kraft-liveness/$$v || exit 1; done

# The real-cluster stories on the newest patch of every release line from 3.7 to 4.3, one
# cluster at a time, ending with a version x scenario table (about 5 minutes a version).
comma := ,
empty :=
space := $(empty) $(empty)
test-kafka-matrix: install kafka-matrix
	KRAFT_TEST_KAFKA_VERSIONS="$(subst $(space),$(comma),$(strip $(KAFKA_MATRIX)))" \
	  $(BIN)/python -m pytest -q -m "kafka or story" tests/test_kafka_real.py tests/test_kafka_side_inputs.py \
	  tests/test_kafka_story.py tests/test_kafka_liveness.py

# When Kafka ships: what release VERSION brings that the auditor does not know (its record schemas
# against codec/schemas.py, its metadata.version levels and features against
# kraft_audit/data/kafka_versions.json: kraft_audit/testing/release_check.py), then the
# every-record-type story live on it. Exits 1 on anything new.
kafka-release-check: install
	@test -n "$(VERSION)" || { echo "usage: make kafka-release-check VERSION=x.y.z"; exit 2; }
	$(MAKE) kafka-matrix KAFKA_MATRIX=$(VERSION)
	$(BIN)/python -m kraft_audit.testing.release_check $(VERSION)
	KRAFT_TEST_KAFKA_VERSIONS=$(VERSION) $(BIN)/python -m pytest -q -m story tests/test_kafka_story.py

# The level table the rules read (kraft_audit/data/kafka_versions.json), from the jars of every
# release line (kraft_audit/testing/kafka_facts.py); after a new release joins KAFKA_MATRIX.
kafka-facts: install kafka-matrix
	$(BIN)/python -m kraft_audit.testing.kafka_facts $(KAFKA_MATRIX)

# Mutation testing of Kafka's real controller (kraft_audit/testing/realkafka/controller_mutants.py):
# one edit of a controller class from Kafka's sources jar, compiled with javac against the released
# jars and put first on the controller's classpath, the workout run on a real cluster, its log audited.
# Prints the score per operator class and per controller class, the survivors with the first record
# that differs; results kept in controller-mutants-out/ (a run goes on where the last one stopped).
# A sample spread over the operators (about 3 minutes a mutant, plus two baseline runs); the full
# run of every reachable mutant takes days on 2 cores and has its own target.
MUTANTS_VERSION := 4.3.1
MUTANTS_CACHE := .cache/controller-mutants
MUTANTS_SAMPLE ?= 12
MUTANTS_SEED ?= 1
controller-mutants-deps: $(MUTANTS_CACHE)/$(MUTANTS_VERSION)/.resolved
$(MUTANTS_CACHE)/%/.resolved: deploy/controller-mutants/pom.xml
	rm -rf $(@D)
	mvn -q -B -f deploy/controller-mutants/pom.xml -Dkafka.version=$* dependency:copy-dependencies \
	  -DexcludeTransitive=true -DoutputDirectory=$(CURDIR)/$(@D)
	touch $@
test-controller-mutants: install controller-mutants-deps
	$(MAKE) kafka-matrix KAFKA_MATRIX=$(MUTANTS_VERSION)
	$(BIN)/python -m kraft_audit.testing.realkafka.controller_mutants --version $(MUTANTS_VERSION) \
	  --sample $(MUTANTS_SAMPLE) --seed $(MUTANTS_SEED)
test-controller-mutants-full: install controller-mutants-deps
	$(MAKE) kafka-matrix KAFKA_MATRIX=$(MUTANTS_VERSION)
	$(BIN)/python -m kraft_audit.testing.realkafka.controller_mutants --version $(MUTANTS_VERSION)

# Controller bugs Kafka shipped, each on a release that has it and on the first that fixed it
# (tests/test_kafka_bugs.py; docs/real-kafka.md has the table).
BUG_VERSIONS := 3.7.2 3.8.0 4.0.2 4.1.0 4.2.1 4.3.0 4.3.1 4.3.2 4.4.0
test-bugs: install prometheus jmx-exporter
	$(MAKE) kafka-matrix KAFKA_MATRIX="$(BUG_VERSIONS)"
	$(BIN)/python -m pytest -q -m bugs tests/test_kafka_bugs.py

# The bench_*.py side by side (a few minutes), then the scale table at 10k, 100k, 300k and 1M
# partitions (bench/scale.py with BENCH_SCALE_ARGS: bootstrap, steady state, restart; the core
# and the backfill come from bench_side_by_side.py, the kill -9 check from bench-scale).
# The scale part took 32.5 min on 2 cores under load 9-29 (2026-11-26); idle, an estimated ~8 min.
BENCH_SCALE_ARGS ?= --driver-memory 4g --seconds 10 --skip-core --kill-size 0
bench: install kafka spark-kafka
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done
	echo "== bench/scale.py"; $(BIN)/python bench/scale.py $(BENCH_SCALE_ARGS)

# Scale figures (bootstrap, steady state at 10k..1M partitions, backfill, core, restart): long;
# a quick run: make bench-scale SCALE_ARGS="--sizes 10000,100000 --seconds 10"; --core-only, --operator-only
SCALE_ARGS ?= --driver-memory 4g
bench-scale: install
	$(BIN)/python bench/scale.py $(SCALE_ARGS)

clean:
	rm -rf $(VENV) $(WORKDIR) demo-kafka-out .pytest_cache
	$(PYTHON) deploy/compiled/build.py --clean
