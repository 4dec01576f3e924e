#!/usr/bin/env bash
# Installs every build and test dependency of daydream from Debian's packages.
# Used by README.md and .ci/run alike. Needs root (or sudo).
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev python3
  libboost-dev librange-v3-dev libfmt-dev doctest-dev
  libsimdjson-dev libcli11-dev zlib1g-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin libglpk-dev libsqlite3-dev protobuf-compiler libprotobuf-dev
  pybind11-dev python3-dev python3-pytest python3-numpy python3-pandas
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
