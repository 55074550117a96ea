#!/bin/sh
# Black-box tests of the dpd command: synth determinism, eval, train-pa outputs, bit-exact
# reruns and resume, error messages and exit codes, and the quality floor on DPA_200MHz.
# Usage: tests/cli.sh path/to/dpd. Prints "RESULT cli <passed> <failed> <skipped>".
DPD=${1:-build/dpd}
SHARED=${DPD_SHARED:-../shared}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=cli
. "$(dirname "$0")/lib.sh"
skip=0
# field NAME FILE: the number after "NAME": in a one-line JSON file (first occurrence after an anchor)
num() { sed -n "s/.*\"$1\":{[^}]*\"$2\":\(-*[0-9.]*\).*/\1/p" "$3"; }
# isjson FILE: FILE holds exactly one valid JSON document
isjson() { python3 -c 'import json,sys; json.load(sys.stdin)' <"$1" 2>/dev/null; }
# jq1 FILE EXPR: a Python expression on the JSON document j of FILE is true
jq1() { python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(0 if ($2) else 1)" <"$1" 2>/dev/null; }
# data region of a safetensors file (weights and optimizer state, without the metadata)
data() { hl=$(od -An -t u8 -N8 "$1" | tr -d ' '); tail -c +$((hl + 9)) "$1"; }

# --- --help and -h: usage on stdout, exit 0, for every verb ---
for v in synth eval train-pa train-dpd fit-ls run providers parity pack config models bench "bench train"; do
    for h in --help -h; do
        "$DPD" $v $h >"$T/out" 2>"$T/err"; rc=$?
        check '[ $rc -eq 0 ] && grep -q "usage" "$T/out"' "dpd $v $h: exit $rc (want 0) with the usage on stdout ($(head -c 200 "$T/err"))"
    done
done
check '"$DPD" --help | grep -q "train-pa"' "dpd --help lists the verbs"
# matio, libarchive and LAPACKE are loaded at their first use (src/lazy.h): a start loads none of
# them nor what they bring (HDF5, ICU, gfortran); fit-ls, packs and MAT files below use them
check 'ldd "$DPD" | grep -q "libc\.so" && ! ldd "$DPD" | grep -q "libmatio\|libhdf5\|libarchive\|liblapack\|libicu\|libgfortran"' \
    "dpd links none of matio, libarchive, LAPACKE or their libraries ($(ldd "$DPD" | grep -o "libmatio[^ ]*\|libhdf5[^ ]*\|libarchive[^ ]*\|liblapack[^ ]*\|libicu[^ ]*\|libgfortran[^ ]*" | tr '\n' ' '))"
check '[ "$("$DPD" help eval)" = "$("$DPD" eval --help)" ] && "$DPD" help eval | grep -q "^usage: dpd eval" && "$DPD" help | grep -q "train-pa"' \
    "dpd help VERB prints the verb's own help (dpd VERB --help), dpd help the list of verbs"
check '! "$DPD" train-pa --help | grep -q -- "--pa " && "$DPD" train-dpd --help | grep -q -- "--pa "' "train-pa --help does not offer train-dpd's --pa"
expect 2 "dpd: unknown verb 'nosuch'" "$DPD" help nosuch
expect 2 "dpd: unknown verb 'trian-pa' (did you mean train-pa?)" "$DPD" trian-pa --data x
expect 2 "dpd: unknown verb 'polt' (did you mean plot?)" "$DPD" help polt
check '"$DPD" help version | grep -q "^dpd version" && "$DPD" help --help | grep -q "train-pa" && "$DPD" help -h >/dev/null' \
    "dpd help version, dpd help --help and -h: exit 0 with their text"
"$DPD" synth --out "$T/twice" --preset lte20 --length 40960 --seed 1 --seed 2 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "given twice" "$T/err")" -eq 1 ] && grep -q "\"seed\": 2" "$T/twice/spec.json"' \
    "synth --preset with an option given twice: one note, the last value used (exit $rc: $(head -c 300 "$T/err"))"

# --- synth ---
"$DPD" synth --out "$T/a" --seed 5 >/dev/null && "$DPD" synth --out "$T/b" --seed 5 >/dev/null \
    && "$DPD" synth --out "$T/c" --seed 6 >/dev/null
check 'for f in spec.json train_input.csv train_output.csv val_input.csv val_output.csv test_input.csv test_output.csv; do cmp -s "$T/a/$f" "$T/b/$f" || exit 1; done' \
    "synth: same seed must give byte-identical files"
check '! cmp -s "$T/a/train_output.csv" "$T/c/train_output.csv"' "synth: another seed must differ"
check '[ "$(wc -l < "$T/a/train_input.csv")" -eq 23041 ] && [ "$(wc -l < "$T/a/test_output.csv")" -eq 7681 ]' \
    "synth: default split 23040/7680/7680 rows"
check 'grep -q "\"nperseg\": 2560" "$T/a/spec.json" && grep -q "\"n_sub_ch\": 10" "$T/a/spec.json"' "synth: spec fields"
check 'grep -q "\"amplitude_units\": \"normalized\"" "$T/a/spec.json" && "$DPD" doctor "$T/a" | grep -q "^info  *amplitude_range " && ! "$DPD" doctor "$T/a" | grep -q amplitude_units_unconfirmed' \
    "synth: spec.json states amplitude_units normalized (peak |x| = 1), so the doctor reports the range and does not ask for the units"
expect 2 "dpd: --qam: 7 must be" "$DPD" synth --out "$T/x" --qam 7
expect 2 "--length: 1000 must be a multiple of" "$DPD" synth --out "$T/x" --length 1000
expect 2 "dpd: --nperseg: 0 must be 16 or more" "$DPD" synth --out "$T/x" --nperseg 0
expect 2 "needs --out" "$DPD" synth
expect 2 "dpd: --evm-fs: the EVM rate is for legacy-opendpd-v1's EVM, and general-spectral-v1 scores IBE instead" \
    "$DPD" eval --data "$T/a" --metric-profile general-spectral-v1 --evm-fs 800e6
expect 2 "dpd: --evm-fs: the EVM rate is for legacy-opendpd-v1's EVM, and opendpd-spectral-v2" \
    "$DPD" train-pa --data "$T/a" --metric-profile opendpd-spectral-v2 --evm-fs 800e6 --out "$T/r9"
# subcarriers wider than a carrier: refused before anything is written (the signal would be silent, 0 / 0)
expect 2 "dpd: --nperseg: 16 splits fs = 800 MHz into subcarriers 50 MHz apart, and carrier 1 of 10 (centre -90 MHz) then has none within its occupied +-9 MHz (occupancy x carrier_bw / 2) but its centre bin, which stays empty: it would be silent. Raise --nperseg (keeping --length a multiple of it), lower --fs, or raise --occupancy" \
    "$DPD" synth --out "$T/x16" --nperseg 16
# a spacing below the occupied band's width, but above its half: only the (empty) centre bin is within reach
expect 2 "dpd: --nperseg: 160 splits fs = 800 MHz into subcarriers 5 MHz apart, and carrier 1 of 1 (centre 0 MHz)" \
    "$DPD" synth --out "$T/x16" --carriers 1 --carrier-bw 10e6 --nperseg 160 --length 800
