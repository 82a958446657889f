#!/usr/bin/env python3
"""Joins JSON-lines outputs of nectar's HE bench and of seal_bench into one table.

Usage: compare.py NECTAR.jsonl [NECTAR2.jsonl ...] -- SEAL.jsonl [SEAL2.jsonl ...]
NECTAR files: output of `nectar bench he --json` or of
`cargo run --release -p nectar-bench --example bench_he -- --json`.
Files may be gzipped (`.gz`). Each side may be given several runs; per (N, op) and metric the minimum over runs is taken (the
run least disturbed by other load). Prints a Markdown table: N, op, then for CPU time (process,
all threads) and wall-clock time: nectar µs, SEAL µs, ratio nectar/SEAL; and whether the CPU
ratio is <= 1.5. Compared: nectar's `seal-default` parameter set (SEAL's
CoeffModulus::BFVDefault primes and a 20-bit batching t, as seal_bench uses) and, at N = 8192,
the t-independent operations at the OLT preset's modulus sizes (`bumblebee-olt`). With the
kernel sets of `nectar bench he --set kernels` / `seal_bench kernels` (issue 50 item 3: LEAF's
BFV set, BLB's CKKS sets) also a table of those kernels against the 1.2x target.
"""
import gzip
import json
import sys

# nectar op -> SEAL op it is compared with.
PAIRS = [
    ("ntt_fwd_inv_prime0", "ntt_fwd_inv_prime0", "NTT fwd+inv, one prime (first)"),
    ("encrypt_sk", "encrypt_sk", "encrypt, secret key (seeded)"),
    ("encrypt_pk", "encrypt_pk", "encrypt, public key"),
    ("decrypt", "decrypt", "decrypt"),
    ("mul_plain_ntt_form", "mul_plain_ntt_form", "pt x ct, both NTT form"),
    ("mul_plain_incl_ntt", "mul_plain_incl_ntt", "pt x ct, ct coeff -> NTT incl."),
    ("mul_plain_incl_ntt", "mul_plain_seal_default_coeff", "pt x ct vs SEAL default (coeff pt, coeff result)"),
    ("plain_to_ntt", "plain_to_ntt", "plaintext -> NTT form"),
    ("automorphism_keyswitch", "automorphism_keyswitch", "automorphism + key switch (apply_galois)"),
    ("mod_switch_down", "mod_switch_down", "mod switch (drop one prime)"),
]
SIZES = ["ct_bytes_fresh_seeded", "ct_bytes_full", "ct_bytes_one_prime"]
# Parameter sets compared, and the row label of each. `bumblebee-olt`: the OLT preset's
# ciphertext primes {59,55,49 | 49} at N = 8192; nectar uses t = 2^64 there, SEAL (which
# cannot) the 20-bit batching prime, so only t-independent operations are compared.
SETS = {
    "seal-default": lambda n: str(n),
    "bumblebee-olt": lambda n: f"{n} OLT q",
    # Issue 50 item 3 (`nectar bench he --set kernels`, `seal_bench kernels`).
    "leaf-bfv": lambda n: f"{n} LEAF BFV",
    "blb-exec-d4": lambda n: f"{n} BLB CKKS d4",
    "blb-exec-d7": lambda n: f"{n} BLB CKKS d7",
}
KERNEL_SETS = {"leaf-bfv", "blb-exec-d4", "blb-exec-d7"}
# The kernel rows: (nectar op, SEAL op, label, acceptance row of issue 50 item 3 (<= 1.2x)).
KERNEL_PAIRS = [
    ("bfv_mul_relin", "bfv_mul_relin", "BFV ct × ct + relinearisation", True),
    ("bfv_mul", "bfv_mul", "BFV ct × ct, no relinearisation (nectar HPS, SEAL BEHZ)", False),
    ("bfv_relin", "bfv_relin", "BFV relinearisation", False),
    ("bfv_square_relin", "bfv_square_relin", "BFV square + relinearisation", False),
    ("ckks_mul_relin_rescale", "ckks_mul_relin_rescale", "CKKS ct × ct + relinearisation + rescale", True),
    ("ckks_mul", "ckks_mul", "CKKS ct × ct (3 components)", False),
    ("ckks_relin", "ckks_relin", "CKKS relinearisation", False),
    ("ckks_mul_relin", "ckks_mul_relin", "CKKS ct × ct + relinearisation", False),
    ("ckks_rescale_ntt_input", "ckks_rescale", "CKKS rescale, NTT-form input", True),
    ("ckks_rescale", "ckks_rescale", "CKKS rescale (nectar: coefficient-form input, as relinearisation leaves it)", False),
    ("ckks_rotate1", "ckks_rotate1", "CKKS rotation by one slot (automorphism + key switch)", True),
    ("ntt_fwd_inv_prime0", "ntt_fwd_inv_prime0", "NTT fwd+inv, one prime (first)", False),
]
KERNEL_TARGET = 1.2
T_DEPENDENT = {"encrypt_sk", "encrypt_pk", "decrypt", "plain_to_ntt"}
SEAL_ZSTD = {s: s + "_zstd" for s in SIZES}


