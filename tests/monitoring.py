"""A real Prometheus and Alertmanager (Debian's packages) around a test: the shipped
configs with seconds for minutes, every receiver posting to a local webhook."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from services import Service, free_port

PROMETHEUS_DIR = Path(__file__).resolve().parents[1] / "deploy" / "prometheus"


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is needed: apt-get install -y prometheus prometheus-alertmanager "
                    "(Debian), or `make prometheus`")
    return path


class Webhook:
    """Records every notification Alertmanager posts, by URL path (receiver)."""

    def __init__(self):
        self.received: list[tuple[str, dict]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.received.append((self.path.strip("/"), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def firing(self) -> set[tuple]:
        """(receiver, alertname, cluster, rule, severity) of every firing alert received."""
        return {(receiver, a["labels"]["alertname"], a["labels"].get("cluster"),
                 a["labels"].get("rule"), a["labels"]["severity"])
                for receiver, note in self.received for a in note["alerts"]
                if a["status"] == "firing"}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def alertmanager(root: Path, webhook: Webhook) -> tuple[Service, int]:
    config = yaml.safe_load((PROMETHEUS_DIR / "alertmanager.yml").read_text())
    # seconds instead of minutes; every receiver posts to the local webhook under its name
    config["route"].update(group_wait="1s", group_interval="1s")
    for receiver in config["receivers"]:
        receiver["webhook_configs"] = [{"url": f"{webhook.url}/{receiver['name']}"}]
    (root / "alertmanager.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    service = Service([binary("prometheus-alertmanager"),
                       f"--config.file={root / 'alertmanager.yml'}",
                       f"--storage.path={root / 'alertmanager-data'}",
                       f"--web.listen-address=127.0.0.1:{port}",
                       "--cluster.listen-address=",  # no HA gossip (it would bind a fixed port)
                       "--log.level=warn"], root / "alertmanager.log")
    return service, port


def prometheus(root: Path, metrics_port: int, alertmanager_port: int,
               rules: Path = PROMETHEUS_DIR / "alerts.yml") -> tuple[Service, str]:
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(rules)]
    [job] = config["scrape_configs"]
    job["static_configs"] = [{"targets": [f"127.0.0.1:{metrics_port}"]}]
    [am] = config["alerting"]["alertmanagers"]
    am["static_configs"] = [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]
    (root / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    service = Service([binary("prometheus"), f"--config.file={root / 'prometheus.yml'}",
                       f"--storage.tsdb.path={root / 'prometheus-data'}",
                       f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                      root / "prometheus.log")
    return service, f"http://127.0.0.1:{port}"


def ready(base: str) -> bool:
    with urllib.request.urlopen(base + "/-/ready", timeout=2) as response:
        return response.status == 200


def instant(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)["data"]["result"]
