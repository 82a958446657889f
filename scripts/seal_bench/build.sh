#!/usr/bin/env bash
# Builds Microsoft SEAL 4.1.2 and scripts/seal_bench/seal_bench.cpp in a scratch directory
# outside the workspace (default /tmp/sealbench). SEAL's source comes from the PyPI registry:
# the Pyfhel 3.5.0 source distribution vendors SEAL 4.1.2 under Pyfhel/backend/SEAL.
#
# Two flavours:
#   default  SEAL's own Release defaults (-O3, generic x86-64, no Intel HEXL), with the optional
#            zlib/zstd/GSL dependencies off (SEAL would download them). No compressed sizes.
#   native   the same plus -march=native (lets the compiler use AVX2/BMI2 in SEAL's scalar
#            code) and zstd + zlib from the system (Debian: libzstd-dev, zlib1g-dev), so that
#            compressed ciphertext sizes are reported too.
# Usage: scripts/seal_bench/build.sh [default|native] [scratch-dir]
#        then <scratch-dir>/bench-<flavour>/seal_bench [N...] > seal.jsonl
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
flavour="${1:-default}"
dir="${2:-/tmp/sealbench}"
case "$flavour" in
  default) opts=(-DSEAL_USE_ZLIB=OFF -DSEAL_USE_ZSTD=OFF) ;;
  native) opts=(-DSEAL_USE_ZLIB=ON -DSEAL_USE_ZSTD=ON -DCMAKE_CXX_FLAGS=-march=native) ;;
  *) echo "unknown flavour $flavour" >&2; exit 2 ;;
esac
mkdir -p "$dir"
cd "$dir"
if [ ! -d SEAL ]; then
  # `--no-binary Pyfhel`, not `:all:`: pip prepares the sdist's metadata in an isolated build
  # environment, and `:all:` would build its build dependencies (numpy, cmake) from source too.
  pip download --no-deps --no-binary Pyfhel -d dl 'Pyfhel==3.5.0'
  tar xzf dl/pyfhel-3.5.0.tar.gz -C dl
  cp -r dl/pyfhel-3.5.0/Pyfhel/backend/SEAL SEAL
fi
prefix="$dir/install-$flavour"
if [ ! -f "$prefix/lib/cmake/SEAL-4.1/SEALConfig.cmake" ]; then
  cmake -S SEAL -B "build-$flavour" -DCMAKE_BUILD_TYPE=Release -DSEAL_BUILD_DEPS=OFF \
    -DSEAL_USE_MSGSL=OFF "${opts[@]}" -DCMAKE_INSTALL_PREFIX="$prefix"
  cmake --build "build-$flavour" -j"$(nproc)"
  cmake --install "build-$flavour"
fi
cmake -S "$here" -B "bench-$flavour" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "bench-$flavour"
echo "built $dir/bench-$flavour/seal_bench"
