// A run's events, live: the SSE route read with fetch + ReadableStream (so the session cookie
// goes along), resumed after a drop with Last-Event-ID = the last sequence number seen, and
// polling GET /events?after=N when the stream cannot be read. Every event is delivered once, in
// sequence order: anything at or below the last seq is dropped (a replay after a reconnect).
//
// States: connecting, live, reconnecting (the connection dropped; retrying with backoff),
// polling (the stream is unusable, the event pages are read every 2 s), ended (the run is
// terminal and every event was delivered).

const WATCHDOG_MS = 40000; // the server sends ": keepalive" after 15 s of silence
const POLL_MS = 2000;

export class RunFeed {
  constructor(runId, { after = 0, onEvents, onState }) {
    this.runId = runId;
    this.lastSeq = after;
    this.onEvents = onEvents;
    this.onState = onState;
    this.state = null;
    this.stopped = false;
    this.ended = false;
    this.ctrl = null;
    this.failures = 0;          // stream attempts in a row that could not open
    this.lastContact = null;    // Date of the last byte from the server
    this.disconnectedSince = null;
    this.wake = null;
  }

  setState(s, info) {
    if (this.state === s && !info) return;
    this.state = s;
    if (s === 'live' || s === 'polling' || s === 'ended') this.disconnectedSince = null;
    else if (s === 'reconnecting' && !this.disconnectedSince) this.disconnectedSince = new Date();
    const log = (window.__dpd ||= {}).streamLog ||= [];
    log.push({ run: this.runId, state: s, seq: this.lastSeq, t: Date.now() });
    if (this.onState) this.onState(s, this);
  }

  start() { this.loop(); return this; }

  stop() {
    this.stopped = true;
    if (this.ctrl) this.ctrl.abort();
    if (this.wake) this.wake();
  }

  // Retry now (the banner's button).
  retryNow() { if (this.wake) this.wake(); }

  sleep(ms) {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() { clearTimeout(t); resolve(); }
      this.wake = done;
    });
  }

  deliver(list) {
    const fresh = [];
    for (const ev of list) {
      if (!ev || !Number.isSafeInteger(ev.seq) || ev.seq <= this.lastSeq) continue;
      if (typeof ev.type !== 'string' || typeof ev.data !== 'object') continue;
      this.lastSeq = ev.seq;
      fresh.push(ev);
    }
    if (fresh.length && this.onEvents) this.onEvents(fresh);
  }

  async loop() {
    let mode = typeof ReadableStream === 'undefined' ? 'poll' : 'stream';
    let streamBad = 0; // stream attempts in a row that failed while the plain API answered
    let polls = 0;
    this.setState('connecting');
    while (!this.stopped && !this.ended) {
      if (mode === 'stream') {
        let res;
        try {
          res = await this.streamOnce();
        } catch (e) {
          res = { error: e };
        }
        if (this.stopped || this.ended) break;
        if (res.unsupported) { mode = 'poll'; continue; }
        this.setState('reconnecting');
        if (res.opened) { // a drop after the stream was up: reconnect at once, from the last seq
          this.failures = 0;
          streamBad = 0;
          await this.sleep(300);
          continue;
        }
        this.failures++;
        // the stream cannot be opened: if the API answers, the stream is the problem; poll
        if (this.failures >= 2 && await this.pollOnce()) {
          if (this.ended) break;
          if (++streamBad >= 3) { mode = 'poll'; polls = 0; continue; }
          await this.sleep(1000);
          continue;
        }
        streamBad = 0;
        await this.sleep(Math.min(5000, 500 * 2 ** Math.min(this.failures, 4)));
      } else {
        const ok = await this.pollOnce();
        if (this.stopped || this.ended) break;
        this.setState(ok ? 'polling' : 'reconnecting');
        await this.sleep(ok ? POLL_MS : 3000);
        if (ok && ++polls % 15 === 0 && typeof ReadableStream !== 'undefined') { mode = 'stream'; streamBad = 2; }
      }
    }
    if (this.ended) this.setState('ended');
  }

  async pollOnce() {
    try {
      for (;;) {
        const res = await fetch(`/api/v1/runs/${encodeURIComponent(this.runId)}/events?after=${this.lastSeq}&limit=1000`,
          { credentials: 'same-origin' });
        if (!res.ok) return false;
        const page = await res.json();
        this.lastContact = new Date();
        this.deliver(page.events || []);
        if (page.terminal) { this.ended = true; return true; }
        if (!page.events || page.events.length < 1000) return true;
      }
    } catch (e) {
      return false;
    }
  }

  async streamOnce() {
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    const headers = {};
    if (this.lastSeq > 0) headers['Last-Event-ID'] = String(this.lastSeq);
    let watchdog = setTimeout(() => ctrl.abort(), WATCHDOG_MS);
    const pet = () => { clearTimeout(watchdog); watchdog = setTimeout(() => ctrl.abort(), WATCHDOG_MS); };
    let gotEvents = false, opened = false;
    try {
      const res = await fetch(`/api/v1/runs/${encodeURIComponent(this.runId)}/events/stream`,
        { credentials: 'same-origin', headers, signal: ctrl.signal, cache: 'no-store' });
      if (!res.ok || !res.body) return { unsupported: !res.body || res.status === 404 || res.status === 401 };
      opened = true;
      this.lastContact = new Date();
      this.setState('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pet();
        this.lastContact = new Date();
        buf += value;
        let m;
        while ((m = /\r?\n\r?\n/.exec(buf))) {
          const block = buf.slice(0, m.index);
          buf = buf.slice(m.index + m[0].length);
          const ev = parseBlock(block);
          if (!ev) continue;
          if (ev.event === 'end') { this.ended = true; break; }
          try {
            this.deliver([JSON.parse(ev.data)]);
            gotEvents = true;
          } catch (e) { /* a frame that is not JSON: skipped */ }
        }
        if (this.ended) { ctrl.abort(); break; }
      }
      return { gotEvents, opened };
    } catch (e) {
      return { error: e, gotEvents, opened };
    } finally {
      clearTimeout(watchdog);
      this.ctrl = null;
    }
  }
}

function parseBlock(block) {
  let event = 'message', data = [], id = null, any = false;
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(':')) continue;
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
    any = true;
  }
  return any ? { event, data: data.join('\n'), id } : null;
}
