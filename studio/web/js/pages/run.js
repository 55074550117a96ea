// Run detail: status, live epoch and batch progress, the ETA of the whole run, live loss and
// metric curves from the run's events (stream, resumed after a drop), a live spectrum from the
// snapshot, stale and disconnected banners, cancel and retry, configuration, artifacts, the
// worker's log (followed while the run is active) and the events.
import * as api from '../api.js';
import { RunFeed } from '../stream.js';
import { ChartSet, CURVES, METRICS, UNITS, seriesLook, order, baselines, SPLIT_LOOK, psdLabel } from '../charts.js';
import { h, put, clear, statusChip, fmtNum, fmtTime, fmtDuration, fmtBytes, isTerminal, isDpdRun, banner, errorBanner, kv, runModel, stackTable } from '../ui.js';

export default async function runPage(ctx) {
  const id = ctx.params[0];
  let run = await api.get(`/runs/${encodeURIComponent(id)}`);
  if (!ctx.alive()) return;
  const charts = new ChartSet();
  ctx.onCleanup(() => charts.destroy());

  // ---- state built from the events ----
  const st = {
    epochs: run.progress && run.progress.epochs || 0,
    cur: null,                  // the last progress event's data
    startTs: run.started_at ? Date.parse(run.started_at) : null,
    lastTs: null,
    metric: { epoch: [], train_loss: [], val: {}, test: {} },
    loss: { x: [], batch: [], epoch: [] },
    events: [],
    warnings: [],
    best: null,
    ended: null,
    lastUpdate: null,
    previewRev: 0,               // the last preview_revision seen in a progress event
    baselines: null,             // the run's test baselines ({measured, no_dpd}: the started event's)
  };
  for (const m of METRICS) { st.metric.val[m] = []; st.metric.test[m] = []; }
  window.__dpd.run = { id, state: st };

  // ---- layout ----
  const chip = h('span', { id: 'run-status' });
  const streamChip = h('span', { id: 'stream-chip', class: 'chip stream', role: 'status', text: 'connecting' });
  const meta = h('p', { class: 'muted', id: 'run-meta' });
  const banners = h('div', { id: 'run-banners' });
  const staleBanner = banner('warn', h('strong', { text: 'No heartbeat. ' }),
    'The worker has been silent for over 60 s. Its status is unchanged: it may be stalled, or the machine is busy.');
  staleBanner.id = 'stale-banner';
  staleBanner.classList.add('hidden');
  const lastUpd = h('span');
  const discBanner = banner('error', h('strong', { text: 'Disconnected. ' }), 'Reconnecting… ', lastUpd,
    ' The run keeps going on the server. ',
    h('button', { type: 'button', class: 'small', text: 'Reconnect now', onclick: () => feed && feed.retryNow() }));
  discBanner.id = 'disconnected-banner';
  discBanner.classList.add('hidden');
  const pollBanner = banner('info', 'The live stream is not available here; reading the events every 2 s instead.');
  pollBanner.id = 'polling-banner';
  pollBanner.classList.add('hidden');
  const actions = h('div', { class: 'actions', id: 'run-actions' });
  const epochBar = h('progress', { id: 'epoch-bar', max: 1, value: 0, 'aria-labelledby': 'epoch-label' });
  const epochText = h('span', { id: 'epoch-text', text: '—' });
  const batchBar = h('progress', { id: 'batch-bar', 'aria-labelledby': 'batch-label' });
  const batchText = h('span', { id: 'batch-text', text: '—' });
  const eta = h('p', { class: 'eta', id: 'eta', 'aria-live': 'off' });
  const cards = h('div', { class: 'cards', id: 'live-cards' });
  const chartBox = h('div', { class: 'charts', id: 'run-charts' });
  const liveBox = h('div', { class: 'charts', id: 'live-plots' });
  const liveNote = h('p', { class: 'muted', id: 'live-note' });
  const cfgBox = h('div', { id: 'run-config' });
  const artBox = h('div', { id: 'run-artifacts' });
  const evBox = h('pre', { class: 'events-log', id: 'run-events', tabindex: '0', 'aria-label': 'Event log' });
  const logBox = h('pre', { class: 'events-log', id: 'run-log', tabindex: '0', 'aria-label': 'Worker log', text: 'No log yet.' });
  const resultLink = h('a', { id: 'result-link', class: 'button hidden', href: `#/result/${id}`, text: 'Open result' });

  ctx.main.append(
    h('h1', null, 'Run ', h('span', { class: 'mono', text: id }), ' ', chip, ' ', streamChip),
    meta, banners, staleBanner, discBanner, pollBanner, actions,
    h('section', { class: 'card', 'aria-label': 'Progress' },
      h('div', { class: 'progress-block' },
        h('span', { id: 'epoch-label' }, 'Epoch ', epochText), epochBar,
        h('span', { id: 'batch-label' }, 'Batch ', batchText), batchBar),
      eta),
    cards,
    h('h2', { text: 'Learning curves' }),
    chartBox,
    h('h2', { text: 'Live signals' }), liveNote, liveBox,
    h('details', { open: true }, h('summary', { text: 'Configuration' }), cfgBox),
    h('details', { open: true }, h('summary', { text: 'Artifacts' }), artBox),
    h('details', { open: true }, h('summary', { text: 'Log (worker.log)' }), logBox),
    h('details', null, h('summary', { text: 'Events' }), evBox));

  // ---- rendering ----
  function renderHeader() {
    clear(chip).append(statusChip(run));
    clear(meta);
    meta.append(`${run.verb} · dataset ${run.dataset} · ${runModel(run)} · submitted ${fmtTime(run.created_at)}`);
    if (run.parent_id) meta.append(' · retry of ', h('a', { id: 'parent-link', class: 'idlink', href: `#/run/${run.parent_id}`, text: run.parent_id }));
    clear(banners);
    if (run.status === 'queued') banners.append(banner('info', h('strong', { text: 'Queued: ' }), run.wait_reason || 'waiting for a slot'));
    if (run.error) banners.append(errorBanner(run.error));
    if (isTerminal(run) && run.reason && run.status !== 'succeeded')
      banners.append(banner(run.status === 'failed' ? 'error' : 'warn', `${run.status}: ${run.reason}${run.reason_code ? ' (' + run.reason_code + ')' : ''}`));
    for (const w of st.warnings.slice(-3)) banners.append(banner('warn', w));
    staleBanner.classList.toggle('hidden', !(run.heartbeat_stale && !isTerminal(run)));
    resultLink.classList.toggle('hidden', !(isTerminal(run) || st.metric.epoch.length));
    renderActions();
  }

  let confirming = false, actionsKey = '';
  function renderActions() {
    const key = `${run.status}|${confirming}|${resultLink.className}`;
    if (key === actionsKey) return; // unchanged: keep the buttons (and the focus) as they are
    actionsKey = key;
    const hadFocus = actions.contains(document.activeElement) ? document.activeElement.id : null;
    clear(actions);
    if (!isTerminal(run)) {
      if (confirming) {
        const yes = h('button', { type: 'button', id: 'confirm-cancel', class: 'danger', text: 'Stop run', onclick: doCancel });
        const no = h('button', { type: 'button', id: 'keep-running', text: 'Keep running',
          onclick: () => { confirming = false; renderActions(); document.getElementById('cancel-run')?.focus(); } });
        actions.append(h('div', { class: 'confirm', role: 'alertdialog', 'aria-label': 'Confirm cancel' },
          'Stop this run? The checkpoints written so far are kept. ', yes, ' ', no));
      } else {
        actions.append(h('button', { type: 'button', id: 'cancel-run', class: 'danger', disabled: run.status === 'cancel_requested',
          text: run.status === 'cancel_requested' ? 'Stopping…' : 'Cancel run',
          onclick: () => { confirming = true; renderActions(); document.getElementById('confirm-cancel')?.focus(); } }));
      }
    } else if (!(run.options || {}).imported_from) { // an imported CLI run is not run again here (409)
      actions.append(h('button', { type: 'button', id: 'retry-run', text: 'Run again', onclick: doRetry }));
    }
    actions.append(resultLink, h('a', { class: 'button', href: `#/compare?ids=${id}`, text: 'Compare…' }));
    if (hadFocus && hadFocus !== 'cancel-run' && document.getElementById(hadFocus)) document.getElementById(hadFocus).focus();
    else if (hadFocus === 'cancel-run' && !confirming) document.getElementById('cancel-run')?.focus();
  }

  async function doCancel() {
    confirming = false;
    try {
      run = await api.post(`/runs/${id}/cancel`);
    } catch (e) { banners.append(errorBanner(e)); }
    renderHeader();
    document.getElementById('cancel-run')?.focus();
  }

  async function doRetry() {
    try {
      const r = await api.post(`/runs/${id}/retry`);
      ctx.go(`#/run/${r.id}`);
    } catch (e) { banners.append(errorBanner(e)); }
  }

  function renderProgress() {
    const done = st.metric.epoch.length ? Math.max(...st.metric.epoch) : 0;
    const total = st.epochs || (st.cur && st.cur.epochs) || 0;
    epochBar.max = Math.max(1, total);
    epochBar.value = Math.min(done, total || done);
    epochText.textContent = total ? `${done}/${total}` : '—';
    const c = st.cur;
    if (c && c.steps) {
      batchBar.max = c.steps;
      batchBar.value = c.steps_done;
      batchText.textContent = `epoch ${c.epoch} · batch ${c.steps_done}/${c.steps}`;
    } else if (!c) {
      batchBar.removeAttribute('value'); // indeterminate before the first batch
      batchText.textContent = run.status === 'queued' ? 'waiting' : '—';
    }
    if (isTerminal(run)) {
      const took = run.started_at && run.finished_at ? (Date.parse(run.finished_at) - Date.parse(run.started_at)) / 1000 : null;
      eta.textContent = `Ended ${fmtTime(run.finished_at)}${took !== null ? ' · took ' + fmtDuration(took) : ''}`;
    } else if (c && total && c.steps && st.startTs && st.lastTs) {
      const f = ((c.epoch - 1) + c.steps_done / c.steps) / total;
      const elapsed = (st.lastTs - st.startTs) / 1000;
      if (f > 0 && elapsed > 0) {
        const left = elapsed * (1 - f) / f;
        eta.textContent = `Whole run: ${(f * 100).toFixed(0)} % · about ${fmtDuration(left)} left (ETA ${new Date(st.lastTs + left * 1000).toLocaleTimeString()})` +
          (c.samples_per_s ? ` · ${fmtNum(c.samples_per_s, 0)} samples/s` : '');
      }
    } else {
      eta.textContent = run.status === 'queued' ? 'Not started.' : 'Waiting for the first batch…';
    }
  }

  function renderCards() {
    clear(cards);
    const n = st.metric.epoch.length;
    if (!n) return;
    const i = n - 1;
    cards.append(h('div', { class: 'metric' }, h('div', { class: 'name', text: 'train loss' }),
      h('div', { class: 'value', text: fmtNum(st.metric.train_loss[i], 4) }), h('div', { class: 'sub', text: `epoch ${st.metric.epoch[i]}` })));
    for (const m of METRICS) {
      const v = st.metric.val[m][i], t = st.metric.test[m][i];
      if (v === null && t === null) continue;
      cards.append(h('div', { class: 'metric' }, h('div', { class: 'name', text: `${m} (val)` }),
        h('div', { class: 'value' }, fmtNum(v, 2), h('span', { class: 'unit', text: UNITS[m] })),
        h('div', { class: 'sub', text: `test ${fmtNum(t, 2)} · probe, epoch ${st.metric.epoch[i]}` })));
    }
    if (st.best) cards.append(h('div', { class: 'metric' }, h('div', { class: 'name', text: 'best checkpoint' }),
      h('div', { class: 'value', text: `epoch ${st.best}` })));
  }

  function renderCharts() {
    const m = st.metric;
    if (st.loss.x.length) {
      const data = [st.loss.x, st.loss.batch, st.loss.epoch];
      if (!charts.get('live:loss')) charts.add(chartBox, 'live:loss', {
        title: 'Loss', xLabel: 'epoch', yLabel: 'loss (MSE, log scale)', logY: true,
        series: [{ label: 'batch loss', spanGaps: true, color: '#56b4e9', dash: [] }, { label: 'epoch train loss', spanGaps: true, points: true, ...SPLIT_LOOK.train }], data,
      });
      else charts.set('live:loss', data);
    }
    for (const name of CURVES) {
      const has = m.val[name].some((v) => v !== null) || m.test[name].some((v) => v !== null);
      if (!has) continue;
      const key = `history:${name}`;
      const b = baselines(st.baselines, name, m.epoch, isDpdRun(run));
      const data = [m.epoch, m.val[name], m.test[name], ...b.data];
      if (!charts.get(key)) charts.add(chartBox, key, {
        title: `${name} per epoch`, xLabel: 'epoch', yLabel: `${name} (${UNITS[name]})`, intX: true,
        series: [{ label: 'val', points: true, spanGaps: true, ...SPLIT_LOOK.val }, { label: 'test', points: true, spanGaps: true, ...SPLIT_LOOK.test }, ...b.series], data,
      });
      else charts.set(key, data);
    }
  }

  function renderEvents() {
    const lines = st.events.slice(-300).map((e) => `${e.seq}\t${e.ts}\t${e.type}\t${JSON.stringify(e.data)}`);
    evBox.textContent = lines.join('\n') || 'No events yet.';
  }

  let renderTimer = null;
  function scheduleRender() {
    if (renderTimer) return;
    renderTimer = setTimeout(() => {
      renderTimer = null;
      if (!ctx.alive()) return;
      renderHeader();
      renderProgress();
      renderCards();
      renderCharts();
      renderEvents();
    }, 80);
  }
  ctx.onCleanup(() => clearTimeout(renderTimer));

  // ---- events ----
  function putMetric(d) {
    const m = st.metric;
    let i = m.epoch.indexOf(d.epoch);
    if (i < 0) {
      i = m.epoch.findIndex((e) => e > d.epoch);
      if (i < 0) i = m.epoch.length;
      m.epoch.splice(i, 0, d.epoch);
      m.train_loss.splice(i, 0, null);
      for (const k of METRICS) { m.val[k].splice(i, 0, null); m.test[k].splice(i, 0, null); }
    }
    m.train_loss[i] = typeof d.train_loss === 'number' ? d.train_loss : null;
    for (const k of METRICS) {
      m.val[k][i] = d.val && typeof d.val[k] === 'number' ? d.val[k] : null;
      m.test[k][i] = d.test && typeof d.test[k] === 'number' ? d.test[k] : null;
    }
    putLoss(d.epoch, null, m.train_loss[i]);
  }

  function putLoss(x, batch, epochLoss) {
    const L = st.loss;
    let i = L.x.length;
    while (i > 0 && L.x[i - 1] > x) i--;
    if (i > 0 && L.x[i - 1] === x) {
      if (batch !== null) L.batch[i - 1] = batch;
      if (epochLoss !== null) L.epoch[i - 1] = epochLoss;
      return;
    }
    L.x.splice(i, 0, x);
    L.batch.splice(i, 0, batch);
    L.epoch.splice(i, 0, epochLoss);
  }

  let refreshTimer = null;
  function refreshRun(delay = 0) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(async () => {
      try {
        run = await api.get(`/runs/${id}`);
        if (!ctx.alive()) return;
        if (run.started_at) st.startTs = Date.parse(run.started_at);
        scheduleRender();
        if (isTerminal(run)) { loadArtifacts(); loadConfig(); }
      } catch (e) { /* the feed shows the disconnection */ }
    }, delay);
  }
  ctx.onCleanup(() => clearTimeout(refreshTimer));

  let liveTimer = null;
  function refreshLive() {
    clearTimeout(liveTimer);
    liveTimer = setTimeout(loadLive, 150);
  }
  ctx.onCleanup(() => clearTimeout(liveTimer));

  function onEvents(list) {
    for (const ev of list) {
      st.events.push(ev);
      if (st.events.length > 2000) st.events.splice(0, st.events.length - 2000);
      const t = Date.parse(ev.ts);
      if (!Number.isNaN(t)) st.lastTs = t;
      const d = ev.data || {};
      switch (ev.type) {
        case 'status':
          if (d.to) run = { ...run, status: d.to, heartbeat_stale: false };
          if (d.to === 'running' && !st.startTs && !Number.isNaN(t)) st.startTs = t;
          refreshRun(d.to && ['succeeded', 'failed', 'cancelled', 'interrupted'].includes(d.to) ? 0 : 200);
          break;
        case 'progress':
          st.cur = d;
          if (d.preview_revision > st.previewRev) { st.previewRev = d.preview_revision; refreshLive(); }
          if (d.epochs) st.epochs = d.epochs;
          if (typeof d.loss === 'number' && d.steps) putLoss(d.epoch - 1 + d.steps_done / d.steps, d.loss, null);
          break;
        case 'started': // the capture's test figures (a DPD run's PA model's too): lines on the learning curves
          if (d.measured) st.baselines = { measured: d.measured.test, no_dpd: d.no_dpd ? d.no_dpd.test : null };
          break;
        case 'metric':
          if (d.epochs) st.epochs = d.epochs;
          putMetric(d);
          refreshLive();
          break;
        case 'checkpoint':
          if (d.name === 'best.safetensors') st.best = d.epoch;
          break;
        case 'warning':
          if (d.message) st.warnings.push(d.message);
          break;
        case 'ended':
          st.ended = d;
          break;
        default:
          break;
      }
    }
    st.lastUpdate = new Date();
    scheduleRender();
  }

  function onState(state, f) {
    streamChip.className = `chip stream ${state}`;
    streamChip.textContent = state === 'live' ? 'live' : state === 'ended' ? 'stream ended' : state;
    streamChip.dataset.state = state;
    const down = state === 'reconnecting';
    discBanner.classList.toggle('hidden', !down);
    pollBanner.classList.toggle('hidden', state !== 'polling');
    if (down) {
      const t = f.lastContact || st.lastUpdate;
      lastUpd.textContent = t ? `Last update ${t.toLocaleTimeString()}.` : '';
    }
    if (state === 'ended') { refreshRun(0); refreshLive(); }
  }

  // ---- the parts loaded once (and again at the end) ----
  async function loadConfig() {
    const res = isTerminal(run) ? await api.part(run, 'results').catch(() => null) : null;
    if (!ctx.alive()) return;
    put(clear(cfgBox),
      kv([['task', run.verb], ['dataset', run.dataset], ['submitted', fmtTime(run.created_at)], ['started', fmtTime(run.started_at)],
        ['finished', fmtTime(run.finished_at)], ['idempotency key', run.idempotency_key]]),
      h('h3', { text: 'Request options' }), h('pre', { text: JSON.stringify(run.options || {}, null, 2) }),
      res && res.config ? [h('h3', { text: 'Resolved configuration' }), h('pre', { id: 'resolved-config', text: JSON.stringify(res.config, null, 2) })] : null,
      res && res.provider ? h('p', { class: 'muted', text: `provider: ${res.provider}` }) : null,
      res && res.resume ? h('p', { class: 'muted' }, 'Resume with the CLI: ', h('code', { text: res.resume })) : null);
  }

  async function loadArtifacts() {
    let a;
    try { a = await api.get(`/runs/${id}/artifacts`); } catch (e) { clear(artBox).append(errorBanner(e)); return; }
    if (!ctx.alive()) return;
    clear(artBox);
    if (!a.artifacts.length) {
      artBox.append(h('p', { class: 'muted', text: isTerminal(run) ? 'This run left no artifacts.' : 'Artifacts are listed when the run ends.' }));
      return;
    }
    const rows = a.artifacts.map((x) => [
      h('a', { href: api.artifactUrl(id, x.id), download: x.name, 'data-artifact': x.id, text: x.name }),
      x.kind, fmtBytes(x.size), h('span', { class: 'mono', title: x.sha256, text: x.sha256.slice(0, 16) + '…' }),
    ]);
    artBox.append(stackTable([{ label: 'File' }, { label: 'Kind' }, { label: 'Size', num: true }, { label: 'SHA-256' }], rows));
  }

  async function loadLive() {
    let live;
    try {
      if (!run.available || !run.available.live) run = await api.get(`/runs/${id}`); // an epoch may have ended since
      live = await api.part(run, 'live');
    } catch (e) { return; }
    if (!ctx.alive()) return;
    if (!live) {
      liveNote.textContent = isTerminal(run) ? 'This run has no live snapshot (an imported or unfinished run): its result page shows its pictures.'
        : 'The live snapshot comes with the first epoch.';
      return;
    }
    const batch = live.policy && live.policy.mode === 'batch';
    liveNote.classList.toggle('danger-text', batch);
    liveNote.textContent = live.source === 'batch_probe'
      ? `Preview at step ${live.step} (epoch ${live.epoch}/${live.epochs}, batch ${live.steps_done}/${live.steps}), revision ${live.revision}: ` +
        `the first validation segments on the weights of that step, every ${live.policy.every_batches} batches (an extra forward pass; ${live.previews} so far).`
      : `Snapshot of epoch ${live.epoch}/${live.epochs} (${live.source || 'validation'} split), revision ${live.revision}. ` +
        (batch ? `Previews every ${live.policy.every_batches} batches (${live.previews} so far) come between epochs.`
          : 'Refreshed once per epoch from the predictions the epoch already computed.');
    const p = live.plots;
    if (!p || p.empty || !p.psd) {
      if (p && (p.empty || p.why_no_psd)) liveNote.textContent += ` No ${p.empty ? 'plot data' : 'spectrum'}: ${p.empty || p.why_no_psd}`;
      return;
    }
    // a DPD run's: with DPD, the target, and without DPD the PA model's and the capture's
    const dpd = isDpdRun(run), look = seriesLook(dpd);
    const keys = order(Object.keys(p.psd.series));
    const psd = [p.psd.freq, ...keys.map((k) => p.psd.series[k])];
    if (!charts.get('live:psd')) charts.add(liveBox, 'live:psd', {
      title: dpd ? 'Spectrum with and without DPD (live)' : 'Spectrum (live)', xLabel: `frequency (${p.psd.x_unit})`,
      yLabel: psdLabel(p), bands: p.psd.bands, bandKey: true, dbSpan: 100, series: keys.map(look), data: psd,
    });
    else charts.set('live:psd', psd);
    const ak = order(Object.keys(p.amam.series));
    const am = [null, ...ak.map((k) => [p.amam.input, p.amam.series[k]])];
    if (!charts.get('live:amam')) charts.add(liveBox, 'live:amam', {
      title: 'AM/AM (live)', kind: 'scatter', xLabel: p.amam.x_unit, yLabel: p.amam.y_unit,
      series: ak.map(look), data: am,
    });
    else charts.set('live:amam', am);
  }

  // The worker's log, followed by byte offset: every 2 s while the run is active, then to its end.
  const log = { offset: 0, lines: [], busy: false, done: false };
  async function loadLog() {
    if (log.busy || log.done) return;
    log.busy = true;
    try {
      for (let i = 0; i < 20; i++) { // at most 20 pages a tick
        const r = await api.get(`/runs/${id}/logs?offset=${log.offset}&limit=2000`);
        if (!ctx.alive()) return;
        log.lines.push(...r.lines);
        if (log.lines.length > 5000) log.lines.splice(0, log.lines.length - 5000);
        const moved = r.next_offset !== log.offset;
        log.offset = r.next_offset;
        log.done = r.eof;
        if (!moved || r.eof) break;
      }
      const atEnd = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 4;
      logBox.textContent = log.lines.join('\n') || (isTerminal(run) ? 'The worker wrote nothing.' : 'No log yet.');
      if (atEnd) logBox.scrollTop = logBox.scrollHeight;
    } catch (e) { /* the feed shows a disconnection; the next tick tries again */ }
    finally { log.busy = false; }
  }
  const logPoll = setInterval(loadLog, 2000);
  ctx.onCleanup(() => clearInterval(logPoll));

  renderHeader();
  renderProgress();
  renderEvents();
  loadLog();
  loadConfig();
  loadArtifacts();
  loadLive();

  const feed = new RunFeed(id, { after: 0, onEvents, onState }).start();
  window.__dpd.feed = feed;
  ctx.onCleanup(() => feed.stop());
  const poll = setInterval(() => { if (!isTerminal(run)) refreshRun(0); }, 10000); // heartbeat_stale, wait_reason
  ctx.onCleanup(() => clearInterval(poll));
}
