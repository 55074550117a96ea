// The studio's pages in a real headless Chromium (Debian's, driven by playwright-core) against a
// real `dpd serve --test-workers`: the acceptance tests H38–H44 of the studio reference (§7), as
// issue 11 §4 adapts them. Usage: node tests/ui/ui.test.mjs BUILD_DIR. Prints PASS/FAIL/SKIP lines
// and `RESULT ui P F S` last; screenshots go to BUILD_DIR/ui-shots/.
//
// The browser reaches the server through a small HTTP proxy of this script, so that a network
// drop can be made real: the proxy cuts every open connection (the event stream included) and
// refuses new ones while the browser context is also set offline.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const BUILD = path.resolve(process.argv[2] || 'build');
const DPD = path.join(BUILD, 'dpd');
const SHOTS = path.join(BUILD, 'ui-shots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const t0 = Date.now();
let passed = 0, failed = 0, skipped = 0;

const log = (...a) => console.log(...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function assert(cond, msg) { if (!cond) throw new Error(msg); }
function close(a, b, eps = 1e-9) { return (a === null && b === null) || (typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= eps); }
function sameSeries(got, want, what) {
  assert(Array.isArray(got) && Array.isArray(want), `${what}: not arrays`);
  assert(got.length === want.length, `${what}: ${got.length} points, the API has ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const w = want[i] === undefined ? null : want[i];
    assert(close(got[i], w), `${what}[${i}]: ${got[i]} != ${w}`);
  }
}

async function test(name, fn) {
  const s = Date.now();
  try {
    const r = await fn();
    if (r && r.skip) { skipped++; log(`SKIP ${name}: ${r.skip}`); return; }
    passed++;
    log(`PASS ${name} (${((Date.now() - s) / 1000).toFixed(1)} s)`);
  } catch (e) {
    failed++;
    log(`FAIL ${name}: ${e && e.message ? e.message : e}`);
    if (process.env.UI_VERBOSE && e && e.stack) log(e.stack);
  }
}

// ---- the server ----
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dpd-ui-'));
const root = path.join(tmp, 'root');
const env = { ...process.env, XDG_DATA_HOME: path.join(tmp, 'data'), XDG_CONFIG_HOME: path.join(tmp, 'config'),
  XDG_CACHE_HOME: path.join(tmp, 'cache'), HOME: tmp };
const server = spawn(DPD, ['serve', '--root', root, '--listen', '127.0.0.1:0', '--test-workers', '--grace', '2',
  '--stale-after', '3'], // a worker silent 3 s is stale: the banner's test waits seconds, not a minute
  { env, stdio: ['ignore', 'pipe', 'pipe'] });
let serverOut = '';
server.stderr.on('data', (d) => { serverOut += d; });
const boot = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`dpd serve printed no sign-in link in 15 s: ${serverOut}`)), 15000);
  server.stdout.on('data', (d) => {
    serverOut += d;
    const m = /sign in[^\n]*?(http:\/\/127\.0\.0\.1:(\d+)\/api\/v1\/session\/bootstrap\?token=\S+)/.exec(serverOut);
    if (m) { clearTimeout(timer); resolve({ url: m[1], port: Number(m[2]) }); }
  });
  server.on('exit', (c) => reject(new Error(`dpd serve exited ${c}: ${serverOut}`)));
});
const S = `http://127.0.0.1:${boot.port}`;
const TOKEN = fs.readFileSync(path.join(root, 'api-token'), 'utf8').trim();

async function apiGet(p) {
  const r = await fetch(`${S}/api/v1${p}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  const j = await r.json();
  if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}
async function apiPost(p, body) {
  const r = await fetch(`${S}/api/v1${p}`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body || {}) });
  const j = await r.json();
  if (!r.ok) throw new Error(`POST ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}
const fake = (options) => apiPost('/runs', { verb: 'fake', dataset: 'synth', options });
async function waitRun(id, pred, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await apiGet(`/runs/${id}`);
    if (pred(r)) return r;
    if (Date.now() > end) throw new Error(`run ${id} still ${r.status} after ${ms} ms`);
    await sleep(100);
  }
}
const terminal = (r) => ['succeeded', 'failed', 'cancelled', 'interrupted'].includes(r.status);

// ---- the proxy between the browser and the server ----
const sockets = new Set();
let dropping = false;
const proxy = http.createServer((req, res) => {
  if (dropping) { req.socket.destroy(); return; }
  const up = http.request({ host: '127.0.0.1', port: boot.port, method: req.method, path: req.url,
    // the server's own Host, and the page's Origin to match it (the server refuses another origin)
    headers: { ...req.headers, host: `127.0.0.1:${boot.port}`,
      ...(req.headers.origin === P ? { origin: S } : {}) } }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    ur.pipe(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy());
  req.pipe(up);
});
proxy.on('connection', (s) => {
  if (dropping) { s.destroy(); return; }
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
const P = `http://127.0.0.1:${proxy.address().port}`;
function drop() { dropping = true; for (const s of sockets) s.destroy(); }
function restore() { dropping = false; }

// ---- the browser ----
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const context = await browser.newContext({ viewport: { width: 1366, height: 768 }, acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(15000);
const consoleErrors = [];
let allowNetErrors = false;
page.on('console', (m) => {
  if (m.type() !== 'error') return;
  const url = (m.location() && m.location().url) || '';
  const text = m.text();
  if (allowNetErrors && /Failed to load resource|net::ERR_|Failed to fetch|network error/i.test(text)) return;
  consoleErrors.push(`${text} @ ${url}`);
});
page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
const streamRequests = [];
page.on('request', (r) => {
  if (/\/events\/stream/.test(r.url())) streamRequests.push({ url: r.url(), lastEventId: r.headers()['last-event-id'] || null, t: Date.now() });
});

async function nav(hash) {
  const n = await page.evaluate(() => (window.__dpd && window.__dpd.navs) || 0);
  const same = await page.evaluate((h) => location.hash === h, hash);
  if (same) await page.evaluate(() => { location.hash = '#/status'; });
  if (same) await page.waitForFunction((k) => window.__dpd.navs > k && window.__dpd.ready, n);
  const n2 = await page.evaluate(() => window.__dpd.navs);
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForFunction((k) => window.__dpd.navs > k && window.__dpd.ready, n2);
}
const chartData = (name) => page.evaluate((n) => {
  const u = window.__dpd.charts[n];
  return u ? JSON.parse(JSON.stringify(u.data)) : null;
}, name);
const text = (sel) => page.locator(sel).first().innerText();
// The New run form: a quick two-epoch GRU-4 train-pa on synth.
async function fillTrainPa() {
  await page.selectOption('#f-verb', 'train-pa');
  await page.selectOption('#f-dataset', 'synth');
  await page.selectOption('#f-model', 'gmp'); /* sized by K, Q and M: no Hidden size field */
  assert(!(await page.isVisible('#f-hidden')), 'the Hidden size field shows for gmp, which has none');
  await page.selectOption('#f-model', 'gru');
  assert(await page.isVisible('#f-hidden'), 'the Hidden size field is hidden for gru');
  await page.fill('#f-hidden', '4');
  await page.selectOption('#f-preset', 'quick');
  await page.fill('#f-epochs', '2');
}
fs.mkdirSync(SHOTS, { recursive: true });

const ids = {};
try {
  // H38: sign-in, no console errors, the CSP blocks inline script, the token nowhere in the page
  await test('H38 sign-in and pages load without console errors', async () => {
    const bootUrl = boot.url.replace(S, P);
    await page.goto(bootUrl);
    await page.waitForFunction(() => window.__dpd && window.__dpd.ready);
    const url = page.url();
    assert(!url.includes('token'), `the URL still holds the token: ${url}`);
    const cookie = await page.evaluate(() => document.cookie);
    assert(!/dpd_session/.test(cookie), 'the session cookie is readable by scripts (not HttpOnly)');
    const token = new URL(boot.url).searchParams.get('token');
    const html = await page.content();
    assert(!html.includes(token) && !html.includes(TOKEN), 'a token appears in the page');
    const hist = await page.evaluate(() => history.length);
    assert(hist <= 2, `history has ${hist} entries`);
    for (const h of ['#/new', '#/runs', '#/compare', '#/status', '#/runs']) await nav(h);
    assert(!consoleErrors.length, `console errors: ${consoleErrors.join(' | ')}`);
  });

  await test('H38 the CSP blocks an injected inline script', async () => {
    const before = consoleErrors.length;
    const r = await page.evaluate(() => new Promise((resolve) => {
      const seen = [];
      document.addEventListener('securitypolicyviolation', (e) => seen.push(e.violatedDirective));
      const s = document.createElement('script');
      s.textContent = 'window.__inlineRan = true;';
      document.head.appendChild(s);
      const d = document.createElement('div');
      d.innerHTML = '<img src="x" onerror="window.__inlineRan2 = true">';
      document.body.appendChild(d);
      setTimeout(() => { d.remove(); resolve({ seen, ran: !!window.__inlineRan, ran2: !!window.__inlineRan2 }); }, 300);
    }));
    assert(!r.ran && !r.ran2, 'an inline script ran');
    assert(r.seen.some((v) => v.startsWith('script-src')), `no script-src violation reported (${r.seen.join(',')})`);
    consoleErrors.splice(before); // the browser logs the refusals it was asked to make
  });

  // The figures in labels and cards are written as dpd plot's legends and the CLI write them (C's
  // printf: an exact binary tie rounds to even), not as toFixed does (away from zero). The wanted
  // strings are C's (printf("%.*f") of the same doubles); the first six are ties.
  await test('figures round as the CLI\'s and dpd plot\'s (exact ties to even)', async () => {
    const want = [[-41.25, 1, '-41.2'], [41.25, 1, '41.2'], [-41.75, 1, '-41.8'], [0.125, 2, '0.12'], [-2.5, 0, '-2'],
      [3.5, 0, '4'], [-41.65, 1, '-41.6'], [-30.665, 2, '-30.66'], [-27.3475, 3, '-27.348'], [1.005, 2, '1.00'], [-0.04, 1, '-0.0']];
    const got = await page.evaluate(async (w) => {
      const ui = await import('/js/ui.js'), charts = await import('/js/charts.js');
      return { fixed: w.map(([v, d]) => ui.fixedC(v, d)), card: ui.fmtNum(-27.3125, 3),
        legend: charts.withAdjacent({ label: 'PA model' }, { metric: 'ACLR_AVG', series: { prediction: -41.25 } }, 'prediction').label,
        error: charts.withError({ error: { value: -27.75 } }) };
    }, want);
    want.forEach(([v, d, s], i) => assert(got.fixed[i] === s, `fixedC(${v}, ${d}) = '${got.fixed[i]}', C writes '${s}'`));
    assert(got.card === '-27.312', `a card's -27.3125 reads '${got.card}'`); // a tie: toFixed writes -27.313
    assert(got.legend === 'PA model (ACLR -41.2 dBc)' && got.error === ' (NMSE -27.8 dB)', `labels '${got.legend}', '${got.error}'`);
  });

  await test('signed-out browsers get the sign-in page', async () => {
    const ctx2 = await browser.newContext();
    const p2 = await ctx2.newPage();
    await p2.goto(`${P}/#/runs`);
    await p2.locator('#signin-token').waitFor();
    await ctx2.close();
  });

  // New run: a real train-pa from the form (invalid first: the field error is shown)
  await test('New run: the form submits the options and shows the server\'s field errors', async () => {
    await nav('#/new');
    await fillTrainPa();
    await page.click('#advanced summary');
    // the Hidden size given twice, in its field and in the advanced settings: refused here, nothing sent
    await page.fill('#f-advanced', 'threads = 1\nhidden = 8\nepochs = 2');
    let posted = 0;
    const count = (r) => { if (r.url().endsWith('/api/v1/runs') && r.method() === 'POST') posted++; };
    page.on('request', count);
    await page.click('#f-submit');
    const twice = await page.locator('#f-advanced-err').innerText();
    page.off('request', count);
    assert(/hidden: the form says 4 and the advanced settings say 8/.test(twice) && !/epochs/.test(twice), `the clash is not told: "${twice}"`);
    assert(posted === 0, `the form was sent ${posted} time(s) with hidden given twice`);
    assert(await page.getAttribute('#f-advanced', 'aria-invalid') === 'true', 'the advanced options are not marked invalid');
    await page.fill('#f-advanced', 'threads = 1\nlr = -1');
    const nErr = consoleErrors.length;
    await page.click('#f-submit');
    await page.locator('#new-msg .banner.error').waitFor();
    // the browser logs the 422 it was meant to get
    assert(consoleErrors.slice(nErr).every((e) => /status of 422/.test(e)), `console errors: ${consoleErrors.slice(nErr)}`);
    consoleErrors.splice(nErr);
    const inv = await page.getAttribute('#f-advanced', 'aria-invalid');
    assert(inv === 'true', 'the advanced options are not marked invalid');
    assert(/lr/.test(await text('#new-msg')), 'the error does not name lr');
    await page.fill('#f-advanced', 'threads = 1');
    const [req] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/api/v1/runs') && r.method() === 'POST'),
      page.click('#f-submit'),
    ]);
    const body = req.postDataJSON();
    assert(body.verb === 'train-pa' && body.dataset === 'synth', `body ${JSON.stringify(body)}`);
    assert(JSON.stringify(body.options) === JSON.stringify({ model: 'gru', hidden: 4, preset: 'quick', epochs: 2, preview_every_batches: null, threads: 1 }),
      `options ${JSON.stringify(body.options)}`);
    assert(typeof body.idempotency_key === 'string' && body.idempotency_key.length > 8, 'no idempotency key');
    await page.waitForFunction(() => /^#\/run\/r/.test(location.hash) && window.__dpd.ready);
    ids.real = await page.evaluate(() => location.hash.split('/')[2]);
    await page.locator('#run-status .chip[data-status="succeeded"]').waitFor({ timeout: 60000 });
    await page.locator('#run-artifacts a[data-artifact]').first().waitFor();
    const names = await page.locator('#run-artifacts a[data-artifact]').allInnerTexts();
    assert(names.includes('best.safetensors'), `artifacts: ${names}`);
    const href = await page.locator('#run-artifacts a[data-artifact]').first().getAttribute('href');
    const dl = await page.evaluate((u) => fetch(u).then((r) => r.status), href);
    assert(dl === 200, `artifact download: ${dl}`);
  });

  await test('New run: a dataset uploaded from CSV files becomes selectable', async () => {
    const dir = path.join(root, 'datasets', 'synth'); // made by the run above
    const csv = ['train_input', 'train_output', 'val_input', 'val_output', 'test_input', 'test_output'].map((n) => path.join(dir, `${n}.csv`));
    await nav('#/new');
    await page.click('#upload summary');
    await page.fill('#u-name', 'cap1');
    await page.setInputFiles('#u-spec', path.join(dir, 'spec.json'));
    await page.setInputFiles('#u-files', csv);
    await page.click('#u-submit');
    await page.locator('#u-msg', { hasText: 'Uploaded' }).waitFor({ timeout: 30000 });
    assert((await page.inputValue('#f-dataset')) === 'upload:cap1', 'the upload is not selected');
    const ds = await apiGet('/datasets');
    assert(ds.datasets.some((d) => d.name === 'upload:cap1'), 'the server does not list it');
  });

  // H39: live progress and curves
  await test('H39 live: the epoch bar reaches 5/5 and the history chart holds the API\'s points', async () => {
    const run = await fake({ epochs: 5, epoch_ms: 700 });
    ids.a = run.id;
    await nav(`#/run/${run.id}`);
    await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'live');
    await page.waitForFunction(() => window.__dpd.charts['history:NMSE']);
    await page.evaluate(() => { window.__firstChart = window.__dpd.charts['history:NMSE']; });
    await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'ended', null, { timeout: 30000 });
    await page.locator('#run-status .chip[data-status="succeeded"]').waitFor();
    const bar = await page.evaluate(() => { const b = document.querySelector('#epoch-bar'); return [b.value, b.max]; });
    assert(bar[0] === 5 && bar[1] === 5, `epoch bar ${bar}`);
    assert((await text('#epoch-text')) === '5/5', 'epoch text');
    const same = await page.evaluate(() => window.__firstChart === window.__dpd.charts['history:NMSE']);
    assert(same, 'the history chart was rebuilt instead of updated');
    const d = await chartData('history:NMSE');
    const hist = await apiGet(`/runs/${run.id}/history`);
    const rows = hist.epochs;
    assert(rows && rows.length === 5, `history API: ${JSON.stringify(hist).slice(0, 200)}`);
    sameSeries(d[0], rows.map((r) => r.epoch), 'epochs');
    sameSeries(d[1], rows.map((r) => r.val.NMSE), 'val NMSE');
    sameSeries(d[2], rows.map((r) => r.test.NMSE), 'test NMSE');
    await page.waitForFunction(() => /fake: done/.test(document.querySelector('#run-log').textContent), null, { timeout: 10000 });
    const logText = await page.evaluate(() => document.querySelector('#run-log').textContent);
    assert(logText === [1, 2, 3, 4, 5].map((e) => `fake: epoch ${e} of 5`).concat('fake: done').join('\n'), `log view: ${logText}`);
    const states = await page.evaluate((id) => window.__dpd.streamLog.filter((s) => s.run === id).map((s) => s.state), run.id);
    assert(states.indexOf('live') >= 0 && states.indexOf('live') < states.lastIndexOf('ended'), `stream states ${states}`);
    assert(!consoleErrors.length, `console errors: ${consoleErrors.join(' | ')}`);
  });

  // H40: a network drop of 10 s
  await test('H40 a 10 s network drop shows the banner and resumes without duplicates', async () => {
    const run = await fake({ epochs: 4, epoch_ms: 3000 });
    ids.b = run.id;
    await nav(`#/run/${run.id}`);
    await page.waitForFunction(() => window.__dpd.charts['history:NMSE'] && window.__dpd.charts['history:NMSE'].data[0].length >= 1, null, { timeout: 20000 });
    const nBefore = streamRequests.length;
    allowNetErrors = true;
    const tDrop = Date.now();
    await context.setOffline(true);
    drop();
    await page.locator('#disconnected-banner').waitFor({ state: 'visible', timeout: 8000 });
    assert(/keeps going/.test(await text('#disconnected-banner')), 'banner text');
    await sleep(Math.max(0, 10000 - (Date.now() - tDrop)));
    const tRestore = Date.now();
    restore();
    await context.setOffline(false);
    await page.locator('#disconnected-banner').waitFor({ state: 'hidden', timeout: 15000 });
    const back = await page.evaluate(([id, t]) => window.__dpd.streamLog.filter((s) => s.run === id && s.t >= t).map((s) => s.state), [run.id, tRestore]);
    assert(back.includes('live'), `the stream did not come back live after the drop (${back})`);
    await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'ended', null, { timeout: 30000 });
    allowNetErrors = false;
    const resumed = streamRequests.slice(nBefore).filter((r) => r.t >= tRestore);
    assert(resumed.length >= 1 && resumed.every((r) => Number(r.lastEventId) > 0),
      `the stream was not resumed with Last-Event-ID after the drop (${JSON.stringify(resumed)})`);
    const seqs = await page.evaluate(() => window.__dpd.run.state.events.map((e) => e.seq));
    const final = await apiGet(`/runs/${run.id}`);
    assert(seqs.length === final.last_seq, `${seqs.length} events delivered, the run has ${final.last_seq}`);
    seqs.forEach((s, i) => assert(s === i + 1, `event ${i + 1} has seq ${s} (a gap or a duplicate)`));
    const d = await chartData('history:NMSE');
    const hist = await apiGet(`/runs/${run.id}/history`);
    sameSeries(d[0], hist.epochs.map((r) => r.epoch), 'epochs after the drop');
    sameSeries(d[1], hist.epochs.map((r) => r.val.NMSE), 'val NMSE after the drop');
    // the page renders 80 ms after its last event: wait for the bar (a loaded machine once read it
    // early), and say what the page held if it never gets there
    const full = await page.waitForFunction(() => document.querySelector('#epoch-bar').value === 4, null, { timeout: 5000 })
      .then(() => true, () => false);
    const bar = await page.evaluate(() => {
      const b = document.querySelector('#epoch-bar'), s = window.__dpd.run.state;
      return { value: b.value, max: b.max, epochs: s.epochs, metric_epochs: s.metric.epoch, cur_epoch: s.cur && s.cur.epoch };
    });
    assert(full, `epoch bar ${JSON.stringify(bar)}`);
  });
  allowNetErrors = false;

  await test('a silent worker: the no-heartbeat banner, gone when the run ends', async () => {
    const run = await fake({ epochs: 1, epoch_ms: 10, silent_ms: 7000 }); // nothing for 7 s, then a short run
    await waitRun(run.id, (r) => r.heartbeat_stale);
    await nav(`#/run/${run.id}`);
    await page.locator('#stale-banner').waitFor({ state: 'visible', timeout: 5000 });
    assert(/No heartbeat/.test(await text('#stale-banner')), 'banner text');
    await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'ended', null, { timeout: 30000 });
    await page.locator('#stale-banner').waitFor({ state: 'hidden', timeout: 15000 });
  });

  await test('fallback: the page polls the event pages when the stream cannot be read', async () => {
    await page.route('**/events/stream*', (r) => r.abort());
    allowNetErrors = true;
    try {
      const run = await fake({ epochs: 4, epoch_ms: 1000 });
      await nav(`#/run/${run.id}`);
      await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'polling', null, { timeout: 15000 });
      await page.locator('#polling-banner').waitFor({ state: 'visible' });
      await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'ended', null, { timeout: 20000 });
      const seqs = await page.evaluate(() => window.__dpd.run.state.events.map((e) => e.seq));
      const final = await apiGet(`/runs/${run.id}`);
      assert(seqs.length === final.last_seq && seqs.every((s, i) => s === i + 1), `events ${seqs.length} of ${final.last_seq}`);
      const d = await chartData('history:NMSE');
      const hist = await apiGet(`/runs/${run.id}/history`);
      sameSeries(d[1], hist.epochs.map((r) => r.val.NMSE), 'val NMSE by polling');
    } finally {
      await page.unroute('**/events/stream*');
      allowNetErrors = false;
    }
  });

  // H41: the result page's series equal the plot data of the API
  await test('H41 result page: PSD, AM/AM, AM/PM, I/Q, residual equal GET /plots', async () => {
    assert(ids.a, 'no run from H39');
    await nav(`#/result/${ids.a}`);
    const doc = await apiGet(`/runs/${ids.a}/plots`);
    const p = doc.plots;
    assert((await page.evaluate(() => window.__dpd.result.source)) === 'final', 'not the final plots');
    const psd = await chartData('psd');
    const keys = ['target', 'prediction', ...Object.keys(p.psd.series).filter((k) => k !== 'target' && k !== 'prediction')];
    sameSeries(psd[0], p.psd.freq, 'psd freq');
    keys.forEach((k, i) => sameSeries(psd[i + 1], p.psd.series[k], `psd ${k}`));
    const res = await chartData('residual');
    sameSeries(res[0], p.residual.freq, 'residual freq');
    sameSeries(res[1], p.residual.db, 'residual db');
    for (const name of ['amam', 'ampm']) {
      const d = await chartData(name);
      keys.forEach((k, i) => { sameSeries(d[i + 1][0], p[name].input, `${name} input`); sameSeries(d[i + 1][1], p[name].series[k], `${name} ${k}`); });
    }
    for (const c of ['i', 'q']) { // I and Q on charts of their own, one trace per signal
      const iq = await chartData(`iq:${c}`);
      sameSeries(iq[0], p.iq.sample, `iq ${c} sample`);
      keys.forEach((k, i) => sameSeries(iq[1 + i], p.iq.series[k][c], `iq ${k} ${c}`));
    }
    // every signal has its own colour, the same on each chart (the capture's y blue, the model's vermillion)
    const strokes = await page.evaluate(() => ['psd', 'amam', 'iq:i', 'iq:q'].map((n) => window.__dpd.charts[n].series.slice(1).map((s) => s._stroke || s.stroke)));
    assert(strokes.every((st) => JSON.stringify(st) === JSON.stringify(strokes[0])) && strokes[0][0] === '#0072b2' && strokes[0][1] === '#d55e00',
      `the signals' colours across the charts: ${JSON.stringify(strokes)}`);
    // a spectrum's axis reaches 100 dB below its peak (and the tick it rounds to) at most
    const yr = await page.evaluate(() => { const u = window.__dpd.charts.psd; return [u.scales.y.min, u.scales.y.max]; });
    const top = Math.max(...keys.flatMap((k) => p.psd.series[k].filter((v) => v !== null)));
    assert(yr[1] >= top && yr[1] - yr[0] <= 120, `the spectrum's axis ${yr} for a peak of ${top} dB`);
    const curve = await chartData('curve:NMSE');
    const hist = await apiGet(`/runs/${ids.a}/history`);
    sameSeries(curve[1], hist.epochs.map((r) => r.val.NMSE), 'learning curve');
    assert(await page.locator('#result-cards .metric').count() > 0, 'no metric cards');
  });

  await test('Result page of a real run draws its final plots', async () => {
    assert(ids.real, 'no real run');
    await nav(`#/result/${ids.real}`);
    const src = await page.evaluate(() => window.__dpd.result.source);
    const doc = (await apiGet(`/runs/${ids.real}/plots`)).plots; // a real run ends with its final plots
    assert(src === 'final', `source ${src}`);
    const psd = await chartData('psd');
    sameSeries(psd[0], doc.psd.freq, 'psd freq');
    sameSeries(psd[1], doc.psd.series.target, 'psd target');
    const hist = await apiGet(`/runs/${ids.real}/history`);
    const curve = await chartData('curve:NMSE');
    const col = hist.columns.indexOf('VAL_NMSE');
    sameSeries(curve[1], hist.rows.map((r) => r[col]), 'val NMSE from history.csv');
    // the capture's own test ACLR_AVG, the one the model's should reach: a line and a card's note
    const res = await apiGet(`/runs/${ids.real}/results`);
    assert(typeof res.measured.ACLR_AVG === 'number' && res.measured.NMSE === null, `results.measured ${JSON.stringify(res.measured)}`);
    const al = await page.evaluate(() => window.__dpd.charts['curve:ACLR_AVG'].series.slice(1).map((s) => s.label));
    assert(JSON.stringify(al) === JSON.stringify(['val', 'test', 'measured y (test)']), `the ACLR_AVG curve's series: ${al}`);
    const ad = await chartData('curve:ACLR_AVG');
    sameSeries(ad[3], ad[0].map(() => res.measured.ACLR_AVG), 'the measured ACLR_AVG line');
    const nl = await page.evaluate(() => window.__dpd.charts['curve:NMSE'].series.length);
    assert(nl === 3, `the NMSE curve has ${nl - 1} series: the capture has no NMSE of its own`);
    const sub = await page.locator('#result-cards [data-metric="test.ACLR_AVG"] .sub').innerText();
    assert(sub.includes(`measured y ${res.measured.ACLR_AVG.toFixed(2)}`), `the test ACLR_AVG card says '${sub}'`);
  });

  await test('Result page of a real DPD run: the spectrum with and without DPD equals GET /plots', async () => {
    assert(ids.real, 'no real PA run');
    const run = await apiPost('/runs', { verb: 'train-dpd', dataset: 'synth',
      options: { pa: ids.real, model: 'gru', hidden: 4, preset: 'quick', epochs: 1, threads: 1 } });
    const fin = await waitRun(run.id, terminal, 60000);
    assert(fin.status === 'succeeded', `train-dpd ${fin.status}: ${JSON.stringify(fin.error)}`);
    await nav(`#/result/${run.id}`);
    const doc = await apiGet(`/runs/${run.id}/plots`);
    assert(doc.dpd === true && doc.plots.psd.series.no_dpd, 'the plot data of a DPD run have no no_dpd series');
    const psd = await chartData('psd');
    const labels = await page.evaluate(() => window.__dpd.charts.psd.series.slice(1).map((s) => s.label));
    const want = { 'target g·x': 'target', 'PA model + DPD': 'prediction', 'PA model, no DPD': 'no_dpd',
      'measured y, no DPD': 'measured' };
    const named = (l) => l.replace(/ \(ACLR -?[0-9.]+ dBc\)$/, ''); // the series' name, its figure aside
    assert(labels.length === 4 && labels.every((l) => want[named(l)]), `PSD series ${labels}`);
    sameSeries(psd[0], doc.plots.psd.freq, 'DPD psd freq');
    labels.forEach((l, i) => sameSeries(psd[i + 1], doc.plots.psd.series[want[named(l)]], `DPD psd ${want[named(l)]}`));
    // each series named with its val ACLR_AVG as the run recorded it (plots.json's adjacent: all but g·x)
    assert(doc.adjacent && doc.adjacent.metric === 'ACLR_AVG' && Object.keys(doc.adjacent.series).length === 3,
      `plots.json's adjacent: ${JSON.stringify(doc.adjacent)}`);
    labels.forEach((l) => {
      const v = doc.adjacent.series[want[named(l)]];
      assert(v === undefined ? l === named(l) : l === `${named(l)} (ACLR ${v.toFixed(1)} dBc)`, `PSD label '${l}', adjacent ${v}`);
    });
    // the residual named with the DPD's NMSE, plots.json's error
    const el = await page.evaluate(() => window.__dpd.charts.residual.series[1].label);
    assert(doc.error && el === `PA model + DPD − target g·x (NMSE ${doc.error.value.toFixed(1)} dB)`, `the residual's label '${el}', error ${JSON.stringify(doc.error)}`);
    assert(/with and without DPD/.test(await text('main')), 'the page does not say with and without DPD');
    const res = await apiGet(`/runs/${run.id}/results`); // each card names the no-DPD baseline of its split
    for (const [split, key, mkey] of [['test', 'no_dpd', 'measured'], ['val', 'no_dpd_val', 'measured_val']]) {
      const v = res[key] && res[key].NMSE, w = res[mkey] && res[mkey].NMSE; // and the capture's own y
      assert(typeof v === 'number' && typeof w === 'number', `results.${key}.NMSE is ${v}, results.${mkey}.NMSE ${w}`);
      const sub = await page.locator(`#result-cards [data-metric="${split}.NMSE"] .sub`).innerText();
      assert(sub.includes(`no DPD: PA model ${v.toFixed(2)}, measured y ${w.toFixed(2)}`),
        `the ${split} NMSE card says '${sub}', not the no-DPD ${v} and measured ${w}`);
    }
    // its learning curves: the test figures without DPD, the capture's and the PA model's, as lines
    const curveLabels = (n) => page.evaluate((k) => window.__dpd.charts[k].series.slice(1).map((s) => s.label), n);
    const baseWant = ['val', 'test', 'measured y, no DPD (test)', 'PA model, no DPD (test)'];
    const cl = await curveLabels('curve:ACLR_AVG');
    assert(JSON.stringify(cl) === JSON.stringify(baseWant), `the ACLR_AVG curve's series: ${cl}`);
    const cd = await chartData('curve:ACLR_AVG');
    sameSeries(cd[3], cd[0].map(() => res.measured.ACLR_AVG), 'the measured baseline');
    sameSeries(cd[4], cd[0].map(() => res.no_dpd.ACLR_AVG), 'the PA model baseline');
    await page.screenshot({ path: path.join(SHOTS, 'result-dpd-1366.png'), fullPage: true });
    // its run page: the same lines on the live learning curves (the started event's), and the live
    // spectrum with and without DPD under the result page's names
    await nav(`#/run/${run.id}`);
    await page.waitForFunction(() => window.__dpd.charts['history:ACLR_AVG'] && window.__dpd.charts['live:psd'], null, { timeout: 20000 });
    const rl = await curveLabels('history:ACLR_AVG');
    assert(JSON.stringify(rl) === JSON.stringify(baseWant), `the run page's ACLR_AVG curve's series: ${rl}`);
    const rd = await chartData('history:ACLR_AVG');
    sameSeries(rd[4], rd[0].map(() => res.no_dpd.ACLR_AVG), 'the run page\'s PA model baseline');
    const ll = await curveLabels('live:psd');
    assert(JSON.stringify(ll) === JSON.stringify(labels.map(named)), `the live spectrum's series: ${ll}, the result page's ${labels}`);
    const live = await apiGet(`/runs/${run.id}/live`);
    const lp = await chartData('live:psd');
    ll.forEach((l, i) => sameSeries(lp[i + 1], live.plots.psd.series[want[l]], `live psd ${want[l]}`));
    // Compare beside its PA run: the DPD run's no-DPD baseline has rows of its own, the PA run none
    await nav(`#/compare?ids=${ids.real},${run.id}`);
    const cells = await page.locator('#compare-table tr[data-field="test_NMSE_no_dpd"] td').allInnerTexts();
    assert(cells.length === 2 && cells[0] === '—' && cells[1] === res.no_dpd.NMSE.toFixed(3),
      `the test NMSE without DPD row reads ${JSON.stringify(cells)}, not — and ${res.no_dpd.NMSE}`);
    assert((await text('#compare-table tr[data-field="val_NMSE_no_dpd"] th')) === 'val NMSE: PA model, no DPD (dB)', 'the row is not named');
    const meas = await page.locator('#compare-table tr[data-field="test_NMSE_measured"] td').allInnerTexts();
    assert(meas.length === 2 && meas[0] === '—' && meas[1] === res.measured.NMSE.toFixed(3) &&
      (await text('#compare-table tr[data-field="test_NMSE_measured"] th')) === 'test NMSE: measured y, no DPD (dB)',
      `the test NMSE measured row reads ${JSON.stringify(meas)}, not — and ${res.measured.NMSE}`);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-metrics')]);
    const csv = fs.readFileSync(await dl.path(), 'utf8').trim().split('\n').map((l) => l.split(','));
    const at = csv[0].indexOf('val_NMSE_no_dpd');
    assert(at > 0 && csv[1][at] === '' && close(Number(csv[2][at]), res.no_dpd_val.NMSE), `CSV val_NMSE_no_dpd: ${csv.map((l) => l[at])}`);
  });

  await test('a run under another metric profile: its own metric names, and Compare warns', async () => {
    assert(ids.real, 'no legacy run to compare with');
    const run = await apiPost('/runs', { verb: 'train-pa', dataset: 'synth',
      options: { model: 'gru', hidden: 4, preset: 'quick', epochs: 1, threads: 1, metric_profile: 'general-spectral-v1' } });
    const fin = await waitRun(run.id, terminal, 60000);
    assert(fin.status === 'succeeded', `train-pa ${fin.status}: ${JSON.stringify(fin.error)}`);
    await nav(`#/result/${run.id}`);
    const names = await page.locator('#result-cards .metric .name').allInnerTexts();
    assert(names.some((n) => n.startsWith('IBE')) && names.some((n) => n.startsWith('ACPR_AVG')) &&
      !names.some((n) => n.startsWith('EVM') || n.startsWith('ACLR')), `metric cards ${names.join(' | ')}`);
    const hist = await apiGet(`/runs/${run.id}/history`);
    const curve = await chartData('curve:IBE');
    assert(curve, 'no IBE learning curve');
    sameSeries(curve[1], hist.rows.map((r) => r[hist.columns.indexOf('VAL_IBE')]), 'val IBE from history.csv');
    await nav(`#/compare?ids=${ids.real},${run.id}`);
    const warn = await text('main');
    assert(/different metric profiles \(legacy-opendpd-v1, general-spectral-v1\)/.test(warn), `no profile warning: ${warn.slice(0, 400)}`);
  });

  // H42: the per-batch preview is an explicit, red, warned opt-in; the worker counts its passes
  await test('H42 per-batch preview: red option, warning, null by default, floor(steps/N) extra passes', async () => {
    await nav('#/new');
    await page.click('#advanced summary');
    const red = (sel) => page.evaluate((q) => getComputedStyle(document.querySelector(q)).color, sel);
    assert(await page.isHidden('#preview-warning') && await page.isHidden('#f-preview-batches'), 'the warning or N shows in epoch mode');
    assert((await red('#f-preview option[value="batch"]')) === 'rgb(163, 58, 0)', `batch option colour ${await red('#f-preview option[value="batch"]')}`);
    await page.selectOption('#f-preview', 'batch');
    await page.locator('#preview-warning').waitFor();
    assert((await page.getAttribute('#preview-warning', 'role')) === 'alert', 'the warning is not an alert');
    assert(/slows training/.test(await text('#preview-warning')), `warning text: ${await text('#preview-warning')}`);
    assert((await red('#f-preview')) === 'rgb(163, 58, 0)' && (await red('label[for="f-preview-batches"]')) === 'rgb(163, 58, 0)',
      'the chosen batch mode and its field are not red');
    assert((await page.inputValue('#f-preview-batches')) === '100', 'the default interval is not 100');
    await fillTrainPa();
    await page.fill('#f-preview-batches', '3');
    await page.fill('#f-advanced', 'threads = 1');
    const [req] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/api/v1/runs') && r.method() === 'POST'),
      page.click('#f-submit'),
    ]);
    assert(req.postDataJSON().options.preview_every_batches === 3, `options ${JSON.stringify(req.postDataJSON().options)}`);
    await page.waitForFunction(() => /^#\/run\/r/.test(location.hash) && window.__dpd.ready);
    const id = await page.evaluate(() => location.hash.split('/')[2]);
    await page.locator('#run-status .chip[data-status="succeeded"]').waitFor({ timeout: 60000 });
    const evs = (await apiGet(`/runs/${id}/events?limit=5000`)).events;
    const steps = Math.max(...evs.filter((e) => e.type === 'progress').map((e) => e.data.steps));
    const live = await apiGet(`/runs/${id}/live`);
    assert(live.policy.mode === 'batch' && live.policy.every_batches === 3, `policy ${JSON.stringify(live.policy)}`);
    assert(live.previews === Math.floor(2 * steps / 3), `${live.previews} previews for ${2 * steps} steps every 3`);
    const plain = await apiGet(`/runs/${ids.real}/live`); // the form's first run: epoch mode
    assert(plain.policy.mode === 'epoch' && plain.policy.every_batches === null && plain.previews === 0, `epoch mode: ${JSON.stringify(plain.policy)} ${plain.previews}`);
    // a fake run in batch mode: the run page says so, in red, while previews arrive
    const run = await fake({ epochs: 3, epoch_ms: 1200, preview_every_batches: 2 });
    await nav(`#/run/${run.id}`);
    await page.waitForFunction(() => /Preview at step/.test(document.querySelector('#live-note').textContent), null, { timeout: 20000 });
    assert((await red('#live-note')) === 'rgb(163, 58, 0)', 'the preview note is not red');
    await page.locator('#run-status .chip[data-status="succeeded"]').waitFor({ timeout: 30000 });
    const fl = await apiGet(`/runs/${run.id}/live`);
    assert(fl.previews === 6, `fake: ${fl.previews} previews for 12 steps every 2`);
    await page.screenshot({ path: path.join(SHOTS, 'run-preview-1366.png'), fullPage: true });
    // the Result page during a probe: its cards are the probe's own figures, labelled with its step
    // (the fake's probe of step k has NMSE -10 - k/4), not the last epoch's
    const slow = await fake({ epochs: 1, epoch_ms: 8000, preview_every_batches: 2 });
    for (let t = 0; t < 200 && (await apiGet(`/runs/${slow.id}/live`).catch(() => ({}))).source !== 'batch_probe'; t++) await page.waitForTimeout(50);
    await nav(`#/result/${slow.id}`);
    const sub = await text('[data-metric="val.NMSE"] .sub');
    const step = Number((/^probe \(step (\d+)\)$/.exec(sub) || [])[1]);
    assert(step === 2, `the probe card's label: ${sub}`);
    const shown = await text('[data-metric="val.NMSE"] .value');
    assert(parseFloat(shown) === -10 - step / 4, `the probe card's NMSE ${shown}, want ${-10 - step / 4}`);
    await apiPost(`/runs/${slow.id}/cancel`);
  });

  // H43: cancel and retry from the page
  await test('H43 cancel → Stopping… → Cancelled, then retry links to its parent', async () => {
    const run = await fake({ epochs: 40, epoch_ms: 400 });
    await nav(`#/run/${run.id}`);
    await page.locator('#run-status .chip[data-status="running"]').waitFor();
    await page.evaluate(() => {
      window.__chipSeen = [];
      const el = document.querySelector('#run-status');
      const rec = () => { const c = el.querySelector('.chip'); if (c) window.__chipSeen.push([Date.now(), c.textContent]); };
      new MutationObserver(rec).observe(el, { childList: true, subtree: true, characterData: true });
    });
    await page.click('#cancel-run');
    await page.locator('#confirm-cancel').waitFor();
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
    assert(focused === 'confirm-cancel', `the confirmation does not take the focus (${focused})`);
    const tClick = Date.now();
    await page.click('#confirm-cancel');
    await page.locator('#run-status .chip[data-status="cancelled"]').waitFor({ timeout: 10000 });
    const seen = await page.evaluate(() => window.__chipSeen);
    const stop = seen.find(([, t]) => t === 'Stopping…');
    assert(stop && stop[0] - tClick < 1000, `"Stopping…" not shown within 1 s: ${JSON.stringify(seen)}`);
    assert(seen[seen.length - 1][1] === 'Cancelled', 'the chip does not end "Cancelled"');
    assert((await apiGet(`/runs/${run.id}`)).status === 'cancelled', 'the API does not say cancelled');
    await page.click('#retry-run');
    await page.waitForFunction((id) => /^#\/run\/r/.test(location.hash) && !location.hash.includes(id) && window.__dpd.ready, run.id);
    const newId = await page.evaluate(() => location.hash.split('/')[2]);
    await page.locator('#parent-link').waitFor();
    assert((await text('#parent-link')) === run.id, 'the retry does not link its parent');
    const nr = await apiGet(`/runs/${newId}`);
    assert(nr.parent_id === run.id, `parent_id ${nr.parent_id}`);
    await apiPost(`/runs/${newId}/cancel`);
    await waitRun(newId, terminal);
  });

  await test('Runs page: statuses, queue, cancel and retry buttons, selection for compare', async () => {
    const q1 = await fake({ epochs: 20, epoch_ms: 500 });
    const q2 = await fake({ epochs: 2, epoch_ms: 100 });
    await nav('#/runs');
    await page.locator(`a[href="#/run/${q2.id}"]`).waitFor();
    const rowText = await page.locator('#runs-list tr', { hasText: q2.id }).innerText();
    assert(/position/.test(rowText), `no queue position for the queued run: ${rowText}`);
    await page.locator(`[data-key="cancel-${q2.id}"]`).click();
    await page.locator(`[data-key="confirm-${q2.id}"]`).click();
    await waitRun(q2.id, (r) => r.status === 'cancelled', 5000);
    await page.locator(`[data-key="cancel-${q1.id}"]`).click();
    await page.locator(`[data-key="confirm-${q1.id}"]`).click();
    await waitRun(q1.id, terminal, 10000);
    await page.locator(`[data-key="retry-${q2.id}"]`).waitFor();
    await page.check(`[data-key="sel-${ids.a}"]`);
    await page.check(`[data-key="sel-${ids.b}"]`);
    await page.click('#compare-selected');
    await page.waitForFunction(() => location.hash.startsWith('#/compare') && window.__dpd.ready);
  });

  await test('Compare: metrics table, overlaid curves equal the API, CSV export', async () => {
    assert(ids.a && ids.b, 'no runs to compare');
    await nav(`#/compare?ids=${ids.a},${ids.b}`);
    assert(await page.locator("#compare-table thead th").count() === 3, "one column per run");
    const d = await chartData('compare:val:NMSE');
    const ha = (await apiGet(`/runs/${ids.a}/history`)).epochs, hb = (await apiGet(`/runs/${ids.b}/history`)).epochs;
    const xs = [...new Set([...ha, ...hb].map((r) => r.epoch))].sort((x, y) => x - y);
    sameSeries(d[0], xs, 'compare x');
    sameSeries(d[1], xs.map((x) => { const r = ha.find((k) => k.epoch === x); return r ? r.val.NMSE : null; }), 'run A');
    sameSeries(d[2], xs.map((x) => { const r = hb.find((k) => k.epoch === x); return r ? r.val.NMSE : null; }), 'run B');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-metrics')]);
    const csv = fs.readFileSync(await dl.path(), 'utf8').trim().split('\n');
    assert(csv.length === 3 && csv[0].startsWith('run,') && csv[1].startsWith(ids.a) && csv[2].startsWith(ids.b), `CSV ${csv.join(' / ')}`);
    const col = csv[0].split(',').indexOf('test_NMSE');
    assert(close(Number(csv[1].split(',')[col]), ha[ha.length - 1].test.NMSE), 'CSV value');
  });

  await test('Status page: version, slots, providers, settings', async () => {
    await nav('#/status');
    const sys = await apiGet('/system/status');
    await page.locator('#status-system dl').waitFor();
    assert((await text('#status-system')).includes(sys.version), 'no version');
    assert((await text('#status-providers')).includes('cpu'), 'no cpu provider');
  });

  await test('Keyboard: the pages are reached with Tab and Enter, focus is visible', async () => {
    await nav('#/runs');
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    const a = await page.evaluate(() => ({ text: document.activeElement.textContent, outline: getComputedStyle(document.activeElement).outlineStyle }));
    assert(a.text === 'New run', `second Tab stop is "${a.text}"`);
    assert(a.outline !== 'none', 'no visible focus outline');
    const n = await page.evaluate(() => window.__dpd.navs);
    await page.keyboard.press('Enter');
    await page.waitForFunction((k) => window.__dpd.navs > k && window.__dpd.ready && location.hash === '#/new', n);
  });

  // H44: no horizontal overflow at both sizes; screenshots of every page
  await test('H44 no horizontal overflow at 1366×768 and 390×844; screenshots', async () => {
    const pages = [['new', '#/new'], ['runs', '#/runs'], ['run', `#/run/${ids.a}`], ['result', `#/result/${ids.a}`],
      ['compare', `#/compare?ids=${ids.a},${ids.b}`], ['status', '#/status']];
    const bad = [];
    for (const [w, hgt] of [[1366, 768], [390, 844]]) {
      await page.setViewportSize({ width: w, height: hgt });
      for (const [name, hash] of pages) {
        await nav(hash);
        if (name === 'run') await page.waitForFunction(() => document.querySelector('#stream-chip').dataset.state === 'ended');
        await sleep(150); // the charts follow their boxes' new width
        const o = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, iw: window.innerWidth }));
        if (o.sw > o.iw) bad.push(`${name} at ${w}: scrollWidth ${o.sw} > ${o.iw}`);
        await page.screenshot({ path: path.join(SHOTS, `${name}-${w}x${hgt}.png`), fullPage: true });
      }
    }
    assert(!bad.length, bad.join('; '));
  });

  await test('no console errors over the whole session', async () => {
    assert(!consoleErrors.length, consoleErrors.join(' | '));
  });
} finally {
  await browser.close().catch(() => {});
  proxy.close();
  server.kill('SIGTERM');
  await new Promise((r) => { server.on('exit', r); setTimeout(r, 5000); });
  fs.rmSync(tmp, { recursive: true, force: true });
}
log(`ui: ${((Date.now() - t0) / 1000).toFixed(1)} s, screenshots in ${SHOTS}`);
log(`RESULT ui ${passed} ${failed} ${skipped}`);
process.exit(failed ? 1 : 0);
