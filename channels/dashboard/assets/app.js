// chio dashboard. No framework, no dependencies: everything here is served
// by chiod from its own binary. The approver's private key is a
// non-extractable WebCrypto key in IndexedDB; it signs in this page and is
// never sent anywhere.
'use strict';

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------
class APIError extends Error {
  constructor(status, code, message) {
    super(code ? `${code}: ${message}` : message);
    this.status = status; this.code = code;
  }
}

async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new APIError(0, 'unavailable', 'chiod cannot be reached (' + e.message + ')');
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!resp.ok) {
    if (data && data.error === SIGNED_OUT_EVERYWHERE) signedOutEverywhere(); // not awaited: it waits for sign-ins
    if (data && data.error) throw new APIError(resp.status, data.error, data.message || '');
    throw new APIError(resp.status, '', `HTTP ${resp.status}: ${text.slice(0, 200)}`);
  }
  return data;
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------
const state = {
  key: null,            // {privateKey, publicKey}
  me: null,             // {approver, display_name}
  offset: 0,            // server clock − browser clock, seconds
  pending: new Map(),   // approval_id → request
  resolved: new Set(),  // approval_ids the stream said were resolved
  cards: new Map(),     // approval_id → {el, ...}
  es: null,
  backoff: 0,           // ms before reconnecting a refused stream
  view: 'pending',
  focus: '',            // #request=… deep link
  email: '',            // #email=… link
  leaving: false,       // signing out: no sign-in but the sign-out's own
  signedOutAll: null,   // set when chiod said signed_out_everywhere (signedout.js)
  signingIn: new Set(), // the sign-ins under way (promises)
};

const $ = (id) => document.getElementById(id);
const now = () => Date.now() / 1000 + state.offset;

// el builds an element. Text it draws (text, string children, title and
// aria-label) goes through visible (visible.js): much of it comes from the
// agent; text and string children are drawn in stored order (shownNode). Values (value, data-*) are kept as they are: they are what is signed.
const PLAIN_TEXT_TAGS = new Set(['textarea', 'option', 'title', 'style', 'script']);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  const plain = PLAIN_TEXT_TAGS.has(tag); // their text is their value: no elements inside
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.append(plain ? visible(v) : shownNode(v));
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'title' || k === 'aria-label') e.setAttribute(k, visible(v));
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : plain ? visible(c) : shownNode(c));
  }
  return e;
}

function showError(msg) {
  const b = $('global-error');
  b.textContent = msg;
  b.hidden = !msg;
}

function showNotice(msg) {
  const b = $('stream-notice');
  b.textContent = msg;
  b.hidden = !msg;
}

function shortKey(k) {
  if (!k) return '';
  const h = k.replace(/^ed25519:/, '');
  return `ed25519:${h.slice(0, 8)}…${h.slice(-6)}`;
}

function fmtDuration(s) {
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  return `${m}:${String(sec).padStart(2, '0')}`;
}

function fmtTime(unixSec) {
  return new Date(unixSec * 1000).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

function parseJSON(raw) {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === 'string') { try { return JSON.parse(raw); } catch { return null; } }
  return raw;
}

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------
// challenge fetches a sign-in challenge and sets state.offset from it: a
// challenge expires 60 s after chiod issued it, so tokens are signed and
// deadlines counted on chiod's clock, not the browser's.
async function challenge() {
  const ch = await api('GET', '/v1/session/challenge');
  state.offset = (ch.expires_at - 60) - Date.now() / 1000;
  return ch;
}

// signIn starts a session. While the page signs out (state.leaving) only
// the sign-out's own sign-in (own) may: one under way when the sign-out
// began (the stream's, a lapsed request's) may be answered after chiod
// ended the session, and its fresh cookie would stay live in a browser
// that says it signed out. So such a one ends its session at once, and
// the sign-out waits for them all (state.signingIn) before it is done.
async function signIn(own) {
  if (state.leaving && !own) throw new APIError(0, 'signed_out', 'this page is signing out');
  const p = (async () => {
    const ch = await challenge();
    const pub = state.key.publicKey;
    const signature = await sign(SESSION_DOMAIN, { challenge: ch.challenge, public_key: pub });
    const me = await api('POST', '/v1/session', { public_key: pub, challenge: ch.challenge, signature });
    if (state.leaving && !own) {
      await api('DELETE', '/v1/session').catch(() => {});
      throw new APIError(0, 'signed_out', 'this page signed out');
    }
    state.me = me;
    return me;
  })();
  state.signingIn.add(p);
  try {
    return await p;
  } finally {
    state.signingIn.delete(p);
  }
}

