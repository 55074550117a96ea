#!/bin/sh
# make pack-cuda: packs $BUILD/cuda/libdpd-cuda.so (BUILD defaults to build) into
# dist/dpd-pack-cuda-<version>-linux-x86_64.tar.gz
# with pack.json (provider, pack version, provider-ABI version, required runtime versions, every
# file with its size and SHA-256) and a .sha256 beside the archive.
set -eu
V=$(sed -n 's/^#define DPD_VERSION "\(.*\)"/\1/p' include/dpd/dpd.h)
ABI=$(sed -n 's/^#define DPD_PROVIDER_API \([0-9]*\)/\1/p' include/dpd/provider.h)
B=${BUILD:-build}
S=$B/pack/cuda
rm -rf "$S" && mkdir -p "$S/lib" dist
cp "$B/cuda/libdpd-cuda.so" "$S/lib/"
size=$(stat -c %s "$S/lib/libdpd-cuda.so")
sum=$(sha256sum "$S/lib/libdpd-cuda.so" | cut -d' ' -f1)
NV=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
cat >"$S/pack.json" <<JSON
{
  "provider": "cuda",
  "pack_version": "$V",
  "abi_version": $ABI,
  "library": "lib/libdpd-cuda.so",
  "requires": {"cuda_runtime": "$NV (linked statically)", "driver_min": "580", "arch": "sm_90 (+ PTX)"},
  "files": [{"path": "lib/libdpd-cuda.so", "size": $size, "sha256": "$sum"}]
}
JSON
OUT=dist/dpd-pack-cuda-$V-linux-x86_64.tar.gz
tar -C "$S" --owner=0 --group=0 --sort=name --mtime=@0 -czf "$OUT" pack.json lib
(cd dist && sha256sum "$(basename "$OUT")" >"$(basename "$OUT").sha256")
echo "$OUT"
