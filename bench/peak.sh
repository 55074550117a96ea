#!/bin/sh
# One core's measured multiply-add peak (`dpd bench peak`) for every ISA this CPU has: the
# yardstick `dpd bench train` reports a step's share of. Prints one line per ISA; an ISA the CPU
# lacks is named with why. Never asserts; record results in docs/performance.md.
set -eu
DPD=${1:-build/dpd}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) logical CPUs"
for isa in avx512 avx2 sse; do
    "$DPD" bench peak --kernels $isa 2>&1 || true
done
