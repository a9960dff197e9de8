#!/usr/bin/env bash
# Installs what mixprec's build, tests, benchmarks and examples need on Debian 12.
# Idempotent: packages already present are skipped.  Run as root (or with sudo available).
set -euo pipefail

packages=(build-essential cmake git python3 libeigen3-dev libboost-dev catch2 libbenchmark-dev libfp16-dev
          clang-format clang-tidy openmpi-bin libopenmpi-dev ccache python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: CUDA toolkit found ($( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) ))"
else
  echo "setup: no CUDA toolkit (nvcc): the CUDA compile checks will be skipped." \
       "Install NVIDIA's CUDA toolkit to enable them."
fi

# numpy and ml_dtypes for tests/reference/ml_dtypes_reference.py, in a venv of the checkout
# (tests/reference/CMakeLists.txt looks here first).  Without network access the test is skipped.
venv="$(cd "$(dirname "$0")/.." && pwd)/build/python-venv"
if "$venv/bin/python3" -c "import numpy, ml_dtypes" >/dev/null 2>&1; then
  echo "setup: numpy and ml_dtypes found in $venv"
elif python3 -m venv "$venv" >/dev/null 2>&1 &&
     "$venv/bin/pip" install -q "numpy>=1.26" "ml_dtypes==0.6.0" >/dev/null 2>&1; then
  echo "setup: numpy and ml_dtypes installed in $venv"
else
  echo "setup: NOTE: could not install numpy and ml_dtypes with pip into $venv:" \
       "the ml_dtypes reference test will be skipped."
fi
