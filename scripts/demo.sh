#!/bin/sh
# make demo: the main job on built-in data — synthesize an OpenDPD-layout dataset, train a small
# GRU PA model for a few epochs (its run directory taken from train-pa --json), print its metrics
# on the test split and where the run went, then the next steps with that run filled in: dpd plot,
# dpd serve on it, and dpd train-dpd through it.
# Usage: scripts/demo.sh [DPD]   (DEMO_OUT: where the data and the run go, default runs/demo)
set -eu
DPD=${1:-build/dpd}
OUT=${DEMO_OUT:-runs/demo}
DATA="$OUT/synth_dpa200"
echo "== dpd synth: 10 x 20 MHz 64-QAM OFDM at 800 MHz through a Wiener-Hammerstein PA -> $DATA"
"$DPD" synth --out "$DATA" --seed 0 --force >/dev/null # the same data again on a second make demo
echo "== dpd eval: the measured PA output and the linear-gain baseline (test split)"
"$DPD" eval --data "$DATA" --split test
echo "== dpd train-pa: GRU-23, 15 epochs, frame 50, stride 4 (its epochs on stderr, its summary as JSON)"
"$DPD" train-pa --data "$DATA" --model gru --hidden 23 --epochs 15 --frame 50 --stride 4 --out "$OUT" \
    --json >"$OUT/train-pa.json"
# the summary is one compact JSON object (jansson's): its run_dir holds no quote
RUN=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$OUT/train-pa.json")
[ -d "$RUN" ] || { echo "demo: no run_dir in $OUT/train-pa.json" >&2; exit 1; }
echo "== dpd eval: the trained PA model on the test split, beside the linear-gain baseline"
"$DPD" eval --data "$DATA" --split test --model "$RUN"
echo "== the run: $RUN (its summary: $OUT/train-pa.json)"
echo
echo "next steps:"
echo "  draw the run's pictures on the test split (it drew them on val in $RUN/plots):"
echo "    $DPD plot $RUN"
echo "  open it in the studio, then the sign-in link it prints"
echo "  (http://127.0.0.1:8765/api/v1/session/bootstrap?token=...; Ctrl-C stops it):"
echo "    $DPD serve --root $OUT/studio --import $RUN"
echo "  train a DPD through this PA model:"
echo "    $DPD train-dpd --data $DATA --pa $RUN --preset quick --out $OUT"