// withSession retries once after signing in again when the session lapsed.
async function withSession(fn) {
  try {
    return await fn();
  } catch (e) {
    if (e.status === 401 && e.code !== SIGNED_OUT_EVERYWHERE && state.key) { await signIn(); return fn(); }
    throw e;
  }
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------
async function signToken(req, decision, extra) {
  const issued = Math.floor(now());
  const tok = {
    schema: TOKEN_DOMAIN,
    id: 'at-' + uuidv7(),
    approver: state.key.publicKey,
    subject: req.subject_id,
    governed_intent_hash: req.parameter_hash,
    request_id: req.approval_id,
    issued_at: issued,
    expires_at: issued + TOKEN_TTL,
    decision,
  };
  if (extra.note) tok.note = extra.note;
  if (extra.amended_arguments !== undefined) tok.amended_arguments = extra.amended_arguments;
  if (extra.answers !== undefined) tok.answers = extra.answers;
  const large = tokenRefusal(tok);
  if (large) throw new Error(large);
  tok.signature = await sign(TOKEN_DOMAIN, tok);
  return jcs(tok);
}

async function decide(req, decision, extra) {
  const token = await signToken(req, decision, extra);
  if (state.email) {
    return api('POST', '/email/a/' + encodeURIComponent(state.email), '{"token":' + token + '}');
  }
  return api('POST', '/approvals/' + encodeURIComponent(req.approval_id) + '/respond',
    '{"channel":"dashboard","token":' + token + '}');
}

// ---------------------------------------------------------------------------
// Live stream
// ---------------------------------------------------------------------------
function setLive(s) {
  const l = $('live');
  l.dataset.state = s;
  $('live-text').textContent = { live: 'live', connecting: 'connecting', down: 'reconnecting' }[s] || s;
}

function connect() {
  if (state.es) state.es.close();
  if (state.leaving || !state.key) return; // signed out meanwhile
  setLive('connecting');
  const es = new EventSource('/approvals/stream');
  state.es = es;
  es.onopen = () => {
    setLive('live'); showError(''); showNotice(''); state.backoff = 0;
    recheckPending().then(() => fetchFocused());
  };
  const onApproval = (ev) => {
    let e;
    try { e = JSON.parse(ev.data); } catch { return; }
    if (!e.approval) return;
    if (e.type === 'approval.resolved') {
      state.resolved.add(e.approval.approval_id);
      removeCard(e.approval.approval_id);
      scheduleHistory();
    } else upsert(e.approval);
  };
  for (const t of ['approval.requested', 'approval.escalated', 'approval.resolved']) es.addEventListener(t, onApproval);
  // A request resolves before its approved call is sent: History reads it
  // as "running" then, and again when the call ends (call.completed).
  es.addEventListener('call.completed', (ev) => {
    let e;
    try { e = JSON.parse(ev.data); } catch { return; }
    if (e.call && e.call.approval_request_id) scheduleHistory();
  });
  // chiod replays a bounded number of pending requests on connect; new ones
  // still arrive live.
  es.addEventListener('stream.truncated', (ev) => {
    let e;
    try { e = JSON.parse(ev.data); } catch { return; }
    showNotice(`Showing the oldest ${e.replayed} pending requests: more are waiting than the live view loads at once. ` +
      'Decide these and reload, or list every pending request with `chio approval list`.');
  });
  es.onerror = async () => {
    if (state.leaving) return;
    if (es.readyState !== EventSource.CLOSED) { setLive('down'); return; }
    // Closed for good: chiod refused the stream (401 after the session
    // lapsed, 429/503 when too many streams are open, 503 while chiod shuts
    // down). Say why, then sign in again and reconnect, backing off each
    // time.
    setLive('down');
    state.backoff = Math.min(30000, (state.backoff || 250) * 2);
    const why = await streamRefusal();
    if (why) showError(`The live stream was refused: ${why}. Retrying in ${Math.ceil(state.backoff / 1000)} s.`);
    try {
      await signIn();
      setTimeout(connect, state.backoff);
    } catch (e) {
      if (state.leaving) return;
      showError('Lost the live stream: ' + e.message);
      setTimeout(connect, Math.max(5000, state.backoff));
    }
  };
}

// recheckPending asks chiod about each request the page lists as pending
// when a stream opens. A stream replays only what is pending: a request
// resolved while no stream was open (a dropped connection, a refused
// stream, chiod restarting) sent its approval.resolved to no one, and its
// card stayed, Approve live, for good. One no longer pending (or unknown)
// leaves as if that event had arrived; a status that is not pending is
// final, so the answer cannot be stale. One at a time: were the session
// to lapse, concurrent retries would each sign in again (withSession),
// and past 16 sign-ins chiod ends the approver's sessions in other
// browsers.
async function recheckPending() {
  let removed = false;
  for (const id of Array.from(state.pending.keys())) {
    try {
      const view = await withSession(() => api('GET', '/approvals/' + encodeURIComponent(id)));
      if (view && view.status === 'pending') continue;
    } catch (e) {
      if (e.status !== 404) continue; // unknown for now: the next stream asks again
    }
    removeCard(id);
    removed = true;
  }
  if (removed) scheduleHistory();
}

// A link is anyone's to write, and fetchFocused's notices quote the id: only
// an approval id (approval.ValidID, "ar-") is taken, so a link's own text
// never reads as the page's words.
const APPROVAL_ID = /^ar-[A-Za-z0-9._:-]{1,125}$/;

// fetchFocused reads the request a #request= link names (Slack's "Review &
// sign"): a stream replays only the oldest pending requests, so that one
// may never arrive, and one decided meanwhile would show nothing at all.
// A pending one is drawn unless the stream drew it first or said it was
// resolved since (whatever it sends is as new as this answer, or newer).
async function fetchFocused() {
  const id = state.focus;
  if (!id || state.cards.has(id)) return;
  if (!APPROVAL_ID.test(id)) {
    state.focus = '';
    showNotice('The link names no approval request.');
    return;
  }
  let view;
  try {
    view = await withSession(() => api('GET', '/approvals/' + encodeURIComponent(id)));
  } catch (e) {
    if (state.focus === id) showNotice(`The linked request ${id} cannot be shown: ${e.message}`);
    return;
  }
  if (state.focus !== id || state.cards.has(id) || state.resolved.has(id)) return;
  if (view.status === 'pending') { upsert(view.request); return; }
  state.focus = '';
  showNotice(`The linked request ${id} is no longer pending: it is ${view.status}.`);
}

// streamRefusal asks chiod why it refused the live stream (EventSource
// does not say): the refusal's message, or '' for a session that lapsed
// (signing in again is the answer), a stream that would open now (the
// probe is cut at once) or a chiod that cannot be reached.
async function streamRefusal() {
  const ctl = new AbortController();
  try {
    const resp = await fetch('/approvals/stream', { credentials: 'same-origin', headers: { Accept: 'text/event-stream' }, signal: ctl.signal });
    if (resp.ok || resp.status === 401) return '';
    let data = null;
    try { data = await resp.json(); } catch { /* not JSON */ }
    return data && data.message ? `${data.message} (${resp.status})` : `HTTP ${resp.status}`;
  } catch {
    return '';
  } finally {
    ctl.abort();
  }
}

function switchView(v) {
  state.view = v;
  $('view-pending').hidden = v !== 'pending';
  $('view-history').hidden = v !== 'history';
  $('tab-pending').classList.toggle('active', v === 'pending');
  $('tab-history').classList.toggle('active', v === 'history');
  if (v === 'history') scheduleHistory();
}

// ---------------------------------------------------------------------------
// Email links: one request, read through the link, decided by POSTing the
// signed token to the link. No session needed.
// ---------------------------------------------------------------------------
async function startEmail() {
  $('view-pending').hidden = false;
  $('tabs').hidden = true;
  await challenge(); // no session here, but chiod's clock all the same
  const info = await api('GET', '/email/a/' + encodeURIComponent(state.email));
  const req = info.request;
  if (req.status !== 'pending') {
    showError(`This request is already ${req.status}.`);
    return;
  }
  upsert(req);
  const b = $('live');
  b.dataset.state = 'live';
  $('live-text').textContent = 'email link';
}

// ---------------------------------------------------------------------------
// Start-up
// ---------------------------------------------------------------------------
function showSetup() {
  $('setup').hidden = false;
  $('who').hidden = true;
  $('tabs').hidden = true;
  $('view-pending').hidden = true;
  $('view-history').hidden = true;
}

async function onKey(k) {
  state.key = k;
  state.leaving = false;
  state.signedOutAll = null;
  $('setup').hidden = true;
  $('registered').hidden = true;
  showError('');
  $('who').hidden = false;
  $('who-key').textContent = shortKey(k.publicKey);
  $('who-key').title = k.publicKey;
  $('who-name').textContent = '';
  if (state.email) {
    try { await startEmail(); } catch (e) { showError(e.message); }
    return;
  }
  try {
    const me = await signIn();
    $('who-name').textContent = me.display_name || 'Approver';
  } catch (e) {
    if (e.code === SIGNED_OUT_EVERYWHERE) return; // signedOutEverywhere says so
    showError('Sign-in refused — ' + e.message);
    $('my-pubkey').textContent = k.publicKey;
    $('registered').hidden = false;
    return;
  }
  $('tabs').hidden = false;
  switchView('pending');
  refreshCounts();
  connect();
}

async function main() {
  const h = new URLSearchParams(location.hash.slice(1));
  state.focus = h.get('request') || '';
  state.email = h.get('email') || '';
  if (!window.isSecureContext || !crypto.subtle) {
    showError('This page must be opened over HTTPS or on localhost: browsers only sign in a secure context.');
    return;
  }
  $('key-file').addEventListener('change', async (ev) => {
    const f = ev.target.files[0];
    if (!f) return;
    try { onKey(await importPem(await f.text())); } catch (e) { showError('Import failed: ' + e.message); }
    ev.target.value = '';
  });
  $('key-import').addEventListener('click', async () => {
    try { onKey(await importPem($('key-pem').value)); $('key-pem').value = ''; } catch (e) { showError('Import failed: ' + e.message); }
  });
  $('key-generate').addEventListener('click', async () => {
    try { onKey(await generateKey()); } catch (e) { showError('Could not generate a key: ' + e.message); }
  });
  // Sign out ends this browser's session in chiod and removes the key from
  // this browser, whatever chiod answers: on a shared computer the key
  // must go. A session already ended (401) is signed out; every session of
  // the key (DELETE /v1/sessions) is named by a live one, so a lapsed
  // session signs in again first. A sign-in under way ends its own session
  // (signIn), and the sign-out waits for it. A sign-out chiod was not
  // told of leaves sessions live there: the page says so instead of
  // reloading as if all were done.
  const forget = async (path, told) => {
    const all = path === '/v1/sessions';
    state.leaving = true;
    if (state.es) state.es.close();
    let failed = null;
    try {
      await api('DELETE', path);
    } catch (e) {
      try {
        if (!all || e.status !== 401 || e.code === SIGNED_OUT_EVERYWHERE || !state.key) throw e;
        await signIn(true);
        await api('DELETE', path);
      } catch (e2) {
        // Signed out everywhere already: signedOutEverywhere forgets the
        // key and says so.
        if (e2.code === SIGNED_OUT_EVERYWHERE) return;
        if (told && (all || e2.status !== 401)) failed = e2;
      }
    }
    while (state.signingIn.size) await Promise.allSettled(state.signingIn);
    await forgetKey();
    if (!failed) { location.reload(); return; }
    state.key = null;
    showSetup();
    showError('Your key is removed from this browser, but chiod did not end ' + (all ? 'your sessions' : 'this session') +
      ` (${failed.message}): ` + (all ? 'they stay live until they expire; import your key and press Sign out everywhere again.'
        : 'it stays live until it expires (12 h at most), or until Sign out everywhere.'));
  };
  $('signout').addEventListener('click', () => forget('/v1/session', true));
  // Every session of this approver, in every browser (DELETE /v1/sessions).
  $('signout-all').addEventListener('click', () => forget('/v1/sessions', true));
  // The key was refused at sign-in: no session to end.
  $('forget-key').addEventListener('click', () => forget('/v1/session', false));
  $('retry-signin').addEventListener('click', () => onKey(state.key));
  $('copy-key').addEventListener('click', () => navigator.clipboard && navigator.clipboard.writeText($('my-pubkey').textContent));
  holdCards($('cards'));
  $('tab-pending').addEventListener('click', () => switchView('pending'));
  $('tab-history').addEventListener('click', () => switchView('history'));
  setInterval(tick, 1000);

  let k = null;
  try { k = await loadKey(); } catch (e) { showError('IndexedDB is unavailable: ' + e.message); }
  if (k && k.privateKey) onKey(k); else showSetup();
}

main();
