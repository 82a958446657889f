#!/usr/bin/env python3
"""Issue 51, item 3: a client SIGKILLed mid-query; how soon the server notices and how soon
its resident memory is back to idle.

Starts `nectar serve --admin` on a model, measures its idle RSS, runs `nectar infer` on a
sentence, SIGKILLs the client once the session has been running `--kill-after` seconds, then
samples the server's RSS and `/metrics` every 20 ms. Prints one JSON line: idle, peak and
post-kill RSS (1 s and 2 s after the kill, 2 s after the session's end), the time until
`nectar_sessions_active` fell to 0, and whether RSS was within 50 MB of idle 2 s after the kill.

    python3 scripts/cancel_rss.py --nectar target/release/nectar --model ~/.cache/nectar/models/minilm
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def metric(admin, name):
    with urllib.request.urlopen(f"http://{admin}/metrics", timeout=2) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nectar", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--suite", default="nectar")
    ap.add_argument("--kill-after", type=float, default=4.0, help="seconds of session before the SIGKILL")
    ap.add_argument("--watch", type=float, default=30.0, help="seconds to wait for the session to end")
    ap.add_argument("--text", default="The weather is lovely today, and the children are playing in the park " * 2)
    a = ap.parse_args()

    port, admin_port = free_port(), free_port()
    admin = f"127.0.0.1:{admin_port}"
    server = subprocess.Popen(
        [a.nectar, "serve", "--model", a.model, "--listen", f"127.0.0.1:{port}", "--suite", a.suite, "--admin", admin],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        if "serving" not in server.stderr.readline():
            sys.exit("the server did not start")
        time.sleep(1.0)
        idle = rss(server.pid)
        client = subprocess.Popen(
            [a.nectar, "infer", "--connect", f"127.0.0.1:{port}", "--suite", a.suite, "--model", a.model, a.text],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        peak = idle
        start = time.monotonic()
        while time.monotonic() - start < a.kill_after:
            peak = max(peak, rss(server.pid))
            if client.poll() is not None:
                sys.exit("the client finished before the kill: raise the text length or lower --kill-after")
            time.sleep(0.02)
        active_before = metric(admin, "nectar_sessions_active")
        at_kill = rss(server.pid)
        client.send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        client.wait()
        # The session ends at its next send after the watcher's flag (within 0.2 s of the kill),
        # or later when a kernel runs in between (an HE matmul's block products).
        ended, samples = None, []
        while time.monotonic() - t0 < a.watch:
            now = time.monotonic() - t0
            samples.append((now, rss(server.pid)))
            if ended is None and metric(admin, "nectar_sessions_active") == 0:
                ended = now
            if ended is not None and now > max(ended + 2.0, 2.0):
                break
            time.sleep(0.02)
        after = lambda s: next((r for t, r in samples if t >= s), None)
        after_1s, after_2s = after(1.0), after(2.0)
        after_end_2s = after(ended + 2.0) if ended is not None else None
        print(json.dumps({
            "model": os.path.basename(os.path.normpath(a.model)),
            "suite": a.suite,
            "sessions_active_before_kill": active_before,
            "idle_rss_bytes": idle,
            "peak_rss_bytes": peak,
            "rss_at_kill_bytes": at_kill,
            "rss_1s_after_kill_bytes": after_1s,
            "rss_2s_after_kill_bytes": after_2s,
            "seconds_to_session_end": ended,
            "rss_2s_after_session_end_bytes": after_end_2s,
            "back_within_50mb_of_idle_2s_after_kill": after_2s is not None and after_2s <= idle + 50_000_000,
        }))
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
