// DOM helpers and formatting. Pages are built with createElement only: no innerHTML, no inline
// style attributes (the CSP forbids them), so every string from the server lands as text.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden') el[k] = !!v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Element.append with the nulls and arrays of h() (the native one writes "null").
export function put(el, ...children) { append(el, children); return el; }

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

// v with d decimals as C's printf("%.*f") writes it, the CLI's and dpd plot's figures: the exact
// binary value rounded, an exact tie to even. toFixed takes a tie away from zero (-41.25 to one
// decimal: "-41.3", where C writes "-41.2"). A tie is a value whose exact decimal expansion is a 5
// and then zeros past the d-th decimal (60 more digits hold any double of magnitude 2^-8 or more;
// a tie is at least 5e-(d + 1)).
export function fixedC(v, d) {
  const s = v.toFixed(d);
  const exact = Math.abs(v).toFixed(Math.min(100, d + 60)), dot = exact.indexOf('.');
  if (!/^50*$/.test(exact.slice(dot + 1 + d))) return s;
  const kept = exact.slice(0, d ? dot + 1 + d : dot);
  return (kept.charCodeAt(kept.length - 1) - 48) % 2 ? s : (v < 0 ? '-' : '') + kept; /* odd: toFixed's is the even one */
}

export function fmtNum(v, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (typeof v !== 'number') return String(v);
  if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(2);
  return fixedC(v, digits);
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}

export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  // the browser's local time, written as ISO 8601 does (never 12/7/26: which is the month?)
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtDuration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);
export const isTerminal = (run) => TERMINAL.has(run.status);

const LABELS = {
  queued: 'Queued', running: 'Running', cancel_requested: 'Stopping…', succeeded: 'Succeeded',
  failed: 'Failed', cancelled: 'Cancelled', interrupted: 'Interrupted',
};

export function statusLabel(run) {
  if (run.status === 'running' && run.heartbeat_stale) return 'Running · no heartbeat';
  return LABELS[run.status] || run.status;
}

export function statusChip(run) {
  const stale = run.status === 'running' && run.heartbeat_stale;
  const chip = h('span', { class: `chip ${stale ? 'stale' : run.status}`, 'data-status': run.status, text: statusLabel(run) });
  if (run.reason_code && isTerminal(run)) chip.title = `${run.reason_code}${run.reason ? ': ' + run.reason : ''}`;
  return chip;
}

export function banner(kind, ...children) {
  return h('div', { class: `banner ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

export function errorBanner(err) {
  const parts = [h('strong', { text: err.code ? `${err.code}: ` : 'Error: ' }), err.message || String(err)];
  if (err.field) parts.push(h('span', { class: 'muted', text: ` (field: ${err.field})` }));
  if (err.hint) parts.push(h('div', { class: 'muted', text: err.hint }));
  return banner('error', ...parts);
}

export function kv(pairs) {
  const dl = h('dl', { class: 'kv' });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(h('dt', { text: k }), h('dd', null, v === null ? '—' : v));
  }
  return dl;
}

export function runModel(run) {
  const o = run.options || {};
  if (run.verb === 'fit-ls') return `${o.kind || 'mp'} (least squares)`;
  if (run.verb === 'fake') return 'fake';
  return `${o.model || 'gru'}${o.hidden ? ' H' + o.hidden : ''}`;
}

// A DPD run (its plot data have the PA model's and the capture's series without DPD beside it).
export const isDpdRun = (run) => run.verb === 'train-dpd' || (run.verb === 'fit-ls' && !!run.options && run.options.target === 'dpd');

export function shortId(id) { return id; }

// A table that becomes stacked cards on a phone: each cell carries its column label.
export function stackTable(columns, rows, caption) {
  const table = h('table', { class: 'stack' });
  if (caption) table.append(h('caption', { class: 'muted', text: caption }));
  table.append(h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null, text: c.label })))));
  const tb = h('tbody');
  for (const r of rows) {
    tb.append(h('tr', null, columns.map((c, i) => h('td', { 'data-label': c.label, class: c.num ? 'num' : null }, r[i]))));
  }
  table.append(tb);
  return table;
}

export function download(name, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, class: 'hidden' });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(url); a.remove(); }, 1000);
}
