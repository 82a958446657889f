#!/usr/bin/env bash
# Builds Microsoft SEAL 4.1.2 and scripts/seal_bench/seal_bench.cpp in a scratch directory
# outside the workspace (default /tmp/sealbench). SEAL's source comes from the PyPI registry:
# the Pyfhel 3.5.0 source distribution vendors SEAL 4.1.2 under Pyfhel/backend/SEAL. SEAL is
# built as its CMake defaults do for a Release build (-O3, generic x86-64, no Intel HEXL), with
# the optional zlib/zstd/GSL dependencies off (they would be downloaded; they do not affect the
# timed operations, only compressed serialization, which is then unavailable).
# Usage: scripts/seal_bench/build.sh [scratch-dir]; then <scratch-dir>/bench/seal_bench [N...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-/tmp/sealbench}"
mkdir -p "$dir"
cd "$dir"
if [ ! -d SEAL ]; then
  pip download --no-deps --no-binary :all: -d dl 'Pyfhel==3.5.0'
  tar xzf dl/pyfhel-3.5.0.tar.gz -C dl
  cp -r dl/pyfhel-3.5.0/Pyfhel/backend/SEAL SEAL
fi
if [ ! -f install/lib/cmake/SEAL-4.1/SEALConfig.cmake ]; then
  cmake -S SEAL -B build -DCMAKE_BUILD_TYPE=Release -DSEAL_BUILD_DEPS=OFF -DSEAL_USE_MSGSL=OFF \
    -DSEAL_USE_ZLIB=OFF -DSEAL_USE_ZSTD=OFF -DCMAKE_INSTALL_PREFIX="$dir/install"
  cmake --build build -j"$(nproc)"
  cmake --install build
fi
cmake -S "$here" -B bench -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$dir/install"
cmake --build bench
echo "built $dir/bench/seal_bench"
