// The studio's JSON API (docs/studio.md) with the session cookie: GETs as they are, POSTs with
// the X-CSRF-Token of GET /api/v1/session. Errors become ApiError with the server's code,
// message, field and hint.

let csrf = null;
let onUnauthorized = null;

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || (status ? `http_${status}` : 'network');
    this.field = e.field || null;
    this.hint = e.hint || null;
  }
}

export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

async function parse(res) {
  const type = res.headers.get('Content-Type') || '';
  const body = type.includes('json') ? await res.json().catch(() => null) : null;
  if (!res.ok) {
    if (res.status === 401 && onUnauthorized) onUnauthorized();
    throw new ApiError(res.status, body);
  }
  return body;
}

export async function session() {
  const res = await fetch('/api/v1/session', { credentials: 'same-origin' });
  if (res.status === 401) return null;
  const j = await parse(res);
  csrf = j.csrf || null;
  return j;
}

export async function signIn(token) {
  const res = await fetch('/api/v1/session/bootstrap', {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }),
  });
  const j = await parse(res);
  csrf = j.csrf || null;
  return j;
}

export async function get(path, { signal } = {}) {
  const res = await fetch(`/api/v1${path}`, { credentials: 'same-origin', signal });
  return parse(res);
}

// An optional part of a run (live, plots, results, history): null when the run object says it
// does not exist yet (run.available), so nothing is asked for in vain; a 404 not_available
// (the part went away meanwhile) is null too.
export async function part(run, name, opts) {
  if (!run.available || !run.available[name]) return null;
  try { return await get(`/runs/${encodeURIComponent(run.id)}/${name}`, opts); } catch (e) {
    if (e.status === 404 && e.code === 'not_available') return null;
    throw e;
  }
}

export async function post(path, body, { signal } = {}) {
  const res = await fetch(`/api/v1${path}`, {
    method: 'POST', credentials: 'same-origin', signal,
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf || '' },
    body: JSON.stringify(body === undefined ? {} : body),
  });
  return parse(res);
}

export const artifactUrl = (runId, artId) => `/api/v1/runs/${encodeURIComponent(runId)}/artifacts/${encodeURIComponent(artId)}`;
