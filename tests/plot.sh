#!/bin/sh
# Black-box tests of the pictures: `dpd plot` and the end-of-run pictures of train-pa/train-dpd.
# A tiny synthetic dataset, a 2-epoch PA run and a 1-epoch DPD run through it, then: the files
# exist; every SVG parses as XML and is 800 x 500; every PNG decodes as a decoder reads it (each
# chunk's CRC, the zlib stream and its checksum, the palette) to 800 x 500 pixels, white at the
# corners, with a drawing on them, black and the grid's grey exact; plots.json (run-plots-v1)
# holds the library's plot data (the same twice; the end-of-run pictures equal `dpd plot --split
# val` byte for byte; --data's AM/AM is |y| of the CSV at the fixed stride), at most 4 000 points
# a curve, and history.csv as it is; a DPD run has no_dpd; a silent dataset draws pictures that
# say why they are empty; a split shorter than one segment has no spectrum and says why; a silent
# target beside a model's output is flagged and has no phase; a one-epoch history draws the test
# split's points hollow; a declared bandwidth the data
# contradicts is warned of; --no-plots draws none and changes no result; bad arguments exit 2 with a
# message.
# Usage: sh tests/plot.sh BUILD_DIR. Prints "RESULT plot <passed> <failed> <skipped>".
BUILD=${1:-build}
DPD="$BUILD/dpd"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=plot
. "$(dirname "$0")/lib.sh"
skip=0
# data FILE: a digest of the data region of a safetensors file (weights and optimizer state, not the metadata)
data() { hl=$(od -An -t u8 -N8 "$1" | tr -d ' '); tail -c +$((hl + 9)) "$1" | sha256sum | cut -c1-16; }
# pycheck WHAT CHECK ARGS...: one of the Python checks below (it prints what failed)
pycheck() {
    what=$1; shift
    out=$(python3 "$T/check.py" "$@" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then ok; else bad "$what: $out"; fi
}
# images WHAT png|svg DIR CHART...: each DIR/CHART.png (.svg) is a valid 800 x 500 picture
images() {
    what=$1; kind=$2; dir=$3; shift 3
    files=""; for c in "$@"; do files="$files $dir/$c.$kind"; done
    pycheck "$what: $kind pictures" "$kind" $files
}
if [ ! -x "$DPD" ] || ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP plot: needs $DPD and python3"; echo "RESULT plot 0 0 1"; exit 0
fi
cat >"$T/check.py" <<'EOF'
import json, math, struct, sys, xml.etree.ElementTree as ET, zlib

def fail(msg):
    print(msg); sys.exit(1)

def png(*paths):  # a whole PNG, read as a decoder would: 800 x 500, 8-bit indexed (or RGB), white paper, a drawing on it
    for path in paths:
        b = open(path, 'rb').read()
        if b[:8] != b'\x89PNG\r\n\x1a\n' or b[12:16] != b'IHDR': fail('%s: not a PNG' % path)
        w, h = struct.unpack('>II', b[16:24])
        if (w, h) != (800, 500): fail('%s: %dx%d, want 800x500' % (path, w, h))
        if b[24:29] not in (bytes([8, 3, 0, 0, 0]), bytes([8, 2, 0, 0, 0])):
            fail('%s: IHDR %r, want 8-bit indexed or RGB, deflate, no interlace' % (path, b[24:29]))
        i, idat, types, plte = 8, b'', [], None
        while i < len(b):
            n, = struct.unpack('>I', b[i:i + 4])
            t, d = b[i + 4:i + 8], b[i + 8:i + 8 + n]
            if len(d) != n or struct.unpack('>I', b[i + 8 + n:i + 12 + n]) != (zlib.crc32(t + d),):
                fail('%s: chunk %r at %d is cut short or fails its CRC' % (path, t, i))
            types.append(t)
            idat += d if t == b'IDAT' else b''
            plte = d if t == b'PLTE' else plte
            i += 12 + n
        if types[0] != b'IHDR' or types[-1] != b'IEND' or b'IDAT' not in types: fail('%s: chunks %r' % (path, types))
        indexed = b[25] == 3
        if indexed and (types[1] != b'PLTE' or not 0 < len(plte) <= 768 or len(plte) % 3):
            fail('%s: an indexed PNG whose PLTE is not the chunk after IHDR, of 1 to 256 colours (chunks %r)' % (path, types))
        bpp = 1 if indexed else 3
        raw = zlib.decompress(idat)  # checks the zlib stream's Adler-32 too
        if len(raw) != h * (1 + bpp * w): fail('%s: %d bytes of scanlines, want %d' % (path, len(raw), h * (1 + bpp * w)))
        if any(raw[y * (1 + bpp * w)] != 0 for y in range(h)): fail('%s: a scanline filter other than none' % path)
        rows = b''.join(raw[y * (1 + bpp * w) + 1:(y + 1) * (1 + bpp * w)] for y in range(h))
        if indexed:
            if max(rows) >= len(plte) // 3: fail('%s: index %d past the %d colours of PLTE' % (path, max(rows), len(plte) // 3))
            colours = [plte[k:k + 3] for k in range(0, len(plte), 3)]
            if len(set(colours)) != len(colours): fail('%s: PLTE holds a colour twice' % path)
            px = b''.join(colours[k] for k in rows)
        else:
            px = rows
        if px[:3] != b'\xff\xff\xff' or px[-3:] != b'\xff\xff\xff': fail('%s: the corners are not white' % path)
        inked = sum(1 for k in range(0, len(px), 3) if px[k:k + 3] != b'\xff\xff\xff')
        if inked < w * h // 100: fail('%s: %d pixels drawn, almost nothing' % (path, inked))
        drawn = set(px[k:k + 3] for k in range(0, len(px), 3))
        for name, c in (('black', b'\0\0\0'), ('the grid\'s grey', b'\xdd\xdd\xdd')):  # exact, whatever the palette
            if c not in drawn: fail('%s: no pixel is exactly %s #%s' % (path, name, c.hex()))

def svg(*paths):  # well-formed XML, an <svg> of 800 x 500 with something drawn
    for path in paths:
        root = ET.parse(path).getroot()
        if not root.tag.endswith('svg'): fail('%s: root is %s' % (path, root.tag))
        if root.get('width', '').replace('px', '') != '800' or root.get('height', '').replace('px', '') != '500':
            fail('%s: %s x %s, want 800 x 500' % (path, root.get('width'), root.get('height')))
        if sum(1 for e in root.iter() if e.tag.endswith('path')) < 10: fail('%s: almost nothing drawn' % path)

def bounded(p):  # every curve of a plots-v1 document holds at most 4 000 points
    for key in ('psd', 'residual', 'amam', 'ampm'):
        c = p[key]
        arrays = [c.get('freq'), c.get('input'), c.get('db')] + list(c.get('series', {}).values())
        for a in arrays:
            if a is not None and len(a) > 4000: fail('%s: %d points' % (key, len(a)))
    if len(p['psd']['freq']) != len(p['psd']['series']['target' if 'target' in p['psd']['series'] else 'linear']):
        fail('psd: freq and series differ in length')

def history(doc, csv):  # the history part is history.csv, value for value
    rows = [l.rstrip('\n').split(',') for l in open(csv) if l.strip()]
    h = doc['history']
    if h['columns'] != rows[0]: fail('history columns differ from %s' % csv)
    if len(h['rows']) != len(rows) - 1: fail('history: %d rows, %s has %d' % (len(h['rows']), csv, len(rows) - 1))
    for got, want in zip(h['rows'], rows[1:]):
        for g, w in zip(got, want):
            if w == 'nan': ok = g is None
            else:
                try: ok = g == float(w)
                except ValueError: ok = g == w
            if not ok: fail('history value %r, history.csv has %r' % (g, w))

def run(path, csv, split, dpd):
    doc = json.load(open(path))
    want = {'version': 'run-plots-v1', 'split': split, 'checkpoint': 'best.safetensors', 'dpd': dpd}
    for k, v in want.items():
        if doc.get(k) != v: fail('%s: %s is %r, want %r' % (path, k, doc.get(k), v))
    p = doc['plots']
    if p['version'] != 'plots-v1' or p['empty'] is not None: fail('%s: not plots-v1 data with power' % path)
    names = set(p['psd']['series'])
    if names != ({'target', 'prediction', 'no_dpd', 'measured'} if dpd else {'target', 'prediction'}): fail('series %s' % sorted(names))
    for key in ('amam', 'ampm'):
        if set(p[key]['series']) != names: fail('%s series %s' % (key, sorted(p[key]['series'])))
    bounded(p)
    history(doc, csv)

def adjacent(path, key):  # the legends' figures: the run's own on the split drawn (best.csv's row, run_started's baselines)
    doc = json.load(open(path)); split = doc['split']; got = doc.get('adjacent')
    if key == 'none':
        if got is not None or 'error' in doc: fail('%s: adjacent %r, error %r, where the run\'s figures do not apply' % (path, got, doc.get('error')))
        return
    rows = [l.rstrip('\n').split(',') for l in open(doc['run_dir'] + '/best.csv') if l.strip()]
    nmse = {'metric': 'NMSE', 'value': float(rows[-1][rows[0].index('%s_NMSE' % split.upper())])}
    if doc.get('error') != nmse: fail('%s: error %r, want the residual\'s NMSE %r' % (path, doc.get('error'), nmse))
    want = {'prediction': float(rows[-1][rows[0].index('%s_%s' % (split.upper(), key))])}
    b = doc.get('baselines') or {}
    for name, src in (('no_dpd', 'no_dpd'), ('measured' if doc['dpd'] else 'target', 'measured')):
        if src in b and b[src][split].get(key) is not None: want[name] = b[src][split][key]
    if len(want) != (3 if doc['dpd'] else 2) or got != {'metric': key, 'series': want}:
        fail('%s: adjacent %r, want %r' % (path, got, {'metric': key, 'series': want}))

def data(path, dataset, split):  # --data: y and g x; AM/AM is |y| of the CSV at the fixed stride
    doc = json.load(open(path))
    p = doc['plots']
    if doc['run_dir'] is not None or doc['checkpoint'] is not None or not doc['gain'] > 0: fail('%s: head %r' % (path, {k: doc[k] for k in ('run_dir', 'checkpoint', 'gain')}))
    if set(p['psd']['series']) != {'linear', 'output'}: fail('series %s' % sorted(p['psd']['series']))
    bounded(p)
    f32 = lambda v: struct.unpack('f', struct.pack('f', float(v)))[0]
    def amps(name):
        rows = [l.split(',') for l in open('%s/%s_%s.csv' % (dataset, split, name)).read().split('\n')[1:] if l]
        return [round(math.hypot(f32(r[0]), f32(r[1])) * 1e6) / 1e6 for r in rows]
    y, x = amps('output'), amps('input')
    stride = (len(y) + 3999) // 4000
    if p['amam']['series']['output'] != y[::stride]: fail('amam.output is not |y| of %s at stride %d' % (dataset, stride))
    if p['amam']['input'] != x[::stride]: fail('amam.input is not |x| of %s at stride %d' % (dataset, stride))

def short(path):
    p = json.load(open(path))['plots']
    why = p.get('why_no_psd')
    if not isinstance(why, str) or 'fewer than one 1280-sample segment' not in why: fail('%s: why_no_psd is %r' % (path, why))
    if p.get('psd') is not None or p.get('residual') is not None: fail('%s: psd and residual are not null' % path)
    if len(p['amam']['input']) != 100: fail('%s: amam has %d points, want 100' % (path, len(p['amam']['input'])))

def silent_target(path):
    p = json.load(open(path))['plots']
    if p.get('silent') != ['target'] or p.get('empty') is not None: fail('%s: silent %r, empty %r' % (path, p.get('silent'), p.get('empty')))
    if not any(p['amam']['series']['prediction']): fail('%s: the prediction is silent too' % path)
    for name, v in p['ampm']['series'].items(): # x is silent too: no phase anywhere, not a phase of 0
        if any(a is not None for a in v): fail('%s: %s has a phase against a silent x' % (path, name))

def hollow(path):  # a one-epoch history: the test split's points hollow squares, the val split's filled
    import re
    s = open(path).read()
    # cairo's SVG: a stroked, unfilled closed square, M x0 y0 L x1 y0 L x1 y1 L x0 y1 Z
    shape = r'<path style="fill:%s[^"]*stroke:(rgb\([^)]*\))[^"]*" d="M ([\d.]+) ([\d.]+) L ([\d.]+) \3 L \4 ([\d.]+) L \2 \5 Z'
    rings = {c for c, x0, y0, x1, y1 in re.findall(shape % 'none;stroke-width:1;', s)
             if float(x1) - float(x0) == 4 and float(y1) - float(y0) == 4 and 78 < float(x0) < 638}
    colours = {'test loss': 'rgb(83.529412%,36.862745%,0%)', 'NMSE': 'rgb(0%,44.705882%,69.803922%)',
               'EVM': 'rgb(0%,61.960784%,45.098039%)', 'ACLR_AVG': 'rgb(80%,47.45098%,65.490196%)'}
    missing = [k for k, c in colours.items() if c not in rings]
    if missing: fail('%s: no hollow point of %s (hollow: %s)' % (path, ', '.join(missing), sorted(rings)))
    filled = re.findall(r'<path style=" ?stroke:none;fill-rule:nonzero;fill:(rgb\([^)]*\))[^"]*" d="M ([\d.]+) [\d.]+ L ([\d.]+) ', s)
    if not any(c == colours['NMSE'] and float(b) - float(a) == 5 and 78 < float(a) < 638 for c, a, b in filled):
        fail('%s: no filled point of the val NMSE' % path)

def baselines(svg, doc, events, table):  # the test ACLR_AVG of the capture's y (and a DPD run's PA model without DPD): grey lines
    import re
    d = json.load(open(doc)); b = d.get('baselines'); dpd = d['dpd']
    first = json.loads(open(events).readline())
    want = {k: first[k] for k in ('measured', 'no_dpd') if k in first}
    if first.get('type') != 'run_started' or not b or b != want or ('no_dpd' in b) != dpd:
        fail('%s: baselines %r are not run_started\'s of %s' % (doc, b, events))
    rows = {l[:16].strip(): l.split() for l in open(table) if l.startswith(('no DPD test', 'measured test'))}
    for key, row in (('no_dpd', 'no DPD test'), ('measured', 'measured test'))[0 if dpd else 1:]:  # the last column: ACLR_AVG
        if '%.3f' % b[key]['test']['ACLR_AVG'] != rows[row][-1]: fail('%s ACLR_AVG %r, the table says %s' % (key, b[key]['test'], rows[row]))
    if not dpd and (b['measured']['test']['NMSE'] is not None or 'NMSE' not in b['measured']['test'].get('status', {})):
        fail('a PA run\'s measured NMSE (y against itself) is not n/a: %r' % b['measured']['test'])
    grey = r'<path style="fill:none;stroke-width:1;[^"]*stroke:rgb\(54.901961%,54.901961%,54.901961%\);stroke-opacity:1;([^"]*)" d="M 78 ([\d.]+) L 638 \2 "/>'
    lines = re.findall(grey, open(svg).read())
    if [re.search(r'stroke-dasharray:([\d,]+)', st).group(1) for st, y in lines] != (['2,2', '8,3,2,3'] if dpd else ['2,2']):
        fail('%s: %d grey lines across the panel, want the measured (dotted)%s: %r' % (svg, len(lines), ' and the PA model\'s (dash-dotted)' if dpd else '', lines))
    if dpd and (float(lines[0][1]) < float(lines[1][1])) != (b['measured']['test']['ACLR_AVG'] > b['no_dpd']['test']['ACLR_AVG']):
        fail('%s: the lines at y %s (measured) and %s (PA model) are not in the order of %r' % (svg, lines[0][1], lines[1][1], b))

def legends_inside(*svgs):  # every legend box within the 800-pixel picture
    import re
    for svg in svgs:
        boxes = re.findall(r'fill:rgb\(100%,100%,100%\);fill-opacity:0.9;[^"]*" d="M ([\d.]+) [\d.]+ L ([\d.]+) ', open(svg).read())
        if not boxes: fail('%s: no legend' % svg)
        for x0, x1 in boxes:
            if float(x1) > 800: fail('%s: a legend box from x %s to %s, past the picture\'s edge' % (svg, x0, x1))

def legend_clear(svg):  # the PSD's legend box beside the adjacent channels, not over them (nor the main channel between)
    import re
    s = open(svg).read()
    bands = [(float(a), float(b)) for a, b in re.findall(r'fill-opacity:0.35;" d="M ([\d.]+) 44 L ([\d.]+) 44 ', s)]
    boxes = re.findall(r'fill:rgb\(100%,100%,100%\);fill-opacity:0.9;[^"]*" d="M ([\d.]+) [\d.]+ L ([\d.]+) ', s)
    if len(bands) != 2 or len(boxes) != 1: fail('%s: %d adjacent bands, %d legend boxes' % (svg, len(bands), len(boxes)))
    x0, x1 = map(float, boxes[0])
    if not (x0 >= bands[1][1] or x1 <= bands[0][0]): fail('%s: the legend (x %s to %s) lies over the channels %r' % (svg, x0, x1, bands))

def band_edges(svg):  # each edge of the shaded channels once, a dashed dark line: the bands told apart in grey print
    import re
    s = open(svg).read()
    shades = re.findall(r'fill-opacity:0.(?:35|16);" d="M ([\d.]+) 44 L ([\d.]+) 44 ', s)
    want = sorted({math.floor(float(x)) + 0.5 for pair in shades for x in pair})
    paths = re.findall(r'stroke:rgb\(33.333333%,33.333333%,33.333333%\);stroke-opacity:1;stroke-dasharray:4,3;[^"]*" d="([^"]*)"', s)
    got = sorted(float(x) for p in paths for x in re.findall(r'M ([\d.]+) 44 L \1 440', p))
    if len(shades) != 3 or got != want: fail('%s: dashed band edges at %r, the shades\' edges at %r' % (svg, got, want))

def psd_note(svg, doc, want_some):  # the PSD's warning under its x axis, from its legend's figures: a DPD worse than none, a PA model 3 dB below y
    import re
    below = len([y for y in re.findall(r'<use xlink:href="#glyph[^"]*" x="[\d.]+" y="([\d.]+)"', open(svg).read()) if float(y) > 485])
    a = json.load(open(doc)).get('adjacent') or {'series': {}}; s = a['series']; key = a.get('metric', '')[:4]; p = s.get('prediction')
    note = ''
    if p is not None and s.get('no_dpd') is not None and p > s['no_dpd']:
        note = 'with DPD the %s is %.1f dB worse than without it' % (key, p - s['no_dpd'])
    elif p is not None and s.get('target') is not None and p <= s['target'] - 3:
        note = "the PA model's %s is %.1f dB below the measured y's: it misses the PA's regrowth" % (key, s['target'] - p)
    if below != len(note): fail('%s: %d characters under the x axis, want %d: "%s"' % (svg, below, len(note), note))
    if want_some and not note: fail('%s: no warning to check (figures %r)' % (doc, s))

def beyond(ampm, amam, doc, want_some):  # AM/PM says how many points lie beyond its phase axis, under the x label
    import math, re
    below = lambda path: len([y for y in re.findall(r'<use xlink:href="#glyph[^"]*" x="[\d.]+" y="([\d.]+)"', open(path).read())
                              if float(y) > 485])  # cairo's SVG: a glyph a character, spaces too
    # the axis as dpd draws it: the values' 0.5 % and 99.5 % order statistics, 10 % beyond, out to whole 1-2-5 steps
    v = sorted(x for s in json.load(open(doc))['plots']['ampm']['series'].values() for x in s if x is not None)
    m = len(v); lo, hi = v[m // 200], v[m - 1 - m // 200]; lo, hi = lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo)
    raw = (hi - lo) / 6; p = 10.0 ** math.floor(math.log10(raw)); f = raw / p
    step = (1 if f < 1.5 else 2 if f < 3 else 5 if f < 7 else 10) * p
    a0, a1 = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
    off = sum(x < a0 or x > a1 for x in v)
    note = '%d of the %d points drawn lie beyond the phase axis' % (off, m) if off else ''
    if below(ampm) != len(note): fail('%s: %d characters under the x label, want %d: "%s"' % (ampm, below(ampm), len(note), note))
    if want_some and not off: fail('%s: no point beyond the axis to say anything about' % doc)
    if below(amam): fail('%s: AM/AM clips nothing, yet has %d characters under its x label' % (amam, below(amam)))

def empty(path):
    p = json.load(open(path))['plots']
    if not isinstance(p.get('empty'), str) or 'silent' not in p['empty'] or 'psd' in p: fail('%s: empty is %r' % (path, p.get('empty')))

getattr(sys.modules[__name__], sys.argv[1])(*[json.loads(a) if a in ('true', 'false') else a for a in sys.argv[2:]])
EOF
CHARTS="psd amam ampm iq residual history"

# --- a tiny dataset, a PA run with its end-of-run pictures ---
"$DPD" synth --out "$T/d" --length 12800 --nperseg 1280 --seed 1 >/dev/null || { echo "RESULT plot 0 1 0"; exit 1; }
"$DPD" train-pa --data "$T/d" --hidden 4 --epochs 2 --preset quick --out "$T/r" >"$T/train.out" 2>"$T/train.err"
R=$(ls -d "$T"/r/d/train_pa/* 2>/dev/null | head -n 1)
check '[ -n "$R" ] && [ -f "$R/best.safetensors" ]' "train-pa ran ($(tail -n 2 "$T/train.err"))"
check 'for c in $CHARTS; do [ -s "$R/plots/$c.png" ] || exit 1; done && [ -s "$R/plots/plots.json" ]' \
    "train-pa: the end-of-run pictures and plots.json are in RUN_DIR/plots ($(ls "$R/plots" 2>&1 | tr '\n' ' '))"
check 'grep -qF "pictures: $R/plots" "$T/train.out"' "train-pa says where the pictures are"
check '[ -z "$(find "$R" -name "*.tmp.*")" ]' "no temporary files left"
images "end of run" png "$R/plots" $CHARTS
pycheck "end-of-run plots.json" run "$R/plots/plots.json" "$R/history.csv" val false
pycheck "the PSD legend's ACLR_AVG of each series: the best epoch's val figure (best.csv) and the capture's y (run_started's)" \
    adjacent "$R/plots/plots.json" ACLR_AVG
cp "$R/plots/plots.json" "$T/end.json"
check '! grep -q "0000000000\|9999999999" "$T/end.json"' "plots.json numbers are short (15 significant digits give them back exactly)"

# --- dpd plot: png and svg, the same numbers twice, the end-of-run pictures again ---
"$DPD" plot "$R" >"$T/p.out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < "$T/p.out")" -eq 7 ] && grep -qxF "$R/plots/psd.png" "$T/p.out"' \
    "dpd plot RUN_DIR: exit 0, prints the 7 paths it wrote (exit $rc: $(head -c 300 "$T/err"))"
pycheck "dpd plot's plots.json (test)" run "$R/plots/plots.json" "$R/history.csv" test false
pycheck "dpd plot's PSD legend: the test split's ACLR_AVG" adjacent "$R/plots/plots.json" ACLR_AVG
images "dpd plot" png "$R/plots" $CHARTS
"$DPD" plot "$R" --format svg --out "$T/svg" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ]' "dpd plot --format svg --out DIR (exit $rc: $(head -c 300 "$T/err"))"
images "dpd plot --format svg" svg "$T/svg" $CHARTS
pycheck "a PA run's learning curves: the test ACLR_AVG of the capture's y (its NMSE n/a), as events.jsonl and the table say, a grey line" \
    baselines "$T/svg/history.svg" "$T/svg/plots.json" "$R/events.jsonl" "$T/train.out"
pycheck "the PSD's and the residual's bands: each edge a dashed line, once (the shades are one grey in print)" band_edges "$T/svg/psd.svg"
pycheck "and the residual's" band_edges "$T/svg/residual.svg"
pycheck "the PSD's note under its axis, from its figures (a PA model 3 dB or more below the capture's ACLR, or none)" psd_note "$T/svg/psd.svg" "$T/svg/plots.json" false
pycheck "AM/PM's note of the points beyond its axis (AM/AM has none)" beyond "$T/svg/ampm.svg" "$T/svg/amam.svg" "$T/svg/plots.json" false
check 'cmp -s "$T/svg/plots.json" "$R/plots/plots.json"' "the same run, split and checkpoint give the same plots.json, twice"
cp -r "$R" "$T/hostile" && python3 - "$T/hostile/events.jsonl" <<'PY'
import json, sys  # a run_started line whose measured val ACLR_AVG is no figure a legend can name
lines = open(sys.argv[1]).read().splitlines(); e = json.loads(lines[0])
e['measured']['val']['ACLR_AVG'] = -1e300
open(sys.argv[1], 'w').write('\n'.join([json.dumps(e)] + lines[1:]) + '\n')
PY
"$DPD" plot "$T/hostile" --split val --format svg --out "$T/hostile-plots" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[\"adjacent\"][\"series\"]; sys.exit(0 if \"target\" not in a and \"prediction\" in a else 1)" "$T/hostile-plots/plots.json"' \
    "a baseline of -1e300 in events.jsonl is no legend figure (the model's stays) (exit $rc: $(head -c 200 "$T/err"))"
pycheck "and the PSD's legend stays inside the picture" legends_inside "$T/hostile-plots/psd.svg"
"$DPD" plot "$R" --split val --out "$T/val" >/dev/null 2>&1
check 'cmp -s "$T/val/plots.json" "$T/end.json"' \
    "the end-of-run pictures (the best epoch's validation predictions, no forward pass) equal dpd plot --split val's"

# --- --no-plots: no pictures, the same training results; resume draws them again ---
"$DPD" train-pa --data "$T/d" --hidden 4 --epochs 2 --preset quick --out "$T/np" --no-plots >"$T/np.out" 2>&1
NP=$(ls -d "$T"/np/d/train_pa/* | head -n 1)
check '[ -f "$NP/best.safetensors" ] && [ ! -e "$NP/plots" ] && ! grep -q "pictures:" "$T/np.out"' "--no-plots leaves no plots/ directory"
check 'cmp -s "$NP/best.safetensors" "$R/best.safetensors" && [ "$(data "$NP/last.safetensors")" = "$(data "$R/last.safetensors")" ] && [ "$(cut -d, -f1,2,4- "$NP/history.csv")" = "$(cut -d, -f1,2,4- "$R/history.csv")" ]' \
    "pictures change no result: best.safetensors, last.safetensors' weights and optimizer state, and history.csv (but its TIME column) equal a --no-plots run's"
"$DPD" train-pa --resume "$NP" --epochs 3 --no-plots >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ ! -e "$NP/plots" ]' "--resume takes --no-plots (exit $rc: $(head -c 200 "$T/err"))"
"$DPD" train-pa --resume "$NP" --epochs 4 >/dev/null 2>"$T/err"; rc=$?
"$DPD" plot "$NP" --split val --out "$T/npv" >/dev/null 2>&1
check '[ $rc -eq 0 ] && cmp -s "$NP/plots/plots.json" "$T/npv/plots.json"' "a resumed run's end-of-run pictures equal dpd plot --split val's (exit $rc)"
pycheck "a resumed run's plots.json" run "$NP/plots/plots.json" "$NP/history.csv" val false
"$DPD" train-pa --resume "$NP" --epochs 5 --no-plots >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$NP/plots/plots.json" "$T/npv/plots.json" && grep -qF "dpd: note: $NP/plots holds the pictures from before this resume (--no-plots): dpd plot " "$T/err" && grep -q "dpd plot .$NP. draws the run as it is now" "$T/err"' \
    "a resume with --no-plots keeps the earlier pictures and says they are from before it (exit $rc: $(head -c 300 "$T/err"))"

# --- a DPD run: no_dpd beside the DPD, at the end of the run and with dpd plot ---
"$DPD" train-dpd --data "$T/d" --pa "$R" --hidden 3 --epochs 1 --preset quick --out "$T/r" >"$T/dpd.out" 2>"$T/err"
DR=$(ls -d "$T"/r/d/train_dpd/*/* 2>/dev/null | head -n 1)
check 'grep -q "^no DPD test " "$T/dpd.out" && grep -q "^measured test " "$T/dpd.out" && grep -q "no DPD: the frozen PA model driven by x itself, against g x (the model.s figure); measured: the capture.s" "$T/dpd.out"' \
    "train-dpd's table says its no-DPD rows are the PA model's figures, its measured rows the capture's ($(tail -n 4 "$T/dpd.out"))"
check '[ -n "$DR" ] && [ -s "$DR/plots/psd.png" ]' "train-dpd draws its pictures ($(tail -n 1 "$T/err"))"
check 'grep -q "^dpd: warning: this DPD makes the test split.s ACLR_AVG worse than no DPD (-[0-9.]* against -[0-9.]* dBc)" "$T/err"' \
    "a 1-epoch DPD worse than no DPD: train-dpd says so ($(grep -c warning "$T/err") warnings)"
check 'grep -q "\"warning\".*worse than no DPD" "$DR/events.jsonl"' \
    "the run's events.jsonl keeps that warning (the library's event: the studio shows it from there)"
pycheck "train-dpd's end-of-run plots.json" run "$DR/plots/plots.json" "$DR/history.csv" val true
pycheck "a DPD run's PSD legend: with DPD, the PA model without it and the capture's y, each its val ACLR_AVG" \
    adjacent "$DR/plots/plots.json" ACLR_AVG
"$DPD" plot "$DR" --split val --out "$T/dpv" >/dev/null 2>&1
check 'cmp -s "$T/dpv/plots.json" "$DR/plots/plots.json"' "a DPD run's end-of-run pictures equal dpd plot --split val's"
"$DPD" plot "$DR" --out "$T/dp" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ]' "dpd plot of a DPD run (exit $rc: $(head -c 200 "$T/err"))"
pycheck "dpd plot of a DPD run" run "$T/dp/plots.json" "$DR/history.csv" test true
pycheck "and its PSD legend: each series' test ACLR_AVG" adjacent "$T/dp/plots.json" ACLR_AVG
"$DPD" plot --data "$T/d" --out "$T/dpd-data" >/dev/null 2>&1 # the capture's own y: the DPD run's measured series
check 'python3 -c "
import json, sys
a, b = (json.load(open(p))[\"plots\"] for p in sys.argv[1:])
sys.exit(any(a[k][\"series\"][\"measured\"] != b[k][\"series\"][\"output\"] for k in (\"psd\", \"amam\", \"ampm\")))" "$T/dp/plots.json" "$T/dpd-data/plots.json"' \
    "a DPD run's measured series (PSD, AM/AM, AM/PM) is the capture's y, as dpd plot --data draws it"
"$DPD" plot "$DR" >/dev/null 2>"$T/err"; rc=$?
"$DPD" plot "$DR" >/dev/null 2>"$T/err2"
check '[ $rc -eq 0 ] && grep -q "note: replacing the val split.s pictures in .* with the test split.s" "$T/err" && grep -q "\"split\":\"test\"" "$DR/plots/plots.json" && ! grep -q replacing "$T/err2"' \
    "dpd plot RUN_DIR says when it replaces the end of the run's val pictures with the test split's, and only then (exit $rc)"
"$DPD" plot "$DR" --format svg >/dev/null 2>&1
check '[ -s "$DR/plots/psd.svg" ] && [ -s "$DR/plots/history.svg" ] && ! ls "$DR/plots" | grep -q "\.png$"' \
    "a set of SVGs written where PNGs were removes the PNGs: the directory holds the set plots.json describes ($(ls "$DR/plots" | tr "\n" " "))"
pycheck "a one-epoch history: val and test told apart by their points (filled, hollow), not by dashes alone" hollow "$DR/plots/history.svg"
pycheck "a DPD run's legends (four series) lie within the picture" legends_inside "$DR/plots/psd.svg" "$DR/plots/amam.svg" "$DR/plots/iq.svg" "$DR/plots/history.svg"
pycheck "its PSD's legend (four series and their ACLR) lies beside the channels, not over them" legend_clear "$DR/plots/psd.svg"
pycheck "and says under its axis that this DPD leaves the ACLR worse than none, by how much" psd_note "$DR/plots/psd.svg" "$DR/plots/plots.json" true
pycheck "and its residual's (the error and its NMSE)" legend_clear "$DR/plots/residual.svg"
pycheck "a DPD run's learning curves: its test ACLR_AVG without DPD (measured, PA model) as events.jsonl and the table say, two grey lines in their order" \
    baselines "$DR/plots/history.svg" "$DR/plots/plots.json" "$DR/events.jsonl" "$T/dpd.out"
"$DPD" plot "$DR" >/dev/null 2>&1
check '[ -s "$DR/plots/psd.png" ] && ! ls "$DR/plots" | grep -q "\.svg$"' "and back to PNGs: the SVGs go"

# --- --data: the measured dataset alone ---
"$DPD" plot --data "$T/d" --out "$T/data" >"$T/p.out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < "$T/p.out")" -eq 6 ] && [ ! -e "$T/data/history.png" ]' \
    "dpd plot --data: exit 0, 5 charts and plots.json (exit $rc: $(head -c 300 "$T/err"))"
pycheck "dpd plot --data" data "$T/data/plots.json" "$T/d" test
"$DPD" eval --data "$T/d" --split test --json >"$T/eval.json" 2>/dev/null
check 'python3 -c "
import json, sys
d, e = (json.load(open(p)) for p in sys.argv[1:])
a, err, lin = d.get(\"adjacent\") or {}, d.get(\"error\") or {}, e[\"linear_gain\"]
ok = a.get(\"metric\") == \"ACLR_AVG\" and a[\"series\"][\"output\"] == e[\"output_aclr\"][\"AVG\"] and abs(err[\"value\"] - lin[\"NMSE\"]) < 1e-6
sys.exit(0 if ok and abs(a[\"series\"][\"linear\"] - lin[\"ACLR_AVG\"]) < 1 else 1)" "$T/data/plots.json" "$T/eval.json"' \
    "dpd plot --data's legends: y's ACLR_AVG and the residual's NMSE (g x against y) as dpd eval --data gives them ($(head -c 300 "$T/data/plots.json" | tr -d '\n'))"
images "dpd plot --data" png "$T/data" psd amam ampm iq residual
mkdir -p "$T/nt" && cp "$T/d/spec.json" "$T/d/test_input.csv" "$T/d/test_output.csv" "$T/nt/"
"$DPD" plot --data "$T/nt" --out "$T/ntp" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "has no train split (or a silent one): g x is drawn at the test split.s own gain" "$T/err" && [ -s "$T/ntp/psd.png" ]' \
    "dpd plot --data of a dataset without a train split: drawn at the split's own gain, with a warning (exit $rc)"
ABS_DPD=$(realpath "$DPD") # (BUILD may be relative: the command runs elsewhere)
mkdir -p "$T/here" && (cd "$T/here" && "$ABS_DPD" plot --data "$T/d/" --split val >/dev/null 2>&1)
check '[ -s "$T/here/plots/d/psd.png" ] && [ ! -e "$T/d/plots" ]' \
    "dpd plot --data DIR writes plots/NAME in the current directory by default, nothing into the dataset"
(cd "$T/d" && "$ABS_DPD" plot --data . >/dev/null 2>"$T/err"); rc=$?
check '[ $rc -eq 2 ] && grep -q "is inside the dataset .*give --out DIR" "$T/err" && [ ! -e "$T/d/plots" ]' \
    "dpd plot --data . from inside the dataset refuses to write into it (exit $rc: $(head -c 200 "$T/err"))"
mv "$T/d" "$T/moved"
expect 1 "give it with --data DIR" "$DPD" plot "$R" --out "$T/x"
"$DPD" plot "$R" --data "$T/moved" --out "$T/moved-plots" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/moved-plots/psd.png" ]' "dpd plot RUN_DIR --data DIR: a dataset that moved (exit $rc: $(head -c 200 "$T/err"))"
pycheck "the run drawn on its own dataset, moved (the same train split by fingerprint): its PSD legend's figures" adjacent "$T/moved-plots/plots.json" ACLR_AVG
"$DPD" synth --out "$T/other" --length 12800 --nperseg 1280 --seed 2 >/dev/null 2>&1
"$DPD" plot "$R" --data "$T/other" --out "$T/other-plots" >/dev/null 2>&1
pycheck "a run drawn on another dataset (--data DIR): no PSD legend figures (the run's are of its own data)" adjacent "$T/other-plots/plots.json" none
mv "$T/moved" "$T/d"

# --- a silent capture: pictures that say why they are empty ---
mkdir -p "$T/silent"
sed 's/"nperseg": 1280/"nperseg": 256/' "$T/d/spec.json" >"$T/silent/spec.json"
for s in train val test; do for io in input output; do
    { echo "I,Q"; i=0; while [ $i -lt 300 ]; do echo "0,0"; i=$((i + 1)); done; } >"$T/silent/${s}_$io.csv"
done; done
"$DPD" plot --data "$T/silent" --out "$T/sp" --format svg >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ]' "a silent capture: exit 0 (exit $rc: $(head -c 300 "$T/err"))"
check 'grep -q "has no gain: its train split is missing or silent and its test split.s x or y is all zero" "$T/err" && ! grep -q "own gain" "$T/err"' \
    "a silent capture: the warning says it has no gain, not a gain of 0 ($(head -c 300 "$T/err"))"
pycheck "a silent capture's plots.json" empty "$T/sp/plots.json"
images "a silent capture" svg "$T/sp" psd amam ampm iq residual
check '[ "$(grep -c "<path" "$T/sp/psd.svg")" -lt "$(grep -c "<path" "$T/svg/psd.svg")" ]' \
    "a silent capture's PSD draws no curves"
"$DPD" plot --data "$T/silent" --out "$T/sp2" >/dev/null 2>&1
images "a silent capture" png "$T/sp2" psd amam

# --- a split shorter than one segment: no spectrum, and why; a silent target; a band plan the data contradicts ---
mkdir -p "$T/short" && cp "$T/d/spec.json" "$T/short/"
for io in input output; do head -n 101 "$T/d/test_$io.csv" >"$T/short/test_$io.csv"; done
"$DPD" plot --data "$T/short" --out "$T/shp" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ]' "a 100-sample split: exit 0 (exit $rc: $(head -c 300 "$T/err"))"
pycheck "a 100-sample split's plots.json" short "$T/shp/plots.json"
images "a 100-sample split" png "$T/shp" psd residual amam
"$DPD" plot "$R" --data "$T/silent" --out "$T/st" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ]' "a model on a silent capture: exit 0 (exit $rc: $(head -c 300 "$T/err"))"
pycheck "a model on a silent capture: plots.json" silent_target "$T/st/plots.json"
mkdir -p "$T/bw" && cp "$T/d"/*.csv "$T/bw/"
sed 's/"bw_main_ch": 200000000.0/"bw_main_ch": 100000000.0/; s/"bw_sub_ch": 20000000.0/"bw_sub_ch": 10000000.0/' "$T/d/spec.json" >"$T/bw/spec.json"
"$DPD" plot --data "$T/bw" --out "$T/bwp" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "dataset doctor on .*Bandwidth does not match spec.json" "$T/err"' \
    "dpd plot warns, as dpd eval does, of a declared bandwidth the data contradicts (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" plot --data "$T/d" --out "$T/okp" >/dev/null 2>"$T/err"
check '! grep -q "dataset doctor" "$T/err"' "and not of a dataset whose band plan is right ($(head -c 200 "$T/err"))"

# --- a directory dpd never drew into keeps its own files of the chart names ---
mkdir -p "$T/own" && echo mine >"$T/own/psd.svg"
"$DPD" plot --data "$T/d" --out "$T/own" >/dev/null 2>&1
check '[ "$(cat "$T/own/psd.svg")" = mine ] && [ -s "$T/own/psd.png" ]' "dpd plot keeps another program's psd.svg in a directory without plots.json"
"$DPD" plot --data "$T/d" --out "$T/own" --format svg >/dev/null 2>&1
check '[ ! -e "$T/own/psd.png" ] && grep -q "<svg" "$T/own/psd.svg"' "and, once it drew there, an SVG set replaces its PNG set"

# --- the metric profile's PSD and bands: the run's own, or --metric-profile ---
"$DPD" fit-ls --data "$T/d" --kind mp --K 3 --Q 2 --metric-profile general-spectral-v1 --out "$T/gp" >/dev/null 2>"$T/err"; rc=$?
GP=$(find "$T/gp" -name config.json -exec dirname {} \; | head -n 1)
check '[ $rc -eq 0 ] && python3 -c "import json,sys; p=json.load(open(sys.argv[1]))[\"plots\"][\"psd\"]; sys.exit(0 if p[\"y_unit\"] == \"dB/Hz\" and p[\"profile\"] == \"general-spectral-v1\" and p[\"bands\"][\"adjacent_right\"] == [100, 300] else 1)" "$GP/plots/plots.json"' \
    "a run scored under general-spectral-v1 draws that profile's PSD and ACPR bands (exit $rc: $(head -c 200 "$T/err"))"
pycheck "its PSD legend names the profile's ACPR_AVG" adjacent "$GP/plots/plots.json" ACPR_AVG
"$DPD" plot "$GP" --metric-profile legacy-opendpd-v1 --out "$T/gpl" >/dev/null 2>&1
pycheck "drawn under another --metric-profile: no PSD legend figures (the run's are of its own profile)" adjacent "$T/gpl/plots.json" none
"$DPD" plot "$GP" --metric-profile general-spectral-v1 --out "$T/gps" >/dev/null 2>&1
pycheck "drawn under its own profile named by --metric-profile: the figures stay" adjacent "$T/gps/plots.json" ACPR_AVG
"$DPD" plot --data "$T/d" --out "$T/v2p" --metric-profile opendpd-spectral-v2 >/dev/null 2>&1
check 'python3 -c "import json,sys; p=json.load(open(sys.argv[1]))[\"plots\"][\"psd\"]; sys.exit(0 if p[\"profile\"] == \"opendpd-spectral-v2\" and p[\"bands\"][\"adjacent_left\"] == [-120, -100] else 1)" "$T/v2p/plots.json"' \
    "dpd plot --data --metric-profile opendpd-spectral-v2: one-carrier bands"
expect 2 "dpd: --metric-profile: 'nosuch' is not a metric profile" "$DPD" plot --data "$T/d" --out "$T/np" --metric-profile nosuch

# --- fit-ls draws its pictures as a training run does (and as the studio's fit-ls), unless --no-plots ---
"$DPD" fit-ls --data "$T/d" --kind mp --out "$T/fl" >"$T/out" 2>"$T/err"; rc=$?
FL=$(find "$T/fl" -name config.json -exec dirname {} \; | head -n 1)
check '[ $rc -eq 0 ] && [ -s "$FL/plots/amam.png" ] && [ -s "$FL/plots/plots.json" ] && grep -q "^pictures: $FL/plots" "$T/out"' \
    "fit-ls draws its pictures into RUN_DIR/plots (exit $rc: $(head -c 200 "$T/err"))"
"$DPD" fit-ls --data "$T/d" --kind mp --out "$T/fl2" --no-plots >/dev/null 2>&1
check '[ -z "$(find "$T/fl2" -name plots)" ]' "fit-ls --no-plots draws none"

# --- a picture or plots.json that is a symbolic link: refused, the link and its target kept ---
for f in amam.png plots.json; do
    mkdir -p "$T/lk-$f" && echo keep >"$T/lk-target" && ln -sf ../lk-target "$T/lk-$f/$f"
    "$DPD" plot --data "$T/d" --out "$T/lk-$f" >/dev/null 2>"$T/err"; rc=$?
    check '[ $rc -eq 1 ] && grep -q "lk-$f/$f is a symbolic link (to ../lk-target)" "$T/err" && [ -L "$T/lk-$f/$f" ] && [ "$(cat "$T/lk-target")" = keep ] && [ "$(ls "$T/lk-$f")" = "$f" ]' \
        "dpd plot: $f as a symbolic link is refused before any drawing, the link and its target kept, nothing else written (exit $rc: $(head -c 300 "$T/err"))"
done

# --- a run's files that are no regular files: refused or passed over at once, never read forever ---
cp -r "$R" "$T/odd" && rm -f "$T/odd/history.csv" && ln -s /dev/zero "$T/odd/history.csv"
timeout 60 "$DPD" plot "$T/odd" --out "$T/odd-h" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/odd-h/history.png" ] && ! grep -q "\"history\"" "$T/odd-h/plots.json" && grep -q "\"history\"" "$R/plots/plots.json" &&
       grep -q "^dpd: warning: $T/odd/history.csv: is a character device (through a symbolic link), not a regular file.*(the learning curves are left out)$" "$T/err"' \
    "dpd plot: a history.csv linked to /dev/zero is passed over, said, its chart empty (exit $rc: $(head -c 300 "$T/err"))"
rm "$T/odd/history.csv" && mkfifo "$T/odd/history.csv"
timeout 60 "$DPD" plot "$T/odd" --out "$T/odd-f" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/odd-f/history.png" ] && grep -q "history.csv: is a FIFO (named pipe)" "$T/err"' "dpd plot: a history.csv that is a FIFO is passed over, said (exit $rc: $(head -c 300 "$T/err"))"
rm "$T/odd/history.csv" && mv "$T/odd/config.json" "$T/odd-config.json" && mkfifo "$T/odd/config.json"
timeout 60 "$DPD" plot "$T/odd" --out "$T/odd-c" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "odd/config.json: is a FIFO (named pipe), not a regular file" "$T/err"' \
    "dpd plot: a config.json that is a FIFO is refused, named (exit $rc: $(head -c 300 "$T/err"))"
rm "$T/odd/config.json" && mv "$T/odd-config.json" "$T/odd/config.json" && rm "$T/odd/plots/plots.json" && mkfifo "$T/odd/plots/plots.json"
timeout 60 "$DPD" plot "$T/odd" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "odd/plots/plots.json is a FIFO (named pipe): dpd writes regular files" "$T/err"' \
    "dpd plot: a plots.json that is a FIFO is refused, named, not read (exit $rc: $(head -c 300 "$T/err"))"

# --- usage errors: exit 2 with a message; a RUN_DIR that is not a run: exit 1, as eval's --model ---
expect 2 "needs a run directory" "$DPD" plot
expect 1 "does not exist" "$DPD" plot "$T/nosuch"
expect 1 "is a file, not a run directory" "$DPD" plot "$T/end.json"
expect 1 "not a run directory (no config.json); it is a dataset, drawn with --data DIR" "$DPD" plot "$T/d"
expect 2 "--format must be png or svg" "$DPD" plot "$R" --format jpg
expect 2 "--split must be test or val" "$DPD" plot "$R" --split train
expect 2 "one RUN_DIR" "$DPD" plot "$R" "$R"
expect 2 "unknown option '--nosuch'" "$DPD" plot "$R" --nosuch
"$DPD" plot --help >"$T/out" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "usage: dpd plot RUN_DIR" "$T/out"' "dpd plot --help: usage on stdout, exit 0"
check '"$DPD" --help | grep -q "^  plot "' "dpd --help lists plot"

echo "RESULT plot $pass $fail $skip"
[ "$fail" -eq 0 ]
