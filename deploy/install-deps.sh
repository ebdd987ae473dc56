#!/usr/bin/env bash
# Installs htamerge's build and test dependencies from Debian 12 packages.
# Used by README.md and .ci/run; safe to run again. Needs root (or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
    build-essential cmake pkg-config ca-certificates \
    libopenmpi-dev openmpi-bin \
    libsqlite3-dev sqlite3 \
    libevent-dev libcjson-dev libsimdjson-dev \
    zlib1g-dev libdeflate-dev \
    python3 gzip time procps openssh-client bc curl \
    chromium nodejs npm

# The browser test's one npm package (playwright-core, driving Debian's
# chromium). Without it the browser test skips itself; nothing else needs it.
(cd "$(dirname "$0")/../tests/browser" && npm ci --no-audit --no-fund) ||
    echo "install-deps: npm ci failed; the browser test will be skipped" >&2
