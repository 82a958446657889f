#!/usr/bin/env python3
"""Calibration of `nectar serve --memory-limit-gib` and of the derived message limit (issue 51,
item 5): one private query per token length, each against a fresh server, measured from outside.

For each length L: a fresh `nectar serve` on loopback; its resident memory before the session
(`VmRSS`, idle) and its peak (`VmHWM` after the session, from /proc); a real `nectar infer
--ids` of exactly L token ids through a frame-counting TCP proxy in this script, which parses
the wire format (4-byte little-endian payload length, then the payload; `nectar_net`) in both
directions and records the largest payload each way. One JSON line per length goes to stdout
(and is appended to `--out`). The fit the server uses is made from these lines by
`crates/app/src/admission.rs` (see there); `scripts/results_admission.py` renders the page.
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

ABORT_MARK = 0xFFFFFFFF


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class FrameCounter:
    """Parses a byte stream of frames as it passes; keeps the largest payload and the count."""

    def __init__(self):
        self.head = b""
        self.left = 0  # payload bytes of the current frame still to come
        self.abort_reason = False
        self.largest = 0
        self.frames = 0
        self.bytes = 0

    def feed(self, data):
        self.bytes += len(data)
        i = 0
        while i < len(data):
            if self.left > 0:
                take = min(self.left, len(data) - i)
                self.left -= take
                i += take
                continue
            need = 4 - len(self.head)
            self.head += data[i : i + need]
            i += min(need, len(data) - i)
            if len(self.head) == 4:
                (n,) = struct.unpack("<I", self.head)
                self.head = b""
                if n == ABORT_MARK:
                    continue  # the reason follows as an ordinary frame
                self.left = n
                self.frames += 1
                self.largest = max(self.largest, n)


def pump(src, dst, counter):
    try:
        while True:
            data = src.recv(1 << 20)
            if not data:
                break
            counter.feed(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def proxy_once(listener, upstream, to_server, to_client):
    client, _ = listener.accept()
    server = socket.create_connection(upstream)
    for s in (client, server):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    a = threading.Thread(target=pump, args=(client, server, to_server), daemon=True)
    b = threading.Thread(target=pump, args=(server, client, to_client), daemon=True)
    a.start()
    b.start()
    a.join()
    b.join()
    client.close()
    server.close()


def start_server(a):
    p = subprocess.Popen(
        [a.nectar, "serve", "--listen", "127.0.0.1:0", "--model", a.model, "--suite", a.suite, "--memory-budget-mib", str(a.memory_budget_mib),
         # The former constant limit: a limit derived from an earlier calibration must not cap
         # what this one measures.
         "--max-frame-mib", "1024"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    banner = p.stderr.readline()
    addr = banner.split(" on ")[1].split()[0]
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    host, port = addr.rsplit(":", 1)
    return p, (host, int(port))


def arch(model):
    """The public dimensions the calibration is valid for (`admission::Arch`)."""
    with open(os.path.join(model, "config.json")) as f:
        c = json.load(f)
    t = c["model_type"]
    if t == "gpt2":
        return {"model_type": t, "layers": c["n_layer"], "hidden": c["n_embd"], "heads": c["n_head"],
                "intermediate": c.get("n_inner") or 4 * c["n_embd"], "positions": c["n_positions"]}
    if t == "vit":
        positions = (c["image_size"] // c["patch_size"]) ** 2 + 1
    else:
        positions = c["max_position_embeddings"]
    return {"model_type": t, "layers": c["num_hidden_layers"], "hidden": c["hidden_size"], "heads": c["num_attention_heads"],
            "intermediate": c["intermediate_size"], "positions": positions}


def one(a, tokens):
    server, upstream = start_server(a)
    try:
        time.sleep(1.0)
        idle = status_kib(server.pid, "VmRSS")
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        to_server, to_client = FrameCounter(), FrameCounter()
        t = threading.Thread(target=proxy_once, args=(listener, upstream, to_server, to_client), daemon=True)
        t.start()
        # [CLS] w w ... w [SEP]: exactly `tokens` ids (1996 = "the" in BERT's vocabulary).
        ids = ",".join(["101"] + ["1996"] * (tokens - 2) + ["102"])
        port = listener.getsockname()[1]
        t0 = time.time()
        r = subprocess.run(
            [a.nectar, "infer", "--connect", f"127.0.0.1:{port}", "--json", "--suite", a.suite, "--ids", ids, "--model", a.model],
            capture_output=True,
            text=True,
        )
        seconds = time.time() - t0
        t.join(timeout=30)
        peak = status_kib(server.pid, "VmHWM")
        if r.returncode != 0:
            raise SystemExit(f"infer failed at {tokens} tokens: {r.stderr.strip()}")
        return {
            "bench": "admission",
            "model": os.path.basename(os.path.normpath(a.model)),
            "arch": arch(a.model),
            "memory_budget_bytes": a.memory_budget_mib << 20,
            "suite": a.suite,
            "tokens": tokens,
            "seconds": round(seconds, 2),
            "server_idle_rss_bytes": idle,
            "server_peak_rss_bytes": peak,
            "largest_frame_to_server_bytes": to_server.largest,
            "largest_frame_to_client_bytes": to_client.largest,
            "frames_to_server": to_server.frames,
            "frames_to_client": to_client.frames,
            "bytes_to_server": to_server.bytes,
            "bytes_to_client": to_client.bytes,
        }
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nectar", default=os.environ.get("NECTAR_BIN", "target/release/nectar"))
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/nectar/models/minilm"))
    ap.add_argument("--suite", default="nectar")
    ap.add_argument("--memory-budget-mib", type=int, default=320, help="the server's --memory-budget-mib")
    ap.add_argument("--tokens", default="8,64,256", help="comma-separated token lengths")
    ap.add_argument("--out", help="append the JSON lines to this file too")
    a = ap.parse_args()
    for L in [int(x) for x in a.tokens.split(",")]:
        rec = one(a, L)
        line = json.dumps(rec, sort_keys=True)
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    sys.exit(main())
