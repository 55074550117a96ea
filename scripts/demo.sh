#!/bin/sh
# make demo: the main job on built-in data — synthesize an OpenDPD-layout dataset, train a small
# GRU PA model for a few epochs, print the metrics table and where the run went, then draw the
# run's pictures (dpd plot) and print their paths, and the command that opens the run in the
# studio.
set -eu
DPD=${1:-build/dpd}
OUT=${DEMO_OUT:-runs/demo}
DATA="$OUT/synth_dpa200"
echo "== dpd synth: 10 x 20 MHz 64-QAM OFDM at 800 MHz through a Wiener-Hammerstein PA -> $DATA"
"$DPD" synth --out "$DATA" --seed 0 >/dev/null
echo "== dpd eval: the measured PA output and the linear-gain baseline (test split)"
"$DPD" eval --data "$DATA" --split test
echo "== dpd train-pa: GRU-23, 15 epochs, frame 50, stride 4"
"$DPD" train-pa --data "$DATA" --model gru --hidden 23 --epochs 15 --frame 50 --stride 4 --out "$OUT" >"$OUT/train-pa.txt"
cat "$OUT/train-pa.txt"
RUN=$(sed -n 's/^run directory: //p' "$OUT/train-pa.txt")
echo "== dpd plot: the run's pictures on the test split (the end of the run drew them on val)"
"$DPD" plot "$RUN"
echo "== the same run in the studio (stop it with Ctrl-C):"
echo "   $DPD serve --root $OUT/studio --import $RUN"
echo "   then open the sign-in link it prints"
