// chio dashboard. No framework, no dependencies: everything here is served
// by chiod from its own binary. The approver's private key is a
// non-extractable WebCrypto key in IndexedDB; it signs in this page and is
// never sent anywhere.
'use strict';

const TOKEN_DOMAIN = 'chio.approval-token.v1';
const SESSION_DOMAIN = 'chio.session.v1';
const TOKEN_TTL = 600; // seconds; the kernel caps tokens at 3600

// ---------------------------------------------------------------------------
// RFC 8785 (JCS). Object members sorted by UTF-16 code units (what
// Array.prototype.sort does by default), strings and numbers written by
// JSON.stringify: ECMAScript's Number-to-String is exactly RFC 8785's number
// form, and JSON.stringify escapes exactly what RFC 8785 requires. That is
// sufficient for the objects signed here (tokens, session proofs), whose
// integers are far below 2^53; the server re-checks every byte it receives.
// ---------------------------------------------------------------------------
function jcs(v) {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('JCS: non-finite number');
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return '[' + v.map(jcs).join(',') + ']';
  if (typeof v === 'object') {
    const names = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return '{' + names.map((k) => JSON.stringify(k) + ':' + jcs(v[k])).join(',') + '}';
  }
  throw new Error('JCS: unsupported value');
}

const enc = new TextEncoder();
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

function signedMessage(domain, canonical) {
  const d = enc.encode(domain), c = enc.encode(canonical);
  const m = new Uint8Array(d.length + 1 + c.length);
  m.set(d, 0); m[d.length] = 0; m.set(c, d.length + 1);
  return m;
}

// UUIDv7: 48-bit unix ms, version 7, variant 10, random rest.
function uuidv7() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  let ms = Date.now();
  for (let i = 5; i >= 0; i--) { b[i] = ms % 256; ms = Math.floor(ms / 256); }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = hex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---------------------------------------------------------------------------
// Key storage: IndexedDB holds {privateKey: CryptoKey (non-extractable),
// publicKey: "ed25519:<hex>"}.
// ---------------------------------------------------------------------------
const DB_NAME = 'chio-dashboard', STORE = 'keys', SLOT = 'approver';

function db() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idb(mode, fn) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const tx = d.transaction(STORE, mode);
    const r = fn(tx.objectStore(STORE));
    tx.oncomplete = () => { d.close(); resolve(r && r.result); };
    tx.onerror = () => { d.close(); reject(tx.error); };
  });
}

const loadKey = () => idb('readonly', (s) => s.get(SLOT));
const saveKey = (k) => idb('readwrite', (s) => s.put(k, SLOT));
const forgetKey = () => idb('readwrite', (s) => s.delete(SLOT));