def load(paths, impl):
    best = {}
    for p in paths:
        with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("bench") == "he":  # `nectar bench he --json` (the CLI's report format)
                    p = r["params"]
                    r = {"impl": "nectar", "n": p["n"], "params": p["set"], "op": r["variant"],
                         "micros": r["micros"], "cpu_micros": r.get("cpu_micros", r["micros"]),
                         **({"bytes": r["ciphertext_bytes"]} if "ciphertext_bytes" in r else {})}
                if r.get("impl") != impl or r.get("params") not in SETS:
                    continue
                op = r["op"]
                if op.startswith("ntt_fwd_inv_prime0"):
                    op = "ntt_fwd_inv_prime0"
                key = (SETS[r["params"]](r["n"]), op)
                if "bytes" in r:
                    best[key] = r["bytes"]
                    continue
                cur = (r["micros"], r.get("cpu_micros", r["micros"]))
                old = best.get(key, (float("inf"), float("inf")))
                best[key] = (min(old[0], cur[0]), min(old[1], cur[1]))
    return best


def main():
    args = sys.argv[1:]
    if "--" not in args:
        sys.exit(__doc__)
    i = args.index("--")
    ours, seal = load(args[:i], "nectar"), load(args[i + 1 :], "seal")
    print("| N | op | nectar CPU µs | SEAL CPU µs | ratio (CPU) | nectar wall µs | SEAL wall µs | ratio (wall) | ≤ 1.5× |")
    print("|---|---|---|---|---|---|---|---|---|")
    order = lambda n: (int(n.split()[0]), n)
    for n in sorted({k[0] for k in ours} | {k[0] for k in seal}, key=order):
        for o, s, label in PAIRS:
            a, b = ours.get((n, o)), seal.get((n, s))
            if a is None or b is None or ("OLT" in n and o in T_DEPENDENT):
                continue
            rc, rw = a[1] / b[1], a[0] / b[0]
            ok = "yes" if rc <= 1.5 else "no"
            print(f"| {n} | {label} | {a[1]:.0f} | {b[1]:.0f} | {rc:.2f} | {a[0]:.0f} | {b[0]:.0f} | {rw:.2f} | {ok} |")
    print()
    kernel_rows = [
        (n, label, a, b, target)
        for n in sorted({k[0] for k in ours} | {k[0] for k in seal}, key=order)
        for o, s, label, target in KERNEL_PAIRS
        for a, b in [(ours.get((n, o)), seal.get((n, s)))]
        if a is not None and b is not None and not n.isdigit() and "OLT" not in n
    ]
    if kernel_rows:
        print(f"| set | op | nectar CPU µs | SEAL CPU µs | ratio (CPU) | ≤ {KERNEL_TARGET}× |")
        print("|---|---|---|---|---|---|")
        for n, label, a, b, target in kernel_rows:
            r = a[1] / b[1]
            ok = ("yes" if r <= KERNEL_TARGET else "no") if target else "(not a target)"
            print(f"| {n} | {label} | {a[1]:.0f} | {b[1]:.0f} | {r:.2f} | {ok} |")
        print()
    print("| N | size | nectar bytes | SEAL bytes (uncompressed) | SEAL bytes (zstd) |")
    print("|---|---|---|---|---|")
    for n in sorted({k[0] for k in ours} | {k[0] for k in seal}, key=order):
        for s in SIZES:
            a, b = ours.get((n, s)), seal.get((n, s))
            z = seal.get((n, SEAL_ZSTD[s]), "—")
            if a is not None and b is not None:
                print(f"| {n} | {s} | {a} | {b} | {z} |")


if __name__ == "__main__":
    main()
