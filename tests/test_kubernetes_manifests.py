"""deploy/kubernetes/: every document of both manifests is valid against the
schema of the kind it claims, and the objects are wired to each other.

Core kinds are checked against the Kubernetes JSON schemas that the PyPI
package kubernetes-validate ships (its strict variant: an unknown field is an
error, as with `kubectl apply`'s default server-side field validation). The
SparkApplication is checked against the Spark operator's own CRD, the
openAPIV3Schema of its v1beta2 version, which `make k8s-schemas` takes from the
operator's Go module into .cache/ (the Makefile pins the version). Kubernetes
applies a CRD schema as a structural schema: unknown fields are rejected
(pruned), int-or-string fields take either, nullable ones take null; the
conversion below says so to jsonschema. Its metadata is an ObjectMeta, checked
against Kubernetes' own schema. Broken copies prove the checks reject what the
API server would."""

from __future__ import annotations

import copy
import functools
import re
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KUBE = REPO / "deploy" / "kubernetes"
MANIFESTS = ("kraft-audit.yaml", "shipper-sidecar.yaml")
# the oldest Kubernetes these manifests aim at (the pod-index label the controllers' node ids
# come from is on by default since 1.28) and a recent one
KUBERNETES_VERSIONS = ("1.30", "1.35")
SPARK_APP_API = "sparkoperator.k8s.io/v1beta2"


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((KUBE / name).read_text()) if d]


def by_kind(name: str) -> dict[str, list[dict]]:
    kinds: dict[str, list[dict]] = {}
    for doc in documents(name):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def one(name: str, kind: str) -> dict:
    [doc] = by_kind(name)[kind]
    return doc


# --- the Spark operator's CRD as a JSON schema -----------------------------------------------

def spark_app_crd_path() -> Path:
    makefile = (REPO / "Makefile").read_text()
    pinned = re.search(r"^SPARK_OPERATOR_VERSION := (\S+)$", makefile, re.MULTILINE)
    assert pinned, "the Makefile pins SPARK_OPERATOR_VERSION"
    return (REPO / ".cache" / "k8s-schemas" / f"spark-operator-{pinned.group(1)}"
            / "sparkoperator.k8s.io_sparkapplications.yaml")


