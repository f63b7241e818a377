#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh — install the Debian packages pipezip needs to build, test and run.
# Idempotent: installs only what is missing (apt-get update only then).
set -euo pipefail

packages=(build-essential cmake pkg-config libopenblas-openmp-dev zlib1g-dev libcjson-dev dataset-fashion-mnist python3 python3-numpy clang libclang-rt-14-dev
          libopenmpi-dev openmpi-bin libzmq3-dev libzstd-dev procps bible-kjv bible-kjv-text python3-matplotlib)
# `setup.sh test` (make test): also what only the tests need: PyTorch for the
# Python package's torch tests (python/tests/test_torch*.py, the gloo and
# torchrun examples) and pip install ./python into a venv (tests/cli/test_pip.sh)
if [ "${1:-}" = "test" ]; then
  packages+=(python3-torch python3-zstandard python3-venv python3-pip python3-setuptools python3-wheel)
fi
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
