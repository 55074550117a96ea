// Runs: every run, newest first, with its status, queue position, progress, cancel and retry;
// tick 2–8 runs to compare them.
import * as api from '../api.js';
import { h, clear, statusChip, fmtTime, runModel, isTerminal, errorBanner, stackTable } from '../ui.js';

const STATUSES = ['', 'queued', 'running', 'cancel_requested', 'succeeded', 'failed', 'cancelled', 'interrupted'];

export default async function runsPage(ctx) {
  const selected = new Set();
  const filter = h('select', { id: 'runs-filter', onchange: () => load() },
    STATUSES.map((s) => h('option', { value: s, text: s ? s.replace('_', ' ') : 'all' })));
  const compareBtn = h('button', { id: 'compare-selected', type: 'button', disabled: true,
    onclick: () => ctx.go(`#/compare?ids=${[...selected].join(',')}`) }, 'Compare selected');
  const msg = h('div', { 'aria-live': 'polite' });
  const list = h('div', { id: 'runs-list' });
  const count = h('span', { class: 'muted' });
  ctx.main.append(
    h('h1', { text: 'Runs' }),
    h('div', { class: 'actions' },
      h('label', { for: 'runs-filter', text: 'Status' }), filter,
      h('a', { class: 'button', href: '#/new', text: 'New run' }),
      compareBtn, count),
    msg, list);

  let timer = null, lastJson = '';
  ctx.onCleanup(() => { lastData = null; });
  ctx.onCleanup(() => clearTimeout(timer));

  function updateCompare() {
    compareBtn.disabled = selected.size < 2 || selected.size > 8;
    compareBtn.textContent = `Compare selected (${selected.size})`;
  }

  async function act(fn) {
    clear(msg);
    try { await fn(); } catch (e) { msg.append(errorBanner(e)); }
    load(true);
  }

  const confirming = new Set(); // runs whose cancel waits for its confirmation (kept across refreshes)
  function focusKey(key) {
    const el = list.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (el) el.focus();
  }

  function actions(run) {
    const cell = h('div', { class: 'actions' });
    if (!isTerminal(run) && run.status !== 'cancel_requested') {
      if (confirming.has(run.id)) {
        cell.append(h('span', { class: 'confirm' }, 'Stop this run? ',
          h('button', { type: 'button', class: 'danger small', 'data-key': `confirm-${run.id}`, text: 'Stop it',
            onclick: () => { confirming.delete(run.id); act(() => api.post(`/runs/${run.id}/cancel`)); } }), ' ',
          h('button', { type: 'button', class: 'small', 'data-key': `keep-${run.id}`, text: 'Keep',
            onclick: () => { confirming.delete(run.id); render(); focusKey(`cancel-${run.id}`); } })));
      } else {
        cell.append(h('button', { type: 'button', class: 'danger small', 'data-action': 'cancel', 'data-key': `cancel-${run.id}`,
          'aria-label': `Cancel run ${run.id}`, text: 'Cancel',
          onclick: () => { confirming.add(run.id); render(); focusKey(`confirm-${run.id}`); } }));
      }
    }
    if (isTerminal(run) && !(run.options || {}).imported_from) { // an imported CLI run is not run again here (409)
      cell.append(h('button', { type: 'button', class: 'small', 'data-action': 'retry', 'data-key': `retry-${run.id}`,
        'aria-label': `Run ${run.id} again`, text: 'Retry',
        onclick: () => act(async () => { const r = await api.post(`/runs/${run.id}/retry`); ctx.go(`#/run/${r.id}`); }) }));
    }
    return cell;
  }

  function progress(run) {
    const p = run.progress || {};
    if (run.status === 'queued') return h('span', { class: 'muted', text: run.wait_reason || 'waiting' });
    if (!p.epochs) return '—';
    return `epoch ${p.epoch}/${p.epochs}`;
  }

  async function load(force) {
    clearTimeout(timer);
    let data;
    try {
      const st = filter.value;
      data = await api.get(`/runs?limit=200${st ? '&status=' + st : ''}`);
    } catch (e) {
      clear(msg).append(errorBanner(e));
      timer = setTimeout(load, 5000);
      return;
    }
    if (!ctx.alive()) return;
    const json = JSON.stringify(data);
    const active = data.runs.some((r) => !isTerminal(r));
    timer = setTimeout(load, active ? 2000 : 10000);
    if (json === lastJson && !force) return;
    lastJson = json;
    lastData = data;
    render();
  }

  let lastData = null;
  function render() {
    const data = lastData;
    if (!data) return;
    count.textContent = `${data.total} run${data.total === 1 ? '' : 's'}`;
    const focusKey = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
    const rows = data.runs.map((run) => {
      const box = h('input', { type: 'checkbox', 'data-key': `sel-${run.id}`, 'aria-label': `Select ${run.id} for comparison`,
        checked: selected.has(run.id),
        onchange: (ev) => { if (ev.target.checked) selected.add(run.id); else selected.delete(run.id); updateCompare(); } });
      return [
        box,
        h('a', { class: 'idlink', href: `#/run/${run.id}`, 'data-key': `link-${run.id}`, text: run.id }),
        h('span', null, statusChip(run), run.parent_id ? h('span', { class: 'muted', text: ` retry of ${run.parent_id}` }) : null),
        run.verb, run.dataset, runModel(run), progress(run), fmtTime(run.created_at), actions(run),
      ];
    });
    const cols = ['Compare', 'Run', 'Status', 'Task', 'Dataset', 'Model', 'Progress', 'Submitted', 'Actions'].map((label) => ({ label }));
    clear(list);
    if (!rows.length) list.append(h('p', { class: 'muted' }, 'No runs yet. ', h('a', { href: '#/new', text: 'Start one.' })));
    else list.append(stackTable(cols, rows));
    if (focusKey) {
      const el = list.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
      if (el) el.focus();
    }
    updateCompare();
  }

  await load();
}
