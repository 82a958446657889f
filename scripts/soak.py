#!/usr/bin/env python3
"""Soak test of `nectar serve` (issue 18, `make soak`).

One server; HONEST clients run private queries back to back (`nectar infer`, real processes over
TCP) while HOSTILE clients cycle through attacks against the same server:

- ``garbage``: random bytes instead of a handshake;
- ``big_frame``: a frame header announcing 1 GiB − 1 before the handshake;
- ``slowloris``: a handshake trickled one byte every 2 s;
- ``bad_hello``: a well-framed Hello with a protocol version the server does not speak;
- ``abandon``: a real client killed at a random point of its query (1–15 s in).

Every honest answer is compared with the plaintext reference (``nectar embed --plaintext``):
cosine ≥ ``--min-cosine``. The server's resident memory is sampled every 0.25 s and must stay
under ``--budget-mib``; the server must survive, never panic, and refuse no honest client.
One JSON line goes to stdout (and to ``--out`` when given); the exit status is 0 only if every
check holds. New queries start until ``--seconds`` have passed; queries running then finish.
"""

import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

SENTENCES = [
    "The weather is lovely today.",
    "It's so sunny outside, let's walk along the river!",
    "He drove to the stadium at 7:30 pm.",
    "Private inference keeps the query secret from the server.",
    "¿Dónde está la biblioteca?",
    "Numbers like 3.14159 and 2718 are tokenised too.",
    "A short one.",
    "The quick brown fox jumps over the lazy dog while the band plays on.",
]


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class State:
    """What the threads report, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.clients = set()  # live client pids (sampled for RSS)
        self.honest = []  # per query: {"ok", "cosine", "seconds", "error"}
        self.hostile = {}  # action -> {"runs", "as_expected", "failures": [...]}
        self.server_peak = 0
        self.client_peak = 0
        self.clients_sum_peak = 0

    def hostile_result(self, action, ok, why=""):
        with self.lock:
            h = self.hostile.setdefault(action, {"runs": 0, "as_expected": 0, "failures": []})
            h["runs"] += 1
            if ok:
                h["as_expected"] += 1
            elif len(h["failures"]) < 5:
                h["failures"].append(why)


def sampler(state, server, stop):
    while not stop.is_set():
        s = rss_bytes(server.pid) or 0
        with state.lock:
            pids = list(state.clients)
        per = [r for r in (rss_bytes(p) for p in pids) if r]
        with state.lock:
            state.server_peak = max(state.server_peak, s)
            state.client_peak = max([state.client_peak] + per)
            state.clients_sum_peak = max(state.clients_sum_peak, sum(per))
        stop.wait(0.25)


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def run_client(state, argv):
    """Runs a client process, its pid visible to the sampler; (returncode, stdout, stderr)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with state.lock:
        state.clients.add(p.pid)
    try:
        out, err = p.communicate()
    finally:
        with state.lock:
            state.clients.discard(p.pid)
    return p.returncode, out, err


def honest_loop(i, a, addr, ref, state, deadline):
    rng = random.Random(1000 + i)
    while time.monotonic() < deadline:
        text = rng.choice(SENTENCES)
        t0 = time.monotonic()
        argv = [a.nectar, "infer", "--connect", addr, "--json", "--suite", a.suite, "--model", a.model, text]
        code, out, err = run_client(state, argv)
        rec = {"ok": False, "seconds": time.monotonic() - t0, "cosine": None, "error": ""}
        if code != 0:
            rec["error"] = err.decode(errors="replace").strip()[-300:]
        else:
            try:
                # One JSON line per query, then the session's summary.
                emb = json.loads(out.splitlines()[0])["private"]["Embedding"]
                rec["cosine"] = cosine(emb, ref[text])
                rec["ok"] = rec["cosine"] >= a.min_cosine
                if not rec["ok"]:
                    rec["error"] = f"cosine {rec['cosine']:.6f} < {a.min_cosine}"
            except (ValueError, KeyError, TypeError) as e:
                rec["error"] = f"unreadable answer: {e}"
        with state.lock:
            state.honest.append(rec)


def closed_within(sock, seconds):
    """Whether the server closes `sock` within `seconds` (reads and drops what it sends)."""
    sock.settimeout(0.5)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            continue
        except OSError:
            return True  # reset: closed
    return False


def attack(action, a, addr, state, rng):
    host, port = addr.rsplit(":", 1)
    if action == "abandon":
        text = rng.choice(SENTENCES)
        argv = [a.nectar, "infer", "--connect", addr, "--json", "--suite", a.suite, "--model", a.model, text]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with state.lock:
            state.clients.add(p.pid)
        time.sleep(rng.uniform(1.0, 15.0))
        p.kill()
        p.wait()
        with state.lock:
            state.clients.discard(p.pid)
        return True, ""
    s = socket.create_connection((host, int(port)), timeout=10)
    try:
        if action == "garbage":
            s.sendall(os.urandom(4096))
            ok = closed_within(s, a.handshake_timeout + 10)
            return ok, "" if ok else "connection kept open after garbage"
        if action == "big_frame":
            s.sendall(struct.pack("<I", (1 << 30) - 1) + os.urandom(1024))
            ok = closed_within(s, 10)
            return ok, "" if ok else "1 GiB frame header not refused within 10 s"
        if action == "slowloris":
            hello = b'{"Hello":{"agreement":{"version":2}}}'
            msg = struct.pack("<I", len(hello)) + hello
            end = time.monotonic() + a.handshake_timeout + 10
            for b in msg:
                if time.monotonic() > end:
                    break
                try:
                    s.sendall(bytes([b]))
                except OSError:
                    return True, ""
                if closed_within(s, 2.0):
                    return True, ""
            return False, "trickled handshake not cut at the deadline"
        if action == "bad_hello":
            hello = b'{"Hello":{"agreement":{"version":999}}}'
            s.sendall(struct.pack("<I", len(hello)) + hello)
            ok = closed_within(s, 10)
            return ok, "" if ok else "bad Hello not refused within 10 s"
        raise ValueError(action)
    finally:
        s.close()


