// Charts with the vendored uPlot (window.uPlot). Each chart is registered by name in
// window.__dpd.charts so that its data can be read back (the UI tests compare it with the API);
// live charts are updated in place with setData, never rebuilt.
import { fixedC, h } from './ui.js';

// Okabe-Ito; series are also told apart by dash pattern, never by colour alone.
export const COLORS = ['#0072b2', '#e69f00', '#009e73', '#d55e00', '#56b4e9', '#cc79a7', '#000000', '#f0e442'];
export const DASHES = [[], [7, 4], [2, 3], [10, 3, 2, 3], [4, 2], [1, 4], [12, 6], [3, 3, 1, 3]];

export function registry() {
  const d = (window.__dpd ||= {});
  return (d.charts ||= {});
}

function chartHeight(width) { return width < 500 ? 220 : 280; }

// A log scale's data: its series' values that are not above 0 (a loss of exactly 0) as gaps.
function positive(data) {
  return data.map((s, i) => (i && Array.isArray(s) ? s.map((v) => (typeof v === 'number' && v > 0 ? v : null)) : s));
}

// A set of charts that belong to one page; destroy() frees them when the page goes.
export class ChartSet {
  constructor() { this.charts = new Map(); this.observers = []; }

  // spec: {title, note, kind: 'line'|'scatter', xLabel, yLabel, series: [{label, color, dash}], data, bands}
  add(parent, name, spec) {
    const plot = h('div', { class: 'plot', 'data-chart': name });
    const box = h('figure', { class: 'chart', 'aria-label': spec.title },
      h('h3', { text: spec.title }),
      spec.bandKey ? bandKey() : null,
      plot,
      spec.note ? h('figcaption', { class: 'note', text: spec.note }) : null);
    parent.append(box);
    const width = Math.max(200, plot.clientWidth || parent.clientWidth || 320);
    const opts = this.options(spec, width);
    const u = new window.uPlot(opts, spec.logY ? positive(spec.data) : spec.data, plot);
    u.__spec = { kind: spec.kind || 'line', name, logY: !!spec.logY };
    this.charts.set(name, u);
    registry()[name] = u;
    let last = width;
    const ro = new ResizeObserver(() => {
      const w = Math.floor(plot.clientWidth);
      if (w > 0 && Math.abs(w - last) > 2) { last = w; u.setSize({ width: w, height: chartHeight(w) }); }
    });
    ro.observe(plot);
    this.observers.push(ro);
    return u;
  }

  options(spec, width) {
    const scatter = spec.kind === 'scatter';
    const series = [scatter ? {} : { label: spec.xLabel || 'x' }];
    spec.series.forEach((s, i) => {
      const color = s.color || COLORS[i % COLORS.length];
      const o = { label: s.label, stroke: color, width: s.width || 1.5, spanGaps: !!s.spanGaps };
      if (scatter) {
        o.paths = window.uPlot.paths.points();
        o.fill = color;
        o.points = { show: true, size: 2.5, width: 0, fill: color, stroke: color };
        o.facets = [{ scale: 'x', auto: true }, { scale: 'y', auto: true }];
      } else {
        o.dash = s.dash || DASHES[i % DASHES.length];
        o.points = { show: !!s.points, size: 5, fill: color };
      }
      series.push(o);
    });
    const y = { auto: true };
    if (spec.logY) y.distr = 3; // losses over decades
    if (spec.yRange) y.range = () => spec.yRange;
    else if (spec.dbSpan) { // a spectrum: from its peak down dbSpan dB, as dpd plot draws it
      y.range = (u, lo, hi) => niceRange(Math.max(lo, hi - spec.dbSpan), hi);
    }
    const opts = {
      width, height: chartHeight(width),
      scales: { x: { time: false, auto: true }, y },
      series,
      axes: [
        // epochs are whole numbers: no tick between two
        { label: spec.xLabel, labelSize: 18, size: 36, ...(spec.intX ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] } : {}) },
        { label: spec.yLabel, labelSize: 18, size: 58 },
      ],
      legend: { show: true, live: !scatter },
      cursor: scatter ? { show: false } : { drag: { x: true, y: false } },
    };
    if (scatter) opts.mode = 2;
    if (spec.bands) opts.hooks = { drawClear: [(u) => drawBands(u, spec.bands)] };
    return opts;
  }

  get(name) { return this.charts.get(name); }

  set(name, data) {
    const u = this.charts.get(name);
    if (u) u.setData(u.__spec.logY ? positive(data) : data);
    return u;
  }

  destroy() {
    for (const ro of this.observers) ro.disconnect();
    const reg = registry();
    for (const [name, u] of this.charts) {
      if (reg[name] === u) delete reg[name];
      u.destroy();
    }
    this.charts.clear();
    this.observers = [];
  }
}