expect 2 "carrier 1 of 3 (centre -10 MHz)" "$DPD" synth --out "$T/x16" --carriers 3 --carrier-bw 10e6 --nperseg 160 --length 800
expect 2 "dpd: --nperseg: 2560 splits fs = 500000 MHz" "$DPD" synth --out "$T/x16" --fs 5e11
expect 2 "dpd: --fs: 1e+300 Hz is out of range (0, 1e+12] (1 THz)" "$DPD" synth --out "$T/x16" --fs 1e300
check '[ ! -e "$T/x16" ]' "synth: a refused configuration leaves no directory behind"
# a preset's rate changed alone: its subcarrier spacing changes, and synth says so (and how to keep it)
"$DPD" synth --out "$T/l61" --preset lte20 --fs 61.44e6 --length 40960 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: --preset lte20 with fs 61.44 MHz and nperseg 8192 spaces its subcarriers 7.5 kHz apart, not the preset.s 15 kHz: .*--nperseg 4096 for this fs" "$T/err"' \
    "synth: --preset lte20 --fs 61.44e6 warns that the numerology changed (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" synth --out "$T/l61b" --preset lte20 --fs 61.44e6 --nperseg 4096 --length 20480 >/dev/null 2>"$T/err"
check '! grep -q warning "$T/err"' "synth: the preset's spacing kept at another rate: no warning ($(head -c 200 "$T/err"))"
# a rate the default profile cannot score (one 20 MHz carrier needs 60 MHz for its adjacent channels):
# written, with a warning, and the doctor says it too
"$DPD" synth --out "$T/l46" --carriers 1 --carrier-bw 20e6 --fs 46.08e6 --nperseg 3072 --length 15360 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: at fs 46.08 MHz the adjacent channels of the 20 MHz channel do not fit in +-fs/2: .*(give --fs 60 MHz or more)" "$T/err" &&
    "$DPD" doctor "$T/l46" | grep -q "^warning  *band_plan_unscorable "' "synth and the doctor: a band plan the default metrics cannot score (exit $rc: $(head -c 300 "$T/err"))"
# a sample rate too low for the carriers: the numbers in MHz, and the three options that fix it
expect 2 "dpd: --fs: 100 MHz leaves too little room for the adjacent channels of 10 x 20 MHz carriers (dpd synth wants a sample rate above twice their 200 MHz channel, 400 MHz): raise --fs, or lower --carriers or --carrier-bw" \
    "$DPD" synth --out "$T/x" --fs 100e6
# what synth says it wrote: the splits, fs and carriers as spec.json and the CSVs have them, each file with its size
"$DPD" synth --out "$T/sy" --seed 5 --length 25600 --carriers 4 --carrier-bw 40e6 --fs 1.5e9 --sigmf >"$T/sy.txt" 2>"$T/err"; rc=$?
rows() { echo $(($(wc -l <"$T/sy/$1_input.csv") - 1)); }
check '[ $rc -eq 0 ] && grep -qxF "wrote $T/sy" "$T/sy.txt" && [ "$(rows train)" -gt 0 ] &&
    grep -qxF "samples: train $(rows train), val $(rows val), test $(rows test) (segments of 2560)" "$T/sy.txt"' \
    "synth: the samples of each split, as the CSVs hold them (exit $rc: $(head -c 300 "$T/sy.txt") $(head -c 200 "$T/err"))"
check 'jq1 "$T/sy/spec.json" "j[\"input_signal_fs\"] == 1.5e9 and j[\"n_sub_ch\"] == 4 and j[\"bw_sub_ch\"] == 40e6 and j[\"bw_main_ch\"] == 160e6" &&
    grep -qxF "signal: fs 1.5 GHz, 4 x 40 MHz carriers (160 MHz), 64-QAM OFDM, seed 5" "$T/sy.txt"' \
    "synth: fs and carriers in GHz/MHz, as spec.json has them ($(grep signal "$T/sy.txt"))"
# size FILE: its size as the summary writes it
size() { awk -v b="$(stat -c %s "$1")" 'BEGIN { if (b < 1024) printf "%d B", b; else if (b < 1048576) printf "%.1f KiB", b / 1024; else printf "%.1f MiB", b / 1048576 }'; }
sizes=0
for f in spec.json train_input.csv train_output.csv val_input.csv val_output.csv test_input.csv test_output.csv \
    input.sigmf-data input.sigmf-meta output.sigmf-data output.sigmf-meta; do
    grep -qx "  $f  *$(size "$T/sy/$f")" "$T/sy.txt" && sizes=$((sizes + 1))
done
check '[ $sizes -eq 11 ] && [ "$(grep -c "^  " "$T/sy.txt")" -eq 11 ]' "synth: each of the 11 files written with its size ($sizes matched)"
cp "$T/sy/train_input.csv" "$T/sy-train.csv"
expect 2 "dpd: --out $T/sy already holds a dataset (spec.json): give a new directory, or --force to replace it" \
    "$DPD" synth --out "$T/sy" --seed 6 --length 25600
check 'cmp -s "$T/sy/train_input.csv" "$T/sy-train.csv" && [ -e "$T/sy/input.sigmf-data" ]' "synth: a refused run leaves the dataset as it was"
rm "$T/sy/spec.json"
expect 2 "already holds a dataset (train_input.csv)" "$DPD" synth --out "$T/sy" --seed 6 --length 25600
"$DPD" synth --out "$T/sy" --seed 6 --length 25600 --force >"$T/sy.txt" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/sy/spec.json" ] && ! cmp -s "$T/sy/train_input.csv" "$T/sy-train.csv" && [ ! -e "$T/sy/input.sigmf-data" ] &&
    [ ! -e "$T/sy/output.sigmf-meta" ] && [ "$(grep -c "^  " "$T/sy.txt")" -eq 7 ]' \
    "synth --force: replaces the dataset and removes the old SigMF copy it does not write (exit $rc: $(head -c 200 "$T/err"))"
mkdir "$T/sn" && echo notes >"$T/sn/README"
"$DPD" synth --out "$T/sn" --length 12800 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/sn/spec.json" ] && [ -s "$T/sn/README" ]' "synth: a directory without a dataset is not refused, and its other files stay (exit $rc)"

# --- eval ---
"$DPD" eval --data "$T/a" --split test --json >"$T/ev.json" 2>"$T/err"
check 'grep -q "^{\"dataset\":\"a\",\"split\":\"test\".*\"output_aclr\":{\"L\":.*\"linear_gain\":{\"NMSE\":" "$T/ev.json" && [ "$(wc -l < "$T/ev.json")" -eq 1 ]' \
    "eval --json: one object with output_aclr and linear_gain"
check 'isjson "$T/ev.json" && jq1 "$T/ev.json" "j[\"linear_gain\"][\"NMSE\"] < -5 and \"status\" not in j[\"linear_gain\"]"' "eval --json is valid JSON, computed metrics have no status entry"
mkdir -p "$T/tiny" && cp "$T/a/spec.json" "$T/a/"train_*.csv "$T/tiny/" &&
    for f in val_input val_output test_input test_output; do head -n 101 "$T/a/$f.csv" >"$T/tiny/$f.csv"; done
"$DPD" eval --data "$T/tiny" --split test >"$T/ev.txt" 2>/dev/null
check 'grep -q "^tiny test: 100 samples, 1 segment of 2560 (zero-padded by 2460), fs 800 MHz" "$T/ev.txt"' \
    "eval: a split shorter than a segment says its one segment is mostly padding ($(head -n 1 "$T/ev.txt"))"
"$DPD" eval --data "$T/a" --split test >"$T/ev.txt" 2>"$T/err"
check 'grep -q "^a test: 7680 samples, 3 segments of 2560, fs 800 MHz, 10 x 20 MHz channel$" "$T/ev.txt"' \
    "eval: fs and channel in MHz ($(head -n 1 "$T/ev.txt") $(head -c 200 "$T/err"))"
check '[ ! -s "$T/err" ] && jq1 "$T/ev.json" "j[\"gain_split\"] == \"train\""' \
    "eval on dpd synth's dataset warns about nothing (its spec.json's generator is known), g from the train split ($(head -c 300 "$T/err"))"
"$DPD" eval --data "$T/a" --split test --metric-profile opendpd-spectral-v2 >"$T/ev2.txt" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: under opendpd-spectral-v2 the input g x itself scores ACLR_AVG -[0-9.]* dBc, within 10 dB of the PA output.s -[0-9.]*: .*(frame seams inside the profile.s Welch windows, " "$T/err"' \
    "eval under a Welch profile on framed data: the clean input's own leakage is near the PA's, and eval says the figures are not the PA's (exit $rc: $(head -c 300 "$T/err"))"
# a dataset without a train split: g x at the split's own gain, with a warning, as dpd plot draws it
mkdir -p "$T/nt" && cp "$T/a/spec.json" "$T/a/"val_*.csv "$T/a/"test_*.csv "$T/nt/"
"$DPD" eval --data "$T/nt" --split test >"$T/nt.txt" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "" "$T/nt.txt")" -eq 4 ] && grep -q "^linear g=[0-9.]*  *-[0-9.]*  *-[0-9.]*  *-[0-9.]*  *-[0-9.]*  *-[0-9.]*$" "$T/nt.txt" &&
    grep -qx "dpd: warning: $T/nt has no train split: the linear-gain baseline g x is at the test split.s own gain, max|y| / max|x| = [0-9.]*" "$T/err"' \
    "eval without a train split: the linear row at the split's own gain, not an empty table (exit $rc: $(cat "$T/nt.txt" "$T/err" | head -c 600))"
"$DPD" eval --data "$T/nt" --split test --json >"$T/nt.json" 2>/dev/null
check 'jq1 "$T/nt.json" "j[\"gain_split\"] == \"test\" and j[\"linear_gain\"][\"NMSE\"] < -5" && python3 - "$T/nt.json" "$T/nt" <<EOF
import json, math, sys
j = json.load(open(sys.argv[1]))
peak = lambda f: max(math.hypot(*map(float, l.split(","))) for l in open(f"{sys.argv[2]}/{f}").read().split()[1:])
sys.exit(0 if abs(j["gain"] / (peak("test_output.csv") / peak("test_input.csv")) - 1) < 1e-12 else 1)
EOF' "eval --json without a train split: gain_split test, g = max|y_test| / max|x_test| ($(head -c 300 "$T/nt.json"))"
expect 1 "dpd: $T/nt has no train split (neither train_input.csv nor train_output.csv): training needs one" \
    "$DPD" train-pa --data "$T/nt" --epochs 1 --no-doctor --out "$T/ntr"
"$DPD" doctor "$T/a" >"$T/doc.txt" 2>&1
"$DPD" models >"$T/models.txt" 2>&1
check '[ -s "$T/doc.txt" ] && [ -s "$T/models.txt" ] && ! grep -n "e+0" "$T/sy.txt" "$T/ev.txt" "$T/doc.txt" "$T/models.txt" >&2' \
    "synth, eval, doctor and models print no frequency as 8e+08 (lines above)"
expect 2 "--split takes val or test, got 'train'" "$DPD" eval --data "$T/a" --split train
expect 2 "--split takes val or test, got 'Val'" "$DPD" eval --split Val --data "$T/a"
expect 2 "dpd: eval needs --model DPD with --pa PA" "$DPD" eval --data "$T/a" --pa "$T/a"
"$DPD" eval --data "$T/a" --split val --split test >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: note: option .--split. is given twice (val, then test): test is used" "$T/err" && grep -q "^a test: [0-9]* samples" "$T/out"' \
    "an option given twice: the last value is used, and a note says so (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" eval --data "$T/a" --split val --split test --split val >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: note: option .--split. is given twice (val, then test): test is used" "$T/err" &&
       grep -q "^dpd: note: option .--split. is given again (test, then val): val is used" "$T/err" && grep -q "^a val: [0-9]* samples" "$T/out"' \
    "an option given a third time: its note says again, not twice (exit $rc: $(head -c 300 "$T/err"))"
expect 2 "dpd: --M: envelope lags and leads M, which only gmp_ls (fit-ls --kind gmp) has; mp has none" "$DPD" fit-ls --data "$T/a" --kind mp --M 3
expect 2 "dpd: fit-ls --kind gmp with --M 0 has no envelope cross terms: it is a memory polynomial, --kind mp" "$DPD" fit-ls --data "$T/a" --kind gmp --M 0
expect 2 "dpd: fit-ls --kind gmp with --K 1 has no envelope cross terms" "$DPD" fit-ls --data "$T/a" --kind gmp_ls --K 1
expect 2 "dpd: --iterations: for target dpd (indirect learning): a PA model is one fit" "$DPD" fit-ls --data "$T/a" --kind mp --target pa --iterations 3
expect 2 "--evm-fs: -5 is not a sample rate" "$DPD" eval --data "$T/a" --split test --evm-fs -5
mkdir -p "$T/hq" && cp "$T/a/"* "$T/hq/" && sed -i '1s/.*/I,Qq/' "$T/hq/val_input.csv"
"$DPD" eval --data "$T/hq" --split val >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "warning: .*/val_input.csv: its header names no columns I and Q: read as I then Q, by position" "$T/err"' \
    "a split file whose header does not name I and Q is read by position, with a warning naming it (exit $rc: $(head -c 300 "$T/err"))"
# a split file whose columns are named in another order or case is read by name: q,i with its columns swapped
mkdir -p "$T/qi" && cp "$T/a/"* "$T/qi/"
awk -F, 'NR == 1 { print "q,i"; next } { print $2 "," $1 }' "$T/a/val_input.csv" >"$T/qi/val_input.csv"
awk -F, 'NR == 1 { print "i,q"; next } { print }' "$T/a/val_output.csv" >"$T/qi/val_output.csv"
"$DPD" eval --data "$T/a" --split val --json >"$T/qi-a.json" 2>/dev/null
"$DPD" eval --data "$T/qi" --split val --json >"$T/qi-b.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(sed "s/\"dataset\":\"[^\"]*\",//" "$T/qi-a.json")" = "$(sed "s/\"dataset\":\"[^\"]*\",//" "$T/qi-b.json")" ] && ! grep -q "by position" "$T/err"' \
    "headers q,i (columns swapped) and i,q are read by name: the same metrics (exit $rc: $(head -c 300 "$T/err"))"
# a spreadsheet's CSV: a UTF-8 byte-order mark before the header, spaces after its commas
mkdir -p "$T/bom" && cp "$T/a/"* "$T/bom/" && { printf '\357\273\277I, Q\r\n'; sed 1d "$T/a/val_input.csv"; } >"$T/bom/val_input.csv"
"$DPD" eval --data "$T/bom" --split val --json >"$T/bom.json" 2>"$T/err"; rc=$?
"$DPD" eval --data "$T/a" --split val --json >"$T/nobom.json" 2>/dev/null
check '[ $rc -eq 0 ] && ! grep -q "header" "$T/err" && [ "$(sed "s/\"dataset\":\"[^\"]*\"//" "$T/bom.json")" = "$(sed "s/\"dataset\":\"[^\"]*\"//" "$T/nobom.json")" ]' \
    "a split file with a byte-order mark and 'I, Q' is read by name, as the plain one (exit $rc: $(head -c 300 "$T/err"))"
expect 1 "dpd: $T/nonexistent: no such directory" "$DPD" eval --data "$T/nonexistent" --split val
expect 1 "dpd: $T/a/spec.json: not a directory (give the dataset's directory, which holds spec.json)" "$DPD" eval --data "$T/a/spec.json"
# an unknown spec.json key is warned about, with the key it is closest to, and changes nothing
mkdir -p "$T/ty" && cp "$T/a/"* "$T/ty/" && sed -i 's/"nperseg"/"nperseg_typo": 100000, "nperseg"/' "$T/ty/spec.json"
"$DPD" eval --data "$T/ty" --split test --json >"$T/ty.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -qx "dpd: warning: $T/ty/spec.json: unknown key .nperseg_typo. ignored (did you mean .nperseg.?)" "$T/err" &&
    [ "$(sed "s/\"dataset\":\"ty\"//" "$T/ty.json")" = "$(sed "s/\"dataset\":\"a\"//" "$T/ev.json")" ]' \
    "eval: an unknown spec.json key is a warning naming the file, the key and the closest known key (exit $rc: $(head -c 300 "$T/err"))"
printf 'I,Q\n1,2\n3,x\n' >"$T/b/val_input.csv"
expect 1 "val_input.csv:3" "$DPD" eval --data "$T/b" --split val
expect 2 "unknown option '--nosuch'" "$DPD" eval --data "$T/a" --nosuch

# --- train-pa: outputs, reruns, resume ---
run() { "$DPD" train-pa --data "$T/a" --hidden 6 --frame 40 --stride 20 --batch 32 --seed 3 "$@"; }
run --epochs 3 --out "$T/r1" --json >"$T/r1.json" 2>"$T/r1.err"
D1=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/r1.json")
check '[ "$D1" = "$T/r1/a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194" ]' "train-pa: run dir is <out>/<dataset>/train_pa/<RUN_ID> (got '$D1')"
check 'for f in config.json history.csv best.csv best.safetensors last.safetensors events.jsonl; do [ -s "$D1/$f" ] || exit 1; done' \
    "train-pa: run directory holds every file"
check '[ "$(wc -l < "$D1/history.csv")" -eq 4 ] && head -1 "$D1/history.csv" | grep -q "^EPOCH,N_EPOCH,TIME:,LR,BATCH_SIZE,N_PARAM,FRAME_LENGTH,BACKBONE,HIDDEN_SIZE,TRAIN_LOSS,VAL_LOSS,VAL_NMSE,"' \
    "train-pa: history.csv has OpenDPD's columns and one row per epoch"
check 'grep -q "\"epochs\":3,\"best_epoch\":[1-3],\"val\":{\"NMSE\":.*\"ACLR_AVG\":.*\"test\":{\"NMSE\":" "$T/r1.json" && isjson "$T/r1.json"' \
    "train-pa --json summary keys, best_epoch 1-based"
check '[ "$(grep -c "\"type\":\"epoch\"" "$D1/events.jsonl")" -eq 3 ] && grep -q "\"type\":\"epoch\",\"epoch\":1," "$D1/events.jsonl"' "events.jsonl: one epoch event per epoch, from epoch 1"
check 'grep -q "^epoch 1/3 train_loss" "$T/r1.err" && grep -q "^epoch 3/3 train_loss" "$T/r1.err" && [ "$(grep -c "^epoch [0-9]*/3 train_loss" "$T/r1.err")" -eq 3 ] && ! grep -q "^epoch 0/" "$T/r1.err"' \
    "train-pa: one plain progress line per epoch when stderr is not a terminal, epochs 1..3"
check '[ "$(grep -cE "^epoch [1-3]/3 train_loss .* \| elapsed [0-9]{2}:[0-9]{2} remaining [0-9]{2}:[0-9]{2}( \*)?$" "$T/r1.err")" -eq 3 ] &&
    grep -qE "^epoch 3/3 .* remaining 00:00( \*)?$" "$T/r1.err"' "train-pa: each epoch line ends with the run's elapsed and remaining time, none left after the last"
check '[ "$(grep -c "^dpd: a line per epoch: .* \* = new best val NMSE (best.safetensors saved)$" "$T/r1.err")" -eq 1 ] &&
    [ "$(grep -c "^epoch .* \*$" "$T/r1.err")" -eq "$(grep -c "\"type\":\"epoch\".*\"improved\":true" "$D1/events.jsonl")" ]' \
    "train-pa: the legend printed once names the selection metric, and '*' marks exactly the improved epochs"
if script -qc true /dev/null >/dev/null 2>&1 </dev/null; then
    script -qec "'$DPD' train-pa --data '$T/a' --hidden 6 --frame 40 --stride 20 --batch 32 --seed 3 --epochs 2 --no-plots --out '$T/tty'" \
        /dev/null >"$T/tty.txt" 2>&1 </dev/null; rc=$?
    tr "\r" "\n" <"$T/tty.txt" >"$T/tty.lines"
    check '[ $rc -eq 0 ] && grep -q "^.\[Kepoch 1/2 \[[#.]*\] [0-9]*/[0-9]* loss [0-9.e+-]* [0-9]* samples/s ETA [0-9][0-9]:[0-9][0-9]$" "$T/tty.lines" &&
        grep -q "^.\[Kepoch 2/2 \[####################\] .* best NMSE -*[0-9.]* (epoch 1) ETA 00:00$" "$T/tty.lines"' \
        "train-pa on a terminal: the bar shows epoch i/2, samples/s, the best val NMSE so far and the run's ETA (exit $rc: $(grep -a "epoch 2/2 \[" "$T/tty.lines" | tail -n 1))"
else
    echo "SKIP cli terminal bar (train-pa): no script(1) to give dpd a pseudo-terminal (util-linux)"; skip=$((skip + 1))
fi
check '! ls "$D1" | grep -q tmp' "train-pa: no temporary files left"
run --epochs 3 --out "$T/r2" >/dev/null 2>&1
D2="$T/r2/a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194"
check 'cmp -s "$D1/best.safetensors" "$D2/best.safetensors"' "same seed and config: byte-identical best.safetensors"
for th in 1 2 3 4; do run --epochs 2 --threads $th --out "$T/th$th" >/dev/null 2>&1; done
TH=a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194/last.safetensors
data "$T/th1/$TH" >"$T/th.data"
check 'for th in 2 3 4; do data "$T/th$th/$TH" | cmp -s - "$T/th.data" || exit 1; done' \
    "training with 1, 2, 3 and 4 threads gives bit-identical weights and optimizer state"
run --epochs 3 --out "$T/r1" >/dev/null 2>&1
check '[ -d "$D1-2" ] && cmp -s "$D1/best.safetensors" "$D1-2/best.safetensors"' "a rerun into the same out gets a new directory (-2), never overwriting"
run --epochs 1 --out "$T/r3" >/dev/null 2>&1
D3="$T/r3/a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194"
"$DPD" train-pa --resume "$D3" --epochs 3 --json >"$T/r3.json" 2>/dev/null
data "$D3/last.safetensors" >"$T/r3.last"
check 'data "$D1/last.safetensors" | cmp -s - "$T/r3.last"' \
    "stopped after 1 epoch and resumed to 3: same weights and optimizer state as 3 straight"
check 'cmp -s "$D1/best.safetensors" "$D3/best.safetensors" && [ "$(wc -l < "$D3/history.csv")" -eq 4 ]' \
    "resumed run: same best checkpoint and a continuous history"
check 'grep -q "\"epochs\":3" "$T/r3.json"' "resume --json summary"
expect 2 "cannot change a resumed run" "$DPD" train-pa --resume "$D3" --hidden 9
expect 2 "has finished epoch 3, and 3 asks for no more (pass a larger --epochs to continue it)" "$DPD" train-pa --resume "$D3"
expect 2 "dpd: --model: 'nosuch' is not one of gru," "$DPD" train-pa --data "$T/a" --model nosuch --epochs 1 --out "$T/r4"
expect 2 "preset 'medium' (quick or full)" "$DPD" train-pa --data "$T/a" --preset medium
"$DPD" train-pa --data "$T/nosuch" --epochs 1 --out "$T/r4" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -ne 0 ] && grep -qF "$T/nosuch" "$T/err" && [ ! -e "$T/r4" ]' "train-pa --data with a path that does not exist says so (exit $rc: $(head -c 200 "$T/err"))"
expect 2 "--resume takes the run directory, and '$D3/last.safetensors' is a file" "$DPD" train-pa --resume "$D3/last.safetensors" --epochs 4
"$DPD" train-pa --resume "$T/nosuch-run" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -ne 0 ] && grep -qF "$T/nosuch-run" "$T/err"' "train-pa --resume with a path that does not exist says so (exit $rc: $(head -c 200 "$T/err"))"
mkdir -p "$T/notrun"
expect 1 "dpd: --pa: $T/notrun: a directory without best.safetensors (not a run directory)" "$DPD" train-dpd --pa "$T/notrun" --data "$T/a" --out "$T/r4"
"$DPD" train-dpd --resume "$T/nosuch-run" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -ne 0 ] && grep -qF "$T/nosuch-run" "$T/err"' "train-dpd --resume with a path that does not exist says so (exit $rc: $(head -c 200 "$T/err"))"
expect 2 "dpd: --hidden: 100000" "$DPD" train-pa --data "$T/a" --hidden 100000 --epochs 1 --out "$T/r4"
expect 2 "dpd: --batch-eval: " "$DPD" train-pa --data "$T/a" --batch-eval 0 --epochs 1 --out "$T/r4"
"$DPD" train-pa --data "$T/a" --hidden 6 --frame 40 --stride 20 --lr 1e9 --epochs 2 --out "$T/r4" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "^dpd: .*diverged" "$T/err"' "a diverged run exits 1 and says so (exit $rc: $(tail -n 1 "$T/err"))"
check '[ ! -e "$T/r4" ]' "refused runs, and a run that diverged in its first epoch, leave no run directory, nor the parents made for it ($(find "$T/r4" 2>/dev/null | head -n 3))"
"$DPD" train-pa --data "$T/a" --hidden 6 --frame 40 --stride 20 --lr 1e9 --epochs 2 --out "$T/r4" --json >"$T/dv.json" 2>/dev/null; rc=$?
check '[ $rc -eq 1 ] && jq1 "$T/dv.json" "j[\"outcome\"] == \"diverged\" and j[\"run_dir\"] is None and \"diverged\" in j[\"error\"]"' \
    "a diverged run with --json says its outcome on stdout, as a cancelled one does (exit $rc: $(head -c 200 "$T/dv.json"))"
mkdir -p "$T/r5/a/train_pa/other-run"
"$DPD" train-pa --data "$T/a" --hidden 6 --frame 40 --stride 20 --lr 1e9 --epochs 2 --out "$T/r5" >/dev/null 2>&1
check '[ -d "$T/r5/a/train_pa/other-run" ] && [ "$(ls -A "$T/r5/a/train_pa")" = other-run ]' "a removed run leaves a parent that holds another run"
run --epochs 1 --model GRU --out "$T/up" >/dev/null 2>"$T/err"
run --epochs 1 --model gru --out "$T/lo" >/dev/null 2>&1
check 'cmp -s "$T/up/a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194/best.safetensors" "$T/lo/a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194/best.safetensors"' \
    "model names are case-insensitive: --model GRU trains the gru run ($(tail -n 1 "$T/err"))"
expect 2 "fewer than one frame" "$DPD" train-pa --data "$T/a" --frame 99999 --epochs 1 --out "$T/r4"
head -c 100 "$D1/best.safetensors" >"$T/trunc.safetensors"
expect 1 "trunc.safetensors: not a valid checkpoint: header length is larger than the file (truncated?)" "$DPD" eval --data "$T/a" --split val --model "$T/trunc.safetensors"
# a checkpoint's metadata keys are the file's words, not flags: "family" stays "family"
sed 's/"family":"gru"/"family":"grx"/' "$D1/best.safetensors" >"$T/grx.safetensors"
expect 1 "dpd: --model: $T/grx.safetensors: family: 'grx' is not one of gru," "$DPD" run --model "$T/grx.safetensors" --input "$T/a/test_input.csv" --output "$T/grx.csv"
"$DPD" eval --data "$T/a" --split val --model "$D1/best.safetensors" --json >"$T/evm.json" 2>/dev/null
check '[ "$(num model NMSE "$T/evm.json")" = "$(sed -n "s/.*\"val\":{\"NMSE\":\(-*[0-9.]*\).*/\1/p" "$T/r1.json")" ]' \
    "eval --model reproduces the run's best validation NMSE"

