#!/bin/sh
# Inference throughput of `dpd run`, exact vs sectioned, on a 294 912-sample recording (the
# train split of a DPA_160MHz-shaped synthetic set) with a GRU-15 model. Prints dpd run's own
# timing lines (samples/s). THREADS=N sets the threads (default: every logical CPU). Never asserts.
set -eu
DPD=${1:-build/dpd}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$DPD" synth --out "$T/s" --carriers 4 --carrier-bw 40e6 --qam 1024 --fs 640e6 --nperseg 16384 --length 491520 >/dev/null
"$DPD" train-pa --data "$T/s" --hidden 15 --epochs 1 --frame 50 --stride 256 --out "$T/r" >/dev/null 2>&1
M=$(ls -d "$T"/r/s/train_pa/*)/best.safetensors
perl -e 'open(F, "<", $ARGV[0]); <F>; while (<F>) { chomp; my @v = split /,/; print pack("f<f<", $v[0], $v[1]); }' \
    "$T/s/train_input.csv" >"$T/in.cf32"
TH=${THREADS:-$(nproc)}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), GRU-15, $TH threads"
"$DPD" run --model "$M" --input "$T/in.cf32" --output "$T/ex.cf32" --exact --threads "$TH"
"$DPD" run --model "$M" --input "$T/in.cf32" --output "$T/se.cf32" --threads "$TH"
"$DPD" run --model "$M" --input "$T/in.cf32" --output "$T/se2.cf32" --section 16384 --warmup 512 --threads "$TH"
cmp -s "$T/ex.cf32" "$T/se.cf32" && echo "sectioned output identical to exact" || echo "sectioned output differs from exact"
