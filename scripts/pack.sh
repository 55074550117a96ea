#!/bin/sh
# make pack-cuda / make pack-opencl: packs $BUILD/<provider>/libdpd-<provider>.so (BUILD defaults
# to build) into dist/dpd-pack-<provider>-<version>-linux-x86_64.tar.gz with pack.json (provider,
# pack version, provider-ABI version, required runtime versions, every file with its size and
# SHA-256) and a .sha256 beside the archive.
# Usage: scripts/pack.sh cuda|opencl [LIBRARY [OUTDIR]]   (defaults: the build's library, dist)
set -eu
P=${1:?usage: scripts/pack.sh cuda|opencl [LIBRARY [OUTDIR]]}
V=$(sed -n 's/^#define DPD_VERSION "\(.*\)"/\1/p' include/dpd/dpd.h)
ABI=$(sed -n 's/^#define DPD_PROVIDER_API \([0-9]*\)/\1/p' include/dpd/provider.h)
B=${BUILD:-build}
LIB=${2:-$B/$P/libdpd-$P.so}
D=${3:-dist}
S=$(mktemp -d "${TMPDIR:-/tmp}/dpd-pack.XXXXXX")
trap 'rm -rf "$S"' EXIT
mkdir -p "$S/lib" "$D"
cp "$LIB" "$S/lib/libdpd-$P.so"
size=$(stat -c %s "$S/lib/libdpd-$P.so")
sum=$(sha256sum "$S/lib/libdpd-$P.so" | cut -d' ' -f1)
case $P in
cuda)
    NV=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
    REQ="{\"cuda_runtime\": \"$NV (linked statically)\", \"driver_min\": \"580\", \"arch\": \"sm_90 (+ PTX)\"}" ;;
opencl)
    REQ='{"opencl": "1.2 or later, through the ICD loader (libOpenCL.so.1, Debian ocl-icd-libopencl1)", "driver": "any OpenCL ICD: a GPU vendor'"'"'s, or pocl-opencl-icd on the CPU"}' ;;
*) echo "scripts/pack.sh: unknown provider $P" >&2; exit 2 ;;
esac
cat >"$S/pack.json" <<JSON
{
  "provider": "$P",
  "pack_version": "$V",
  "abi_version": $ABI,
  "library": "lib/libdpd-$P.so",
  "requires": $REQ,
  "files": [{"path": "lib/libdpd-$P.so", "size": $size, "sha256": "$sum"}]
}
JSON
OUT=$D/dpd-pack-$P-$V-linux-x86_64.tar.gz
tar -C "$S" --owner=0 --group=0 --sort=name --mtime=@0 -czf "$OUT" pack.json lib
(cd "$D" && sha256sum "$(basename "$OUT")" >"$(basename "$OUT").sha256")
echo "$OUT"