# --- every family trains through train-pa ---
for fam in gru dgru lstm tres_gru tres_deltagru deltagru rvtdcnn vdlstm pgjanet dvrjanet tcn gmp mp gmp_ls; do
    sz="--hidden 4"
    case $fam in gmp) sz="" ;; mp) sz="--K 3 --Q 4" ;; gmp_ls) sz="--K 3 --Q 4 --M 1" ;; dvrjanet) sz="--hidden 4 --units 2" ;; esac
    "$DPD" train-pa --data "$T/a" --model $fam $sz --epochs 1 --frame 40 --stride 200 \
        --out "$T/fam" --json >"$T/fam.json" 2>"$T/err"
    nm=$(num val NMSE "$T/fam.json")
    check '[ -n "$nm" ]' "train-pa --model $fam: one epoch, finite NMSE ($(tail -n 1 "$T/err"))"
done
"$DPD" models >"$T/models.txt"
"$DPD" models --json >"$T/models.json"
check 'jq1 "$T/models.json" "len(j) == 14 and j[0][\"family\"] == \"gru\""' "dpd models --json: 14 families"
check '[ "$(grep -c "^[a-z_]*  *[0-9][0-9]*  *1" "$T/models.txt")" -eq 14 ] && grep -q "^tres_deltagru  *15  *1  *999 " "$T/models.txt" &&
       grep -q "^family  *usual H " "$T/models.txt" && grep -q "train H 23 and 15 for every family unless --hidden" "$T/models.txt"' \
    "dpd models lists the 14 families with their usual sizes, and says what train-pa trains by default"
expect 2 "dpd: unknown option '--bogus' (see --help)" "$DPD" models --json --bogus
expect 2 "dpd: unknown option '--hiden' (did you mean '--hidden'? see --help)" "$DPD" train-pa --data "$T/a" --hiden 4
expect 2 "dpd: unknown option '--x' (see --help)" "$DPD" fit-ls --data "$T/a" --x 4

# --- train-dpd through the frozen PA of r1 ---
drun() { "$DPD" train-dpd --data "$T/a" --pa "$D1" --hidden 5 --frame 40 --stride 20 --batch 32 --seed 3 "$@"; }
drun --epochs 2 --out "$T/d1" --json >"$T/d1.json" 2>"$T/d1.err"
E1="$T/d1/a/train_dpd/PA_S_3_M_GRU_H_6_F_40/DPD_S_3_M_GRU_H_5_F_40_P_147"
check '[ -s "$E1/best.safetensors" ] && [ -s "$E1/pa.safetensors" ]' "train-dpd: run dir <out>/<ds>/train_dpd/<PA_DIR>/<DPD_ID> ($(cat "$T/d1.err" | tail -n 2))"
check 'grep -q "\"no_dpd\":{\"NMSE\":.*\"ACLR_AVG\"" "$T/d1.json" && grep -q "\"test\":{\"NMSE\":" "$T/d1.json"' "train-dpd --json has val, test and no_dpd"
check '[ "$(grep -c "worse than no DPD" "$T/d1.err")" -eq "$(awk "BEGIN { print ($(num test ACLR_AVG "$T/d1.json") > $(num no_dpd ACLR_AVG "$T/d1.json")) }")" ]' \
    "train-dpd warns that the DPD leaves ACLR worse than no DPD exactly when its test ACLR_AVG is ($(grep "worse" "$T/d1.err"))"
# a resumed DPD run without its own copy of the PA reads config.json's pa: a missing one is named as that, not as --pa
cp -r "$E1" "$T/e1nopa" && rm "$T/e1nopa/pa.safetensors" &&
    sed 's|"pa": *"[^"]*"|"pa": "'"$T"'/nosuch-pa"|' "$E1/config.json" >"$T/e1nopa/config.json"
expect 1 "dpd: $T/e1nopa/config.json: pa: $T/nosuch-pa does not exist (the run has no pa.safetensors of its own)" \
    "$DPD" train-dpd --resume "$T/e1nopa" --epochs 9
