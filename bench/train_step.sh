#!/bin/sh
# Times one training step of OpenDPD's reference workload (PA GRU-23, batch 64, frame 200) and a
# few neighbours, printing one JSON object per line. Never asserts; record results in
# docs/performance.md with the hardware string and this command.
set -eu
DPD=${1:-build/dpd}
STEPS=${STEPS:-20}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) logical CPUs"
for shape in "23 64 200" "15 64 200" "23 64 50" "23 256 200"; do
    set -- $shape
    "$DPD" bench train --model gru --hidden "$1" --batch "$2" --frame "$3" --steps "$STEPS" --json
done
