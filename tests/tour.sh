#!/bin/sh
# The README's tour of the CLI, run as written: the fenced block right after the line
# `<!-- tour -->` in README.md, pasted in order into bash (errexit, pipefail) in a fresh directory
# whose `build` is BUILD, as a reader would at the repository root after `make`. One check per
# command: it ran and succeeded (a failure names its README line; the commands after it count as
# failed, not run). Then the tour's rules (synthetic data and quick presets only: nothing from
# OpenDPD's datasets or outside the repository, no GPU) and the files it promises: the datasets and
# the SigMF capture, the PA and DPD run directories with their checkpoints and pictures, the
# predistorted recordings, the SVG and dataset pictures. Settings and packs go to a scratch
# XDG_CONFIG_HOME and XDG_DATA_HOME, never the user's.
# Usage: sh tests/tour.sh BUILD_DIR. Prints "RESULT tour <passed> <failed> <skipped>".
BUILD=${1:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=tour
. "$(dirname "$0")/lib.sh"
README="$(dirname "$0")/../README.md"
if [ ! -x "$BUILD/dpd" ] || ! command -v bash >/dev/null 2>&1; then
    echo "SKIP tour: needs $BUILD/dpd and bash"; echo "RESULT tour 0 0 1"; exit 0
fi
# The tour's commands, one a line as "LINENO<TAB>COMMAND" (comments and blank lines dropped; a
# line ending in a backslash continues on the next).
awk '
    /^<!-- tour -->$/ { marked = 1; next }
    marked && /^```sh$/ { inside = 1; marked = 0; next }
    { marked = 0 }
    inside && /^```$/ { exit }
    !inside { next }
    { line = $0 }
    cmd == "" && line ~ /^[ \t]*(#|$)/ { next }
    cmd == "" { start = NR }
    { more = sub(/\\$/, "", line); cmd = cmd line }
    more { next }
    { print start "\t" cmd; cmd = "" }
' "$README" >"$T/cmds"
n=$(wc -l <"$T/cmds")
check '[ "$n" -ge 10 ]' "README.md has no tour block of commands after '<!-- tour -->' (found $n commands)"
grep -e "shared/" -e "--provider cuda" -e "--provider opencl" -e "make pack" "$T/cmds" >"$T/bad"
check '[ ! -s "$T/bad" ]' "the tour reaches outside the repository or needs a GPU or a pack: $(cat "$T/bad")"
grep -E "dpd train-(pa|dpd) " "$T/cmds" | grep -v -e "--preset quick" -e "--resume" >"$T/bad"
check '[ ! -s "$T/bad" ]' "a training command in the tour is not quick: $(cat "$T/bad")"

# The script a reader's shell would see, each command followed by a note that it succeeded.
mkdir "$T/w" "$T/cfg" "$T/share"
ln -s "$(cd "$BUILD" && pwd)" "$T/w/build"
{
    echo 'set -e -o pipefail'
    while IFS='	' read -r line cmd; do printf '%s\necho %s >>"$TOUR_DONE"\n' "$cmd" "$line"; done <"$T/cmds"
    echo 'printf "%s\n%s\n" "$PA" "$DPD" >"$TOUR_VARS"'
} >"$T/tour.bash"
rc=1; why="the tour breaks the rules above" # such a tour is not run: it could train for minutes
if [ "$fail" -eq 0 ]; then
    why=""; t0=$(date +%s)
    (cd "$T/w" && TOUR_DONE="$T/done" TOUR_VARS="$T/vars" XDG_CONFIG_HOME="$T/cfg" XDG_DATA_HOME="$T/share" \
        bash "$T/tour.bash" >"$T/log" 2>&1)
    rc=$?
    echo "tour: $n commands, exit $rc, $(($(date +%s) - t0)) s"
fi
touch "$T/done" "$T/log"
while IFS='	' read -r line cmd; do
    if grep -qx "$line" "$T/done"; then ok
    elif [ -n "$why" ]; then bad "README.md:$line not run ($why): $cmd"
    else why="README.md:$line failed"; bad "$why: $cmd"; fi
done <"$T/cmds"
if [ "$rc" -ne 0 ]; then
    tail -n 20 "$T/log" >&2
    echo "RESULT tour $pass $fail 0"; exit 1
fi

# What the tour promises to leave behind.
cd "$T/w" || exit 1
PA=$(sed -n 1p "$T/vars"); DPD=$(sed -n 2p "$T/vars")
for f in data/synth/spec.json data/lte20/spec.json data/capture/input.sigmf-data data/capture/input.sigmf-meta \
    "$PA/best.safetensors" "$PA/last.safetensors" "$PA/history.csv" "$PA/plots/psd.png" plots/pa-test/psd.svg \
    plots/pa-test/history.svg "$DPD/best.safetensors" "$DPD/pa.safetensors" "$DPD/plots/psd.png" \
    predistorted.sigmf-data predistorted.sigmf-meta predistorted.mat plots/synth/psd.png plots/synth/plots.json; do
    check '[ -s "$f" ]' "the tour did not write $f (PA='$PA', DPD='$DPD')"
done
check 'case $PA in runs/synth/train_pa/*) true ;; *) false ;; esac' "PA is '$PA', not a train_pa run directory"
check 'case $DPD in runs/synth/train_dpd/*) true ;; *) false ;; esac' "DPD is '$DPD', not a train_dpd run directory"
check 'grep -q "^12," "$PA/history.csv" 2>/dev/null' "the resumed PA run's history.csv has no epoch 12"
check '[ "$(wc -c <predistorted.sigmf-data)" -eq "$(wc -c <data/capture/input.sigmf-data)" ]' \
    "predistorted.sigmf-data is not the capture's length"
echo "RESULT tour $pass $fail 0"
[ "$fail" -eq 0 ]
