#!/bin/sh
# Installs the Debian packages dpd's build and tests need (libmatio-dev: MATLAB .mat files, v5 and
# v7.3 through HDF5; clang and libclang-rt-14-dev: the libFuzzer harnesses of tests/fuzz/;
# libmicrohttpd, SQLite, libseccomp and python3: the studio and its tests; cairo, libdeflate and
# the DejaVu fonts: dpd plot; chromium, nodejs and npm: the studio's browser tests; the OpenCL
# headers, the ICD loader and PoCL, a real OpenCL device on the CPU: the OpenCL provider's build
# and tests). Idempotent: does nothing when they are present. As root it runs apt-get; otherwise
# it prints the command and fails.
set -eu
PKGS="build-essential pkg-config libjansson-dev libkissfft-dev liblapacke-dev libarchive-dev libssl-dev libmatio-dev zlib1g-dev clang libclang-rt-14-dev libmicrohttpd-dev libsqlite3-dev libseccomp-dev python3 libcairo2-dev libdeflate-dev fonts-dejavu-core chromium opencl-c-headers ocl-icd-opencl-dev pocl-opencl-icd"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js and npm (the browser tests' driver): Debian's packages unless a node with npm is there
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing packages:$missing" >&2
    echo "deps.sh: run as root: apt-get install -y$missing" >&2
    exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq $missing >/dev/null
