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
    python3 python3-dev gzip time procps openssh-client bc curl \
    clang libfuzzer-14-dev valgrind wrk \
    groff-base man-db slurm-wlm munge \
    python3-torch

# htamerge runs PROGRAM.py with python3 from PATH ($HTAMERGE_PYTHON chooses
# another). Debian's torch is in /usr/bin/python3; a python3 earlier on PATH
# (pyenv, conda, a venv) may not have it.
if command -v python3 >/dev/null && ! python3 -c 'import torch' 2>/dev/null &&
    /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "install-deps: python3 on PATH ($(command -v python3)) has no torch; /usr/bin/python3 has it:" \
         "export HTAMERGE_PYTHON=/usr/bin/python3" >&2
fi

# The browser test: Debian's chromium, driven by the npm package
# playwright-core. A machine that already has Node.js (e.g. from another
# repository, whose nodejs conflicts with Debian's npm) keeps it. None of
# this is fatal: without it the browser test skips itself.
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends chromium ||
    echo "install-deps: no chromium; the browser test will be skipped" >&2
if ! command -v npm >/dev/null 2>&1; then
    $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends nodejs npm ||
        echo "install-deps: no Node.js; the browser test will be skipped" >&2
fi
if command -v npm >/dev/null 2>&1; then
    (cd "$(dirname "$0")/../tests/browser" && npm ci --no-audit --no-fund) ||
        echo "install-deps: npm ci failed; the browser test will be skipped" >&2
fi
