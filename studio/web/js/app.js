// dpd studio: the hash router, the sign-in gate and the top bar. Pages live in pages/*.js; each
// is an async function (ctx) that fills ctx.main and registers what to stop with ctx.onCleanup.
import * as api from './api.js';
import { h, put, clear, banner, errorBanner } from './ui.js';
import newPage from './pages/new.js';
import runsPage from './pages/runs.js';
import runPage from './pages/run.js';
import resultPage from './pages/result.js';
import comparePage from './pages/compare.js';
import statusPage from './pages/status.js';

const PAGES = {
  new: { render: newPage, nav: 'new', title: 'New run' },
  runs: { render: runsPage, nav: 'runs', title: 'Runs' },
  run: { render: runPage, nav: 'runs', title: 'Run' },
  result: { render: resultPage, nav: 'runs', title: 'Result' },
  compare: { render: comparePage, nav: 'compare', title: 'Compare' },
  status: { render: statusPage, nav: 'status', title: 'Status' },
};

const dpd = (window.__dpd ||= {});
dpd.charts ||= {};
dpd.navs = 0;
let cleanups = [];
let navId = 0;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { name: PAGES[parts[0]] ? parts[0] : 'runs', params: parts.slice(1), query: new URLSearchParams(query || '') };
}

async function route(focus) {
  const id = ++navId;
  for (const fn of cleanups.splice(0)) { try { fn(); } catch (e) { console.warn(e); } }
  const { name, params, query } = parseHash();
  const page = PAGES[name];
  const main = document.getElementById('main');
  clear(main);
  dpd.ready = false;
  dpd.page = name;
  for (const a of document.querySelectorAll('.nav a')) {
    if (a.dataset.page === page.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${page.title}${params[0] ? ' ' + params[0] : ''} · dpd studio`;
  const ctx = {
    main, params, query,
    alive: () => id === navId,
    onCleanup: (fn) => { if (id === navId) cleanups.push(fn); else fn(); },
    go: (hash) => { location.hash = hash; },
  };
  try {
    await page.render(ctx);
  } catch (e) {
    if (id === navId) main.append(errorBanner(e));
  }
  if (id === navId) {
    dpd.ready = true;
    dpd.navs++;
    if (focus) main.focus({ preventScroll: true });
  }
}

async function topStatus() {
  const el = document.getElementById('top-status');
  try {
    const s = await api.get('/system/status');
    const r = s.runs || {};
    el.textContent = `${r.running || 0} running · ${r.queued || 0} queued · slots ${s.slots_busy}/${s.slots}`;
  } catch (e) {
    el.textContent = 'server unreachable';
  }
}

function signInPage(main, why) {
  clear(main);
  const input = h('input', { id: 'signin-token', type: 'text', autocomplete: 'off', spellcheck: 'false', size: 40,
    'aria-describedby': 'signin-help' });
  const msg = h('div');
  const form = h('form', { class: 'card', onsubmit: async (ev) => {
    ev.preventDefault();
    clear(msg);
    let t = input.value.trim();
    const m = /[?&]token=([^&#\s]+)/.exec(t);
    if (m) t = decodeURIComponent(m[1]);
    if (!t) return;
    try {
      await api.signIn(t);
      input.value = '';
      start();
    } catch (e) { msg.append(errorBanner(e)); }
  } },
  h('label', { for: 'signin-token', text: 'Sign-in link or token' }),
  h('p', { id: 'signin-help', class: 'muted', text: 'dpd serve prints "sign in (once, within 10 minutes): http://…/api/v1/session/bootstrap?token=…". Open that link in this browser, or paste it here. At any later time, paste the token in the file api-token of the studio\'s root (dpd serve --root ROOT).' }),
  h('div', { class: 'row' }, input, h('button', { class: 'primary', type: 'submit', text: 'Sign in' })),
  msg);
  put(main, h('h1', { text: 'Sign in to dpd studio' }), why ? banner('warn', why) : null, form);
}

let started = false;
async function start() {
  const main = document.getElementById('main');
  let s;
  try {
    s = await api.session();
  } catch (e) {
    clear(main).append(errorBanner(e));
    return;
  }
  if (!s) { signInPage(main); return; }
  if (!started) {
    started = true;
    window.addEventListener('hashchange', () => route(true));
    setInterval(topStatus, 10000);
  }
  topStatus();
  route(false);
}

api.setUnauthorizedHandler(() => {
  for (const fn of cleanups.splice(0)) { try { fn(); } catch (e) { /* ignore */ } }
  navId++;
  signInPage(document.getElementById('main'), 'Your session is no longer valid (a newer sign-in, or the server restarted?). Sign in again: paste the token in ROOT/api-token.');
});

start();
