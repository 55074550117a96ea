// Compare 2–8 runs: their final metrics side by side and their learning curves overlaid, both
// exportable as CSV (made in the browser).
import * as api from '../api.js';
import { ChartSet, CURVES, METRICS, UNITS, normalizeHistory } from '../charts.js';
import { h, statusChip, fmtNum, runModel, isTerminal, errorBanner, banner, stackTable, download, fmtTime } from '../ui.js';

const MAX = 8;

function csvCell(v) {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
const csvLine = (cells) => cells.map(csvCell).join(',');

export default async function comparePage(ctx) {
  const ids = (ctx.query.get('ids') || '').split(',').map((s) => s.trim()).filter(Boolean);
  const selected = new Set(ids.slice(0, MAX));
  const charts = new ChartSet();
  ctx.onCleanup(() => charts.destroy());

  ctx.main.append(h('h1', { text: 'Compare runs' }));
  const pickBox = h('div', { id: 'compare-picker' });
  const out = h('div', { id: 'compare-out' });
  const picker = h('details', { open: selected.size < 2 }, h('summary', { text: `Choose runs (2–${MAX})` }), pickBox);
  ctx.main.append(picker, out);

  // ---- the picker ----
  let list;
  try { list = await api.get('/runs?limit=200'); } catch (e) { pickBox.append(errorBanner(e)); list = { runs: [] }; }
  if (!ctx.alive()) return;
  const go = h('button', { type: 'button', class: 'primary', id: 'compare-go', text: 'Compare',
    onclick: () => ctx.go(`#/compare?ids=${[...selected].join(',')}`) });
  const countNote = h('span', { class: 'muted' });
  const upd = () => { go.disabled = selected.size < 2 || selected.size > MAX; countNote.textContent = `${selected.size} selected`; };
  const rows = list.runs.map((r) => [
    h('input', { type: 'checkbox', 'aria-label': `Compare ${r.id}`, 'data-run': r.id, checked: selected.has(r.id),
      onchange: (ev) => { if (ev.target.checked) selected.add(r.id); else selected.delete(r.id); upd(); } }),
    h('span', { class: 'mono', text: r.id }), statusChip(r), r.verb, runModel(r), fmtTime(r.created_at),
  ]);
  pickBox.append(h('div', { class: 'actions' }, go, countNote),
    rows.length ? stackTable(['Pick', 'Run', 'Status', 'Task', 'Model', 'Submitted'].map((label) => ({ label })), rows)
      : h('p', { class: 'muted', text: 'No runs yet.' }));
  upd();

  if (selected.size < 2) {
    out.append(banner('info', `Pick 2 to ${MAX} runs to compare.`));
    return;
  }
  if (ids.length > MAX) out.append(banner('warn', `Only the first ${MAX} runs are compared.`));

  // ---- the data of each run ----
  const runs = await Promise.all([...selected].map(async (id) => {
    const q = encodeURIComponent(id);
    try {
      const run = await api.get(`/runs/${q}`);
      const [res, hist] = await Promise.all([api.part(run, 'results'), api.part(run, 'history')]);
      return { id, run, res, hist: normalizeHistory(hist) };
    } catch (e) {
      return { id, error: e };
    }
  }));
  if (!ctx.alive()) return;
  for (const r of runs) if (r.error) out.append(errorBanner(r.error));
  const ok = runs.filter((r) => !r.error);
  // runs scored under different metric profiles measure different quantities: never compared silently
  const profileOf = (r) => {
    const cfg = (r.res && (r.res.config || (r.res.summary && r.res.summary.config))) || {};
    return cfg.metric_profile || (r.run.options && r.run.options.metric_profile) || 'legacy-opendpd-v1';
  };
  const profiles = [...new Set(ok.map(profileOf))];
  if (profiles.length > 1) {
    out.append(banner('warn', `These runs were scored under different metric profiles (${profiles.join(', ')}): `
      + 'their metrics are different quantities and must not be compared (docs/metrics.md).'));
  }

  // the metric of a run: the final summary's (best checkpoint) when there is one, else the last epoch's
  const value = (r, split, m) => {
    if (r.res && r.res[split] && r.res[split][m] !== undefined) return r.res[split][m];
    const a = r.hist[split][m];
    return a.length ? a[a.length - 1] : null;
  };
  // a DPD run's baselines on the same split (the final summary's): its PA model driven by the plain
  // input (no_dpd), and the capture's own output, the real PA without DPD (measured)
  const baseline = (key) => (r, split, m) => {
    const b = r.res && r.res[split === 'test' ? key : `${key}_val`];
    return b && b[m] !== undefined ? b[m] : null;
  };
  const source = (r) => (r.res && (r.res.val || r.res.test) ? 'final' : r.hist.epoch.length ? 'last epoch' : '—');
  const cols = ['run', 'task', 'model', 'status', 'epochs', 'best_epoch', 'source'];
  const metric = []; // each metric column after the first seven, and how a run gives it
  for (const s of ['val', 'test']) {
    for (const m of METRICS) {
      metric.push([`${s}_${m}`, (r) => value(r, s, m)], [`${s}_${m}_no_dpd`, (r) => baseline('no_dpd')(r, s, m)],
        [`${s}_${m}_measured`, (r) => baseline('measured')(r, s, m)]);
    }
  }
  cols.push(...metric.map(([c]) => c));
  const table = ok.map((r) => [r.id, r.run.verb, runModel(r.run), r.run.status, r.hist.epoch.length || (r.res && r.res.epochs) || null,
    r.res ? r.res.best_epoch ?? null : null, source(r), ...metric.map(([, get]) => get(r))]);
  // on the page: one column per run, one row per field (fields no run has are left out; the CSV keeps them)
  const fmt = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : fmtNum(v, 3)) : v ?? '—');
  const grid = h('table', { class: 'compare' },
    h('thead', null, h('tr', null, h('th', { scope: 'col', text: 'field' }),
      ok.map((r) => h('th', { scope: 'col', class: 'num' }, h('a', { class: 'idlink', href: `#/result/${r.id}`, text: r.id }))))),
    h('tbody', null, cols.slice(1).map((c, j) => {
      const i = j + 1;
      if (i >= 7 && !table.some((row) => row[i] !== null && row[i] !== undefined)) return null;
      const name = c.replace('_', ' ').replace(/_no_dpd$/, ': PA model, no DPD').replace(/_measured$/, ': measured y, no DPD');
      const unit = i >= 7 ? UNITS[c.split('_').slice(1).join('_').replace(/_(no_dpd|measured)$/, '')] : null; // a metric row's
      return h('tr', { 'data-field': c }, h('th', { scope: 'row' }, name, unit ? h('span', { class: 'unit', text: ` (${unit})` }) : null),
        table.map((row, k) => h('td', { class: 'num' }, i === 3 ? statusChip(ok[k].run) : fmt(row[i]))));
    })));

  const exportTable = () => download('dpd-compare-metrics.csv', [csvLine(cols), ...table.map(csvLine)].join('\n') + '\n');
  const exportCurves = () => {
    const c = ['run', 'epoch', 'train_loss'];
    for (const s of ['val', 'test']) for (const m of METRICS) c.push(`${s}_${m}`);
    const lines = [csvLine(c)];
    for (const r of ok) {
      r.hist.epoch.forEach((e, i) => {
        const row = [r.id, e, r.hist.train_loss[i]];
        for (const s of ['val', 'test']) for (const m of METRICS) row.push(r.hist[s][m][i]);
        lines.push(csvLine(row));
      });
    }
    download('dpd-compare-curves.csv', lines.join('\n') + '\n');
  };
  out.append(
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'export-metrics', onclick: exportTable, text: 'Export metrics CSV' }),
      h('button', { type: 'button', id: 'export-curves', onclick: exportCurves, text: 'Export curves CSV' })),
    h('h2', { text: 'Metrics' }),
    h('div', { class: 'table-wrap', id: 'compare-table' }, grid),
    h('p', { class: 'muted', text: 'final: the run\'s summary (its best checkpoint); last epoch: the last row of its history; without DPD: a DPD run\'s PA driven by the plain input, on the same split. Runs on different datasets or splits are not comparable by rank.' }));
  const datasets = new Set(ok.map((r) => r.run.dataset));
  if (datasets.size > 1) out.append(banner('warn', `These runs use different datasets (${[...datasets].join(', ')}): their metrics are not comparable.`));

  // ---- overlaid curves: x = the union of the epochs, a gap where a run has none ----
  const box = h('div', { class: 'charts', id: 'compare-curves' });
  out.append(h('h2', { text: 'Learning curves' }), box);
  const xs = [...new Set(ok.flatMap((r) => r.hist.epoch))].sort((a, b) => a - b);
  const align = (r, arr) => xs.map((x) => { const i = r.hist.epoch.indexOf(x); return i < 0 ? null : arr[i]; });
  const curves = [['train_loss', 'train loss', 'loss', (r) => r.hist.train_loss]];
  for (const s of ['val', 'test']) for (const m of CURVES) curves.push([`${s}:${m}`, `${m} (${s})`, `${m} (${UNITS[m]})`, (r) => r.hist[s][m]]);
  for (const [key, title, ylabel, get] of curves) {
    const data = [xs, ...ok.map((r) => align(r, get(r)))];
    if (!data.slice(1).some((a) => a.some((v) => v !== null))) continue;
    charts.add(box, `compare:${key}`, {
      title, xLabel: 'epoch', yLabel: ylabel,
      series: ok.map((r) => ({ label: r.id, points: true, spanGaps: true })), data,
    });
  }
  if (!xs.length) box.append(h('p', { class: 'muted', text: 'None of these runs has learning curves yet.' }));
  if (ok.some((r) => !isTerminal(r.run))) out.append(banner('info', 'Some of these runs are still going: reload for their latest epochs.'));
}