ACTIONS = ["garbage", "big_frame", "slowloris", "bad_hello", "abandon"]


def hostile_loop(i, a, addr, state, deadline):
    rng = random.Random(2000 + i)
    k = i
    while time.monotonic() < deadline:
        action = ACTIONS[k % len(ACTIONS)]
        k += 1
        try:
            ok, why = attack(action, a, addr, state, rng)
        except OSError as e:
            ok, why = False, f"{action}: {e}"
        state.hostile_result(action, ok, why)
        time.sleep(rng.uniform(0.2, 2.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nectar", default="target/release/nectar", help="the nectar binary")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/nectar/models/minilm"))
    ap.add_argument("--suite", default="nectar")
    ap.add_argument("--honest", type=int, default=12)
    ap.add_argument("--hostile", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--budget-mib", type=float, default=12288, help="server RSS budget")
    ap.add_argument("--min-cosine", type=float, default=0.999)
    ap.add_argument("--handshake-timeout", type=int, default=10)
    ap.add_argument("--out", help="also append the JSON line to this file")
    a = ap.parse_args()

    ref_out = subprocess.run(
        [a.nectar, "embed", "--plaintext", "--json", "--model", a.model] + SENTENCES,
        check=True, capture_output=True,
    ).stdout.decode()
    vecs = [json.loads(l)["embedding"] for l in ref_out.splitlines() if l.strip()]
    ref = dict(zip(SENTENCES, vecs))

    # An abandoned session lives on until the server's next read or write fails, so a hostile
    # client may hold two slots for a moment; the cap leaves room for that and no more.
    cap = a.honest + 3 * a.hostile
    server = subprocess.Popen(
        [a.nectar, "serve", "--listen", "127.0.0.1:0", "--model", a.model, "--suite", a.suite,
         "--max-concurrent-sessions", str(cap), "--handshake-timeout", str(a.handshake_timeout)],
        stderr=subprocess.PIPE, text=True,
    )
    banner = server.stderr.readline()
    addr = banner.split(" on ")[1].split()[0]
    log = []
    threading.Thread(target=lambda: log.extend(server.stderr), daemon=True).start()
    time.sleep(0.5)
    idle_rss = rss_bytes(server.pid) or 0

    state = State()
    stop = threading.Event()
    threading.Thread(target=sampler, args=(state, server, stop), daemon=True).start()
    t0 = time.monotonic()
    deadline = t0 + a.seconds
    threads = [threading.Thread(target=honest_loop, args=(i, a, addr, ref, state, deadline)) for i in range(a.honest)]
    threads += [threading.Thread(target=hostile_loop, args=(i, a, addr, state, deadline)) for i in range(a.hostile)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    time.sleep(0.5)
    stop.set()
    alive = server.poll() is None
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
    time.sleep(0.2)

    honest = state.honest
    failed = [h for h in honest if not h["ok"]]
    cos = [h["cosine"] for h in honest if h["cosine"] is not None]
    panics = [l.strip() for l in log if "panicked" in l]
    refused = [l.strip() for l in log if "refused" in l and "sessions running" in l]
    budget = int(a.budget_mib * 2**20)
    hostile_bad = {k: v for k, v in state.hostile.items() if v["as_expected"] != v["runs"]}
    checks = {
        "server_alive": alive,
        "no_panic": not panics,
        "every_honest_query_correct": bool(honest) and not failed,
        "every_attack_handled": bool(state.hostile) and not hostile_bad,
        "server_rss_under_budget": state.server_peak <= budget,
        # A refused honest client is a failed query (no retries); refusals of hostile
        # connections (an abandoned session lingers until its next I/O fails) are counted only.
        "no_honest_client_refused": not any("server busy" in h["error"] for h in failed),
    }
    line = {
        "bench": "soak",
        "params": {"model": a.model, "suite": a.suite, "honest": a.honest, "hostile": a.hostile,
                   "seconds": a.seconds, "max_concurrent_sessions": cap,
                   "handshake_timeout": a.handshake_timeout, "min_cosine": a.min_cosine},
        "seconds": round(elapsed, 2),
        "honest_queries": len(honest),
        "honest_failed": len(failed),
        "honest_failures": [h["error"] for h in failed[:5]],
        "min_cosine": min(cos) if cos else None,
        "mean_query_seconds": round(sum(h["seconds"] for h in honest) / len(honest), 2) if honest else None,
        "hostile": state.hostile,
        "server_idle_rss_bytes": idle_rss,
        "server_peak_rss_bytes": state.server_peak,
        "server_budget_bytes": budget,
        "client_peak_rss_bytes": state.client_peak,
        "clients_sum_peak_rss_bytes": state.clients_sum_peak,
        "server_panics": panics[:5],
        "refusal_log_lines": len(refused),
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
