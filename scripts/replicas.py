#!/usr/bin/env python3
"""Replicas of `nectar serve` behind HAProxy (issue 51, item 6; `make replicas`).

On loopback: REPLICAS `nectar serve` processes, each with its admin endpoint (`--admin`), and
HAProxy in front of them (TCP mode, `balance leastconn`, an HTTP health check on each replica's
`/readyz`, at most as many connections per replica as it admits sessions; the rest wait in
HAProxy's queue). CLIENTS honest clients run `nectar infer --retries` through HAProxy, back to
back, until `--seconds` have passed (each at least one query). Meanwhile:

- at `--drain-at` seconds (once replica 0 runs a session) replica 0 gets SIGTERM: it drains —
  `/readyz` turns 503 so HAProxy stops sending it clients, its running sessions finish, it
  exits 0;
- at `--kill-at` seconds (once replica 1 runs a session) replica 1 gets SIGKILL: its clients'
  connections break, each `nectar infer --retries` reconnects through HAProxy, which sends it
  to a live replica.

Every answer is compared with the plaintext reference (`nectar embed --plaintext`, cosine ≥
`--min-cosine`). Each client process has `--client-timeout` seconds (a hang is a failure).
One JSON line goes to stdout (and is appended to `--out`); exit status 0 only if every check
holds. HAProxy comes from the Debian package `haproxy` (`make replicas` installs it).
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SENTENCES = [
    "The weather is lovely today.",
    "It's so sunny outside, let's walk along the river!",
    "He drove to the stadium at 7:30 pm.",
    "Private inference keeps the query secret from the server.",
    "A short one.",
    "Numbers like 3.14159 and 2718 are tokenised too.",
]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Replica:
    def __init__(self, i, a):
        self.i = i
        argv = [a.nectar, "serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--model", a.model,
                "--suite", a.suite, "--max-concurrent-sessions", str(a.sessions_per_replica),
                "--drain-timeout", str(a.drain_timeout)]
        if a.memory_limit_gib:
            argv += ["--memory-limit-gib", str(a.memory_limit_gib)]
        self.argv = argv
        self.p = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        banner = self.p.stderr.readline()
        try:
            self.addr = banner.split(" on ")[1].split()[0]
            self.admin = re.search(r"admin on http://([0-9.:]+)", banner).group(1)
        except (IndexError, AttributeError):
            raise SystemExit(f"replica {i} did not start: {banner.strip()} {self.p.stderr.read()[-500:]}")
        self.log = []  # (monotonic time, line)
        threading.Thread(target=self._read_log, daemon=True).start()
        self.peak_rss = 0
        self.last_metrics = {}
        self.exit_code = None
        self.exit_at = None

    def _read_log(self):
        for line in self.p.stderr:
            self.log.append((time.monotonic(), line.rstrip("\n")))

    def metrics(self):
        """The replica's /metrics as {sample name with labels: value} (None if unreachable)."""
        try:
            with urllib.request.urlopen(f"http://{self.admin}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    out[name] = float(value)
                except ValueError:
                    pass
        self.last_metrics = out
        return out

    def active(self):
        m = self.metrics()
        return int(m.get("nectar_sessions_active", 0)) if m else 0


def haproxy_config(port, replicas, maxconn, a):
    lines = [
        "global",
        "    maxconn 1000",
        "    log stdout format raw local0 info",
        "defaults",
        "    mode tcp",
        "    log global",
        "    option tcplog",
        "    timeout connect 2s",
        # A session is one long TCP connection with pauses while either party computes.
        f"    timeout client {a.client_timeout}s",
        f"    timeout server {a.client_timeout}s",
        f"    timeout queue {a.client_timeout}s",
        "    timeout check 2s",
        # A connection that cannot reach its replica (killed, and not yet seen down by the
        # health check) marks that replica down at once (observe layer4, below) and is tried
        # on another.
        "    retries 3",
        "    option redispatch 1",
        "frontend nectar",
        f"    bind 127.0.0.1:{port}",
        "    default_backend replicas",
        "backend replicas",
        "    balance leastconn",
        # In the pool while /readyz answers 200, or 503 for being at its session cap or memory
        # budget (HAProxy's maxconn keeps within those, queueing the rest); out while draining
        # or unreachable. Taking full replicas out would leave clients no server to queue for.
        "    option httpchk",
        "    http-check send meth GET uri /readyz",
        "    http-check expect rstatus ^(200|503)$",
        "    http-check expect ! string draining",
        f"    default-server inter {a.check_interval_ms}ms fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down",
    ]
    for r in replicas:
        host, p = r.addr.rsplit(":", 1)
        ahost, aport = r.admin.rsplit(":", 1)
        lines.append(f"    server r{r.i} {host}:{p} check addr {ahost} port {aport} maxconn {maxconn}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nectar", default=os.environ.get("NECTAR_BIN", "target/debug/nectar"))
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/nectar/models/minilm"))
    ap.add_argument("--suite", default="nectar")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=300, help="new queries start until then")
    ap.add_argument("--drain-at", type=float, default=60)
    ap.add_argument("--kill-at", type=float, default=120)
    ap.add_argument("--sessions-per-replica", type=int, default=4)
    ap.add_argument("--memory-limit-gib", type=float, default=0, help="each replica's --memory-limit-gib (0: none)")
    ap.add_argument("--drain-timeout", type=int, default=1200)
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--check-interval-ms", type=int, default=500)
    ap.add_argument("--client-timeout", type=int, default=1800, help="seconds one client process may take")
    # The default suite's approximations alone reach cosine 0.99842 to float on the worst of 50
    # MiniLM sentences (issue 17, docs/results/accuracy.md): the bound sits below that.
    ap.add_argument("--min-cosine", type=float, default=0.998)
    ap.add_argument("--out", help="also append the JSON line to this file")
    ap.add_argument("--verbose", action="store_true", help="HAProxy's last log lines in the JSON")
    a = ap.parse_args()
    if a.replicas < 3:
        raise SystemExit("--replicas: at least 3 (one drained, one killed, one left)")

    ref_out = subprocess.run([a.nectar, "embed", "--plaintext", "--json", "--model", a.model] + SENTENCES,
                             check=True, capture_output=True).stdout.decode()
    ref = dict(zip(SENTENCES, [json.loads(l)["embedding"] for l in ref_out.splitlines() if l.strip()]))

    t0 = time.monotonic()
    replicas = [Replica(i, a) for i in range(a.replicas)]
    # Connections HAProxy sends each replica at once: the sessions it admits (its session cap,
    # and with --memory-limit-gib the sessions its memory budget fits, from its /metrics).
    m0 = replicas[0].metrics() or {}
    maxconn = a.sessions_per_replica
    est = m0.get("nectar_session_memory_estimate_bytes", 0)
    if a.memory_limit_gib and est:
        fits = int((m0["nectar_memory_limit_bytes"] - m0["nectar_memory_admitted_bytes"]) // est)
        maxconn = max(1, min(maxconn, fits))
    tmp = tempfile.mkdtemp(prefix="nectar-replicas-")
    port = free_port()
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(haproxy_config(port, replicas, maxconn, a))
    haproxy = subprocess.Popen([a.haproxy, "-db", "-f", cfg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hlog = []
    threading.Thread(target=lambda: hlog.extend(l.rstrip("\n") for l in haproxy.stdout), daemon=True).start()
    front = f"127.0.0.1:{port}"
    # Ready: HAProxy accepts and has seen every replica's /readyz.
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    time.sleep(3 * a.check_interval_ms / 1000)
    haproxy_version = subprocess.run([a.haproxy, "-v"], capture_output=True, text=True).stdout.splitlines()[0]

    lock = threading.Lock()
    queries = []
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            for r in replicas:
                if r.p.poll() is None:
                    r.peak_rss = max(r.peak_rss, rss_bytes(r.p.pid) or 0)
            time.sleep(0.25)

    def poll_metrics():
        while not stop.is_set():
            for r in replicas:
                if r.p.poll() is None:
                    r.metrics()
            time.sleep(1)

    deadline = t0 + a.seconds

    def client(i):
        rng = random.Random(500 + i)
        first = True
        while first or time.monotonic() < deadline:
            first = False
            text = rng.choice(SENTENCES)
            argv = [a.nectar, "infer", "--connect", front, "--json", "--retries", str(a.retries), "--suite", a.suite,
                    "--model", a.model, text]
            s = time.monotonic()
            rec = {"client": i, "start": round(s - t0, 2), "ok": False, "cosine": None, "attempts": 1, "error": "", "hung": False}
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=a.client_timeout)
                retries = [l for l in p.stderr.splitlines() if l.startswith("infer: attempt ")]
                rec["attempts"] = 1 + len(retries)
                rec["retry_reasons"] = [l.split(" failed: ", 1)[-1].split("; retrying")[0] for l in retries]
                if p.returncode != 0:
                    rec["error"] = p.stderr.strip()[-300:]
                else:
                    emb = json.loads(p.stdout.splitlines()[0])["private"]["Embedding"]
                    rec["cosine"] = cosine(emb, ref[text])
                    rec["ok"] = rec["cosine"] >= a.min_cosine
                    if not rec["ok"]:
                        rec["error"] = f"cosine {rec['cosine']:.6f} < {a.min_cosine}"
            except subprocess.TimeoutExpired:
                rec["hung"] = True
                rec["error"] = f"no answer within {a.client_timeout} s"
            except (ValueError, KeyError, IndexError) as e:
                rec["error"] = f"unreadable answer: {e}"
            rec["seconds"] = round(time.monotonic() - s, 2)
            with lock:
                queries.append(rec)

    events = {}

    def when_busy(r, at, what, sig):
        """Signal replica `r` at `at` seconds, once it runs a session."""
        while time.monotonic() < t0 + at:
            time.sleep(0.2)
        while r.active() < 1 and r.p.poll() is None:
            time.sleep(0.2)
        m = r.metrics() or {}
        ev = {"replica": r.i, "at": round(time.monotonic() - t0, 2),
              "sessions_running": int(m.get("nectar_sessions_active", 0)),
              "sessions_finished_before": int(m.get("nectar_sessions_finished_total", 0)),
              "log_index": len(r.log)}
        os.kill(r.p.pid, sig)
        code = r.p.wait()
        ev["exit_code"] = code
        ev["exited_at"] = round(time.monotonic() - t0, 2)
        events[what] = ev

    threads = [threading.Thread(target=sampler, daemon=True), threading.Thread(target=poll_metrics, daemon=True)]
    threads += [threading.Thread(target=when_busy, args=(replicas[0], a.drain_at, "drain", signal.SIGTERM), daemon=True),
                threading.Thread(target=when_busy, args=(replicas[1], a.kill_at, "kill", signal.SIGKILL), daemon=True)]
    for t in threads:
        t.start()
    clients = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    elapsed = time.monotonic() - t0
    for t in threads[2:]:
        t.join(timeout=5)
    stop.set()
    survivors = [r for r in replicas if r.p.poll() is None]
    served = {}
    for r in replicas:
        m = r.metrics() if r.p.poll() is None else None
        m = m or r.last_metrics
        served[f"r{r.i}"] = {
            "sessions_finished": int(m.get("nectar_sessions_finished_total", 0)),
            "sessions_aborted": int(sum(v for k, v in m.items() if k.startswith("nectar_sessions_aborted_total"))),
            "refused": {k.split('"')[1]: int(v) for k, v in m.items() if k.startswith("nectar_sessions_refused_total")},
            "peak_rss_bytes": r.peak_rss,
        }
    for r in survivors:
        r.p.terminate()
    for r in survivors:
        try:
            r.p.wait(a.drain_timeout + 10)
        except subprocess.TimeoutExpired:
            r.p.kill()
    haproxy.terminate()
    try:
        haproxy.wait(10)
    except subprocess.TimeoutExpired:
        haproxy.kill()
    shutil.rmtree(tmp, ignore_errors=True)

    failed = [q for q in queries if not q["ok"]]
    cos = [q["cosine"] for q in queries if q["cosine"] is not None]
    drain, kill = events.get("drain", {}), events.get("kill", {})
    r0_log = [l for _, l in replicas[0].log[drain.get("log_index", 0):]]
    drained_sessions = sum(1 for l in r0_log if "closed after" in l)
    panics = [l for r in replicas for _, l in r.log if "panicked" in l]
    retried = [q for q in queries if q["attempts"] > 1]
    checks = {
        "every_answer_correct": bool(queries) and not failed,
        "no_client_hung": not any(q["hung"] for q in queries),
        "at_most_one_retry": all(q["attempts"] <= 2 for q in queries),
        "drained_replica_exited_0": drain.get("exit_code") == 0,
        "drained_replica_finished_its_sessions": drain.get("sessions_running", 0) >= 1
        and drained_sessions >= drain.get("sessions_running", 0)
        and not any("drain timeout" in l for l in r0_log),
        "killed_replica_had_sessions": kill.get("sessions_running", 0) >= 1,
        "killed_replicas_clients_retried": len(retried) >= kill.get("sessions_running", 1),
        "no_panic": not panics,
    }
    if a.memory_limit_gib:
        checks["replica_rss_under_memory_limit"] = all(
            s["peak_rss_bytes"] <= a.memory_limit_gib * 2**30 for s in served.values())
    line = {
        "bench": "replicas",
        "params": {"model": os.path.basename(os.path.normpath(a.model)), "suite": a.suite, "replicas": a.replicas,
                   "clients": a.clients, "seconds": a.seconds, "drain_at": a.drain_at, "kill_at": a.kill_at,
                   "sessions_per_replica": a.sessions_per_replica, "haproxy_maxconn_per_replica": maxconn,
                   "memory_limit_gib": a.memory_limit_gib or None, "session_memory_estimate_bytes": int(est) or None,
                   "retries": a.retries, "check_interval_ms": a.check_interval_ms, "min_cosine": a.min_cosine},
        "haproxy": haproxy_version,
        "seconds": round(elapsed, 2),
        "queries": len(queries),
        "failed": len(failed),
        "failures": [q["error"] for q in failed[:5]],
        "retried": len(retried),
        "retry_reasons": sorted({r for q in retried for r in q.get("retry_reasons", [])})[:10],
        "max_attempts": max((q["attempts"] for q in queries), default=0),
        "min_cosine": min(cos) if cos else None,
        "mean_query_seconds": round(sum(q["seconds"] for q in queries) / len(queries), 2) if queries else None,
        "drain": {k: v for k, v in drain.items() if k != "log_index"} | {"sessions_finished_while_draining": drained_sessions},
        "kill": {k: v for k, v in kill.items() if k != "log_index"},
        "replicas_served": served,
        "panics": panics[:5],
        # HAProxy's one line per connection (option tcplog): termination state, server, timers.
        "haproxy_log_tail": hlog[-40:] if a.verbose else None,
        "checks": checks,
        "pass": all(checks.values()),
    }
    text = json.dumps(line, sort_keys=True)
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")
    sys.exit(0 if line["pass"] else 1)


if __name__ == "__main__":
    main()
