// Result: metric cards, PSD with the ACLR bands, residual spectrum, AM/AM, AM/PM, I/Q and the
// learning curves. The final plot data (GET /plots: the best checkpoint on the validation split, as the run drew it at its end; for a
// DPD run with and without DPD) when the run has it, else the live snapshot of its last epoch.
import * as api from '../api.js';
import { ChartSet, CURVES, METRICS, UNITS, normalizeHistory, seriesLook, order, baselines, middleRange, SPLIT_LOOK, psdLabel, withAdjacent, withError } from '../charts.js';
import { h, statusChip, fmtNum, banner, isTerminal, isDpdRun } from '../ui.js';


export default async function resultPage(ctx) {
  const id = ctx.params[0];
  const q = encodeURIComponent(id);
  const run = await api.get(`/runs/${q}`);
  const [plotsDoc, live, results, hist] = await Promise.all([
    api.part(run, 'plots'), api.part(run, 'live'), api.part(run, 'results'), api.part(run, 'history'),
  ]);
  if (!ctx.alive()) return;
  const charts = new ChartSet();
  ctx.onCleanup(() => charts.destroy());

  const dpd = !!(plotsDoc && plotsDoc.dpd) || isDpdRun(run);
  const look = seriesLook(dpd);
  const plots = plotsDoc ? plotsDoc.plots : live ? live.plots : null;
  const source = plotsDoc ? 'final' : live ? 'live' : null;
  window.__dpd.result = { id, source };

  ctx.main.append(
    h('h1', null, 'Result ', h('span', { class: 'mono', text: id }), ' ', statusChip(run)),
    h('p', { class: 'actions' },
      h('a', { href: `#/run/${id}`, text: 'Run detail' }),
      h('a', { href: `#/compare?ids=${id}`, text: 'Compare with other runs' })));

  let note;
  if (source === 'final') note = `Final plots: ${plotsDoc.checkpoint || 'best checkpoint'} on the ${plotsDoc.split || 'test'} split${dpd ? ', with and without DPD through the PA model' : ''}.`;
  else if (source === 'live') note = `Live snapshot of epoch ${live.epoch}/${live.epochs} on the ${live.source || 'validation'} split (the run's final plots are not available${isTerminal(run) ? '' : ' yet'}).`;
  else note = 'No plot data yet: it comes with the first epoch.';
  ctx.main.append(banner('info', note));
  ctx.main.querySelector('.banner').id = 'result-source';

  // ---- metric cards ----
  const cards = h('div', { class: 'cards', id: 'result-cards' });
  // a batch probe's own metrics (its plots are the probe's), else the last finished epoch's
  const probe = live && live.source === 'batch_probe' && live.probe ? { val: live.probe.val } : null;
  const m = results && (results.val || results.test) ? results : probe || (live && live.metrics) || null;
  if (m) {
    // a run that stopped early (cancelled, diverged) summarizes its best epoch so far
    const kind = results && (results.val || results.test)
      ? (results.outcome === 'completed' ? 'final' : `best so far (epoch ${results.best_epoch})`)
      : probe ? `probe (step ${live.step})` : 'probe';
    for (const split of ['val', 'test']) {
      // a DPD run's summary has the same metrics of the PA model driven by x itself (the baseline it
      // improves on) and of the capture's own output (the real PA without DPD)
      // (a PA model's: the capture's ACLR, to compare the model's with)
      const base = results && dpd ? results[split === 'test' ? 'no_dpd' : 'no_dpd_val'] : null;
      const meas = results ? results[split === 'test' ? 'measured' : 'measured_val'] : null;
      for (const name of METRICS) {
        const v = m[split] ? m[split][name] : undefined;
        if (v === undefined) continue;
        const why = v === null && m[split].status && m[split].status[name] ? m[split].status[name].reason : '';
        const b = base && base[name] !== undefined ? base[name] : undefined;
        // the baselines by the series' names: "no DPD: PA model -36.41, measured y -30.61 dBc"
        const mv = meas && meas[name] !== undefined && meas[name] !== null ? `measured y ${fmtNum(meas[name], 2)}` : '';
        const sub = why ? `n/a: ${why}` : b !== undefined ? `${kind} · no DPD: PA model ${fmtNum(b, 2)}${mv ? `, ${mv}` : ''} ${UNITS[name]}`
          : mv ? `${kind} · ${mv} ${UNITS[name]}` : kind;
        cards.append(h('div', { class: 'metric', 'data-metric': `${split}.${name}`, title: why || null },
          h('div', { class: 'name', text: `${name} · ${split}` }),
          h('div', { class: 'value' }, fmtNum(v, 2), h('span', { class: 'unit', text: UNITS[name] })),
          h('div', { class: 'sub', text: sub })));
      }
    }
    if (results && results.best_epoch) cards.append(h('div', { class: 'metric' }, h('div', { class: 'name', text: 'best epoch' }),
      h('div', { class: 'value', text: `${results.best_epoch}/${results.epochs}` })));
  }
  if (cards.childNodes.length) ctx.main.append(h('h2', { text: 'Metrics' }), cards);

  // ---- signal plots ----
  if (plots && plots.empty) ctx.main.append(banner('warn', `No signal plots: ${plots.empty}`));
  if (plots && !plots.empty && plots.why_no_psd) ctx.main.append(banner('warn', `No spectra: ${plots.why_no_psd}`));
  if (plots && !plots.empty) {
    const box = h('div', { class: 'charts', id: 'result-plots' });
    ctx.main.append(h('h2', { text: 'Signals' }), box);
    if (plots.psd) {
      const keys = order(Object.keys(plots.psd.series));
      charts.add(box, 'psd', {
        title: dpd ? 'Spectrum with and without DPD' : 'Spectrum', bands: plots.psd.bands, bandKey: true, dbSpan: 100,
        xLabel: `frequency (${plots.psd.x_unit})`, yLabel: psdLabel(plots),
        note: 'Welch PSD as the ACLR computes it; shaded: the main channel and the adjacent channels it sums.'
          + (dpd ? ' With DPD: through the PA model.' : ''),
        series: keys.map((k) => withAdjacent(look(k), plotsDoc && plotsDoc.adjacent, k)),
        data: [plots.psd.freq, ...keys.map((k) => plots.psd.series[k])],
      });
    }
    if (plots.residual) {
      charts.add(box, 'residual', {
        title: 'Residual spectrum (prediction − target)', xLabel: `frequency (${plots.residual.x_unit})`, yLabel: psdLabel(plots),
        series: [{ label: (dpd ? 'PA model + DPD − target g·x' : 'PA model − measured y') + withError(plotsDoc), color: '#d55e00', dash: [] }],
        data: [plots.residual.freq, plots.residual.db],
      });
    }
    for (const [name, title] of [['amam', 'AM/AM'], ['ampm', 'AM/PM']]) {
      const p = plots[name];
      if (!p) continue;
      const keys = order(Object.keys(p.series));
      // AM/PM: the phase axis of the middle 99 % of the points, as dpd plot draws it (a phase near
      // zero amplitude is noise, and would stretch it to ±180°)
      const mid = name === 'ampm' ? middleRange(keys.map((k) => p.series[k])) : { range: null, beyond: 0 };
      charts.add(box, name, {
        title, kind: 'scatter', xLabel: p.x_unit, yLabel: name === 'ampm' ? 'phase of output − input (degrees)' : p.y_unit,
        yRange: mid.range,
        note: `${p.input.length} samples at a fixed stride, in sample order.`
          + (mid.beyond ? ` ${mid.beyond} of the ${p.input.length * keys.length} points drawn lie beyond the phase axis.` : ''),
        series: keys.map(look), data: [null, ...keys.map((k) => [p.input, p.series[k]])],
      });
    }
    if (plots.iq) { // I above Q, as dpd plot draws them: one trace per signal in each
      const keys = order(Object.keys(plots.iq.series));
      for (const c of ['i', 'q']) {
        charts.add(box, `iq:${c}`, {
          title: `${c.toUpperCase()}: the first samples`, xLabel: plots.iq.x_unit || 'sample', yLabel: `${c.toUpperCase()} (data units)`,
          note: c === 'i' ? `The first ${plots.iq.sample.length} samples (a time window, not a constellation).` : null,
          series: keys.map(look), data: [plots.iq.sample, ...keys.map((k) => plots.iq.series[k][c])],
        });
      }
    }
  }

  // ---- learning curves ----
  const H = normalizeHistory(hist || (plotsDoc && plotsDoc.history) || (live && { epochs: live.history }) || null);
  if (H.epoch.length) {
    const box = h('div', { class: 'charts', id: 'result-curves' });
    ctx.main.append(h('h2', { text: 'Learning curves' }), box);
    const lossSeries = [{ label: 'train loss', points: true, ...SPLIT_LOOK.train }], lossData = [H.epoch, H.train_loss];
    if (H.val_loss.some((v) => v !== null)) { lossSeries.push({ label: 'val loss', points: true, ...SPLIT_LOOK.val }); lossData.push(H.val_loss); }
    if (H.test_loss.some((v) => v !== null)) { lossSeries.push({ label: 'test loss', points: true, ...SPLIT_LOOK.test }); lossData.push(H.test_loss); }
    charts.add(box, 'curve:loss', { title: 'Loss per epoch', xLabel: 'epoch', yLabel: 'loss (MSE, log scale)', logY: true, intX: true,
      series: lossSeries, data: lossData });
    for (const name of CURVES) {
      if (!H.val[name].some((v) => v !== null) && !H.test[name].some((v) => v !== null)) continue;
      const b = baselines(results, name, H.epoch, dpd); // the capture's test figures, a DPD run's PA model's
      const series = [{ label: 'val', points: true, spanGaps: true, ...SPLIT_LOOK.val },
        { label: 'test', points: true, spanGaps: true, ...SPLIT_LOOK.test }, ...b.series];
      const data = [H.epoch, H.val[name], H.test[name], ...b.data];
      charts.add(box, `curve:${name}`, { title: `${name} per epoch`, xLabel: 'epoch', yLabel: `${name} (${UNITS[name]})`, intX: true, series, data });
    }
  } else {
    ctx.main.append(h('p', { class: 'muted', text: 'No learning curves yet.' }));
  }
  if (!plots && !H.epoch.length && !isTerminal(run)) ctx.main.append(h('p', null, h('a', { href: `#/run/${id}`, text: 'Follow the run live.' })));
}
