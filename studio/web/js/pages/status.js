// Status: the service (version, uptime, slots, runs by state), the execution providers and the
// settings (read only).
import * as api from '../api.js';
import { h, clear, kv, fmtDuration, errorBanner, banner, stackTable } from '../ui.js';

export default async function statusPage(ctx) {
  const sys = h('div', { id: 'status-system' });
  const prov = h('div', { id: 'status-providers' });
  const set = h('div', { id: 'status-settings' });
  ctx.main.append(h('h1', { text: 'Status' }),
    h('section', { class: 'card' }, h('h2', { text: 'Service' }), sys),
    h('section', { class: 'card' }, h('h2', { text: 'Execution providers' }), prov),
    h('section', { class: 'card' }, h('h2', { text: 'Settings' }), set,
      h('p', { class: 'muted', text: 'Read only here; change them with dpd config set KEY VALUE (dpd config show lists them).' })));

  async function loadSystem() {
    try {
      const s = await api.get('/system/status');
      if (!ctx.alive()) return;
      const states = Object.entries(s.runs || {});
      clear(sys).append(
        kv([['version', s.version], ['uptime', fmtDuration(s.uptime_s)], ['slots busy', `${s.slots_busy} of ${s.slots}`]]),
        h('h3', { text: 'Runs by state' }),
        stackTable([{ label: 'state' }, { label: 'runs', num: true }], states.map(([k, v]) => [k.replace('_', ' '), String(v)])));
    } catch (e) { clear(sys).append(errorBanner(e)); }
  }

  async function loadOnce() {
    try {
      const p = await api.get('/providers');
      if (!ctx.alive()) return;
      const rows = p.providers.map((x) => [x.name, x.usable ? '✔ usable' : '✖ not usable', String(x.score), x.why || '—',
        (x.devices || []).map((d) => `${d.name}${d.arch ? ' (' + d.arch + ')' : ''}`).join('; ') || '—']);
      clear(prov);
      if (p.restart_needed) prov.append(banner('warn', `Restart the studio: ${p.restart_why}`));
      prov.append(stackTable(['provider', 'usable', 'score', 'why', 'devices'].map((label) => ({ label })), rows));
    } catch (e) { clear(prov).append(errorBanner(e)); }
    try {
      const s = await api.get('/settings');
      if (!ctx.alive()) return;
      clear(set).append(kv(Object.entries(s).map(([k, v]) => [k.replace('_', ' '), String(v)])));
    } catch (e) { clear(set).append(errorBanner(e)); }
  }

  await Promise.all([loadSystem(), loadOnce()]);
  const t = setInterval(loadSystem, 5000);
  ctx.onCleanup(() => clearInterval(t));
}
