#!/bin/sh
# gpu-prepare: every input of scripts/gpu-check.sh, gathered from a build into one folder to carry
# to the device (it has no compiler and no package access): GPU_CHECK_INPUTS (default
# $BUILD/gpu, BUILD default build). Builds nothing itself: run `make gpu-inputs` (which builds
# dpd, the CUDA libraries and check, the OpenCL provider and test_conformance first, then this),
# or this after those; a missing input is named and the script exits 1.
#   bin/   dpd, check (the first CUDA provider's parity and speed), test_conformance
#   lib/   libdpd-cuda-resident.so, libdpd-opencl-test.so (with the test hooks), and the
#          shared libraries the binaries need beyond the C library's own (the ICD loader included;
#          matio, libarchive and LAPACKE, which dpd loads when first needed, and theirs)
#   dist/  the CUDA pack (the device-resident provider) and the OpenCL pack
#   data/DPA_200MHz (../shared/data/opendpd), ckpt/pa_gru23.safetensors (a quick GRU-23 PA on it)
# Then the folder as one archive beside it, $G.tar.xz (~34 MiB; the device tool carries at most 64
# MiB with the repository: carry that, and gpu-check.sh unpacks it where the folder is missing);
# GPU_PREPARE_ARCHIVE=0 leaves it out (tests/gpucheck.sh's dry run).
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
G=${GPU_CHECK_INPUTS:-$B/gpu}
DATA=${DPD_SHARED:-../shared}/data/opendpd/DPA_200MHz
miss=""
for f in "$B/dpd" "$B/cuda/check" "$B/tests/test_conformance" "$B/cuda/libdpd-cuda-resident.so" \
    "$B/opencl/libdpd-opencl.so" "$B/opencl/test/libdpd-opencl.so" "$DATA/spec.json"; do
    [ -f "$f" ] || miss="$miss $f"
done
if [ -n "$miss" ]; then
    echo "gpu-prepare: missing:$miss (make gpu-inputs builds them; the CUDA ones need nvcc)" >&2
    exit 1
fi
rm -rf "$G"
mkdir -p "$G/bin" "$G/lib" "$G/dist" "$G/data" "$G/ckpt"
cp "$B/dpd" "$B/cuda/check" "$B/tests/test_conformance" "$G/bin/"
cp "$B/cuda/libdpd-cuda-resident.so" "$G/lib/"
cp "$B/opencl/test/libdpd-opencl.so" "$G/lib/libdpd-opencl-test.so"
BUILD=$B scripts/pack.sh cuda "$B/cuda/libdpd-cuda-resident.so" "$G/dist" >/dev/null
BUILD=$B scripts/pack.sh opencl '' "$G/dist" >/dev/null
# the shared libraries beyond the C library's own (libc, libm, libpthread, libdl, librt, the loader),
# and those libdpd loads at their first use (src/lazy.h: the sonames dpd names), with theirs
lazy=$(strings "$B/dpd" | grep -E '^lib(matio|archive|lapacke)\.so\.[0-9]+$' | sort -u | while read -r so; do
    PATH="$PATH:/sbin:/usr/sbin" ldconfig -p | awk -v s="$so" '$1 == s { print $NF; exit }'; done)
{ for f in "$G"/bin/* "$G"/lib/libdpd-*.so $lazy; do ldd "$f" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
  printf '%s\n' $lazy; } | sort -u | grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
    while read -r l; do cp -L "$l" "$G/lib/"; done
cp -r "$DATA" "$G/data/"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! "$B/dpd" train-pa --data "$G/data/DPA_200MHz" --model gru --hidden 23 --preset quick --no-plots --threads 2 \
    --out "$T/run" >"$T/log" 2>&1; then
    cat "$T/log" >&2; exit 1
fi
cp "$(ls "$T"/run/*/train_pa/*/best.safetensors | head -n 1)" "$G/ckpt/pa_gru23.safetensors"
if [ "${GPU_PREPARE_ARCHIVE:-1}" = 1 ]; then
    tar cf - -C "$(dirname "$G")" "$(basename "$G")" | xz -T2 -6 >"$G.tar.xz.tmp" && mv "$G.tar.xz.tmp" "$G.tar.xz"
    echo "gpu-prepare: $G ($(du -sm "$G" | cut -f1) MiB), $G.tar.xz ($(du -sm "$G.tar.xz" | cut -f1) MiB): carry the archive"
    echo "  to the device, then run scripts/gpu-check.sh there (it unpacks the archive)"
else
    echo "gpu-prepare: $G ($(du -sm "$G" | cut -f1) MiB)"
fi