function pemToDer(pem) {
  const m = /-----BEGIN PRIVATE KEY-----([\s\S]*?)-----END PRIVATE KEY-----/.exec(pem);
  if (!m) throw new Error('not a PKCS#8 PEM file (expected "-----BEGIN PRIVATE KEY-----")');
  const bin = atob(m[1].replace(/\s+/g, ''));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function b64urlToHex(s) {
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return hex(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

// importPem reads the public key once through a throw-away extractable
// import (WebCrypto cannot derive it from a non-extractable key), then keeps
// only a non-extractable copy.
async function importPem(pem) {
  const der = pemToDer(pem);
  const alg = { name: 'Ed25519' };
  let tmp;
  try {
    tmp = await crypto.subtle.importKey('pkcs8', der, alg, true, ['sign']);
  } catch (e) {
    throw new Error('this file is not an Ed25519 PKCS#8 key (' + (e.message || e.name) + ')');
  }
  const jwk = await crypto.subtle.exportKey('jwk', tmp);
  const privateKey = await crypto.subtle.importKey('pkcs8', der, alg, false, ['sign']);
  const k = { privateKey, publicKey: 'ed25519:' + b64urlToHex(jwk.x), created: Date.now() };
  await saveKey(k);
  return k;
}

async function generateKey() {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const raw = await crypto.subtle.exportKey('raw', pair.publicKey);
  const k = { privateKey: pair.privateKey, publicKey: 'ed25519:' + hex(raw), created: Date.now(), generated: true };
  await saveKey(k);
  return k;
}

async function sign(domain, obj) {
  const sig = await crypto.subtle.sign({ name: 'Ed25519' }, state.key.privateKey, signedMessage(domain, jcs(obj)));
  return hex(sig);
}

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
  cards: new Map(),     // approval_id → {el, ...}
  es: null,
  backoff: 0,           // ms before reconnecting a refused stream
  view: 'pending',
  focus: '',            // #request=… deep link
  email: '',            // #email=… link
};

const $ = (id) => document.getElementById(id);
const now = () => Date.now() / 1000 + state.offset;

// el builds an element. Text it draws (text, string children, title and
// aria-label) goes through visible (visible.js): much of it comes from the
// agent. Values (value, data-*) are kept as they are: they are what is signed.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = visible(v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'title' || k === 'aria-label') e.setAttribute(k, visible(v));
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(visible(c)));
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
async function signIn() {
  const ch = await api('GET', '/v1/session/challenge');
  state.offset = (ch.expires_at - 60) - Date.now() / 1000;
  const pub = state.key.publicKey;
  const signature = await sign(SESSION_DOMAIN, { challenge: ch.challenge, public_key: pub });
  state.me = await api('POST', '/v1/session', { public_key: pub, challenge: ch.challenge, signature });
  return state.me;
}

// withSession retries once after signing in again when the session lapsed.
async function withSession(fn) {
  try {
    return await fn();
  } catch (e) {
    if (e.status === 401 && state.key) { await signIn(); return fn(); }
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
// Cards
// ---------------------------------------------------------------------------
const KIND_LABEL = { tool_call: 'Tool call', confirm: 'Confirm', question: 'Question' };

// Why a request asks a human, in words; the guard names stay in the title.
const TRIGGER_TEXT = {
  require_approval_above: 'the amount is at or above the approval threshold',
  require_approval_always: 'every call under this grant needs approval',
  require_approval_first_n: 'one of the agent\'s first calls under this grant',
  require_approval_for_actions: 'this kind of action needs approval',
};

function whyText(req) {
  const kind = req.kind || 'tool_call';
  return (req.triggered_by || []).map((t) => {
    if (t === 'hitl') return kind === 'confirm' ? 'the agent asks you to confirm' : 'the agent asks you';
    return TRIGGER_TEXT[t] || `the ${t} check asks for a person instead of denying`;
  }).join('; ');
}

// Who asked: the agent's name from its signed capability when it has one,
// the grant the call matched, and the key that identifies the agent (full
// key on hover).
function askedBy(req) {
  const who = req.subject_label
    ? el('span', {}, el('strong', { class: 'agent-label', text: req.subject_label }), ', holding grant ')
    : el('span', {}, 'an agent holding grant ');
  who.append(el('code', { class: 'grant', text: req.policy_id }));
  return el('span', { class: 'asked-by' }, who,
    el('code', { class: 'agent-key', title: `${req.subject_id}\ncapability ${req.capability_id || ''}`, text: shortKey(req.subject_id) }));
}

// What a confirm request shows besides its prompt (the summary): the
// agent's details, as a list when they are an object.
function confirmDetails(args) {
  const d = args && args.details;
  if (d === undefined || d === null) return null;
  if (typeof d !== 'object' || Array.isArray(d)) {
    return el('div', { class: 'confirm-details' }, el('pre', { class: 'mono', text: JSON.stringify(d, null, 2) }));
  }
  return el('dl', { class: 'confirm-details kv' }, Object.entries(d).flatMap(([k, v]) => [
    el('dt', { text: k }), el('dd', { class: typeof v === 'string' ? '' : 'mono', text: typeof v === 'string' ? v : JSON.stringify(v) }),
  ]));
}

function detail(label, value, cls) {
  if (value === undefined || value === null || value === '') return null;
  return el('div', { class: 'detail ' + (cls || '') }, el('dt', { text: label }), el('dd', {}, value));
}

function questionForm(req) {
  const qs = parseJSON(req.questions) || [];
  const form = el('div', { class: 'questions' });
  for (const q of qs) {
    const name = 'q-' + req.approval_id + '-' + q.id;
    const field = el('fieldset', { class: 'question', 'data-qid': q.id, 'data-type': q.type },
      el('legend', { text: q.text }));
    if (q.type === 'text') {
      field.append(el('textarea', { rows: 2, class: 'answer-text', 'aria-label': q.text }));
    } else {
      const type = q.type === 'multi' ? 'checkbox' : 'radio';
      for (const opt of q.options || []) {
        field.append(el('label', { class: 'choice' }, el('input', { type, name, value: opt }), el('span', { text: opt })));
      }
      if (q.allow_other) {
        const other = el('input', { type: 'text', class: 'answer-other', 'aria-label': 'Other answer' });
        field.append(el('label', { class: 'choice other' }, el('span', { text: 'Other:' }), other));
        if (type === 'radio') {
          // One answer: typing an Other answer clears the choice, and
          // picking a choice clears what was typed, so what is signed is
          // what the form shows.
          other.addEventListener('input', () => {
            if (other.value.trim()) field.querySelectorAll('input[type=radio]').forEach((r) => { r.checked = false; });
          });
          field.addEventListener('change', (ev) => { if (ev.target.type === 'radio' && ev.target.checked) other.value = ''; });
        }
      }
    }
    form.append(field);
  }
  return form;
}

function collectAnswers(card) {
  const answers = {};
  for (const f of card.querySelectorAll('fieldset.question')) {
    const id = f.dataset.qid, type = f.dataset.type;
    if (type === 'text') {
      answers[id] = f.querySelector('textarea').value.trim();
      if (!answers[id]) throw new Error(`answer "${f.querySelector('legend').textContent}"`);
      continue;
    }
    const picks = Array.from(f.querySelectorAll('input[type=radio]:checked, input[type=checkbox]:checked'), (i) => i.value);
    const other = f.querySelector('.answer-other');
    if (other && other.value.trim()) picks.push(other.value.trim());
    if (picks.length === 0) throw new Error(`answer "${f.querySelector('legend').textContent}"`);
    // A single answer is one pick: never sign one and drop the other.
    if (type !== 'multi' && picks.length > 1) throw new Error(`give one answer to "${f.querySelector('legend').textContent}": a choice or Other, not both`);
    answers[id] = type === 'multi' ? picks : picks[0];
  }
  return answers;
}

function renderCard(req) {
  const intent = parseJSON(req.governed_intent);
  const args = parseJSON(req.arguments);
  const approved = (req.votes || []).filter((v) => v.decision === 'approved').length;
  const kind = req.kind || 'tool_call';
  const canAmend = kind === 'tool_call' && req.arguments !== undefined && req.arguments !== null && (req.quorum || 1) <= 1;
  const trusted = !state.key || (req.trusted_approvers || []).includes(state.key.publicKey);
  const voted = state.key && (req.votes || []).some((v) => v.approver === state.key.publicKey);

  // The amount the arguments move (the kernel reads it where the tool says
  // it lives); the agent's declared max_amount only when the tool declares none.
  const amount = req.amount ? `${req.amount.units} ${req.amount.currency}`
    : intent && intent.max_amount ? `up to ${intent.max_amount.units} ${intent.max_amount.currency} (declared by the agent)` : '';
  const pips = el('span', { class: 'pips' });
  for (let i = 0; i < (req.quorum || 1); i++) pips.append(el('span', { class: 'pip' + (i < approved ? ' on' : '') }));

  const deadline = el('span', { class: 'countdown', 'data-deadline': req.expires_at });
  const bar = el('div', { class: 'deadline-bar' }, el('span', { 'data-deadline': req.expires_at, 'data-created': req.created_at }));

  const note = el('textarea', { class: 'note', rows: 2, placeholder: 'Note for the agent and the audit trail (optional)', 'aria-label': 'Note', maxlength: 2000 });
  const err = el('div', { class: 'card-error', role: 'alert', hidden: true });
  const ok = el('div', { class: 'card-ok', role: 'status', hidden: true });

  const amendBox = canAmend ? el('div', { class: 'amend', hidden: true },
    el('label', { class: 'amend-label', text: 'Amended arguments (JSON) — you approve this instead of the original call' }),
    el('textarea', { class: 'amend-args mono', rows: 6, spellcheck: 'false' }, JSON.stringify(args, null, 2)),
  ) : null;

  const card = el('article', { class: 'card kind-' + kind, 'data-id': req.approval_id, id: 'req-' + req.approval_id });
  const setBusy = (b) => card.querySelectorAll('button, textarea, input').forEach((x) => { x.disabled = b; });

  async function act(decision, mode) {
    err.hidden = true;
    const extra = { note: note.value.trim() };
    if (mode === 'amend') {
      // Parsed strictly (strictjson.js): JSON.parse would keep the last of
      // two "amount" members and round 9007199254740993, and the signature
      // would cover what it made of the text, not what was typed.
      try {
        const v = parseStrictJSON(card.querySelector('.amend-args').value);
        if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('they must be a JSON object');
        extra.amended_arguments = v;
      } catch (e) {
        err.textContent = 'The amended arguments were not signed: ' + e.message + '.';
        err.hidden = false;
        return;
      }
    }
    if (kind === 'question' && decision === 'approved') {
      try { extra.answers = collectAnswers(card); } catch (e) {
        err.textContent = 'Please ' + e.message + '.'; err.hidden = false; return;
      }
    }
    setBusy(true);
    card.dataset.deciding = '1';
    try {
      const res = await decide(req, decision, extra);
      delete card.dataset.deciding;
      const done = res.outcome === 'approved' || res.outcome === 'denied';
      const { text, failed } = decisionResult(res, kind, mode);
      const box = failed ? err : ok;
      box.textContent = visible(done ? `${text}. Receipt ${res.receipt_id || '—'}` : text); // may quote the tool's error
      box.hidden = false;
      // An approval whose call did not run stays a while longer: it is news.
      card.classList.add(failed ? 'decided-failed' : 'decided');
      if (done && !state.email) removeCard(req.approval_id);
    } catch (e) {
      delete card.dataset.deciding;
      err.textContent = visible(e.message);
      err.hidden = false;
      setBusy(false);
      // Resolved meanwhile (by someone else, or by this very vote): let it go.
      if (!state.pending.has(req.approval_id)) removeCard(req.approval_id);
    }
  }

  const isConfirm = kind === 'confirm';
  const approveBtn = el('button', { type: 'button', class: 'btn btn-approve', 'data-action': 'approve', onclick: () => act('approved') },
    isConfirm ? 'Confirm' : kind === 'question' ? 'Send answers' : 'Approve');
  // Confirm and question requests are the agent asking: they are declined.
  const denyBtn = el('button', { type: 'button', class: 'btn btn-deny', 'data-action': 'deny', onclick: () => act('denied') },
    kind === 'tool_call' ? 'Deny' : 'Decline');
  let amendBtn = null, amendSubmit = null;
  if (canAmend) {
    amendSubmit = el('button', { type: 'button', class: 'btn btn-approve', 'data-action': 'amend-submit', hidden: true, onclick: () => act('approved', 'amend') }, 'Approve amended');
    amendBtn = el('button', { type: 'button', class: 'btn btn-secondary', 'data-action': 'amend', onclick: () => {
      amendBox.hidden = !amendBox.hidden;
      amendSubmit.hidden = amendBox.hidden;
      approveBtn.hidden = !amendBox.hidden;
      amendBtn.textContent = amendBox.hidden ? 'Amend…' : 'Cancel amend';
    } }, 'Amend…');
  }

  card.append(...[
    el('div', { class: 'card-head' },
      el('span', { class: 'badge badge-kind', text: KIND_LABEL[kind] || kind }),
      el('span', { class: 'tool mono', text: `${req.tool_server} · ${req.tool_name}` }),
      req.tier > 0 ? el('span', { class: 'badge badge-tier', text: `Escalated · tier ${req.tier + 1}` }) : el('span', { class: 'badge badge-tier0', text: 'Tier 1' }),
      el('span', { class: 'spacer' }),
      el('span', { class: 'deadline' }, el('span', { class: 'muted', text: 'decide within ' }), deadline),
    ),
    bar,
    el('h3', { class: 'summary', text: req.summary }),
    el('dl', { class: 'details' },
      detail('Purpose', intent && intent.purpose),
      detail('Amount', amount, 'amount'),
      detail('Asked by', askedBy(req), 'asker'),
      detail('Quorum', el('span', { class: 'quorum' }, pips, ` ${approved} of ${req.quorum || 1} approval${(req.quorum || 1) > 1 ? 's' : ''}`)),
      detail('Why', el('span', { title: (req.triggered_by || []).join(', '), text: whyText(req) }), 'why-asked'),
      detail('Category', intent && intent.action_category),
      detail('Request', el('code', { class: 'reqid', text: req.approval_id })),
    ),
    kind === 'confirm' ? confirmDetails(args) : null,
    args !== null && kind === 'tool_call' ? el('details', { class: 'args' },
      el('summary', { text: 'Arguments' }),
      el('pre', { class: 'mono', text: JSON.stringify(args, null, 2) })) : null,
    kind === 'question' ? questionForm(req) : null,
    amendBox,
    note,
    !trusted ? el('p', { class: 'warn', text: 'Your key is not among the trusted approvers of this request; the kernel will refuse your decision.' }) : null,
    voted ? el('p', { class: 'muted', text: 'You already voted on this request.' }) : null,
    el('div', { class: 'actions' }, approveBtn, amendSubmit, amendBtn, el('span', { class: 'spacer' }), denyBtn),
    err, ok,
  ].filter(Boolean));
  return card;
}

// decisionResult says what a decision did: an approval is not an
// execution (a guard re-run at resume may stop the call, the tool may fail).
function decisionResult(res, kind, mode) {
  if (res.outcome === 'denied') return { text: kind === 'tool_call' ? 'Denied' : 'Declined' };
  if (res.outcome !== 'approved') return { text: `Vote recorded — ${res.approvals} of ${res.quorum} approvals so far` };
  const c = res.call || {};
  if (c.status === 'denied') return { text: `Approved, but the call did not run: denied by the ${c.guard} guard: ${c.reason}`, failed: true };
  if (c.status === 'cancelled') return { text: `Approved, but the call was cancelled: ${c.reason}`, failed: true };
  if (c.tool_error) return { text: `Approved — the tool failed: ${c.tool_error}`, failed: true };
  if (kind === 'confirm') return { text: 'Confirmed' };
  if (kind === 'question') return { text: 'Answers sent' };
  return { text: mode === 'amend' ? 'Approved with amendments — executed' : 'Approved — executed' };
}

function upsert(req) {
  if (!req || req.status !== 'pending') { if (req) removeCard(req.approval_id); return; }
  state.pending.set(req.approval_id, req);
  const old = state.cards.get(req.approval_id);
  if (old) {
    // Keep what the approver typed: only refresh when progress changed.
    const prev = old.req;
    if ((prev.votes || []).length === (req.votes || []).length && prev.tier === req.tier && prev.expires_at === req.expires_at) return;
    const fresh = renderCard(req);
    const n = old.el.querySelector('.note'), fn = fresh.querySelector('.note');
    if (n && fn) fn.value = n.value;
    old.el.replaceWith(fresh);
    state.cards.set(req.approval_id, { el: fresh, req });
  } else {
    const card = renderCard(req);
    card.classList.add('enter');
    state.cards.set(req.approval_id, { el: card, req });
    // Oldest first, like GET /approvals/pending.
    const list = $('cards');
    const after = Array.from(list.children).find((c) => (state.pending.get(c.dataset.id) || {}).created_at > req.created_at);
    list.insertBefore(card, after || null);
  }
  refreshCounts();
  tick();
  focusDeepLink();
}

function removeCard(id) {
  state.pending.delete(id);
  const c = state.cards.get(id);
  if (c) {
    // The approval resolves before its call runs: while this card's own
    // decision is in flight, act() removes it once the outcome is shown.
    if (c.el.dataset.deciding) { refreshCounts(); return; }
    state.cards.delete(id);
    // A card just decided here stays a moment so its result can be read.
    const linger = c.el.classList.contains('decided-failed') ? 8000 : c.el.classList.contains('decided') ? 1500 : 0;
    setTimeout(() => { c.el.classList.add('leave'); setTimeout(() => c.el.remove(), 250); }, linger);
  }
  refreshCounts();
}

function refreshCounts() {
  $('pending-count').textContent = String(state.pending.size);
  $('empty').hidden = state.pending.size > 0 || !!state.email;
  document.title = state.pending.size ? `(${state.pending.size}) chio · approvals` : 'chio · approvals';
}

function tick() {
  const t = now();
  for (const e of document.querySelectorAll('.countdown[data-deadline]')) {
    const left = Number(e.dataset.deadline) - t;
    e.textContent = left > 0 ? fmtDuration(left) : 'expired';
    e.classList.toggle('soon', left < 120);
  }
  for (const e of document.querySelectorAll('.deadline-bar span[data-deadline]')) {
    const total = Number(e.dataset.deadline) - Number(e.dataset.created);
    const left = Number(e.dataset.deadline) - t;
    e.style.width = total > 0 ? `${Math.max(0, Math.min(100, (left / total) * 100))}%` : '0%';
    e.classList.toggle('soon', left < 120);
  }
}

function focusDeepLink() {
  if (!state.focus) return;
  const c = state.cards.get(state.focus);
  if (c) {
    c.el.classList.add('focused');
    c.el.scrollIntoView({ block: 'center' });
    state.focus = '';
  }
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
  setLive('connecting');
  const es = new EventSource('/approvals/stream');
  state.es = es;
  es.onopen = () => { setLive('live'); showError(''); showNotice(''); state.backoff = 0; };
  const onApproval = (ev) => {
    let e;
    try { e = JSON.parse(ev.data); } catch { return; }
    if (!e.approval) return;
    if (e.type === 'approval.resolved') { removeCard(e.approval.approval_id); scheduleHistory(); } else upsert(e.approval);
  };
  for (const t of ['approval.requested', 'approval.escalated', 'approval.resolved']) es.addEventListener(t, onApproval);
  // chiod replays a bounded number of pending requests on connect; new ones
  // still arrive live.
  es.addEventListener('stream.truncated', (ev) => {
    let e;
    try { e = JSON.parse(ev.data); } catch { return; }
    showNotice(`Showing the oldest ${e.replayed} pending requests: more are waiting than the live view loads at once. ` +
      'Decide these and reload, or list every pending request with `chio approval list`.');
  });
  es.onerror = async () => {
    if (es.readyState !== EventSource.CLOSED) { setLive('down'); return; }
    // Closed for good (e.g. 401 after the session lapsed, or 429/503 when
    // too many streams are open): sign in again, backing off each time.
    setLive('down');
    state.backoff = Math.min(30000, (state.backoff || 250) * 2);
    try {
      await signIn();
      setTimeout(connect, state.backoff);
    } catch (e) {
      showError('Lost the live stream: ' + e.message);
      setTimeout(connect, Math.max(5000, state.backoff));
    }
  };
}

// ---------------------------------------------------------------------------
// History: final receipts of approval requests, newest first.
// ---------------------------------------------------------------------------
let historyTimer = null;
function scheduleHistory() {
  clearTimeout(historyTimer);
  historyTimer = setTimeout(() => loadHistory().catch((e) => showError('History: ' + e.message)), 300);
}

const requestCache = new Map();
let historySeq = 0;
async function loadHistory() {
  const seq = ++historySeq;
  const page = await withSession(() => api('GET', '/v1/receipts?meta=approval_request_id&order=desc&limit=100'));
  const finals = (page.receipts || []).filter((r) => r.decision && r.decision.verdict !== 'incomplete').slice(0, 40);
  const rows = await Promise.all(finals.map(async (r) => {
    const id = r.metadata && r.metadata.approval_request_id;
    let req = requestCache.get(id);
    if (!req && id) {
      try {
        req = (await api('GET', '/approvals/' + encodeURIComponent(id))).request;
        // Cache only what can no longer change: a settled call's request.
        if (req && req.resolution && req.resolution.call_status) requestCache.set(id, req);
      } catch { req = null; }
    }
    return { r, req };
  }));
  if (seq !== historySeq) return; // a newer load is under way
  const body = $('history-rows');
  body.replaceChildren();
  for (const { r, req } of rows) {
    const m = r.metadata || {};
    const o = outcomeOf(r, req);
    body.append(el('tr', { 'data-id': m.approval_request_id || '' },
      el('td', { class: 'nowrap', text: fmtTime(r.timestamp / 1000) }),
      el('td', {}, el('div', { class: 'h-summary', text: req ? req.summary : `${r.tool_server} · ${r.tool_name}` }),
        el('div', { class: 'h-outcome', text: o.text }),
        m.note && !o.text.includes(m.note) ? el('div', { class: 'h-note', text: '“' + m.note + '”' }) : null),
      el('td', {}, el('span', { class: 'pill pill-' + o.label.replace(/\s+/g, '-'), text: o.label })),
      el('td', {}, el('span', { class: o.person ? 'by-person' : 'by-guard', text: o.by })),
      el('td', { text: m.channel || '—' }),
      el('td', {}, el('a', { href: '/v1/receipts/' + encodeURIComponent(r.id), target: '_blank', rel: 'noopener', class: 'mono receipt-link', text: r.id.slice(0, 16) + '…' })),
    ));
  }
  $('history-empty').hidden = rows.length > 0;
}

// outcomeOf says who or what ended a request and why, from its final
// receipt (signed) and the request's resolution. A guard is not a person:
// "denied by the capability guard: …" is not "denied by CFO: …".
function outcomeOf(r, req) {
  const m = r.metadata || {}, d = r.decision || {}, res = (req && req.resolution) || {};
  const person = m.approver_display_name || res.decided_by || (m.approver ? shortKey(m.approver) : '');
  const guard = (g) => `the ${g} guard`;
  if (d.verdict === 'allow') {
    if (m.auto_approved) {
      return { label: 'auto-approved', by: 'the deadline (kernel)', text: 'Auto-approved by the kernel at the deadline: no person reviewed it (review required)' };
    }
    if (m.batch_approval_id) return { label: 'approved', by: 'a standing approval', text: `Approved by a standing approval (${m.batch_approval_id})` };
    const kind = (req && req.kind) || 'tool_call';
    if (kind !== 'tool_call') {
      return { label: 'approved', by: person, person: true, text: `${kind === 'confirm' ? 'Confirmed' : 'Answered'} by ${person}` };
    }
    const amended = m.amount ? `, amended to ${m.amount.units} ${m.amount.currency}` +
      (m.original_amount ? ` (asked: ${m.original_amount.units} ${m.original_amount.currency})` : '') : ', with amended arguments';
    const how = `Approved by ${person}` + (m.amended ? amended : '');
    // The allow receipt is signed before the call is sent (write-ahead);
    // what the tool did is on the request's resolution once it settled.
    const toolError = m.tool_error || res.tool_error;
    if (toolError) return { label: 'tool failed', by: person, person: true, text: `${how} — the tool failed: ${toolError}` };
    if (res.call_status !== 'allowed') return { label: 'approved', by: person, person: true, text: how + ' — running' };
    return { label: 'approved', by: person, person: true, text: how + ' — executed' };
  }
  if (d.verdict === 'deny') {
    if (d.guard === 'human-approval') {
      const verb = req && req.kind && req.kind !== 'tool_call' ? 'Declined' : 'Denied';
      return { label: 'denied', by: person, person: true, text: `${verb} by ${person}` + (m.note ? `: ${m.note}` : '') };
    }
    if (d.guard === 'approval-timeout') return { label: 'timed out', by: 'the deadline', text: `Timed out: ${d.reason}` };
    // A guard re-run when the approved call resumed (e.g. the capability was
    // revoked during the wait) stopped it after a person approved.
    const text = (person ? `Approved by ${person}, but denied by ${guard(d.guard)}: ` : `Denied by ${guard(d.guard)}: `) + d.reason;
    return { label: 'denied', by: guard(d.guard), text };
  }
  if (d.verdict === 'cancelled') return { label: 'cancelled', by: '—', text: `Cancelled: ${d.reason}` };
  return { label: d.verdict || '?', by: '—', text: d.reason || '' };
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
  const forget = async () => {
    if (state.es) state.es.close();
    try { await api('DELETE', '/v1/session'); } catch { /* already gone */ }
    await forgetKey();
    location.reload();
  };
  $('signout').addEventListener('click', forget);
  $('forget-key').addEventListener('click', forget);
  $('retry-signin').addEventListener('click', () => onKey(state.key));
  $('copy-key').addEventListener('click', () => navigator.clipboard && navigator.clipboard.writeText($('my-pubkey').textContent));
  $('tab-pending').addEventListener('click', () => switchView('pending'));
  $('tab-history').addEventListener('click', () => switchView('history'));
  setInterval(tick, 1000);

  let k = null;
  try { k = await loadKey(); } catch (e) { showError('IndexedDB is unavailable: ' + e.message); }
  if (k && k.privateKey) onKey(k); else showSetup();
}

main();