function bandKey() {
  return h('div', { class: 'band-key' },
    h('span', { class: 'main', text: 'main channel' }),
    h('span', { class: 'adjacent', text: 'adjacent channels (hatched)' }));
}

// The ACLR bands behind the PSD: filled spans, the adjacent ones hatched, dashed edges, labels.
function drawBands(u, bands) {
  const ctx = u.ctx;
  const { top, height } = u.bbox;
  ctx.save();
  for (const [name, range] of Object.entries(bands)) {
    if (!Array.isArray(range) || range.length !== 2 || name === 'reference') continue;
    const x0 = u.valToPos(range[0], 'x', true), x1 = u.valToPos(range[1], 'x', true);
    const main = name === 'main';
    ctx.fillStyle = main ? 'rgba(86, 180, 233, 0.22)' : 'rgba(230, 159, 0, 0.18)';
    ctx.fillRect(x0, top, x1 - x0, height);
    if (!main) {
      ctx.strokeStyle = 'rgba(0, 0, 0, 0.18)';
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (let x = x0 - height; x < x1; x += 8 * devicePixelRatio) {
        ctx.moveTo(Math.max(x, x0), top + height - (Math.max(x, x0) - x));
        const xe = Math.min(x + height, x1);
        ctx.lineTo(xe, top + height - (xe - x));
      }
      ctx.stroke();
    }
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.strokeStyle = 'rgba(0, 0, 0, 0.5)';
    ctx.beginPath();
    ctx.moveTo(x0, top); ctx.lineTo(x0, top + height);
    ctx.moveTo(x1, top); ctx.lineTo(x1, top + height);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = '#333';
    ctx.font = `${11 * devicePixelRatio}px sans-serif`;
    // the main channel's name centred in it, an adjacent one's outside its outer edge: a narrow
    // adjacent band's name never runs into the main channel's
    const left = name === 'adjacent_left', pad = 3 * devicePixelRatio;
    ctx.textAlign = main ? 'center' : left ? 'right' : 'left';
    ctx.fillText(main ? 'main' : left ? 'adj. L' : 'adj. R', main ? (x0 + x1) / 2 : left ? x0 - pad : x1 + pad, top + 12 * devicePixelRatio);
    ctx.textAlign = 'left';
  }
  // The sub-channel the ACLR divides by (the strongest of the main channel's), where it has several:
  // a bracket at the bottom, under the spectra.
  const ref = bands.reference, mainBand = bands.main;
  if (Array.isArray(ref) && Array.isArray(mainBand) && ref[1] - ref[0] < mainBand[1] - mainBand[0]) {
    const x0 = u.valToPos(ref[0], 'x', true), x1 = u.valToPos(ref[1], 'x', true), y = top + height - 20 * devicePixelRatio;
    ctx.strokeStyle = '#333';
    ctx.lineWidth = 1.2 * devicePixelRatio;
    ctx.beginPath();
    ctx.moveTo(x0, y - 5 * devicePixelRatio); ctx.lineTo(x0, y); ctx.lineTo(x1, y); ctx.lineTo(x1, y - 5 * devicePixelRatio);
    ctx.stroke();
    ctx.fillStyle = '#333';
    ctx.font = `${11 * devicePixelRatio}px sans-serif`;
    ctx.textAlign = 'center';
    ctx.fillText('ACLR ref.', (x0 + x1) / 2, y + 14 * devicePixelRatio);
  }
  ctx.restore();
}

