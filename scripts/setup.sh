#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the demo need.
# Idempotent: when everything is already installed it prints one line and exits 0.
# Run as root (or with sudo) on Debian 12.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build ccache pkg-config clang-format
  # the readers' fuzz targets (fuzz/): clang's libFuzzer, ASan and UBSan runtimes
  clang libclang-rt-14-dev
  # trainer. libtorch's float32 GEMM goes through the system BLAS (libblas.so.3): without an
  # optimized one Debian falls back to the reference BLAS, ~15x slower on the same cores.
  # OpenBLAS's OpenMP build shares libtorch's OpenMP threads instead of adding its own.
  libtorch-dev libgloo-dev libopenblas0-openmp
  # LeRobot import: parquet codecs; the import tests' generator (writes .pth, quaternion reference)
  libsnappy-dev libzstd-dev zlib1g-dev liblz4-dev libbrotli-dev python3-torch python3-numpy python3-scipy
  # shared contracts and orchestrator
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3 libcpp-httplib-dev libxxhash-dev libssl-dev
  # the PostgreSQL store (libpq) and the throwaway servers of its tests
  libpq-dev postgresql-15 postgresql-client-15
  # node-fault patterns over job logs (orchestrator/nodes/log_patterns.cc): linear-time regexes
  libre2-dev
  # tests (bindfs: a FUSE mount, where the SQLite store must refuse to open)
  googletest libgtest-dev libgmock-dev libbenchmark-dev bindfs
  # dev cluster and browser tests
  slurm-wlm munge chromium
  # the launcher's stacks of a hung rank (gdb; eu-stack when gdb is missing)
  gdb elfutils
  # benchmarks and tools (python3-torch above also writes the upstream fixtures, tests/upstream)
  python3 procps coreutils jq curl
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# The web UI's chart library comes from npm (lockfile in web/): Debian's nodejs/npm unless a
# Node.js that already ships npm is installed (adding Debian's npm next to it would clash).
if ! command -v npm >/dev/null 2>&1; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# promtool and a Prometheus for the /metrics test, unpacked (never installed: that starts a
# service); cached after the first time.
echo "setup: promtool in $(bash "$(dirname "$0")/fetch_prometheus.sh")"
echo "setup: done"
