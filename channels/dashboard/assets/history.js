// chio dashboard: the History tab, the final receipts of approval
// requests, newest first, and who or what ended each (loaded before
// app.js, which holds the state and helpers it uses).
'use strict';

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
    if (toolError) return { label: noResultLabel(toolError), by: person, person: true, text: `${how} — ${noResultText(toolError)}` };
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