// Learning curves from GET /runs/{id}/history in either shape (history.csv's columns and rows,
// or the live snapshot's per-epoch rows) as {epoch: [], train_loss: [], val: {NMSE: []…}, test: {…}}.
// The metrics of every metric profile (docs/metrics.md): legacy-opendpd-v1 reports NMSE, EVM and
// ACLR_*; general-spectral-v1 NMSE, IBE and ACPR_*; opendpd-spectral-v2 NMSE, IBE and ACLR_*. A run
// has the keys of its own profile; pages show the ones present.
export const METRICS = ['NMSE', 'EVM', 'IBE', 'ACLR_L', 'ACLR_R', 'ACLR_AVG', 'ACPR_L', 'ACPR_R', 'ACPR_AVG'];
// the per-epoch curves drawn (those a run has)
export const CURVES = ['NMSE', 'EVM', 'IBE', 'ACLR_AVG', 'ACPR_AVG'];

export function normalizeHistory(hist) {
  const out = { epoch: [], train_loss: [], val_loss: [], test_loss: [], val: {}, test: {} };
  for (const m of METRICS) { out.val[m] = []; out.test[m] = []; }
  if (!hist) return out;
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  if (Array.isArray(hist.epochs)) {
    for (const r of hist.epochs) {
      out.epoch.push(r.epoch);
      out.train_loss.push(num(r.train_loss));
      out.val_loss.push(r.val && num(r.val.loss) !== null ? r.val.loss : null);
      out.test_loss.push(r.test && num(r.test.loss) !== null ? r.test.loss : null);
      for (const m of METRICS) {
        out.val[m].push(r.val ? num(r.val[m]) : null);
        out.test[m].push(r.test ? num(r.test[m]) : null);
      }
    }
  } else if (Array.isArray(hist.columns) && Array.isArray(hist.rows)) {
    const col = (name) => hist.columns.indexOf(name);
    const ie = col('EPOCH'), it = col('TRAIN_LOSS'), iv = col('VAL_LOSS'), is = col('TEST_LOSS');
    for (const r of hist.rows) {
      out.epoch.push(r[ie]);
      out.train_loss.push(it >= 0 ? num(r[it]) : null);
      out.val_loss.push(iv >= 0 ? num(r[iv]) : null);
      out.test_loss.push(is >= 0 ? num(r[is]) : null);
      for (const m of METRICS) {
        const a = col(`VAL_${m}`), b = col(`TEST_${m}`);
        out.val[m].push(a >= 0 ? num(r[a]) : null);
        out.test[m].push(b >= 0 ? num(r[b]) : null);
      }
    }
  }
  return out;
}

// What the plot data's series are, in words, and one look per signal on every chart (the names and
// looks dpd plot gives them): the capture's y blue, G·x black, a model's output vermillion, the PA model without
// DPD sky blue and dashed. A PA model's target is the capture's y; a DPD run's is G·x.
const LOOKS_PA = { target: ['measured y', '#0072b2'], prediction: ['PA model', '#d55e00'] };
const LOOKS_DPD = {
  target: ['target g·x', '#000000'], prediction: ['PA model + DPD', '#d55e00'],
  no_dpd: ['PA model, no DPD', '#56b4e9', [7, 4]], measured: ['measured y, no DPD', '#0072b2'],
};
export function seriesLook(dpd) {
  const looks = dpd ? LOOKS_DPD : LOOKS_PA;
  return (k) => {
    const [label, color, dash] = looks[k] || [k];
    return color ? { label, color, dash: dash || [] } : { label };
  };
}

// A spectrum's series s (seriesLook's) named with its adjacent-channel figure as the run recorded it
// on the split drawn (plots.json's "adjacent", dpd plot's legend): "PA model (ACLR -42.0 dBc)".
export function withAdjacent(s, adjacent, key) {
  const v = adjacent && adjacent.series && typeof adjacent.metric === 'string' ? adjacent.series[key] : undefined;
  return typeof v === 'number' ? { ...s, label: `${s.label} (${adjacent.metric.slice(0, 4)} ${fixedC(v, 1)} dBc)` } : s;
}

// The residual's name's end: its NMSE as the run recorded it on the split drawn (plots.json's "error",
// dpd plot's legend), or nothing.
export function withError(doc) {
  const v = doc && doc.error ? doc.error.value : undefined;
  return typeof v === 'number' ? ` (NMSE ${fixedC(v, 1)} dB)` : '';
}

