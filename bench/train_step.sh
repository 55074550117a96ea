#!/bin/sh
# Times one training step of every fast family at OpenDPD's reference shape (batch 64, frame 200)
# with 1 and 2 threads, printing one JSON object per line (ms_per_step, steps_per_s, GFLOP/s).
# Never asserts; record results in docs/performance.md with the hardware and this command.
set -eu
DPD=${1:-build/dpd}
STEPS=${STEPS:-20}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) logical CPUs"
for spec in "gru 23" "dgru 23" "lstm 23" "tres_gru 15" "rvtdcnn 12" "gru 15" "deltagru 15" "vdlstm 13" "pgjanet 11" "dvrjanet 11" "tcn 32" "gmp 1"; do
    set -- $spec
    for th in 1 2; do
        "$DPD" bench train --model "$1" --hidden "$2" --batch 64 --frame 200 --threads $th --steps "$STEPS" --json
    done
done
