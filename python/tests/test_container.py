"""The container and cluster files (issue 51, item 7) against the binary they run. No container
runtime or cluster exists on the machine these tests run on: what is tested is the command line
of the Dockerfile (ENTRYPOINT + CMD) and of the Kubernetes Deployment (ENTRYPOINT + its args),
each started with this repository's `nectar` (paths and listen addresses mapped to the test's),
its admin endpoint answering the probes the Deployment declares, and a SIGTERM draining it to
exit status 0; and that the manifests agree with each other (ports, paths, the read-only model
mount, the drain within the grace period, the autoscaler's metric)."""

import json
import re
import signal
import subprocess
import urllib.error
import urllib.request

import yaml

from conftest import REPO

DOCKERFILE = REPO / "Dockerfile"
KUBE = REPO / "deploy" / "kubernetes"


def dockerfile():
    """(stages, instructions of the last stage as (KEYWORD, rest)) of the Dockerfile."""
    lines, cur = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        if raw.lstrip().startswith("#") and not cur:
            continue
        cur += raw.rstrip("\\").strip() + " "
        if not raw.endswith("\\"):
            if cur.strip():
                kw, _, rest = cur.strip().partition(" ")
                lines.append((kw.upper(), rest.strip()))
            cur = ""
    stages = [i for i, (kw, _) in enumerate(lines) if kw == "FROM"]
    return len(stages), lines[stages[-1]:]


def container():
    return yaml.safe_load((KUBE / "deployment.yaml").read_text())["spec"]["template"]["spec"]["containers"][0]


def arg(argv, flag):
    return argv[argv.index(flag) + 1]


def http(addr, path):
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def run_briefly(argv, nectar_bin, minilm, probes):
    """Starts `argv` (the image's command line) with this checkout's binary and the fetched
    MiniLM, checks the probes on its admin endpoint, drains it with SIGTERM; its /metrics."""
    assert argv[0] == "nectar"
    mapped = [nectar_bin] + [
        {"/models/model": minilm, "0.0.0.0:7878": "127.0.0.1:0", "0.0.0.0:9100": "127.0.0.1:0"}.get(a, a) for a in argv[1:]
    ]
    p = subprocess.Popen(mapped, stderr=subprocess.PIPE, text=True)
    try:
        banner = p.stderr.readline()
        m = re.search(r"admin on http://([0-9.:]+)", banner)
        assert m, banner
        admin = m.group(1)
        for path, want in probes.items():
            status, body = http(admin, path)
            assert status == want, (path, status, body)
        _, metrics = http(admin, "/metrics")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 0
        return banner, metrics
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_the_image_is_multi_stage_non_root_and_serves_a_read_only_model():
    stages, final = dockerfile()
    assert stages >= 2
    kws = dict(final)
    assert "COPY" in kws and "--from=" in kws["COPY"]
    user = kws["USER"].split(":")[0]
    assert user not in ("0", "root")
    entry, cmd = json.loads(kws["ENTRYPOINT"]), json.loads(kws["CMD"])
    assert entry == ["nectar", "serve"]
    assert arg(cmd, "--model") == "/models/model"
    c = container()
    mount = next(v for v in c["volumeMounts"] if v["mountPath"] == "/models/model")
    assert mount["readOnly"] is True
    assert arg(c["args"], "--model") == "/models/model"
    assert c.get("command") is None, "the Deployment keeps the image's ENTRYPOINT"


def test_the_manifests_agree_with_the_server_flags():
    c = container()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    args = c["args"]
    assert arg(args, "--admin").endswith(f":{ports['admin']}")
    assert arg(args, "--listen").endswith(f":{ports['nectar']}")
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
    assert "kill -TERM 1" in " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
    pod = yaml.safe_load((KUBE / "deployment.yaml").read_text())["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > int(arg(args, "--drain-timeout"))
    limit = c["resources"]["limits"]["memory"]
    assert limit.endswith("Gi") and float(arg(args, "--memory-limit-gib")) < float(limit[:-2])
    svc = yaml.safe_load((KUBE / "service.yaml").read_text())
    assert svc["spec"]["ports"][0]["targetPort"] == "nectar"
    hpa = yaml.safe_load((KUBE / "hpa.yaml").read_text())
    assert hpa["spec"]["scaleTargetRef"]["name"] == "nectar"
    assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "nectar_sessions_active"
    assert float(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"]) <= int(arg(args, "--max-concurrent-sessions"))


def test_the_images_command_line_serves_answers_the_probes_and_drains(nectar_bin, minilm):
    _, final = dockerfile()
    kws = dict(final)
    argv = json.loads(kws["ENTRYPOINT"]) + json.loads(kws["CMD"])
    banner, metrics = run_briefly(argv, nectar_bin, minilm, {"/healthz": 200, "/readyz": 200})
    json.loads(banner)  # --log-format json: one JSON object per line
    assert "nectar_sessions_active 0" in metrics


def test_the_deployments_command_line_serves_answers_the_probes_and_drains(nectar_bin, minilm):
    _, final = dockerfile()
    c = container()
    argv = json.loads(dict(final)["ENTRYPOINT"]) + [str(a) for a in c["args"]]
    probes = {c["readinessProbe"]["httpGet"]["path"]: 200, c["livenessProbe"]["httpGet"]["path"]: 200}
    _, metrics = run_briefly(argv, nectar_bin, minilm, probes)
    # The autoscaler's metric, and the memory limit with MiniLM's calibrated estimate.
    hpa = yaml.safe_load((KUBE / "hpa.yaml").read_text())
    assert f"{hpa['spec']['metrics'][0]['pods']['metric']['name']} 0" in metrics
    assert f"nectar_memory_limit_bytes {7 * 2**30}" in metrics
    est = float(re.search(r"^nectar_session_memory_estimate_bytes (\S+)$", metrics, re.M).group(1))
    assert 0 < est < 7 * 2**30