// [lo, hi] rounded out to whole ticks of a 1-2-5 step, about 6 of them: dpd plot's axes (cli/plot.c).
function niceRange(lo, hi) {
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const raw = (hi - lo) / 6, p = 10 ** Math.floor(Math.log10(raw)), f = raw / p;
  const step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
  return [Math.floor(lo / step + 1e-9) * step, Math.ceil(hi / step - 1e-9) * step];
}

// The axis of a scatter's values (arrays of numbers or nulls) as dpd plot draws AM/PM: the middle 99 %
// of them (the 0.5 % and 99.5 % order statistics), 10 % beyond, out to whole 1-2-5 ticks; and how
// many points lie beyond it.
export function middleRange(arrays) {
  const v = arrays.flat().filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return { range: null, beyond: 0 };
  const m = v.length, lo0 = v[Math.floor(m / 200)], hi0 = v[m - 1 - Math.floor(m / 200)];
  const [lo, hi] = niceRange(lo0 - 0.1 * (hi0 - lo0), hi0 + 0.1 * (hi0 - lo0));
  return { range: [lo, hi], beyond: v.filter((x) => x < lo || x > hi).length };
}

// The series' keys in drawing order, as dpd plot draws them: a DPD run's PA model without DPD and
// the capture's y first, then the target, the model's output last, on top.
const DRAW_ORDER = ['no_dpd', 'measured', 'target', 'linear', 'prediction', 'output'];
export function order(keys) {
  const rank = (k) => (DRAW_ORDER.includes(k) ? DRAW_ORDER.indexOf(k) : DRAW_ORDER.length);
  return [...keys].sort((a, b) => rank(a) - rank(b));
}

// The learning curves' looks, as dpd plot's history chart has them: train orange, val blue, test
// vermillion and dashed.
export const SPLIT_LOOK = {
  train: { color: '#e69f00', dash: [] }, val: { color: '#0072b2', dash: [] }, test: { color: '#d55e00', dash: [7, 4] },
};

// A run's test baselines (base: {measured, no_dpd}, metric sets as GET /results and the started
// event give them) as constant series across a learning curve's epochs: {series, data}. measured:
// the capture's y (a PA model's ACLR to reach; a DPD's figure without DPD); no_dpd: a DPD run's PA
// model without DPD. A metric a baseline lacks (a PA model's NMSE of y against itself) has none.
export function baselines(base, name, epochs, dpd) {
  const series = [], data = [];
  // dotted and dash-dotted, as dpd plot draws them (a dash is the test split's)
  for (const [key, what, dash] of [['measured', 'measured y', [2, 2]], ['no_dpd', 'PA model', [8, 3, 2, 3]]]) {
    const v = base && base[key] ? base[key][name] : null;
    if (typeof v !== 'number') continue;
    series.push({ label: dpd ? `${what}, no DPD (test)` : `${what} (test)`, color: '#8c8c8c', dash, points: epochs.length < 2 });
    data.push(epochs.map(() => v));
  }
  return { series, data };
}

// The PSD's axis title, as dpd plot's: the legacy profile's power per bin, naming the bins' width
// (fs / segment samples: its resolution), or a Welch profile's density.
export function psdLabel(plots) {
  if (plots.psd.y_unit !== 'dB' || !(plots.fs_mhz > 0 && plots.segment_samples > 0)) return `power density (${plots.psd.y_unit})`;
  const hz = (plots.fs_mhz * 1e6) / plots.segment_samples;
  const [v, u] = hz >= 1e9 ? [hz / 1e9, 'GHz'] : hz >= 1e6 ? [hz / 1e6, 'MHz'] : hz >= 1e3 ? [hz / 1e3, 'kHz'] : [hz, 'Hz'];
  return `power per ${Number(v.toPrecision(6))} ${u} bin (dB)`;
}

export const UNITS = {
  NMSE: 'dB', EVM: 'dB', IBE: 'dB', ACLR_L: 'dBc', ACLR_R: 'dBc', ACLR_AVG: 'dBc', ACPR_L: 'dBc', ACPR_R: 'dBc', ACPR_AVG: 'dBc',
};