def structural(node):
    """An openAPIV3Schema node of a CRD as Kubernetes applies it, in jsonschema's terms."""
    if isinstance(node, list):
        return [structural(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: v if k in ("enum", "default", "example", "required", "properties") else structural(v)
           for k, v in node.items()}
    if "properties" in node:  # property names, not schemas: keep them, convert their schemas
        out["properties"] = {k: structural(v) for k, v in node["properties"].items()}
    if out.pop("x-kubernetes-int-or-string", False):
        out["type"] = ["integer", "string"]
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
    if out.pop("x-kubernetes-embedded-resource", False):
        out.setdefault("properties", {}).update(
            apiVersion={"type": "string"}, kind={"type": "string"}, metadata={"type": "object"})
    preserve = out.pop("x-kubernetes-preserve-unknown-fields", False)
    if out.get("type") == "object" and "properties" in out and not preserve:
        out.setdefault("additionalProperties", False)  # unknown fields are not kept
    return out


@functools.cache
def spark_app_validator() -> jsonschema.Validator:
    path = spark_app_crd_path()
    if not path.is_file():
        pytest.fail(f"{path.relative_to(REPO)} is missing: `make k8s-schemas` fetches the "
                    "Spark operator's CRD (make test and make test-fast do)")
    crd = yaml.safe_load(path.read_text())
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["spec"]["group"] == "sparkoperator.k8s.io"
    assert crd["spec"]["names"]["kind"] == "SparkApplication"
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    assert version["served"]
    schema = structural(version["schema"]["openAPIV3Schema"])
    # OpenAPI 3.0 schemas are JSON Schema draft 4 in these keywords (boolean exclusiveMinimum...)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


# --- one function for every document: what is wrong with it ---------------------------------

def validation_errors(doc: dict, k8s_version: str) -> list[str]:
    """Every error against the schema of the document's kind ([] when valid)."""
    if doc.get("apiVersion") == SPARK_APP_API and doc.get("kind") == "SparkApplication":
        errors = [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
                  for e in spark_app_validator().iter_errors(doc)]
        # the CRD leaves metadata to the API server: an ObjectMeta, as on any object
        as_meta = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc.get("metadata", {})}
        return errors + validation_errors(as_meta, k8s_version)
    try:
        kubernetes_validate.validate(doc, k8s_version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:  # an unknown kind is not a valid one
        return [e.message]
    return []


CASES = [pytest.param(name, i, doc, id=f"{name}:{i}:{doc['kind']}/{doc['metadata']['name']}")
         for name in MANIFESTS for i, doc in enumerate(documents(name))]


@pytest.mark.parametrize("k8s_version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("name,index,doc", CASES)
def test_every_document_is_valid_against_its_schema(name, index, doc, k8s_version):
    assert validation_errors(doc, k8s_version) == [], f"{name}, document {index}"


def test_the_manifests_hold_what_the_docs_say():
    assert {k: len(v) for k, v in by_kind("kraft-audit.yaml").items()} == {
        "Namespace": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1,
        "PersistentVolumeClaim": 1, "ConfigMap": 1, "Service": 1, "SparkApplication": 1}
    assert {k: len(v) for k, v in by_kind("shipper-sidecar.yaml").items()} == {
        "Service": 2, "StatefulSet": 1}


# --- broken copies: the same check rejects them ----------------------------------------------

def _misspelled_spark_field(docs):
    app = docs["SparkApplication"]
    app["spec"]["driver"]["serviceAcount"] = app["spec"]["driver"].pop("serviceAccount")
    return app, "spec.driver: Additional properties are not allowed ('serviceAcount'"


def _wrong_spark_type(docs):
    app = docs["SparkApplication"]
    app["spec"]["executor"]["instances"] = "two"
    return app, "spec.executor.instances: 'two' is not of type 'integer'"


def _wrong_spark_enum(docs):
    app = docs["SparkApplication"]
    app["spec"]["restartPolicy"]["type"] = "Forever"
    return app, "spec.restartPolicy.type: 'Forever' is not one of"


def _bad_spark_metadata(docs):
    app = docs["SparkApplication"]
    app["metadata"]["labels"] = {"app": 1}
    return app, "metadata.labels.app: 1 is not of type 'string'"


def _misspelled_core_field(docs):
    sts = docs["StatefulSet"]
    container = sts["spec"]["template"]["spec"]["containers"][1]
    container["volumeMount"] = container.pop("volumeMounts")
    return sts, "Additional properties are not allowed ('volumeMount'"


def _wrong_core_type(docs):
    pvc = docs["PersistentVolumeClaim"]
    pvc["spec"]["accessModes"] = "ReadWriteMany"
    return pvc, "spec.accessModes: 'ReadWriteMany' is not of type 'array'"


def _unknown_kind(docs):
    sa = docs["ServiceAccount"]
    sa["kind"] = "ServiceAcount"
    return sa, "Couldn't find schema for kind ServiceAcount"


@pytest.mark.parametrize("breaks", [_misspelled_spark_field, _wrong_spark_type, _wrong_spark_enum,
                                    _bad_spark_metadata, _misspelled_core_field, _wrong_core_type,
                                    _unknown_kind])
def test_a_broken_copy_is_rejected(breaks):
    docs = {d["kind"]: copy.deepcopy(d)
            for name in MANIFESTS for d in documents(name) if d["kind"] != "Service"}
    broken, expected = breaks(docs)
    errors = validation_errors(broken, KUBERNETES_VERSIONS[-1])
    assert any(expected in e for e in errors), errors


def test_the_crd_conversion_keeps_int_or_string_and_rejects_unknown_fields():
    schema = spark_app_validator().schema
    driver = schema["properties"]["spec"]["properties"]["driver"]
    assert driver["additionalProperties"] is False
    # coreLimit, a quantity, is a string; a container port in a probe takes a number or a name
    probe_port = (driver["properties"]["sidecars"]["items"]["properties"]["livenessProbe"]
                  ["properties"]["httpGet"]["properties"]["port"])
    assert probe_port["type"] == ["integer", "string"]


# --- the objects fit together ----------------------------------------------------------------

def test_the_spark_application_is_wired_to_its_objects():
    kinds = by_kind("kraft-audit.yaml")
    [namespace] = kinds["Namespace"]
    ns = namespace["metadata"]["name"]
    assert all(d["metadata"]["namespace"] == ns for k, ds in kinds.items() if k != "Namespace"
               for d in ds)
    app, sa = one("kraft-audit.yaml", "SparkApplication"), one("kraft-audit.yaml", "ServiceAccount")
    role, binding = one("kraft-audit.yaml", "Role"), one("kraft-audit.yaml", "RoleBinding")
    spec = app["spec"]

    # the driver runs as the account the Role is bound to, and may run its executors
    assert spec["driver"]["serviceAccount"] == sa["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": ns}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    granted = {(r, v) for rule in role["rules"] if rule["apiGroups"] == [""]
               for r in rule["resources"] for v in rule["verbs"]}
    for resource in ("pods", "services", "configmaps"):
        for verb in ("create", "get", "list", "watch", "delete", "deletecollection"):
            assert (resource, verb) in granted, (resource, verb)

    # volumes: the RWX claim for checkpoint and tables, the ConfigMap with the job config
    volumes = {v["name"]: v for v in spec["volumes"]}
    pvc = one("kraft-audit.yaml", "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    [data] = [n for n, v in volumes.items()
              if v.get("persistentVolumeClaim", {}).get("claimName") == pvc["metadata"]["name"]]
    config_map = one("kraft-audit.yaml", "ConfigMap")
    [config] = [n for n, v in volumes.items()
                if v.get("configMap", {}).get("name") == config_map["metadata"]["name"]]
    job_config = yaml.safe_load(config_map["data"]["audit.yaml"])
    # the log dir is read only as far as the quorum of the sidecars' manifest committed it
    [controllers] = by_kind("shipper-sidecar.yaml")["StatefulSet"]
    [kafka] = [c for c in controllers["spec"]["template"]["spec"]["containers"] if c["name"] == "kafka"]
    voters = next(e["value"] for e in kafka["env"] if e["name"] == "KAFKA_CONTROLLER_QUORUM_VOTERS")
    assert job_config["sources"]["bootstrap_controllers"] == [v.split("@")[1] for v in voters.split(",")]
    for role_spec in (spec["driver"], spec["executor"]):
        mounts = {m["name"]: m for m in role_spec["volumeMounts"]}
        assert set(mounts) <= set(volumes)
        for key in ("checkpoint", "tables"):  # on the claim, on every pod
            assert job_config[key].startswith(mounts[data]["mountPath"].rstrip("/") + "/")
            assert not mounts[data].get("readOnly")
    driver_mounts = {m["name"]: m["mountPath"] for m in spec["driver"]["volumeMounts"]}
    assert spec["arguments"] == ["--config", f"{driver_mounts[config]}/audit.yaml"]

    # the Service selects the driver pod (not the executors) on its metrics port
    service = one("kraft-audit.yaml", "Service")
    assert service["spec"]["selector"] == {**spec["driver"]["labels"], "spark-role": "driver"}
    [port] = service["spec"]["ports"]
    [driver_port] = spec["driver"]["ports"]
    assert port["targetPort"] == driver_port["name"]
    assert port["port"] == driver_port["containerPort"] == job_config["metrics"]["port"] == 9464
    annotations = service["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(port["port"])


# The slowest end-to-end rate measured (the worst-case backfill, 14.7k records/s on 2 cores,
# 3-5x slower on a loaded machine) and what a stop adds to the running micro-batch
# (tests/test_signals.py measures both sides of it).
SLOWEST_RECORDS_PER_S = 3000
STOP_MARGIN_S = 10


def seconds(interval: str) -> float:
    number, unit = re.match(r"\s*([\d.]+)\s*([a-z]+)", interval).groups()
    return float(number) * {"ms": 0.001, "m": 60}.get(unit, 60 if unit.startswith("min") else
                                                      0.001 if unit.startswith("milli") else 1)


def test_the_driver_pod_has_the_time_to_stop_at_a_micro_batch_boundary(tmp_path):
    """preStop signals the Python driver (the pod's own SIGTERM would reach spark-submit's
    JVM) and waits for it; the grace period holds a whole micro-batch, a trigger interval
    and the stop. The hook's shell command is run here against a real process."""
    import subprocess
    import threading
    import time

    from kraft_audit.config import KEYS

    app, config_map = one("kraft-audit.yaml", "SparkApplication"), one("kraft-audit.yaml", "ConfigMap")
    job_config = yaml.safe_load(config_map["data"]["audit.yaml"])
    driver = app["spec"]["driver"]
    env = {e["name"]: e["value"] for e in driver["env"]}
    pid_file = env["AUDIT_JOB_PID_FILE"]  # jobs/audit_job.py writes its pid there
    records = job_config.get("sources", {}).get("max_records_per_trigger") \
        or KEYS["sources.max_records_per_trigger"].default
    interval = seconds(job_config.get("trigger", {}).get("interval")
                       or KEYS["trigger.interval"].default)
    assert driver["terminationGracePeriodSeconds"] >= \
        records / SLOWEST_RECORDS_PER_S + interval + STOP_MARGIN_S

    # the hook: SIGTERM to the pid in the file, then wait until that process is gone
    command = driver["lifecycle"]["preStop"]["exec"]["command"]
    assert command[:2] == ["/bin/sh", "-c"] and pid_file in command[2]
    local = tmp_path / "driver.pid"
    driver_like = subprocess.Popen(  # ends 1 s after its SIGTERM, like a driver finishing
        [sys.executable, "-c", "import signal, sys, time\n"
         "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1), sys.exit(0)))\n"
         "time.sleep(60)"])
    reaper = threading.Thread(target=driver_like.wait)  # as spark-submit's JVM waits for it
    reaper.start()
    try:
        local.write_text(f"{driver_like.pid}\n")
        time.sleep(0.5)  # its handler is in place
        started = time.monotonic()
        hook = subprocess.run([*command[:2], command[2].replace(pid_file, str(local))],
                              timeout=30, check=False)
        took = time.monotonic() - started
        assert hook.returncode == 0
        reaper.join(1)
        assert driver_like.returncode == 0  # it got SIGTERM and the hook waited for its exit
        assert 1 <= took < 10, took
    finally:
        if driver_like.poll() is None:
            driver_like.kill()
        reaper.join(5)


def ship_arguments(args: list[str]):
    import argparse

    from kraft_audit.cli import ship

    parser = argparse.ArgumentParser(exit_on_error=False)
    ship.add_arguments(parser)
    return parser.parse_args(args)


def test_the_shipper_runs_beside_the_controller():
    kinds = by_kind("shipper-sidecar.yaml")
    [sts] = kinds["StatefulSet"]
    services = {s["metadata"]["name"]: s for s in kinds["Service"]}
    pod = sts["spec"]["template"]
    containers = {c["name"]: c for c in pod["spec"]["containers"]}
    kafka, ship = containers["kafka"], containers["kraft-audit-ship"]
    assert kafka["image"].startswith("apache/kafka:")

    # ship with the flags it takes, reading the controller's own metadata log
    assert ship["command"] == ["kraft-audit", "ship"]
    args = ship["args"]
    parsed = ship_arguments(args)  # the real command's parser takes them
    flags = dict(zip(args[::2], args[1::2]))
    assert parsed.topic == "kraft-metadata" and parsed.metrics_port == 9465
    assert parsed.metrics_host == "0.0.0.0" and parsed.only_node is None  # every sidecar ships
    assert parsed.bootstrap_servers.endswith(":9092")
    env = {e["name"]: e.get("value") for e in kafka["env"]}
    # it asks the quorum it runs in: the voters' controller listeners
    voters = [v.split("@")[1] for v in env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")]
    assert parsed.bootstrap_controller[0].split(",") == voters
    assert env["KAFKA_PROCESS_ROLES"] == "controller"
    assert flags["--log-dir"] == f"{env['KAFKA_LOG_DIRS']}/__cluster_metadata-0"
    kafka_mounts = {m["name"]: m for m in kafka["volumeMounts"]}
    ship_mounts = {m["name"]: m for m in ship["volumeMounts"]}
    [data] = [n for n, m in kafka_mounts.items() if m["mountPath"] == env["KAFKA_LOG_DIRS"]]
    assert ship_mounts[data]["mountPath"] == kafka_mounts[data]["mountPath"]
    assert ship_mounts[data]["readOnly"] is True and not kafka_mounts[data].get("readOnly")
    assert data in {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}

    # small and bounded, probed and scraped on 9465
    assert {"cpu", "memory"} <= set(ship["resources"]["requests"])
    assert ship["resources"]["limits"]["memory"]
    [metrics] = ship["ports"]
    assert metrics["containerPort"] == 9465
    assert ship["livenessProbe"]["httpGet"]["port"] in (metrics["name"], 9465)
    shipper = services["kraft-audit-shipper"]
    assert shipper["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    [port] = shipper["spec"]["ports"]
    assert port["port"] == 9465 and port["targetPort"] == metrics["name"]
    assert shipper["metadata"]["annotations"]["prometheus.io/port"] == "9465"
    assert shipper["metadata"]["annotations"]["prometheus.io/scrape"] == "true"

    # the controllers find each other through the governing Service
    governing = services[sts["spec"]["serviceName"]]
    assert governing["spec"]["clusterIP"] == "None"
    assert governing["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    ns, name = sts["metadata"]["namespace"], sts["metadata"]["name"]
    voters = [f"{i}@{name}-{i}.{governing['metadata']['name']}.{ns}.svc:9093"
              for i in range(sts["spec"]["replicas"])]
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == ",".join(voters)


# --- the image: the one `make image` builds ---------------------------------------------------

def built_image() -> str:
    """The name the Makefile gives the image (IMAGE), with pyproject.toml's version."""
    makefile = (REPO / "Makefile").read_text()
    version = re.search(r'^version = "(.+)"$', (REPO / "pyproject.toml").read_text(), re.MULTILINE)
    image = re.search(r"^IMAGE \?= (\S+)$", makefile, re.MULTILINE)
    assert version and image, "pyproject.toml has a version, the Makefile an IMAGE"
    assert re.search(r"^VERSION := .*pyproject\.toml\)$", makefile, re.MULTILINE), \
        "the Makefile reads VERSION from pyproject.toml"
    return image.group(1).replace("$(VERSION)", version.group(1))


def test_the_manifests_name_the_image_make_image_builds():
    image = built_image()
    assert re.fullmatch(r"localhost/kraft-audit:\d+\.\d+\.\d+\S*", image)
    app = one("kraft-audit.yaml", "SparkApplication")
    [sts] = by_kind("shipper-sidecar.yaml")["StatefulSet"]
    [ship] = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "kraft-audit-ship"]
    assert app["spec"]["image"] == ship["image"] == image
    # the push the comments tell of keeps the name and tag
    text = (KUBE / "kraft-audit.yaml").read_text()
    assert f"podman tag {image} registry.example.com/{image.split('/', 1)[1]}" in text


def test_the_spark_application_runs_what_the_image_holds_as_the_image_user():
    containerfile = (REPO / "deploy" / "container" / "Containerfile").read_text()
    app = one("kraft-audit.yaml", "SparkApplication")["spec"]
    job = app["mainApplicationFile"].removeprefix("local://")
    assert f" {job}" in containerfile, "the Containerfile installs the job where the app runs it"
    [user] = re.findall(r"^USER (\d+):(\d+)$", containerfile, re.MULTILINE)
    for role in ("driver", "executor"):
        ctx = app[role]["securityContext"]
        assert (str(ctx["runAsUser"]), str(ctx["runAsGroup"])) == user and ctx["runAsNonRoot"]
        assert ctx["readOnlyRootFilesystem"] is True
        # the read-only root leaves /tmp (Spark's and Python's scratch) to a volume
        tmp = {m["mountPath"]: m["name"] for m in app[role]["volumeMounts"]}["/tmp"]
        assert "emptyDir" in {v["name"]: v for v in app["volumes"]}[tmp]
