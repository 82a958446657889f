"""`nectar serve --admin` (issue 51): health, readiness and Prometheus metrics, read by the
reference parser of the Prometheus text format (`prometheus_client.parser`)."""

import signal
import subprocess
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import nectar
from conftest import FAST
from test_api import IDS, free_port


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def samples(text):
    """name -> [(labels, value)] of every sample."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_admin_endpoint_health_readiness_and_metrics(tiny, nectar_bin):
    port, admin = free_port(), free_port()
    srv = subprocess.Popen(
        [nectar_bin, "serve", "--model", tiny["bert"], "--listen", f"127.0.0.1:{port}", "--op", "ot=ferret-small",
         "--admin", f"127.0.0.1:{admin}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{admin}"
    try:
        assert "serving" in srv.stderr.readline()
        assert get(base + "/healthz") == (200, "ok\n")
        assert get(base + "/readyz") == (200, "ready\n")
        vec = nectar.Client("127.0.0.1", port, suite=FAST).embed(IDS)
        assert vec.shape[0] == 1
        status, text = get(base + "/metrics")
        assert status == 200
        m = samples(text)
        value = lambda name: sum(v for _, v in m[name])
        # Parsers may drop the `_total` suffix from a counter's family but keep it on samples.
        assert value("nectar_sessions_started_total") == 1
        assert value("nectar_sessions_finished_total") == 1
        assert value("nectar_sessions_active") == 0
        assert value("nectar_bytes_sent_total") > 0 and value("nectar_bytes_received_total") > 0
        assert value("nectar_flights_sent_total") > 0
        assert value("nectar_resident_memory_bytes") > 1 << 20
        assert value("nectar_session_seconds_count") == 1
        assert value("nectar_query_seconds_count") == 1
        ops = {labels["operator"] for labels, _ in m["nectar_operator_seconds_count"]}
        assert {"gelu", "softmax"} <= ops, ops
        assert all(labels["suite"] for labels, _ in m["nectar_operator_seconds_count"])
        # SIGTERM: not ready while draining (nothing runs, so it exits at once, status 0).
        srv.send_signal(signal.SIGTERM)
        assert srv.wait(timeout=10) == 0
    finally:
        srv.kill()
