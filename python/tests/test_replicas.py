"""Replicas behind HAProxy (issue 51, item 6), shortened: three `nectar serve` replicas behind
HAProxy (leastconn, health checks on each replica's /readyz), three MiniLM clients with
`nectar infer --retries`, one per replica; once each runs its session, replica 0 gets SIGTERM
(it drains: its session finishes, it exits 0) and replica 1 SIGKILL (its client reconnects
through HAProxy and is answered by the replica left). The several-minute run with 12 clients
is `make replicas` (docs/results/replicas.md). HAProxy: the Debian package (`make test`
installs it)."""

import json
import shutil
import subprocess
import sys

import pytest

from conftest import FAST, REPO


def test_a_drained_and_a_killed_replica_lose_no_client(minilm, nectar_bin):
    haproxy = shutil.which("haproxy") or (shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin"))
    if not haproxy:
        pytest.fail("haproxy is not installed: `make test` installs it (apt-get install -y haproxy)")
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "replicas.py"), "--nectar", nectar_bin, "--haproxy", haproxy,
         "--model", minilm, "--suite", FAST, "--clients", "3", "--sessions-per-replica", "1", "--seconds", "0",
         "--drain-at", "0", "--kill-at", "0", "--retries", "2", "--drain-timeout", "120", "--client-timeout", "240"],
        capture_output=True, text=True, timeout=400,
    )
    assert run.stdout.strip(), run.stderr
    line = json.loads(run.stdout.strip().splitlines()[-1])
    assert line["checks"] == {k: True for k in line["checks"]}, json.dumps(line, indent=1)
    assert run.returncode == 0
    assert line["queries"] == 3 and line["failed"] == 0 and line["retried"] >= 1
    assert line["drain"]["exit_code"] == 0 and line["drain"]["sessions_finished_while_draining"] >= 1
    assert line["kill"]["exit_code"] == -9
