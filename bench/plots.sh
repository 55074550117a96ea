#!/bin/sh
# The cost of the end-of-run pictures: the whole `dpd train-pa --preset quick` process with and
# without --no-plots, N rounds (default 15) of one run each, in a random order within each round
# (in a fixed order, A/B comparisons on the project's VMs came out milliseconds apart from the
# same comparisons in a random order, probably from a run's place after the other kind:
# docs/performance.md, 2026-12-07 evening), on the built-in synthetic dataset
# (dpd synth's defaults) or on DATA, default threads. Prints the medians, the minima and the cost,
# and the median of each round's difference (the steadiest of the three where the machine's speed
# drifts). Never asserts; run it on a quiet machine (docs/performance.md).
# Usage: bench/plots.sh [DPD] [N] [DATA]
set -eu
DPD=${1:-build/dpd}
N=${2:-15}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
DATA=${3:-$T/synth}
[ -n "${3:-}" ] || "$DPD" synth --out "$DATA" --seed 0 >/dev/null
ms() { date +%s%N | cut -c1-13; }
for i in $(seq "$N"); do
    for m in $(printf 'plots\nnoplots\n' | shuf); do
        rm -rf "$T/o"
        f=""; [ "$m" = noplots ] && f=--no-plots
        s=$(ms)
        "$DPD" train-pa --data "$DATA" --preset quick $f --out "$T/o" >/dev/null 2>&1
        echo "$m $(($(ms) - s))"
    done
done >"$T/times"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
awk '{ v[$1, ++n[$1]] = $2 }
     function med(k,  a, i, j, t, c) { c = n[k]; for (i = 1; i <= c; i++) a[i] = v[k, i]
         for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
         lo[k] = a[1]; return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
     END { p = med("plots"); q = med("noplots")
           printf "with the pictures: median %d ms (min %d); --no-plots: median %d ms (min %d)\n", p, lo["plots"], q, lo["noplots"]
           printf "cost: %+d ms, %+.1f %% of the run by median; %+d ms, %+.1f %% by minimum (%d runs each)\n", p - q, 100 * (p - q) / q, lo["plots"] - lo["noplots"], 100 * (lo["plots"] - lo["noplots"]) / lo["noplots"], n["plots"]
           for (i = 1; i <= n["plots"]; i++) v["d", i] = v["plots", i] - v["noplots", i]
           n["d"] = n["plots"]; d = med("d")
           printf "difference within each round: median %+.1f ms, %+.1f %% of the --no-plots median\n", d, 100 * d / q }' "$T/times"