data "$D1/best.safetensors" >"$T/pa.data"
check 'data "$E1/pa.safetensors" | cmp -s - "$T/pa.data"' "the frozen PA's weights are bitwise unchanged after DPD training"
check 'sed -n 2p "$E1/history.csv" | grep -q "^1,2,[0-9.]*,0.00500000,32,341,40,gru,5,"' "DPD history: epoch 1 first, N_PARAM counts PA + DPD (194 + 147)"
drun --epochs 1 --out "$T/d2" >/dev/null 2>&1
E2="$T/d2/a/train_dpd/PA_S_3_M_GRU_H_6_F_40/DPD_S_3_M_GRU_H_5_F_40_P_147"
# on a terminal (script(1) from util-linux gives the run a pseudo-terminal) the resumed run's bar shows the best epoch
# from before the resume, by the DPD's selection metric
if script -qc true /dev/null >/dev/null 2>&1 </dev/null; then
    script -qec "'$DPD' train-dpd --resume '$E2' --epochs 2" /dev/null >"$T/tty-dpd.txt" 2>&1 </dev/null
    check 'tr "\r" "\n" <"$T/tty-dpd.txt" | grep -q "^.\[Kepoch 2/2 \[[#.]*\] [0-9]*/[0-9]* loss .* best ACLR -[0-9.]* (epoch 1) ETA [0-9][0-9]:[0-9][0-9]$"' \
        "train-dpd --resume on a terminal: the bar shows epoch 2/2, the best val ACLR of epoch 1 and the ETA ($(tr "\r" "\n" <"$T/tty-dpd.txt" | grep -a "epoch 2/2 \[" | tail -n 1))"
else
    "$DPD" train-dpd --resume "$E2" --epochs 2 >/dev/null 2>&1
    echo "SKIP cli terminal bar (train-dpd): no script(1) to give dpd a pseudo-terminal (util-linux)"; skip=$((skip + 1))
fi
check 'grep -q "^dpd: a line per epoch: .* \* = new best val ACLR (best.safetensors saved)$" "$T/d1.err"' "train-dpd: the legend names ACLR as the selection metric"
data "$E2/last.safetensors" >"$T/e.last"
check 'data "$E1/last.safetensors" | cmp -s - "$T/e.last"' \
    "train-dpd resumed after 1 epoch equals 2 straight epochs"
expect 2 "is a train_dpd checkpoint, not a PA model (--pa needs a train-pa run; the DPD run's frozen PA is $E1/pa.safetensors)" \
    "$DPD" train-dpd --data "$T/a" --pa "$E1" --epochs 1 --out "$T/d3"
expect 2 "dpd: --resume: $E2 is a DPD run: resume it with dpd train-dpd --resume '$E2'" "$DPD" train-pa --resume "$E2" --epochs 3
expect 2 "dpd: --resume: $D1 is a PA model run: resume it with dpd train-pa --resume '$D1'" "$DPD" train-dpd --resume "$D1" --epochs 9
mkdir -p "$T/other" && cp "$T/a/"* "$T/other/"
mkdir -p "$T/q\"x\\y" && cp "$T/a/"* "$T/q\"x\\y/"
"$DPD" eval --data "$T/q\"x\\y" --split val --json >"$T/q.json" 2>/dev/null
check 'grep -q "^{\"dataset\":\"q\\\\\"x\\\\\\\\y\",\"split\":\"val\"" "$T/q.json"' "--json escapes free text: a dataset named q\"x\\y ($(head -c 80 "$T/q.json"))"
# a PA's data is its train split's samples (their fingerprint in the checkpoint), not the directory's name
"$DPD" train-dpd --data "$T/other" --pa "$D1" --hidden 5 --frame 40 --stride 20 --epochs 1 --out "$T/d3" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && ! grep -q "trained on" "$T/err"' "train-dpd takes a PA trained on a renamed copy of its dataset (exit $rc: $(head -c 200 "$T/err"))"
check 'python3 -c "
import json, struct, sys
b = open(sys.argv[1], \"rb\").read(); n = struct.unpack(\"<Q\", b[:8])[0]
m = json.loads(b[8:8 + n])[\"__metadata__\"]
sys.exit(0 if len(m[\"train_sha256\"]) == 64 and m[\"dataset\"] == \"a\" else 1)" "$D1/best.safetensors"' \
    "a checkpoint's metadata carries its train split's fingerprint (train_sha256, 64 hex digits) beside the dataset's name"
mkdir -p "$T/a2" && cp "$T/a/"* "$T/a2/" && awk -F, -v OFS=, 'NR == 3 { $1 = $1 + 1e-3 } { print }' "$T/a/train_output.csv" >"$T/a2/train_output.csv"
expect 2 "was trained on another train split than $T/a2's (dataset 'a' then" "$DPD" train-dpd --data "$T/a2" --pa "$D1" --epochs 1 --out "$T/d3b"
check '[ ! -e "$T/d3b" ]' "the refused train-dpd leaves no run directory"
"$DPD" eval --data "$T/a2" --split val --model "$D1" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: --model .* was trained on another train split than $T/a2.s" "$T/err"' \
    "dpd eval warns (does not refuse) when the model's train split is not the dataset's, one sample off (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" eval --data "$T/other" --split val --model "$D1" >/dev/null 2>"$T/err"
check '! grep -q "trained on" "$T/err"' "dpd eval of a renamed copy: no warning ($(head -c 200 "$T/err"))"
# the sample rate: a checkpoint records its dataset's; data at another rate is warned about, not refused
check 'python3 -c "import json, struct, sys
b = open(sys.argv[1], \"rb\").read(); n = struct.unpack(\"<Q\", b[:8])[0]
m = json.loads(b[8:8 + n])[\"__metadata__\"]; s = json.load(open(sys.argv[2]))
sys.exit(0 if float(m[\"input_signal_fs\"]) == s[\"input_signal_fs\"] else 1)" "$D1/best.safetensors" "$T/a/spec.json"' \
    "a checkpoint's metadata carries its dataset's sample rate (input_signal_fs)"
mkdir -p "$T/a3" && cp "$T/a/"* "$T/a3/" && sed 's/"input_signal_fs": [0-9.e+]*/"input_signal_fs": 1e9/' "$T/a/spec.json" >"$T/a3/spec.json"
"$DPD" eval --data "$T/a3" --split val --model "$D1" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: --model .* was trained on data sampled at 800 MHz, and the dataset $T/a3 is sampled at 1 GHz" "$T/err"' \
    "dpd eval warns (does not refuse) when the data's sample rate is not the model's (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" run --model "$D1" --input "$T/a/test_input.csv" --output "$T/rate.csv" --fs 1e9 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: .*best.safetensors was trained on data sampled at 800 MHz, and $T/a/test_input.csv is sampled at 1 GHz" "$T/err"' \
    "dpd run --fs at another rate than the model's: a warning (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" run --model "$D1" --input "$T/a/test_input.csv" --output "$T/rate.csv" --fs 8e8 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && ! grep -q "sampled at" "$T/err" && ! grep -q "trained on" "$T/err"' \
    "dpd run --fs at the model's rate, on its own test split: no warning ($(head -c 200 "$T/err"))"
# the drive level: a checkpoint records its train split's input peak and RMS; an input beyond them is warned about
check 'python3 -c "import json, math, struct, sys
b = open(sys.argv[1], \"rb\").read(); n = struct.unpack(\"<Q\", b[:8])[0]
m = json.loads(b[8:8 + n])[\"__metadata__\"]
x = [complex(*map(float, l.split(\",\"))) for l in open(sys.argv[2]).read().split()[1:]]
pk = max(map(abs, x)); on = [abs(v) ** 2 for v in x if abs(v) ** 2 >= 1e-6 * pk * pk and v]; rms = math.sqrt(sum(on) / len(on))
sys.exit(0 if abs(float(m[\"train_input_peak\"]) / pk - 1) < 1e-12 and abs(float(m[\"train_input_rms\"]) / rms - 1) < 1e-12 else 1)" "$D1/best.safetensors" "$T/a/train_input.csv"' \
    "a checkpoint's metadata carries its train split's input peak and RMS within 60 dB of it (train_input_peak, train_input_rms)"
awk -F, 'NR == 1 { print; next } { printf "%.9g,%.9g\n", $1 * 1.5, $2 * 1.5 }' "$T/a/test_input.csv" >"$T/loud.csv"
awk -F, 'NR == 1 { print; next } { printf "%.9g,%.9g\n", $1 * 0.4, $2 * 0.4 }' "$T/a/test_input.csv" >"$T/quiet.csv"
"$DPD" run --model "$D1" --input "$T/loud.csv" --output "$T/loud-out.csv" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/loud-out.csv" ] && grep -q "^dpd: warning: [0-9]* samples of $T/loud.csv ([0-9.]* %) exceed |x| = [0-9.]*, the largest input .*best.safetensors was trained on (up to |x| = [0-9.]*, [0-9.]* dB beyond): the model never saw that range" "$T/err"' \
    "dpd run of an input louder than the training input's peak: a warning, the output written (exit $rc: $(head -c 300 "$T/err"))"
# seed 2's test split peaks at 1 and its train split at 0.889: three samples beyond, the luck of another stretch
"$DPD" synth --out "$T/s2" --seed 2 >/dev/null && "$DPD" train-pa --data "$T/s2" --hidden 3 --preset quick --epochs 1 --out "$T/s2r" --no-plots >/dev/null 2>&1
"$DPD" run --model "$(ls -d "$T"/s2r/s2/train_pa/*)" --input "$T/s2/test_input.csv" --output "$T/s2-out.csv" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/s2-out.csv" ] && ! grep -q "warning" "$T/err"' \
    "dpd run on the model's own test split, whose peak is above the train split's by a few samples: no warning ($(head -c 300 "$T/err"))"
"$DPD" run --model "$D1" --input "$T/quiet.csv" --output "$T/quiet-out.csv" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/quiet-out.csv" ] && grep -q "^dpd: warning: $T/quiet.csv is [0-9.]* dB below the input .*best.safetensors was trained on (RMS " "$T/err"' \
    "dpd run of an input 8 dB quieter than the training input: a warning naming the difference (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" run --model "$D1" --input "$T/bom/val_input.csv" --output "$T/bom-out.csv" >/dev/null 2>"$T/err"; rc=$?
"$DPD" run --model "$D1" --input "$T/a/val_input.csv" --output "$T/nobom-out.csv" >/dev/null 2>&1
check '[ $rc -eq 0 ] && cmp -s "$T/bom-out.csv" "$T/nobom-out.csv"' \
    "dpd run reads a CSV with a byte-order mark and 'I, Q' as the plain one (exit $rc: $(head -c 300 "$T/err"))"
ncpu=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
"$DPD" run --model "$D1" --input "$T/a/val_input.csv" --output "$T/th-out.csv" --threads $((ncpu + 1)) >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$T/th-out.csv" "$T/nobom-out.csv" && { [ "$ncpu" -ge 1024 ] || grep -q "^dpd: warning: --threads $((ncpu + 1)) is more than the $ncpu logical processor" "$T/err"; }' \
    "dpd run --threads $((ncpu + 1)): the same output, and a warning that the threads outnumber the $ncpu processors (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" run --model "$D1" --input "$T/a/val_input.csv" --output "$T/both-out.csv" --threads 2 --cpu-level low >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 2 ] && [ ! -e "$T/both-out.csv" ] && grep -q "^dpd: --threads 2 and --cpu-level low both set the worker threads: give one of them" "$T/err"' \
    "--threads with --cpu-level: refused, nothing written (exit $rc: $(head -c 300 "$T/err"))"
# a PA trained at 800 MHz, a DPD trained through it on the same samples labelled 1 GHz: a warning, and
# the run's pa.safetensors keeps the PA's own dataset and rate, so that dpd eval --pa RUN_DIR warns too
"$DPD" train-dpd --data "$T/a3" --pa "$D1" --hidden 3 --frame 40 --stride 20 --epochs 1 --out "$T/d5" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: pa: .* was trained on data sampled at 800 MHz, and $T/a3 is sampled at 1000 MHz" "$T/err"' \
    "train-dpd through a PA trained at another sample rate: a warning (exit $rc: $(head -c 300 "$T/err"))"
E5=$(ls -d "$T"/d5/a3/train_dpd/*/DPD_* 2>/dev/null | head -n 1)
check 'python3 -c "import json, struct, sys
b = open(sys.argv[1], \"rb\").read(); n = struct.unpack(\"<Q\", b[:8])[0]
m = json.loads(b[8:8 + n])[\"__metadata__\"]
sys.exit(0 if m[\"dataset\"] == \"a\" and float(m[\"input_signal_fs\"]) == 8e8 else 1)" "$E5/pa.safetensors"' \
    "a DPD run's pa.safetensors names the PA's own dataset and sample rate, not the DPD's"
"$DPD" eval --data "$T/a3" --split val --pa "$E5" --model "$E5" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: --pa .* was trained on data sampled at 800 MHz" "$T/err" && ! grep -q "^dpd: warning: --model .*sampled at" "$T/err"' \
    "dpd eval --pa DPD_RUN warns of its PA's rate, not of the DPD's (exit $rc: $(head -c 300 "$T/err"))"
expect 2 "needs --data DIR and --pa PA" "$DPD" train-dpd --data "$T/a"
drun --model tres_deltagru --hidden 4 --thx 0.01 --thh 0.05 --epochs 1 --out "$T/d4" >/dev/null 2>&1
E4=$(ls -d "$T"/d4/a/train_dpd/*/DPD_S_3_M_TRES_DELTAGRU_H_4_F_40_P_*_THX_0.010_THH_0.050 2>/dev/null)
check '[ -n "$E4" ] && head -1 "$E4/history.csv" | grep -q "HIDDEN_SIZE,THX,THH,SP_T_DX,SP_T_DH,SP_T_DV,HW_PARAM,TRAIN_LOSS" && sed -n 2p "$E4/history.csv" | grep -q ",4,0.01000000,0.05000000,0.[0-9]*,0.[0-9]*,0.[0-9]*,[0-9.]*,"' \
    "train-dpd with a delta family: _THX_/_THH_ id and the sparsity columns"
expect 1 "trunc.safetensors: not a valid checkpoint" "$DPD" train-dpd --data "$T/a" --pa "$T/trunc.safetensors" --epochs 1 --out "$T/d3"

# --- least-squares baselines ---
"$DPD" fit-ls --data "$T/a" --kind mp --target pa --K 4 --Q 6 --out "$T/lst" >"$T/lst.txt" 2>"$T/err"
check 'grep -q "^dpd: fitting PA_LS_M_MP_K_4_Q_6_P_48 on cpu (least squares on the host)$" "$T/err" && grep -q "^fit train_loss [0-9.e+-]* val NMSE .* | elapsed [0-9:]*$" "$T/err" &&
    ! grep -q "epoch" "$T/err" && grep -q "^least-squares fit (solved on the host)$" "$T/lst.txt" && ! grep -q "epoch" "$T/lst.txt"' \
    "fit-ls says fit, not epoch 1/1: one solve ($(head -c 400 "$T/err"))"
# an input far beyond the training level drives the polynomial to infinity: refused, nothing written
{ echo "I,Q"; echo "0.1,0.2"; echo "1e30,0.3"; echo "0.1,0.1"; } >"$T/huge.csv"
expect 1 "dpd: the model's output is not finite (first at sample 1, 0-based): nothing is written. The input's largest |x| is 1e+30, at sample 1" \
    "$DPD" run --model "$T/lst/a/train_pa/PA_LS_M_MP_K_4_Q_6_P_48" --input "$T/huge.csv" --output "$T/huge_out.csv"
check '[ ! -e "$T/huge_out.csv" ]' "dpd run: a non-finite output leaves no file"
"$DPD" fit-ls --data "$T/a" --kind mp --target pa --K 4 --Q 6 --out "$T/ls" --json >"$T/lp.json" 2>"$T/err"
L1="$T/ls/a/train_pa/PA_LS_M_MP_K_4_Q_6_P_48"
check '[ "$(sed -n "s/.*\"run_dir\":\"\([^\"]*\)\".*/\1/p" "$T/lp.json")" = "$L1" ] && [ -s "$L1/best.safetensors" ] && [ "$(wc -l < "$L1/history.csv")" -eq 2 ]' \
    "fit-ls pa: run directory, checkpoint and one history row ($(cat "$T/err"))"
nm=$(num test NMSE "$T/lp.json")
check 'awk "BEGIN { exit !($nm < -20) }"' "fit-ls mp PA on synthetic data: test NMSE $nm"
BLASLIB="${BUILD:-build}/tests/libblasprobe.so"
case $BLASLIB in /*) ;; *) BLASLIB="$PWD/$BLASLIB" ;; esac
if [ -f "$BLASLIB" ]; then
    : >"$T/blas.log"
    DPD_BLAS_LOG="$T/blas.log" LD_PRELOAD="$BLASLIB" ASAN_OPTIONS=verify_asan_link_order=0 \
        "$DPD" fit-ls --data "$T/a" --kind mp --target pa --K 4 --Q 6 --threads 3 --out "$T/lsb" >/dev/null 2>&1
    check '[ "$(tail -n 1 "$T/blas.log")" = 3 ]' "the worker count reaches a threaded BLAS under LAPACK (OpenBLAS stand-in: $(tr '\n' ' ' <"$T/blas.log"))"
else
    echo "SKIP cli blas threads: $BLASLIB not built"; skip=$((skip + 1))
fi
"$DPD" fit-ls --data "$T/a" --kind gmp --target dpd --pa "$L1" --K 4 --Q 4 --M 1 --iterations 2 --out "$T/ls" --json >"$T/ld.json" 2>"$T/err"
check 'grep -q "\"no_dpd\":{" "$T/ld.json" && awk "BEGIN { exit !($(num test ACLR_AVG "$T/ld.json") < $(num no_dpd ACLR_AVG "$T/ld.json")) }"' \
    "fit-ls gmp DPD by ILA through an MP PA improves ACLR ($(cat "$T/err"))"
"$DPD" eval --data "$T/a" --split test --model "$L1" --json >"$T/le.json"
check '[ "$(num model NMSE "$T/le.json")" = "$nm" ]' "eval --model on a least-squares checkpoint reproduces its test NMSE"
expect 2 "--target dpd needs --pa PA" "$DPD" fit-ls --data "$T/a" --kind mp --target dpd
expect 2 "--pa is for --target dpd" "$DPD" fit-ls --data "$T/a" --kind mp --pa "$D1"
expect 2 "--kind must be mp or gmp (gmp_ls, its family's name, too; got 'volterra')" "$DPD" fit-ls --data "$T/a" --kind volterra
expect 2 "--target must be pa or dpd (got 'both')" "$DPD" fit-ls --data "$T/a" --target both
expect 2 "dpd: --provider: a least-squares fit solves on the host and scores on the cpu: 'cuda' would not be used" "$DPD" fit-ls --data "$T/a" --provider cuda
# contradictory flags are refused, not one of them silently dropped
expect 2 "--legacy-evm: sets the EVM rate to 800 MHz itself: give it or an EVM rate, not both" "$DPD" eval --data "$T/a" --split test --model "$D1" --legacy-evm --evm-fs 1e9
expect 2 "--legacy-evm: sets the EVM rate to 800 MHz itself" "$DPD" train-pa --data "$T/a" --legacy-evm --evm-fs 1e9 --out "$T/r9"
expect 2 "--thh: a delta threshold, which only the delta families have (deltagru, tres_deltagru); lstm has none" "$DPD" train-pa --data "$T/a" --model lstm --thh 0.1 --out "$T/r9"
expect 2 "dpd: --K: nonlinearity orders K, which only the polynomial families have (mp, gmp_ls); gru has none" "$DPD" train-pa --data "$T/a" --model gru --K 3 --out "$T/r9"
expect 2 "dpd: --Q: a depth Q of past samples, which only the polynomial families have (mp, gmp_ls); gmp has none" "$DPD" train-pa --data "$T/a" --model gmp --Q 3 --out "$T/r9"
expect 2 "dpd: --M: envelope lags and leads M, which only gmp_ls (fit-ls --kind gmp) has; mp has none" "$DPD" train-pa --data "$T/a" --model MP --M 1 --out "$T/r9"
expect 2 "dpd: --units: a DVR unit count K, which only dvrjanet has; pgjanet has none" "$DPD" train-dpd --data "$T/a" --pa "$D1" --model pgjanet --units 2 --out "$T/r9"
expect 2 "dpd: --hidden: a layer width H, which only the neural families have (not gmp, mp or gmp_ls); gmp has none" "$DPD" train-pa --data "$T/a" --model gmp --hidden 8 --out "$T/r9"
expect 2 "--exact runs the recording as one sequence: --warmup" "$DPD" run --model "$D1" --input "$T/a/test_input.csv" --output "$T/r9.csv" --exact --warmup 5
check '[ ! -e "$T/r9" ] && [ ! -e "$T/r9.csv" ]' "refused flags leave nothing behind"
expect 2 "dpd: --K: 0 is out of range 1..16" "$DPD" fit-ls --data "$T/a" --kind mp --K 0 --out "$T/ls"

# --- eval of the cascade, and dpd run ---
"$DPD" eval --data "$T/a" --split test --pa "$E1" --model "$E1" --json >"$T/ce.json" 2>/dev/null
check '[ "$(num dpd ACLR_AVG "$T/ce.json")" = "$(num test ACLR_AVG "$T/d1.json")" ] && [ "$(num no_dpd ACLR_AVG "$T/ce.json")" = "$(num no_dpd ACLR_AVG "$T/d1.json")" ]' \
    "eval --pa RUN --model RUN reproduces train-dpd's test and no-DPD ACLR"
check 'jq1 "$T/ce.json" "abs(j[\"improvement_db\"] - (j[\"no_dpd\"][\"ACLR_AVG\"] - j[\"dpd\"][\"ACLR_AVG\"])) < 1e-12"' \
    "eval --pa --model --json: improvement_db is no_dpd's ACLR_AVG less dpd's"
# the measured PA without DPD (the capture's y against g x): as train-dpd gives it, its ACLR the PA
# view's measured output ACLR, its NMSE that of y against g x (computed here in numpy-free Python)
"$DPD" eval --data "$T/a" --split test --json >"$T/pv.json" 2>/dev/null
python3 - "$T/ce.json" "$T/d1.json" "$T/pv.json" "$T/a" <<'PY' >"$T/mea.txt" 2>&1; rc=$?
import csv, json, sys
ce, d1, pv = (json.load(open(p)) for p in sys.argv[1:4])
m, t, o = ce["measured"], d1["measured"], pv["output_aclr"]
same = all(abs(m[k] - t[k]) < 1e-9 for k in m if k != "status") and abs(m["ACLR_AVG"] - o["AVG"]) < 1e-9
rd = lambda f: [(float(r["I"]), float(r["Q"])) for r in csv.DictReader(open(sys.argv[4] + "/" + f))]
x, y, g = rd("test_input.csv"), rd("test_output.csv"), ce["gain"]
err = sum((a - g * c) ** 2 + (b - g * d) ** 2 for (a, b), (c, d) in zip(y, x))
ref = sum((g * c) ** 2 + (g * d) ** 2 for c, d in x)
import math
nmse = 10 * math.log10(err / ref)
print(f"measured {m}, train-dpd's {t}, output ACLR {o}, NMSE by hand {nmse:.4f}")
sys.exit(0 if same and abs(nmse - m["NMSE"]) < 0.01 else 1)
PY
check '[ $rc -eq 0 ]' "eval --pa and train-dpd: the measured PA without DPD, the capture's y against g x ($(head -c 400 "$T/mea.txt"))"
"$DPD" eval --data "$T/a" --split test --pa "$E1" --model "$E1" >"$T/ce.txt" 2>/dev/null
check 'grep -q "^no DPD " "$T/ce.txt" && grep -q "^no DPD: the frozen PA model driven by x itself, against g x" "$T/ce.txt"' \
    "eval --pa --model: the table says its no-DPD row is the PA model's figure ($(tail -n 3 "$T/ce.txt"))"
"$DPD" eval --data "$T/a" --split test --pa "$E1" --model "$E1" --metric-profile opendpd-spectral-v2 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: under opendpd-spectral-v2 the input g x itself scores ACLR_AVG -[0-9.]* dBc, within 10 dB of the no-DPD output.s -[0-9.]*: .* not the PA model, and a DPD that reaches g x improves them by at most that difference (frame seams" "$T/err"' \
    "eval --pa --model under a Welch profile on framed data: the target's own leakage bounds the DPD's improvement, and eval says so (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" eval --data "$T/a" --split test --pa "$E1" --model "$E1" >/dev/null 2>"$T/err"
check '! grep -q "itself scores" "$T/err"' "eval --pa --model under the legacy profile: no leak warning on clean data ($(head -c 300 "$T/err"))"
# maxdev A B: largest |I - I'| and |Q - Q'| of the outputs over max |output|, from two run CSVs (I,Q,I_in,Q_in)
maxdev() { paste -d, "$1" "$2" | tail -n +2 | awk -F, '{for(k=1;k<=2;k++){d=$k-$(k+4); if(d<0)d=-d; if(d>m)m=d; a=$k<0?-$k:$k; if(a>r)r=a}} END {printf "%.3g", m/r}'; }
"$DPD" run --model "$E1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/ex.csv" --exact 2>/dev/null
"$DPD" run --model "$E1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/se.csv" --section 1000 2>/dev/null
check '[ "$(wc -l < "$T/ex.csv")" -eq 7681 ] && head -1 "$T/ex.csv" | grep -qx "I,Q,I_in,Q_in" && [ "$(sed -n 2p "$T/ex.csv" | cut -d, -f3,4)" = "$(sed -n 2p "$T/a/test_input.csv")" ]' \
    "run: CSV output is the predistorted I,Q then the input I_in,Q_in, with the input values kept"
dev=$(maxdev "$T/ex.csv" "$T/se.csv")
check 'awk "BEGIN { exit !($dev <= 1e-5) }"' "run: sectioned vs exact deviation $dev > 1e-5"
perl -e 'open(F, "<", $ARGV[0]); <F>; while (<F>) { chomp; my @v = split /,/; print pack("f<f<", $v[0], $v[1]); }' "$T/a/test_input.csv" >"$T/in.cf32"
"$DPD" run --model "$E1/best.safetensors" --input "$T/in.cf32" --output "$T/out.cf32" --exact 2>/dev/null
check '[ "$(wc -c < "$T/out.cf32")" -eq 61440 ] && [ "$(perl -e "open(F,q(<),q($T/out.cf32)); read(F,\$b,8); printf(q(%.9g,%.9g), unpack(q(f<f<),\$b))")" = "$(sed -n 2p "$T/ex.csv" | cut -d, -f1,2)" ]' \
    "run: .cf32 in and out, same values as the CSV path"
head -c 13 "$T/in.cf32" >"$T/odd.cf32"
expect 1 "13 bytes is not a whole number" "$DPD" run --model "$E1/best.safetensors" --input "$T/odd.cf32" --output "$T/bad.cf32"
check '[ ! -e "$T/bad.cf32" ] && ! ls "$T" | grep -q "bad.cf32.tmp"' "run: no partial output after an error"
: >"$T/empty.csv"
expect 1 "empty.csv: empty file" "$DPD" run --model "$E1/best.safetensors" --input "$T/empty.csv" --output "$T/bad.csv"
printf 'a,b,c\n1,2,3\n' >"$T/cols.csv"
expect 1 "cols.csv:1: the header names no columns I and Q and has 3 columns: name the I and Q columns (others are ignored), or give exactly 2, read as I then Q" "$DPD" run --model "$E1/best.safetensors" --input "$T/cols.csv" --output "$T/bad.csv"
printf 'I;Q\n0,5;0,25\n' >"$T/semi.csv"
expect 1 "semi.csv:1: the header names no columns I and Q and has 1 column: name the I and Q columns (others are ignored), or give exactly 2, read as I then Q: its fields are separated by ';'" "$DPD" run --model "$E1/best.safetensors" --input "$T/semi.csv" --output "$T/bad.csv"
printf 'I,Q,I_in,Q_in\n1,2,3,4\nabc,2,3,4\n' >"$T/bad4.csv"
expect 1 "bad4.csv:3: field 1 ('abc') is not a number" "$DPD" run --model "$E1/best.safetensors" --input "$T/bad4.csv" --output "$T/bad.csv"
printf 'I,Q,i,q\n1,2,0,0\n' >"$T/twice.csv"
expect 1 "twice.csv:1: header names column 'I' twice (fields 1 and 3; names match in any case)" "$DPD" run --model "$E1/best.safetensors" --input "$T/twice.csv" --output "$T/bad.csv"
awk -F, 'NR == 1 { print "real,imag"; next } { print }' "$T/a/test_input.csv" >"$T/ri.csv"
"$DPD" run --model "$E1/best.safetensors" --input "$T/ri.csv" --output "$T/ri-out.csv" 2>"$T/err"; rc=$?
"$DPD" run --model "$E1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/iq-out.csv" 2>/dev/null
check '[ $rc -eq 0 ] && grep -q "warning: .*ri.csv: its header names no columns I and Q: read as I then Q, by position" "$T/err" && cmp -s "$T/ri-out.csv" "$T/iq-out.csv"' \
    "run: a two-column input named otherwise is read by position with a warning, as a dataset's (exit $rc: $(head -c 300 "$T/err"))"
expect 1 "spec.json: not a safetensors checkpoint: it does not start with a header length and a JSON header" "$DPD" run --model "$T/a/spec.json" --input "$T/a/test_input.csv" --output "$T/bad.csv"
{ printf 'MATLAB 5.0 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024'; head -c 200 /dev/zero; } >"$T/coef.mat"
expect 1 "dpd: --model: $T/coef.mat: not a safetensors checkpoint: it is a MATLAB .mat file" "$DPD" run --model "$T/coef.mat" --input "$T/a/test_input.csv" --output "$T/bad.csv"
expect 2 "input's format" "$DPD" run --model "$E1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/x.cf32"
check '[ ! -e "$T/bad.csv" ]' "run: no output file after errors"
# nothing is written into a dataset: run's --output, plot's --out, the runs' root of a training
cp "$T/a/test_output.csv" "$T/a-test-output.before"
expect 2 "dpd: --output $T/a/test_output.csv lies in the dataset $(cd "$T/a" && pwd -P) (it holds spec.json)" "$DPD" run --model "$E1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/a/test_output.csv"
check 'cmp -s "$T/a/test_output.csv" "$T/a-test-output.before"' "run: a dataset's measured output is not overwritten"
expect 2 "lies in the dataset" "$DPD" run --model "$E1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/a/new/out.csv"
expect 2 "plot: --out $T/a/pics lies in the dataset" "$DPD" plot --data "$T/a" --out "$T/a/pics"
expect 2 "(the runs' root) lies in the dataset" "$DPD" train-pa --data "$T/a" --out "$T/a/runs" --model gru --hidden 4 --epochs 1
: >"$T/afile" # a file as the runs' root: refused before the dataset doctor reads anything
"$DPD" train-pa --data "$T/a" --out "$T/afile" --hidden 4 --epochs 1 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 2 ] && [ "$(cat "$T/err")" = "dpd: --out $T/afile is a file: --out names the runs'"'"' root directory (a PA run goes to OUT/DATASET/train_pa/RUN_ID, a DPD run to OUT/DATASET/train_dpd/PA/RUN_ID)" ]' \
    "train-pa --out FILE: exit 2 at once, the file named (exit $rc: $(head -c 300 "$T/err"))"
abs_dpd=$(cd "$(dirname "$DPD")" && pwd)/$(basename "$DPD")
expect 2 "--out runs (the runs' root) lies in the dataset" sh -c "cd '$T/a' && exec '$abs_dpd' fit-ls --data . --kind mp"
expect 2 "dpd: --out $T/a/inner lies in the dataset" "$DPD" synth --out "$T/a/inner"
expect 2 "dpd: --out $T/a/fixed lies in the dataset" "$DPD" doctor "$T/a" --fix-gain --out "$T/a/fixed"
check '[ ! -e "$T/a/new" ] && [ ! -e "$T/a/pics" ] && [ ! -e "$T/a/runs" ] && [ ! -e "$T/a/new.csv" ] && [ ! -e "$T/a/inner" ] && [ ! -e "$T/a/fixed" ]' \
    "nothing was made in the dataset"
# an empty --out (an unset $OUTDIR) would put the runs at /; a path option followed by an option lacks its value
expect 2 "dpd: --out: an empty path: give the directory the runs go under" "$DPD" train-pa --data "$T/a" --out "" --epochs 1 --hidden 4
expect 2 "dpd: --out: an empty path" "$DPD" fit-ls --data "$T/a" --kind mp --out ""
expect 2 "dpd: option '--out' needs a value, and the next argument is the option '--json'" "$DPD" fit-ls --data "$T/a" --kind mp --out --json
check '[ ! -e ./--json ]' "no directory named --json"
# spec.json saved with a byte-order mark (a Windows editor) reads as without
mkdir -p "$T/sbom" && cp "$T/a/"*.csv "$T/sbom/" && { printf '\357\273\277'; cat "$T/a/spec.json"; } >"$T/sbom/spec.json"
"$DPD" eval --data "$T/sbom" --split test --json >"$T/sbom.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/sbom.json" "j[\"linear_gain\"][\"NMSE\"] < 0"' "spec.json with a byte-order mark is read (exit $rc: $(head -c 200 "$T/err"))"

# --- eval checks a checkpoint's metadata: kind (PA or DPD) and dataset ---
expect 2 "is a DPD checkpoint" "$DPD" eval --data "$T/a" --split test --pa "$E1/best.safetensors" --model "$D1"
expect 2 "both --pa and --model" "$DPD" eval --data "$T/a" --split test --pa "$E1/best.safetensors" --model "$E1/best.safetensors"
expect 2 "both --pa and --model" "$DPD" eval --data "$T/a" --split test --pa "$D1" --model "$D1"
expect 2 "is a DPD checkpoint" "$DPD" eval --data "$T/a" --split test --model "$E1"
"$DPD" eval --data "$T/a2" --split test --model "$D1" --json >"$T/ow.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "trained on another train split than" "$T/err" && isjson "$T/ow.json"' \
    "eval of a checkpoint trained on other samples: a warning, not a refusal, and --json stays JSON (exit $rc: $(head -c 200 "$T/err"))"
"$DPD" eval --data "$T/a" --split test --pa "$D1" --model "$E1" --json >"$T/ce2.json" 2>"$T/err"
check 'cmp -s "$T/ce.json" "$T/ce2.json"' "eval --pa PA_RUN --model DPD_RUN equals --pa DPD_RUN --model DPD_RUN ($(head -c 200 "$T/err"))"

# --- run -> run and run -> eval chains: the output's I,Q is the processed signal ---
"$DPD" run --model "$E1" --input "$T/a/test_input.csv" --output "$T/c1.csv" --exact 2>/dev/null
"$DPD" run --model "$D1" --input "$T/c1.csv" --output "$T/c2.csv" --exact 2>"$T/err"
"$DPD" run --model "$D1" --input "$T/out.cf32" --output "$T/c2.cf32" --exact 2>/dev/null
check '[ "$(wc -l < "$T/c2.csv")" -eq 7681 ] && [ "$(perl -e "open(F,q(<),q($T/c2.cf32)); seek(F,8*100,0); read(F,\$b,8); printf(q(%.9g,%.9g), unpack(q(f<f<),\$b))")" = "$(sed -n 102p "$T/c2.csv" | cut -d, -f1,2)" ] && [ "$(sed -n 102p "$T/c2.csv" | cut -d, -f3,4)" = "$(sed -n 102p "$T/c1.csv" | cut -d, -f1,2)" ]' \
    "run -> run (a DPD run directory, then its PA) chains the same through CSV as through .cf32 ($(head -c 200 "$T/err"))"
# the DPD run in sections of one eval segment from zero state, then eval of the PA model on that:
# the ACLR of PA(DPD(x)) as eval --pa computes it
"$DPD" run --model "$E1" --input "$T/a/test_input.csv" --output "$T/seg.csv" --section 2560 --warmup 0 --lookahead 0 2>/dev/null
# (the run's CSV output drops into a dataset as it is: I,Q are found by name, I_in,Q_in ignored)
mkdir -p "$T/chain" && cp "$T/a/"* "$T/chain/" && cp "$T/seg.csv" "$T/chain/test_input.csv"
"$DPD" eval --data "$T/chain" --split test --model "$D1" --json >"$T/chain.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && awk "BEGIN { d = $(num model ACLR_AVG "$T/chain.json") - ($(num dpd ACLR_AVG "$T/ce.json")); exit !(d < 1e-3 && d > -1e-3) }"' \
    "run -> eval: a dataset whose input is a run's CSV output evaluates, ACLR as eval --pa (exit $rc: $(head -c 300 "$T/err"))"
# a look-ahead shorter than the model reads is refused (each section's last outputs would be wrong);
# one that covers it runs; a warm-up under 64 samples is warned about
expect 2 "dpd: --lookahead: 8 is shorter than the model's: tres_deltagru reads 16 samples ahead of each output" \
    "$DPD" run --model "$E4" --input "$T/a/test_input.csv" --output "$T/la.csv" --section 1000 --lookahead 8
check '[ ! -e "$T/la.csv" ]' "dpd run: a refused look-ahead writes nothing"
# a gmp_ls of M = 40 reads 40 samples ahead: the default look-ahead covers it, a given 32 is refused
"$DPD" fit-ls --data "$T/a" --kind gmp --K 2 --Q 2 --M 40 --out "$T/g40" >/dev/null 2>&1
"$DPD" run --model "$T/g40/a/train_pa/PA_LS_M_GMP_LS_K_2_Q_2_M_40_P_328" --input "$T/a/test_input.csv" --output "$T/g40.csv" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/g40.csv" ]' "dpd run: the default look-ahead covers a gmp_ls of M = 40 (exit $rc: $(head -c 200 "$T/err"))"
expect 2 "dpd: --lookahead: 32 is shorter than the model's: gmp_ls reads 40 samples ahead" \
    "$DPD" run --model "$T/g40/a/train_pa/PA_LS_M_GMP_LS_K_2_Q_2_M_40_P_328" --input "$T/a/test_input.csv" --output "$T/g40b.csv" --lookahead 32
# it reads Q - 1 + M = 41 samples before each output too: a warm-up of 41 gives --exact's outputs byte
# for byte, without a warning; 16 is warned about, as that model's bound (not the recurrent rule)
G40="$T/g40/a/train_pa/PA_LS_M_GMP_LS_K_2_Q_2_M_40_P_328"
"$DPD" run --model "$G40" --input "$T/a/test_input.csv" --output "$T/g40x.csv" --exact 2>/dev/null
"$DPD" run --model "$G40" --input "$T/a/test_input.csv" --output "$T/g40w.csv" --section 1e3 --warmup 41 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$T/g40x.csv" "$T/g40w.csv" && ! grep -q warning "$T/err"' \
    "dpd run: gmp_ls M = 40 in sections of 1e3 (a whole number in any spelling) with --warmup 41 is --exact's output, no warning (exit $rc: $(head -c 300 "$T/err"))"
expect 2 "dpd: bad value '1.5e3x' for --section" "$DPD" run --model "$G40" --input "$T/a/test_input.csv" --output "$T/g40w.csv" --section 1.5e3x
expect 2 "dpd: bad value '2.5' for --warmup: a whole number is wanted" "$DPD" run --model "$G40" --input "$T/a/test_input.csv" --output "$T/g40w.csv" --warmup 2.5
expect 2 "dpd: bad value '-1' for --seed: a whole number from 0 to 18446744073709551615 (2^64 - 1) is wanted" "$DPD" synth --out "$T/never" --seed -1
expect 2 "dpd: bad value ' -1' for --seed: a whole number from 0" "$DPD" synth --out "$T/never" --seed " -1"
expect 2 "dpd: bad value '2.5' for --epochs: a whole number is wanted (" "$DPD" train-pa --data "$T/a" --epochs 2.5 --out "$T/never"
"$DPD" synth --out "$T/len-e" --preset lte20 --length 4.096e4 --seed 1e3 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "\"seed\": 1000" "$T/len-e/spec.json"' "synth --length 4.096e4 --seed 1e3: whole numbers in exponent notation (exit $rc: $(head -c 200 "$T/err"))"
expect 2 "dpd: bad value '3e9' for --epochs: a whole number from -2147483647 to 2147483647 is wanted" "$DPD" train-pa --data "$T/a" --epochs 3e9
"$DPD" run --model "$G40" --input "$T/a/test_input.csv" --output "$T/g40w.csv" --section 1000 --warmup 16 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: --warmup 16: gmp_ls reads 41 samples before each output, so the first 25 outputs of each section read other samples than --exact" "$T/err" && ! grep -q "zero state" "$T/err" && ! cmp -s "$T/g40x.csv" "$T/g40w.csv"' \
    "dpd run: gmp_ls M = 40 with --warmup 16: warned with its own bound, and the output differs (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" run --model "$E4" --input "$T/a/test_input.csv" --output "$T/la.csv" --section 1000 --lookahead 16 --warmup 16 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: --warmup 16: each section starts from zero state" "$T/err" && grep -q "^dpd: warning: tres_deltagru with delta thresholds (thx 0.01, thh 0.05) keeps its last sent input" "$T/err"' \
    "dpd run: --lookahead 16 covers TRes; --warmup 16 warns, and the delta thresholds too (exit $rc: $(head -c 600 "$T/err"))"
"$DPD" run --model "$E4" --input "$T/a/test_input.csv" --output "$T/la.csv" --exact 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && ! grep -q "delta thresholds" "$T/err"' "dpd run --exact of a thresholded delta network: no sections, no warning (exit $rc)"
perl -e 'print pack("f<*", 0.1, 0.2, 0.3, 9**9**9, 0.5, 0.6)' >"$T/inf.cf32"
perl -e 'print pack("f<*", 0.1, 0.2, 0.3, 0.4, 0.5) . pack("L<", 0x7fc00000)' >"$T/nan.cf32"
expect 1 "inf.cf32: sample 1" "$DPD" run --model "$E1" --input "$T/inf.cf32" --output "$T/bad.cf32"
expect 1 "nan.cf32: sample 2" "$DPD" run --model "$E1" --input "$T/nan.cf32" --output "$T/bad.cf32"
# one 8-byte sample holding a NaN: refused with exit 1 (it once freed its buffer twice and aborted)
perl -e 'print pack("L<", 0x7fc00000) . pack("f<", 0.1)' >"$T/one.cf32"
expect 1 "one.cf32: sample 0" "$DPD" run --model "$E1" --input "$T/one.cf32" --output "$T/bad.cf32"
check '[ ! -e "$T/bad.cf32" ]' "run: a non-finite .cf32 sample leaves no output"
# the output must not replace the input (its own file under another name, or a SigMF pair's other half)
cp "$T/a/test_input.csv" "$T/own.csv" && cp "$T/own.csv" "$T/own0.csv" && ln -sf own.csv "$T/own-link.csv"
expect 2 "names the input recording" "$DPD" run --model "$E1" --input "$T/own.csv" --output "$T/own.csv"
expect 2 "names the input recording" "$DPD" run --model "$E1" --input "$T/own.csv" --output "$T/own-link.csv"
check 'cmp -s "$T/own.csv" "$T/own0.csv"' "run: the input is left as it was"
"$DPD" run --model "$E1" --input "$T/own.csv" --output "$T/own.sigmf-data" --fs 200e6 >/dev/null 2>&1
cp "$T/own.sigmf-data" "$T/own0.sigmf-data"
expect 2 "names the input recording" "$DPD" run --model "$E1" --input "$T/own.sigmf-meta" --output "$T/own.sigmf-data"
check 'cmp -s "$T/own.sigmf-data" "$T/own0.sigmf-data"' "run: a SigMF input's data is left as it was"
expect 2 "not '.wav'" "$DPD" run --model "$E1" --input "$T/own.csv" --output "$T/out.wav"
check '[ ! -e "$T/out.wav" ]' "run: an output of an unknown kind (.wav) is refused before anything is written"
expect 1 "compared nothing" "$DPD" parity --model "$D1" --data "$T/a" --providers cpu
"$DPD" parity --model "$D1" --data "$T/a" --providers cpu --json >"$T/par1.json" 2>/dev/null; rc=$?
check '[ $rc -eq 1 ] && isjson "$T/par1.json" && jq1 "$T/par1.json" "j[\"compared\"] == 0"' "parity --json with one provider: valid JSON, compared 0, exit 1 (got $rc)"
"$DPD" parity --model "$D1" --data "$T/a" --providers cpu,cpu --json >"$T/par2.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/par2.json" "j[\"compared\"] == 1 and j[\"providers\"][1][\"max_abs\"] == 0"' "parity cpu,cpu compares one pair, exactly (exit $rc: $(head -c 200 "$T/err"))"

# --- metrics that cannot be computed: null in JSON with the status and reason, n/a in text ---
mkdir -p "$T/z" && cp "$T/a/"* "$T/z/"
for f in train val test; do awk -F, 'NR == 1 { print; next } { print "0,0" }' "$T/a/${f}_output.csv" >"$T/z/${f}_output.csv"; done
"$DPD" eval --data "$T/z" --split test --model "$D1" --json >"$T/z.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && isjson "$T/z.json" && jq1 "$T/z.json" "j[\"output_aclr\"][\"AVG\"] is None and len(j[\"output_aclr\"][\"status\"][\"AVG\"][\"reason\"]) > 0 and j[\"model\"][\"NMSE\"] is None and j[\"model\"][\"status\"][\"NMSE\"][\"status\"] == \"invalid\" and j[\"linear_gain\"][\"NMSE\"] is None"' \
    "eval --json on an all-zero PA output: valid JSON, null metrics with status and reason (exit $rc: $(head -c 300 "$T/z.json") $(head -c 200 "$T/err"))"
"$DPD" eval --data "$T/z" --split test --model "$D1" >"$T/z.txt" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "^model .* n/a \[[0-9]\]" "$T/z.txt" && grep -q "^\[1\] ." "$T/z.txt" && grep -q "^\[2\] ." "$T/z.txt" && ! grep -q "n/a (" "$T/z.txt" &&
    [ "$(sed -n "s/^\[[0-9]*\] //p" "$T/z.txt" | sort | uniq -d)" = "" ]' \
    "eval text on an all-zero PA output: n/a [i] in the cells, each distinct reason once under the table (exit $rc: $(head -c 600 "$T/z.txt"))"
mkdir -p "$T/h" && cp "$T/a/spec.json" "$T/h/"
for f in train val test; do for d in input output; do head -n 101 "$T/a/${f}_$d.csv" >"$T/h/${f}_$d.csv"; done; done
"$DPD" eval --data "$T/h" --split val --model "$D1" --json >"$T/h.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && isjson "$T/h.json" && jq1 "$T/h.json" "j[\"samples\"] == 100 and j[\"model\"][\"NMSE\"] is None and j[\"model\"][\"status\"][\"NMSE\"][\"status\"] == \"not_applicable\" and j[\"output_aclr\"][\"L\"] is None"' \
    "eval --json on a 100-row dataset: valid JSON, metrics not_applicable (exit $rc: $(head -c 300 "$T/h.json") $(head -c 200 "$T/err"))"
"$DPD" eval --data "$T/h" --split test >"$T/h.txt" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -qx "linear g=[0-9.]*  *n/a  *n/a  *n/a  *n/a  *n/a" "$T/h.txt" && grep -qx "n/a: .*" "$T/h.txt"' \
    "eval text on a 100-row dataset: n/a cells and the reason on its own line (exit $rc: $(head -c 600 "$T/h.txt"))"
# nperseg beyond the split: "n/a" in every cell, the reason once, on its own line
mkdir -p "$T/np" && cp "$T/a/"* "$T/np/" && sed -i 's/"nperseg": 2560/"nperseg": 100000/' "$T/np/spec.json"
"$DPD" eval --data "$T/np" --split test >"$T/np.txt" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -qx "measured output ACLR (legacy-opendpd-v1): L n/a  R n/a  AVG n/a dBc" "$T/np.txt" &&
    grep -qx "linear g=[0-9.]*  *n/a  *n/a  *n/a  *n/a  *n/a" "$T/np.txt" && [ "$(grep -c "fewer than one" "$T/np.txt")" -eq 1 ] &&
    grep -qx "n/a: the split has 7680 samples, fewer than one 100000-sample segment" "$T/np.txt"' \
    "eval with nperseg beyond the split: n/a cells and the reason once (exit $rc: $(head -c 600 "$T/np.txt"))"
"$DPD" train-pa --data "$T/h" --no-doctor --hidden 4 --frame 20 --stride 10 --batch 4 --epochs 2 --out "$T/hr" --json >"$T/hr.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && isjson "$T/hr.json" && jq1 "$T/hr.json" "j[\"val\"][\"NMSE\"] is None and j[\"best_epoch\"] >= 1" && grep -q "^epoch 2/2 train_loss .* val NMSE n/a (" "$T/err"' \
    "train-pa on a 100-row dataset: n/a metrics in the epoch lines, null in the JSON summary (exit $rc: $(tail -n 2 "$T/err"))"
check '[ "$(grep -c "warning: the val split gives no NMSE (the split has .* samples, fewer than one .*), so no epoch can be chosen by it: best.safetensors is epoch 1.s" "$T/err")" -eq 1 ]' \
    "training on a val split too short to score warns, once, that the best checkpoint stays epoch 1's ($(grep -m1 "val split gives" "$T/err"))"
"$DPD" train-pa --data "$T/h" --no-doctor --hidden 4 --frame 20 --stride 10 --batch 4 --epochs 1 --out "$T/hr2" >"$T/hr2.txt" 2>/dev/null; rc=$?
check '[ $rc -eq 0 ] && grep -qx "val  *n/a  *n/a  *n/a  *n/a  *n/a" "$T/hr2.txt" && grep -qx "measured test  *n/a  *n/a  *n/a  *n/a  *n/a" "$T/hr2.txt" &&
    [ "$(grep -c "fewer than one" "$T/hr2.txt")" -eq 1 ] && grep -q "^n/a: the split has 100 samples" "$T/hr2.txt"' \
    "train-pa's summary table: n/a cells and the reason once after it, the capture's own rows too ($(head -c 600 "$T/hr2.txt"))"

# --- settings, providers, runtime packs and the fallback cases (with the fault-injecting provider) ---
FAKE=$(dirname "$DPD")/tests/libfake.so
export XDG_CONFIG_HOME="$T/xdg/config" XDG_DATA_HOME="$T/xdg/data"
PACKS="$XDG_DATA_HOME/dpd/packs"
"$DPD" providers --json >"$T/prov.json"
check 'isjson "$T/prov.json"' "dpd providers --json is valid JSON"
check 'grep -q "\"active\":\"cpu\"" "$T/prov.json" && grep -q "\"workers\":[1-9]" "$T/prov.json"' "dpd providers --json: active cpu and the worker count"
CONF="$XDG_CONFIG_HOME/dpd/config.json"
"$DPD" config set cpu_level low >"$T/cs1.txt" && "$DPD" config set gpu_memory high >/dev/null && "$DPD" config set cpu_level low >"$T/cs2.txt"
check 'grep -qxF "cpu_level: max -> low (in $CONF)" "$T/cs1.txt" && grep -qxF "cpu_level is already low (in $CONF); nothing changed" "$T/cs2.txt"' \
    "dpd config set says what changed, and when nothing did ($(cat "$T/cs1.txt" "$T/cs2.txt"))"
check '"$DPD" config show | grep -qx "cpu_level low" && "$DPD" config show | grep -qx "gpu_memory high"' "dpd config set/show"
printf '{"provider": "cpu", "reason": "the cuda pack failed"}' >"$CONF"
"$DPD" config set provider cpu >"$T/cs3.txt"
check 'grep -qxF "provider stays cpu (in $CONF)" "$T/cs3.txt" && grep -qxF "the fallback to cpu is no longer recorded (it was: the cuda pack failed)" "$T/cs3.txt" &&
    ! "$DPD" config show | grep -q "^reason"' "dpd config set provider cpu over a recorded fallback says that it clears it ($(cat "$T/cs3.txt"))"
expect 2 "unknown setting 'colour'" "$DPD" config set colour blue
expect 2 "'reason' is recorded by dpd" "$DPD" config set reason hello
expect 2 "must be auto, cpu or an installed pack's name" "$DPD" config set provider 'TPU!'
cp "$CONF" "$T/conf.before"
expect 2 "provider 'bogus': no such provider and no pack of that name is installed" "$DPD" config set provider bogus
check 'cmp -s "$CONF" "$T/conf.before"' "a provider dpd does not have is refused and not saved"
XDG_DATA_HOME="$T/no-packs" "$DPD" config set provider opencl >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && "$DPD" config show | grep -qx "provider opencl" && grep -q "no opencl pack is installed" "$T/err"' \
    "a provider dpd has may be chosen before its pack is installed, with a warning (exit $rc: $(head -c 200 "$T/err"))"
"$DPD" config set provider auto >/dev/null
printf '{"provider": 3' >"$XDG_CONFIG_HOME/dpd/config.json"
expect 1 "config.json" "$DPD" providers
expect 1 "dpd: $XDG_CONFIG_HOME/dpd/config.json:1:" "$DPD" eval --data "$T/a" --split val --model "$D1" --provider cpu
check '! grep -q -- "--provider" "$T/err"' "a broken settings file is named as the fault, not --provider ($(head -c 200 "$T/err"))"
rm "$XDG_CONFIG_HOME/dpd/config.json"
# case 1: no matching pack
expect 1 "no cuda pack is installed" "$DPD" eval --data "$T/a" --split val --model "$D1" --provider cuda
expect 1 "no cuda pack is installed" "$DPD" train-pa --data "$T/a" --epochs 1 --out "$T/nopack" --provider cuda
expect 1 "no cuda pack is installed" "$DPD" bench train --hidden 4 --batch 2 --frame 10 --steps 1 --provider cuda
# a bad family is a usage error (exit 2), as train-pa's is, for the model and for --pa's
expect 2 "dpd: --model: 'nosuch' is not one of gru," "$DPD" bench train --model nosuch
expect 2 "dpd: --pa: family: 'nosuch' is not one of gru," "$DPD" bench train --pa nosuch:3
# a polynomial family with train-pa's K, Q (and M), labelled by them, not by a hidden size
"$DPD" bench train --model gmp_ls --batch 2 --frame 10 --steps 1 >"$T/bmp.txt" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "^GMP_LS K5 Q20 M2 (840 params) batch 2 frame 10 " "$T/bmp.txt"' "bench train --model gmp_ls: train-pa's K, Q and M (exit $rc: $(head -c 200 "$T/bmp.txt"))"
# bench train: a DPD step through a frozen PA (--pa MODEL:HIDDEN), the step's share of the measured peak
"$DPD" bench train --model gru --hidden 4 --pa gru:5 --batch 2 --frame 10 --steps 1 --json >"$T/bpa.json" 2>"$T/bpa.err"
check 'grep -q "\"pa\":\"gru:5\"" "$T/bpa.json" && grep -q "\"peak_share\":[0-9]" "$T/bpa.json" &&
       grep -q "\"peak_gflops\":[0-9]" "$T/bpa.json"' "bench train --pa: the chained step, with the peak and its share ($(cat "$T/bpa.json" "$T/bpa.err" | head -c 300))"
"$DPD" bench train --model tcn --hidden 4 --batch 2 --frame 10 --steps 1 --json >"$T/btcn.json" 2>&1
check 'grep -q "\"peak_share\":null" "$T/btcn.json"' "bench train: no share where the FLOP count is not defined (tcn)"
expect 2 "is not MODEL:HIDDEN" "$DPD" bench train --pa gru --steps 1
expect 2 "bogus" "$DPD" bench peak --kernels bogus
# mkpack DIR OUT [pack.json abi] : a pack of the fake provider
mkpack() {
    rm -rf "$1" && mkdir -p "$1/lib" && cp "$FAKE" "$1/lib/libfake.so"
    sz=$(wc -c <"$1/lib/libfake.so"); sum=$(sha256sum "$1/lib/libfake.so" | cut -d' ' -f1)
    printf '{"provider":"cuda","pack_version":"9.9","abi_version":%s,"library":"lib/libfake.so","files":[{"path":"lib/libfake.so","size":%s,"sha256":"%s"}]}\n' \
        "${3:-1}" "$sz" "$sum" >"$1/pack.json"
    tar -C "$1" -czf "$2" pack.json lib && sha256sum "$2" | cut -d' ' -f1 >"$2.sha256"
}
if [ -f "$FAKE" ]; then
    mkpack "$T/p" "$T/fake.tar.gz"
    expect 1 "sha256 mismatch" "$DPD" pack install "$T/fake.tar.gz" --sha256 00ff
    mkfifo "$T/fifo.tar.gz" && ln -s /dev/zero "$T/zero.tar.gz" # refused at once, never hashed for ever
    timeout 30 "$DPD" pack install "$T/fifo.tar.gz" --sha256 00ff >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -eq 1 ] && grep -q "fifo.tar.gz: is a FIFO (named pipe), not a regular file" "$T/err"' "pack install of a FIFO: refused, named (exit $rc: $(head -c 300 "$T/err"))"
    timeout 30 "$DPD" pack install "$T/zero.tar.gz" --sha256 00ff >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -eq 1 ] && grep -q "zero.tar.gz: is a character device" "$T/err"' "pack install of a link to /dev/zero: refused, named (exit $rc: $(head -c 300 "$T/err"))"
    cp "$T/fake.tar.gz" "$T/nosum.tar.gz"
    "$DPD" pack install "$T/nosum.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "no checksum" "$T/err"' "a pack without a checksum is refused"
    mkdir -p "$T/evil/sub" && cp "$T/p/pack.json" "$T/evil/" && echo x >"$T/evil/sub/x"
    (cd "$T/evil/sub" && tar -czPf "$T/dotdot.tar.gz" ../pack.json) && sha256sum "$T/dotdot.tar.gz" | cut -d' ' -f1 >"$T/dotdot.tar.gz.sha256"
    "$DPD" pack install "$T/dotdot.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "leaves the pack" "$T/err"' "an archive entry with .. is refused ($(cat "$T/err"))"
    tar -czPf "$T/abs.tar.gz" "$T/p/pack.json" 2>/dev/null && sha256sum "$T/abs.tar.gz" | cut -d' ' -f1 >"$T/abs.tar.gz.sha256"
    "$DPD" pack install "$T/abs.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "is absolute" "$T/err"' "an absolute archive entry is refused"
    cp -r "$T/p" "$T/lnk" && ln -s /etc/passwd "$T/lnk/lib/evil" && tar -C "$T/lnk" -czf "$T/lnk.tar.gz" pack.json lib && sha256sum "$T/lnk.tar.gz" | cut -d' ' -f1 >"$T/lnk.tar.gz.sha256"
    "$DPD" pack install "$T/lnk.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "symbolic link" "$T/err"' "a symbolic link in a pack is refused"
    cp -r "$T/p" "$T/extra" && echo hi >"$T/extra/lib/extra.txt" && tar -C "$T/extra" -czf "$T/extra.tar.gz" pack.json lib && sha256sum "$T/extra.tar.gz" | cut -d' ' -f1 >"$T/extra.tar.gz.sha256"
    "$DPD" pack install "$T/extra.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "not listed in pack.json" "$T/err"' "a file not in pack.json is refused"
    mkpack "$T/p2" "$T/abi.tar.gz" 3
    "$DPD" pack install "$T/abi.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "provider ABI version 3, this dpd speaks 2" "$T/err"' "a pack.json ABI mismatch is refused with both versions ($(head -c 200 "$T/err"))"
    DPD_FAKE=abi "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "provider ABI version 999, dpd needs 2" "$T/err"' "a library ABI mismatch is refused ($(head -c 200 "$T/err"))"
    DPD_FAKE=crash ASAN_OPTIONS=handle_segv=0 "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "helper crashed (signal 11)" "$T/err"' "a crashing probe is refused, dpd itself survives"
    DPD_FAKE=hang DPD_PACK_TIMEOUT=2 "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "gave no answer within 2 s and was stopped" "$T/err"' "a hanging probe is stopped at the timeout and refused"
    DPD_FAKE=wrong "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "probe mismatch" "$T/err"' "a wrong probe result is refused"
    DPD_FAKE=wrongtrain "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "probe mismatch: a cuda training step of gru-8" "$T/err"' "a wrong training step is refused at install ($(head -c 200 "$T/err"))"
    DPD_FAKE=nantrain "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"; check 'grep -q "probe mismatch: a cuda training step of gru-8 differs from the CPU.s by inf" "$T/err"' "a training step leaving NaN moments is refused at install ($(head -c 200 "$T/err"))"
    check '! ls "$PACKS" | grep -qv "^\.validate.lock$"' "refused packs leave nothing installed"
    # case 4: cannot activate -> the preference goes to cpu with the reason shown
    DPD_FAKE=nodevice "$DPD" pack install "$T/fake.tar.gz" >/dev/null 2>"$T/err"
    check 'grep -q "cannot activate on this machine" "$T/err" && "$DPD" config show | grep -qx "provider cpu" && "$DPD" providers | grep -q "fake: no device"' \
        "fallback case 4: a pack that cannot activate sets the preference to cpu, and dpd providers says why"
    "$DPD" config set provider auto
    DPD_FAKE=ok "$DPD" pack install "$T/fake.tar.gz" >"$T/out" 2>"$T/err"
    check 'grep -q "installed and active: cuda-9.9" "$T/out" && [ "$(readlink "$PACKS/active-cuda")" = cuda-9.9 ] && "$DPD" pack verify cuda-9.9 >/dev/null' \
        "a valid pack installs, activates atomically and verifies ($(cat "$T/err"))"
    DPD_FAKE=ok "$DPD" providers --json >"$T/pj1.json"
    "$DPD" config set gpu_memory low && DPD_FAKE=ok "$DPD" providers >"$T/pt.txt" && "$DPD" config set gpu_memory medium
    # the fake device has 1 GiB; GRU-23 x 200 needs 200 (5 x 23 + 16) 4 + 1911 x 4 = 112444 bytes a sequence
    check 'grep -q "\"name\":\"cuda\",\"pack\":\"[^\"]*cuda-9.9\",\"devices\":\[{\"name\":\"fake GPU (ok)\",\"memory\":1073741824" "$T/pj1.json" && grep -q "\"cuda\":{\"model\":\"gru-23\",\"frame\":200,\"batch\":4774}" "$T/pj1.json" && grep -q "batch bound at gpu_memory low: 2387 sequences" "$T/pt.txt"' \
        "dpd providers lists the pack's devices and the gpu_memory batch bound (half, then a quarter of 1 GiB)"
    DPD_FAKE=ok "$DPD" eval --data "$T/a" --split val --model "$D1" --provider cuda --json >"$T/ec.json" 2>/dev/null
    "$DPD" eval --data "$T/a" --split val --model "$D1" --provider cpu --json >"$T/ep.json" 2>/dev/null
    check '[ "$(num model NMSE "$T/ec.json")" = "$(num model NMSE "$T/ep.json")" ] && grep -q "\"provider\":\"cuda" "$T/ec.json"' "eval through the active pack's provider"
    DPD_FAKE=ok run --epochs 2 --out "$T/pv1" --provider cuda --json >"$T/pv1.json" 2>/dev/null
    run --epochs 2 --out "$T/pv2" --provider cpu >/dev/null 2>&1
    PV=a/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194/best.safetensors
    check 'grep -q "\"provider\":\"cuda (cuda from" "$T/pv1.json" && data "$T/pv1/$PV" | cmp -s - "$T/pv2.data" 2>/dev/null || { data "$T/pv2/$PV" >"$T/pv2.data"; grep -q "\"provider\":\"cuda (cuda from" "$T/pv1.json" && data "$T/pv1/$PV" | cmp -s - "$T/pv2.data"; }' \
        "PA training on the pack's provider (train_step, optimizer_step) equals the cpu provider's bit for bit"
    EREL=a/train_dpd/PA_S_3_M_GRU_H_6_F_40/DPD_S_3_M_GRU_H_5_F_40_P_147
    data "$E1/last.safetensors" >"$T/e1.last"
    DPD_FAKE=ok drun --epochs 2 --out "$T/pd1" --provider cuda --json >"$T/pd1.json" 2>/dev/null
    check 'grep -q "\"provider\":\"cuda (cuda from" "$T/pd1.json" && data "$T/pd1/$EREL/last.safetensors" | cmp -s - "$T/e1.last" && cmp -s "$T/pd1/$EREL/pa.safetensors" "$E1/pa.safetensors"' \
        "DPD training through the frozen PA on the pack's provider (forward_keep, backward, clip) equals cpu bit for bit"
    DPD_FAKE=ok drun --epochs 1 --out "$T/pd2" --provider cuda >/dev/null 2>&1
    DPD_FAKE=ok "$DPD" train-dpd --resume "$T/pd2/$EREL" --epochs 2 --provider cuda >/dev/null 2>"$T/err"
    check 'data "$T/pd2/$EREL/last.safetensors" | cmp -s - "$T/e1.last"' \
        "a resume on the pack's provider restores the optimizer state (set_state): equal to 2 straight epochs ($(head -c 200 "$T/err"))"
    DPD_FAKE=nochain drun --epochs 1 --out "$T/pd3" --provider cuda >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -ne 0 ] && grep -q "cuda: training through a PA model is not supported (use --provider cpu)" "$T/err"' \
        "an explicit --provider that cannot train through a PA refuses the DPD run"
    DPD_FAKE=nochain drun --epochs 1 --out "$T/pd4" --provider auto --json >"$T/pd4.json" 2>/dev/null
    check 'grep -q "\"provider\":\"cpu (cpu: training through a PA model is not supported on cuda)" "$T/pd4.json"' \
        "auto falls back to cpu for a DPD run the provider cannot train, and says why"
    LM=$(ls -d "$T"/fam/a/train_pa/PA_S_0_M_LSTM_*)/best.safetensors
    DPD_FAKE=gruonly "$DPD" eval --data "$T/a" --split val --model "$LM" --provider cuda >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -ne 0 ] && grep -q "cuda: lstm-4 (1 layer) is not supported (use --provider cpu)" "$T/err"' \
        "eval of a model the provider does not support: refused under --provider cuda ($(cat "$T/err"))"
    DPD_FAKE=gruonly "$DPD" eval --data "$T/a" --split val --model "$LM" --provider auto --json >"$T/eg.json" 2>/dev/null
    check 'grep -q "\"provider\":\"cpu (cpu: lstm-4 (1 layer) is not supported on cuda)" "$T/eg.json"' \
        "eval of a model the provider does not support: auto falls back to cpu and says why"
    DPD_FAKE=ok "$DPD" bench train --hidden 4 --batch 2 --frame 10 --steps 1 --provider cuda --json >"$T/bench.json" 2>&1
    check 'grep -q "\"provider\":\"cuda\".*\"ms_per_step\":[0-9]" "$T/bench.json"' "dpd bench train times steps through the chosen provider"
    DPD_FAKE=ok "$DPD" parity --model "$D1" --data "$T/a" --json >"$T/par.json" 2>/dev/null
    check 'isjson "$T/par.json" && jq1 "$T/par.json" "j[\"compared\"] == 1 and j[\"providers\"][1][\"provider\"] == \"cuda\" and j[\"providers\"][1][\"max_abs\"] == 0"' "dpd parity reports the deviation of each provider"
    # batch back-off: batches above 2 fail for memory; the run halves, remembers and finishes
    : >"$T/fake.log"
    DPD_FAKE=nomem:2 DPD_FAKE_LOG="$T/fake.log" "$DPD" run --model "$D1/best.safetensors" --input "$T/a/test_input.csv" \
        --output "$T/bo.csv" --section 500 --batch 8 --provider cuda 2>/dev/null
    "$DPD" run --model "$D1/best.safetensors" --input "$T/a/test_input.csv" --output "$T/bo0.csv" --section 500 --batch 8 --provider cpu 2>/dev/null
    bod=$(maxdev "$T/bo.csv" "$T/bo0.csv")
    check 'awk "BEGIN { exit !($bod <= 1e-5) }" && [ "$(sort -n "$T/fake.log" | tail -n 1)" = 8 ] && [ "$(tail -n 1 "$T/fake.log")" -le 2 ] && [ "$(sort -u "$T/fake.log" | wc -l)" -ge 3 ]' \
        "batch back-off: a batch that fails for memory is halved and the working size kept"
    # case 3: validation in progress
    (flock "$PACKS/.validate.lock" sleep 3) &
    sleep 0.5
    expect 1 "validation in progress, try again" "$DPD" eval --data "$T/a" --split val --model "$D1" --provider cuda
    wait
    # case 5: a device failure during a run: the run fails, the preference moves to cpu
    DPD_FAKE=devfail "$DPD" eval --data "$T/a" --split val --model "$D1" --provider auto >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -eq 1 ] && grep -q "not repeated" "$T/err" && "$DPD" config show | grep -qx "provider cpu"' \
        "fallback case 5: a device failure ends the run with an error and moves the preference to cpu"
    "$DPD" pack remove cuda-9.9
    check '[ ! -e "$PACKS/cuda-9.9" ] && [ ! -L "$PACKS/active-cuda" ]' "dpd pack remove"
else
    echo "SKIP cli packs: $FAKE not built"; skip=$((skip + 1))
fi
# the real CUDA pack: on a machine without a usable GPU its install ends in fallback case 4
REAL=$(ls "$(dirname "$DPD")"/packs/dpd-pack-cuda-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1) # make test builds it there
if [ -z "$REAL" ]; then
    echo "SKIP cli real cuda pack: not built (make pack-cuda needs nvcc)"; skip=$((skip + 1))
elif nvidia-smi >/dev/null 2>&1; then
    echo "SKIP cli real cuda pack refusal: this machine has a GPU (scripts/gpu-check.sh covers the install)"; skip=$((skip + 1))
else
    "$DPD" config set provider auto
    "$DPD" pack install "$REAL" >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -eq 1 ] && grep -q "cannot activate on this machine" "$T/err" && "$DPD" config show | grep -qx "provider cpu"' \
        "the real cuda pack without a GPU: a clean fallback-case-4 refusal ($(head -c 300 "$T/err"))"
fi
unset XDG_CONFIG_HOME XDG_DATA_HOME

# a stride longer than the frame: trained, with a warning of the samples left out
"$DPD" train-pa --data "$T/a" --hidden 4 --epochs 1 --frame 10 --stride 1000 --out "$T/strd" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "warning: stride 1000 is longer than frame 10: the frames leave 990 samples out between them, so only" "$T/err"' \
    "train-pa --stride above --frame: a warning of the samples never trained on (exit $rc: $(head -c 300 "$T/err"))"

# --- cancellation: SIGINT/SIGTERM stop a run cleanly (exit 130/143), and it resumes to the same end ---
# waitfor FILE PATTERN: up to 60 s for a line matching PATTERN in FILE; 1 when it never came
waitfor() { i=0; while ! grep -q "$2" "$1" 2>/dev/null; do i=$((i + 1)); [ $i -gt 600 ] && return 1; sleep 0.1; done; }
"$DPD" synth --out "$T/big" --seed 5 --length 384000 >/dev/null
big() { "$DPD" train-pa --data "$T/big" --hidden 6 --frame 40 --stride 2 --batch 32 --seed 3 --threads 2 "$@"; }
# interrupted after the first epoch has completed (its history row is written), before the last
# (started directly, not through the function: $! must be dpd itself; sh starts background jobs
# with SIGINT ignored, and dpd installs its own handler)
"$DPD" train-pa --data "$T/big" --hidden 6 --frame 40 --stride 2 --batch 32 --seed 3 --threads 2 --epochs 3 --out "$T/sg" --json >"$T/sg.json" 2>"$T/sg.err" &
pid=$!
SG="$T/sg/big/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194"
waitfor "$SG/history.csv" "^1,3," && kill -INT $pid
wait $pid; rc=$?
check '[ $rc -eq 130 ] && grep -q "^dpd: cancelled after [0-9]* epochs*, best epoch [0-9]*: val NMSE -[0-9]*\.[0-9][0-9] dB; resume with: dpd train-pa --resume '"'$SG'"' --json\$" "$T/sg.err"' \
    "SIGINT during train-pa: exit 130, the best epoch so far and the exact resume command (exit $rc: $(tail -n 2 "$T/sg.err"))"
check 'jq1 "$T/sg.json" "j[\"outcome\"] == \"cancelled\" and j[\"epochs\"] >= 1 and 1 <= j[\"best_epoch\"] <= j[\"epochs\"] and j[\"val\"][\"NMSE\"] < 0 and j[\"test\"][\"NMSE\"] < 0 and j[\"resume\"].endswith(\" --json\") and j[\"measured\"][\"ACLR_AVG\"] < 0 and \"measured_val\" in j" && grep -q "val NMSE $(python3 -c "import json; print(\"%.2f\" % json.load(open(\"$T/sg.json\"))[\"val\"][\"NMSE\"])") dB" "$T/sg.err"' \
    "a cancelled run with --json: its best epoch so far and that epoch's val and test metrics, as its message says, and the capture's measured figures ($(head -c 300 "$T/sg.json"))"
check '[ -s "$SG/last.safetensors" ] && ! ls "$SG" | grep -q tmp' "a cancelled run leaves a consistent last.safetensors and no temporary files"
# its last checkpoint event says how far into the epoch its last.safetensors is (none after a whole epoch)
python3 - "$SG" <<'PY' >"$T/ck" 2>&1; rc=$?
import json, struct, sys
d = sys.argv[1]
raw = open(d + "/last.safetensors", "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
ck = [e for e in map(json.loads, open(d + "/events.jsonl")) if e["type"] == "checkpoint"][-1]
want = int(meta.get("epoch_step", 0))
got = ck.get("steps_done", 0)
print(f"epoch_step {want}, event {ck}")
sys.exit(0 if got == want and (not want or ck["epoch"] == int(meta["epoch"]) + 1) else 1)
PY
check '[ $rc -eq 0 ]' "a cancelled run's last checkpoint event gives its steps into the epoch ($(head -c 300 "$T/ck"))"
# resumed asking for fewer epochs than it has begun: the epochs are at fault, not the checkpoint
"$DPD" train-pa --resume "$SG" --epochs 1 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 2 ] && grep -Eq "^dpd: --epochs: .*(stopped inside epoch 2 \(after [0-9]+ of its [0-9]+ steps\)|has finished epoch [12]), and 1 asks for no more" "$T/err"' \
    "resume of a run stopped inside an epoch with too few --epochs: exit 2 naming --epochs (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" train-pa --resume "$SG" >/dev/null 2>"$T/err"; rc=$?
big --epochs 3 --out "$T/su" >/dev/null 2>&1
data "$T/su/big/train_pa/PA_S_3_M_GRU_H_6_F_40_P_194/last.safetensors" >"$T/su.last"
check '[ $rc -eq 0 ] && data "$SG/last.safetensors" | cmp -s - "$T/su.last"' \
    "cancelled by SIGINT and resumed: last.safetensors data identical to an uninterrupted run (exit $rc: $(tail -n 1 "$T/err"))"
# cancelled (SIGTERM) before the first epoch completes: nothing is written
"$DPD" train-pa --data "$T/big" --hidden 6 --frame 40 --stride 1 --batch 32 --epochs 1 --threads 1 --out "$T/sk" >/dev/null 2>"$T/sk.err" &
pid=$!
waitfor "$T/sk.err" "^dpd: training" && kill -TERM $pid
wait $pid; rc=$?
check '[ $rc -eq 143 ] && grep -q "cancelled before the first epoch completed; nothing was written" "$T/sk.err" && [ -z "$(ls -A "$T/sk/big/train_pa" 2>/dev/null)" ]' \
    "SIGTERM before the first epoch: exit 143, nothing written, no run directory (exit $rc: $(tail -n 2 "$T/sk.err"))"
# a DPD run stopped after an epoch: its best epoch so far by val ACLR_AVG, the metric it chooses by
"$DPD" train-dpd --data "$T/big" --pa "$SG" --hidden 4 --frame 40 --stride 2 --batch 32 --seed 3 --threads 2 --epochs 8 --out "$T/sd" 2>"$T/sd.err" >/dev/null &
pid=$!
waitfor "$T/sd.err" "^epoch 1/" && kill -TERM $pid
wait $pid; rc=$?
check '[ $rc -eq 143 ] && grep -q "^dpd: cancelled after [0-9]* epochs*, best epoch [0-9]*: val ACLR_AVG -[0-9]*\.[0-9][0-9] dBc; resume with: dpd train-dpd --resume " "$T/sd.err"' \
    "SIGTERM during train-dpd: its best epoch by val ACLR_AVG, the DPD's selection metric (exit $rc: $(tail -n 2 "$T/sd.err"))"

# --- OpenDPD data: metrics and the quality floor ---
DPA="$SHARED/data/opendpd/DPA_200MHz"
if [ -f "$DPA/train_input.csv" ]; then
    "$DPD" eval --data "$DPA" --split val --json --legacy-evm >"$T/dpa.json"
    check 'grep -q "\"output_aclr\":{\"L\":-33.2031[0-9]*,\"R\":-31.3819[0-9]*,\"AVG\":-32.292[45]" "$T/dpa.json"' \
        "eval DPA_200MHz val: OpenDPD's output ACLR"
    check 'grep -q "\"linear_gain\":{\"NMSE\":-13.0348[0-9]*,\"EVM\":-13.7241" "$T/dpa.json"' \
        "eval DPA_200MHz val: OpenDPD's linear-gain NMSE and (800 MHz) EVM"
    # DPA_100MHz's spec.json declares 100 MHz for a 186 MHz signal: its ACLR bands are wrong, and eval says so
    if [ -f "$SHARED/data/opendpd/DPA_100MHz/train_input.csv" ]; then
        "$DPD" eval --data "$SHARED/data/opendpd/DPA_100MHz" --split val >/dev/null 2>"$T/err"; rc=$?
        check '[ $rc -eq 0 ] && grep -q "^dpd: warning: the dataset doctor on .*DPA_100MHz: Bandwidth does not match spec.json (OBW 185.9 MHz, declared 100 MHz)" "$T/err"' \
            "eval DPA_100MHz: the doctor's bandwidth warning before the figures it spoils (exit $rc: $(head -c 400 "$T/err"))"
        check 'grep -q "^dpd: warning: under legacy-opendpd-v1 the input g x itself scores .*not the PA (a wrong bw_main_ch, an input that leaks already" "$T/err"' \
            "eval DPA_100MHz under the legacy profile (no Welch windows): the leak warning names no Welch frame seams ($(grep "itself" "$T/err" | head -c 400))"
    fi
    # DPA_160MHz has no train split here: its own gain, and no other warning (OpenDPD's spec.json keys are all known)
    if [ -f "$SHARED/data/opendpd/DPA_160MHz/test_input.csv" ]; then
        "$DPD" eval --data "$SHARED/data/opendpd/DPA_160MHz" --split test >"$T/d160.txt" 2>"$T/err"; rc=$?
        check '[ $rc -eq 0 ] && grep -q "^linear g=2.3022  *-12.640 " "$T/d160.txt" && [ "$(grep -c "" "$T/err")" -eq 2 ] && grep -q "has no train split" "$T/err" &&
               grep -q "^dpd: warning: the dataset doctor on .*DPA_160MHz: A split is absent (no train split) (.dpd doctor" "$T/err"' \
            "eval DPA_160MHz: the linear row at the test split's own gain, its warning and the doctor's (exit $rc: $(cat "$T/d160.txt" "$T/err" | head -c 600))"
    else
        echo "SKIP cli DPA_160MHz eval: $SHARED/data/opendpd/DPA_160MHz absent"; skip=$((skip + 1))
    fi
    "$DPD" train-pa --data "$DPA" --model gru --hidden 23 --preset quick --out "$T/q" --json >"$T/q.json" 2>/dev/null
    nmse=$(num test NMSE "$T/q.json")
    echo "quality floor: DPA_200MHz GRU-23 quick preset test NMSE $nmse dB"
    check 'awk "BEGIN { exit !($nmse <= -20) }"' "DPA_200MHz GRU-23 --preset quick: test NMSE $nmse > -20 dB"
    "$DPD" fit-ls --data "$DPA" --kind mp --target pa --K 5 --Q 20 --out "$T/q" --json >"$T/qls.json"
    nm=$(num test NMSE "$T/qls.json")
    echo "DPA_200MHz MP K5 Q20 least squares: test NMSE $nm dB (OpenDPD's reference: -34.91)"
    check 'awk "BEGIN { exit !($nm > -34.96 && $nm < -34.86) }"' "DPA_200MHz MP K5 Q20 test NMSE $nm is not OpenDPD's -34.91"
    Q=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/q.json")
    "$DPD" run --model "$Q/best.safetensors" --input "$DPA/test_input.csv" --output "$T/dx.csv" --exact 2>/dev/null
    "$DPD" run --model "$Q/best.safetensors" --input "$DPA/test_input.csv" --output "$T/ds.csv" --section 1024 2>/dev/null
    dev=$(maxdev "$T/dx.csv" "$T/ds.csv")
    echo "dpd run on DPA_200MHz test: sectioned (1024 + warm-up 1024) vs exact, max deviation $dev of max |output|"
    check 'awk "BEGIN { exit !($dev <= 1e-5) }"' "DPA_200MHz run: sectioned vs exact deviation $dev > 1e-5"
else
    echo "SKIP cli DPA_200MHz checks: $DPA absent"; skip=$((skip + 1))
fi
# --- metric profiles (docs/metrics.md) and the contiguous-v1 split ---
"$DPD" eval --data "$T/a" --split test --json >"$T/lg.json"
check 'jq1 "$T/lg.json" "j[\"metric_profile\"] == \"legacy-opendpd-v1\" and \"EVM\" in j[\"linear_gain\"]"' \
    "eval: legacy-opendpd-v1 by default, named in the JSON"
"$DPD" eval --data "$T/a" --split test --json --metric-profile opendpd-spectral-v2 >"$T/v2.json"
check 'jq1 "$T/v2.json" "j[\"metric_profile\"] == \"opendpd-spectral-v2\" and set(j[\"linear_gain\"]) >= {\"NMSE\", \"IBE\", \"ACLR_L\", \"ACLR_R\", \"ACLR_AVG\"} and \"EVM\" not in j[\"linear_gain\"] and j[\"linear_gain\"][\"NMSE\"] != j[\"linear_gain\"][\"IBE\"]"' \
    "eval --metric-profile opendpd-spectral-v2: NMSE, IBE and ACLR keys ($(head -c 300 "$T/v2.json"))"
check '! cmp -s "$T/lg.json" "$T/v2.json"' "eval: the profiles give different numbers"
"$DPD" eval --data "$T/a" --split test --metric-profile general-spectral-v1 >"$T/g1.txt"
check 'grep -q "IBE dB" "$T/g1.txt" && grep -q "ACPR_AVG" "$T/g1.txt" && grep -q "general-spectral-v1" "$T/g1.txt"' \
    "eval --metric-profile general-spectral-v1: table names IBE and ACPR"
expect 2 "is not a metric profile" "$DPD" eval --data "$T/a" --metric-profile opendpd-spectral-v3
expect 2 "--metric-profile" "$DPD" train-pa --data "$T/a" --metric-profile legacy --preset quick --out "$T/mp"
"$DPD" train-pa --data "$T/a" --preset quick --epochs 1 --hidden 4 --frame 40 --metric-profile general-spectral-v1 \
    --out "$T/mp" --no-plots --json >"$T/mp.json" 2>"$T/mp.err"
MP=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/mp.json")
check '[ -n "$MP" ] && jq1 "$T/mp.json" "\"IBE\" in j[\"val\"] and \"ACPR_AVG\" in j[\"test\"] and j[\"config\"][\"metric_profile\"] == \"general-spectral-v1\""' \
    "train-pa --metric-profile: the summary's metrics are the profile's ($(head -c 300 "$T/mp.err"))"
check 'jq1 "$MP/config.json" "j[\"metric_profile\"] == \"general-spectral-v1\" and j[\"split\"][\"protocol\"] == \"files\""' \
    "train-pa --metric-profile: recorded in config.json with the split"
check 'head -1 "$MP/history.csv" | grep -q "VAL_NMSE,VAL_IBE,VAL_ACPR_L,VAL_ACPR_R,VAL_ACPR_AVG,TEST_LOSS"' \
    "train-pa --metric-profile: history.csv columns named by the profile"
check 'grep -aq "\"metric_profile\":\"general-spectral-v1\"" "$MP/best.safetensors" && grep -aq "\"val_IBE\"" "$MP/best.safetensors"' \
    "train-pa --metric-profile: in the checkpoint's metadata"
"$DPD" train-pa --resume "$MP" --epochs 2 --json >"$T/mp2.json" 2>"$T/mp2.err"
check 'jq1 "$T/mp2.json" "j[\"epochs\"] == 2 and \"IBE\" in j[\"val\"]" && [ "$(wc -l <"$MP/history.csv")" -eq 3 ]' \
    "resume keeps the run's metric profile ($(head -c 300 "$T/mp2.err"))"
check 'grep -q "^epoch 1/1 train_loss .* val NMSE -*[0-9.]* IBE -*[0-9.]* ACPR -*[0-9.]* | test NMSE" "$T/mp.err" &&
       grep -q "^epoch 2/2 .* IBE .* ACPR " "$T/mp2.err" && ! grep -q " EVM \| ACLR " "$T/mp.err" "$T/mp2.err"' \
    "train-pa --metric-profile: the epoch lines name the profile's metrics, resumed too ($(grep -m1 "^epoch" "$T/mp.err"))"
# a resume whose history.csv lost rows (cut short, removed) says which epochs, and keeps no torn row
"$DPD" train-pa --data "$T/a" --hidden 3 --frame 40 --stride 20 --epochs 3 --no-plots --out "$T/hh" >/dev/null 2>&1
HH=$(ls -d "$T"/hh/a/train_pa/*)
head -c "$(($(head -n 3 "$HH/history.csv" | wc -c) + 20))" "$HH/history.csv" >"$T/hh.csv" && cp "$T/hh.csv" "$HH/history.csv"
"$DPD" train-pa --resume "$HH" --epochs 4 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: $HH/history.csv lost rows (cut short or edited): the learning curve lacks epoch 3 of the 3 the checkpoint has trained" "$T/err" &&
       [ "$(cut -d, -f1 "$HH/history.csv" | tr "\n" " ")" = "EPOCH 1 2 4 " ] && awk -F, "NR > 1 && NF != n { exit 1 } NR == 1 { n = NF }" "$HH/history.csv"' \
    "resume of a run whose history.csv was cut inside epoch 3's row: warned, the torn row dropped (exit $rc: $(head -c 300 "$T/err"))"
rm "$HH/history.csv"
"$DPD" train-pa --resume "$HH" --epochs 5 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: $HH/history.csv is missing: the learning curve lacks epochs 1-4 of the 4 the checkpoint has trained" "$T/err"' \
    "resume of a run whose history.csv is gone: the lost epochs named (exit $rc: $(head -c 300 "$T/err"))"
sed -i "1s/TRAIN_LOSS/TRAIN_LOSS_OLD/" "$HH/history.csv" # another header: none of its rows kept, said so
"$DPD" train-pa --resume "$HH" --epochs 6 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: $HH/history.csv has another header than this run writes (another dpd.s, or edited), so none of its rows is kept: the learning curve lacks epochs 1-5 of the 5" "$T/err" &&
       [ "$(cut -d, -f1 "$HH/history.csv" | tr "\n" " ")" = "EPOCH 6 " ]' \
    "resume of a run whose history.csv has another header: its rows dropped, the epochs named (exit $rc: $(head -c 300 "$T/err"))"
head -c "$(($(wc -c <"$HH/history.csv") - 2))" "$HH/history.csv" >"$T/hh.csv" && cp "$T/hh.csv" "$HH/history.csv" # its last row cut inside its last field
"$DPD" train-pa --resume "$HH" --epochs 7 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: $HH/history.csv lost rows (cut short or edited): the learning curve lacks epochs 1-6 of the 6" "$T/err"' \
    "a history.csv cut inside its last row's last field: that row is torn, said (exit $rc: $(head -c 300 "$T/err"))"
# eval of the run's checkpoint scores under the run's profile unless told otherwise, and says so
"$DPD" eval --data "$T/a" --split test --model "$MP" --json >"$T/mpe.json" 2>"$T/mpe.err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/mpe.json" "j[\"metric_profile\"] == \"general-spectral-v1\" and \"ACPR_AVG\" in j[\"model\"]" &&
       grep -q "^dpd: note: scored under general-spectral-v1, as run PA_S_0_M_GRU_H_4_F_40_P_[0-9]* was (--metric-profile gives another)$" "$T/mpe.err"' \
    "eval --model RUN of a general-spectral-v1 run: scored under its profile, with a note (exit $rc: $(head -c 300 "$T/mpe.err") $(head -c 200 "$T/mpe.json"))"
"$DPD" eval --data "$T/a" --split test --model "$MP" --metric-profile legacy-opendpd-v1 --json >"$T/mpl.json" 2>"$T/mpe.err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/mpl.json" "j[\"metric_profile\"] == \"legacy-opendpd-v1\"" && ! grep -q "note: scored under" "$T/mpe.err"' \
    "eval --model RUN --metric-profile legacy-opendpd-v1: the profile asked for, no note (exit $rc)"
"$DPD" eval --data "$T/a" --split test --model "$MP" --legacy-evm --json >"$T/mpl.json" 2>"$T/mpe.err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/mpl.json" "j[\"metric_profile\"] == \"legacy-opendpd-v1\"" &&
       grep -q "^dpd: note: scored under legacy-opendpd-v1, whose EVM rate --evm-fs (--legacy-evm) sets; run PA_S_0_M_GRU_H_4_F_40_P_[0-9]* was scored under general-spectral-v1" "$T/mpe.err"' \
    "eval --model RUN --legacy-evm of a general-spectral-v1 run: the legacy profile its EVM option belongs to, said (exit $rc: $(head -c 300 "$T/mpe.err"))"
expect 2 "is not a run directory (it holds no config.json): a run directory is OUT/DATASET/train_pa/RUN_ID" "$DPD" train-pa --resume "$T/mp"
cp -r "$MP" "$T/mpbad" && sed -i 's/"hidden": *[0-9]*/"hidden": 0/' "$T/mpbad/config.json"
expect 1 "dpd: $T/mpbad/config.json: hidden: 0 is out of range 1..1024" "$DPD" train-pa --resume "$T/mpbad" --epochs 3
# a resume computes on the kernels the run did (config.json's kernels_used): sse, resumed with no option,
# ends bit for bit as an uninterrupted sse run; other kernels asked for are warned about
"$DPD" train-pa --data "$T/a" --hidden 4 --frame 40 --stride 20 --epochs 1 --kernels sse --no-plots --out "$T/ks1" >/dev/null 2>&1
"$DPD" train-pa --data "$T/a" --hidden 4 --frame 40 --stride 20 --epochs 2 --kernels sse --no-plots --out "$T/ks2" >/dev/null 2>&1
K1=$(ls -d "$T"/ks1/a/train_pa/*) K2=$(ls -d "$T"/ks2/a/train_pa/*)
"$DPD" train-pa --resume "$K1" --epochs 2 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "\"kernels_used\": \"sse\"" "$K1/config.json" && cmp -s "$K1/best.safetensors" "$K2/best.safetensors" && ! grep -q warning "$T/err"' \
    "resume takes the run's kernels (sse): bit for bit an uninterrupted sse run's (exit $rc: $(head -c 200 "$T/err"))"
"$DPD" train-pa --resume "$K1" --epochs 3 --kernels ref >/dev/null 2>"$T/err"
check 'grep -q "^dpd: warning: the run trained on the sse kernels, and the resume computes on the ones asked for: from here its results differ" "$T/err"' \
    "resume with other --kernels: warned ($(head -c 200 "$T/err"))"
# a run whose dataset moved: resume says how, --data names the new place (its train split must be the run's)
cp -r "$T/a" "$T/mv" && "$DPD" train-pa --data "$T/mv" --hidden 4 --frame 40 --stride 20 --epochs 1 --no-plots --out "$T/mvr" >/dev/null 2>&1
MV=$(ls -d "$T"/mvr/mv/train_pa/*) && mv "$T/mv" "$T/mv2"
expect 1 "no such directory (the run's dataset, by its config.json; if it moved, resume with --data DIR)" "$DPD" train-pa --resume "$MV" --epochs 2
"$DPD" synth --out "$T/seed9" --seed 9 >/dev/null 2>&1
expect 2 "dpd: --data: $T/seed9's train split is not the one $MV trained on" "$DPD" train-pa --resume "$MV" --epochs 2 --data "$T/seed9"
"$DPD" train-pa --resume "$MV" --epochs 2 --data "$T/mv2" --no-plots >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "\"data\": \"$T/mv2\"" "$MV/config.json" && [ "$(wc -l <"$MV/history.csv")" -eq 3 ]' \
    "resume --data: a moved dataset, its new place recorded (exit $rc: $(head -c 200 "$T/err"))"
# every split is the run's (config.json records their fingerprints): another test split behind --data,
# or a val split changed in place, is refused naming the split, and nothing of the run changes
cp -r "$T/mv2" "$T/mv3" && sed -i '3s/^[-0-9.]*/0.5/' "$T/mv3/test_output.csv"
cp "$MV/history.csv" "$T/mv.hist"
expect 2 "dpd: --data: $T/mv3's test split is not the one $MV tested on" "$DPD" train-pa --resume "$MV" --epochs 3 --data "$T/mv3"
cp "$T/mv2/val_input.csv" "$T/mv.val" && sed -i '2s/^[-0-9.]*/0.5/' "$T/mv2/val_input.csv"
expect 2 "dpd: --resume: the val split of $T/mv2 (the run's dataset) is not the one $MV validated on" "$DPD" train-pa --resume "$MV" --epochs 3
cp "$T/mv.val" "$T/mv2/val_input.csv"
check 'cmp -s "$T/mv.hist" "$MV/history.csv" && grep -q "\"sha256\": {" "$MV/config.json"' \
    "refused resumes leave the run as it was; config.json records the splits' fingerprints"
# a seed above 2^63 - 1 is written as its digits (a string), not as a negative number, and read back
"$DPD" train-pa --data "$T/a" --hidden 4 --frame 40 --stride 20 --epochs 1 --seed 18446744073709551615 --no-plots --out "$T/sd" --json >"$T/sd.json" 2>/dev/null
SD=$(ls -d "$T"/sd/a/train_pa/*)
# a PA model's measured baseline: the capture's own y, whose ACLR the model's should reach (the PA
# view's measured output ACLR, eval --data above); its NMSE and EVM (y against itself) null, n/a
python3 - "$T/sd.json" "$T/pv.json" <<'PY' >"$T/pam.txt" 2>&1; rc=$?
import json, sys
sd, pv = (json.load(open(p)) for p in sys.argv[1:3])
m, o = sd["measured"], pv["output_aclr"]
print(f"measured {m}, eval --data's output ACLR {o}")
sys.exit(0 if all(abs(m["ACLR_" + k] - o[k]) < 1e-9 for k in ("L", "R", "AVG")) and m["NMSE"] is None and m["EVM"] is None
         and m["status"]["EVM"]["status"] == "not_applicable" and "no_dpd" not in sd and "measured_val" in sd else 1)
PY
check '[ $rc -eq 0 ]' "train-pa --json: measured is the capture's own ACLR (eval --data's measured output ACLR), its NMSE and EVM n/a ($(head -c 400 "$T/pam.txt"))"
"$DPD" train-pa --resume "$SD" --epochs 2 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "\"seed\": \"18446744073709551615\"" "$SD/config.json" && grep -q "\"seed\":\"18446744073709551615\"" "$T/sd.json"' \
    "seed 2^64 - 1: its digits in config.json and --json, and the run resumes (exit $rc: $(head -c 200 "$T/err"))"
# a run written before evm_fs was refused beside a Welch profile still resumes (the rate never scored anything)
sed 's/"evm_fs": *[0-9.e+]*/"evm_fs": 800000000/' "$MP/config.json" >"$T/mp.cfg" && cp "$T/mp.cfg" "$MP/config.json"
"$DPD" train-pa --resume "$MP" --epochs 3 --json >"$T/mp3.json" 2>"$T/mp3.err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "\"evm_fs\": *800000000" "$T/mp.cfg" && jq1 "$T/mp3.json" "j[\"epochs\"] == 3"' \
    "resume of a run whose config.json has evm_fs beside a Welch profile: resumed (exit $rc: $(head -c 300 "$T/mp3.err"))"
# single_csv: contiguous-v1 with its 256-sample guard, recorded in config.json
mkdir -p "$T/sc" && python3 - "$T/a" "$T/sc" <<'PY'
import sys, json
a, d = sys.argv[1], sys.argv[2]
rows = []
for s in ("train", "val", "test"):
    xi = open(f"{a}/{s}_input.csv").read().split("\n")[1:]
    yo = open(f"{a}/{s}_output.csv").read().split("\n")[1:]
    rows += [f"{x},{y}" for x, y in zip(xi, yo) if x]
open(f"{d}/data.csv", "w").write("I_in,Q_in,I_out,Q_out\n" + "\n".join(rows) + "\n")
spec = json.load(open(f"{a}/spec.json"))
spec["dataset_format"] = "single_csv"
json.dump(spec, open(f"{d}/spec.json", "w"))
PY
"$DPD" train-pa --data "$T/sc" --preset quick --epochs 1 --hidden 4 --frame 40 --out "$T/scr" --no-plots --json >"$T/sc.json" 2>"$T/sc.err"
SC=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/sc.json")
check '[ -n "$SC" ] && jq1 "$SC/config.json" "{k: v for k, v in j[\"split\"].items() if k != \"sha256\"} == {\"protocol\": \"contiguous-v1\", \"guard\": 256, \"train\": [0, 22732], \"val\": [22988, 30565], \"test\": [30821, 38400]} and sorted(j[\"split\"][\"sha256\"]) == [\"test\", \"train\", \"val\"]"' \
    "single_csv: contiguous-v1 split of 38400 rows recorded in config.json ($(head -c 300 "$T/sc.err"))"

# a run's own config.json out of range is a malformed file (exit 1, naming it), not a usage error
cp -r "$D1" "$T/badcfg" && sed -i 's/"frame": 40/"frame": 2147483647/' "$T/badcfg/config.json"
expect 1 "badcfg/config.json" "$DPD" train-pa --resume "$T/badcfg" --epochs 9
echo "RESULT cli $pass $fail $skip"
[ "$fail" -eq 0 ]
