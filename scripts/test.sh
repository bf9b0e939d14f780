#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine: installs packages, builds, brings up the
# SLURM dev clusters (one node, and the two-node instance), and runs every CTest test (unit, CLI, integration).
# Ends with CTest's summary line; exit status is CTest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash slurm/dev_cluster.sh up
bash slurm/dev_cluster.sh up --nodes 2
cd "${BATON_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j"${BATON_TEST_JOBS:-2}"
