// chio dashboard: the request cards, what an approver reads before deciding
// (loaded before app.js, which holds the state and helpers they use).
'use strict';

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

// What became of an approved call without a result, from its tool_error
// and the kernel's prefixes for the two cases where the tool gave no
// answer (kernel.ToolErrorNotDelivered, ToolErrorUnknown): "the tool
// failed" for all three told an approver that a call which may have run
// had failed, or that one the tool never received had run.
function noResultText(toolError) {
  if (toolError.startsWith('outcome unknown: ')) {
    return 'its outcome is unknown: the tool may have run it: ' + toolError.slice('outcome unknown: '.length);
  }
  if (toolError.startsWith('not delivered: ')) {
    return 'not delivered: the tool never received it: ' + toolError.slice('not delivered: '.length);
  }
  return 'the tool failed: ' + toolError;
}

// noResultLabel is the history's one-word outcome for noResultText.
function noResultLabel(toolError) {
  if (toolError.startsWith('outcome unknown: ')) return 'outcome unknown';
  if (toolError.startsWith('not delivered: ')) return 'not delivered';
  return 'tool failed';
}

// What a confirm request shows besides its prompt (the summary): the
// agent's details, as a list when they are an object. The agent acts on
// them, so each value is drawn as JSON, with its whitespace kept (CSS):
// as prose, " acct-1" would read "acct-1" and "line 1\nline 2" as
// "line 1 line 2". Names are drawn as JSON strings too: as prose,
// "amount" and "amount " (a trailing space) read the same. Members are in
// the order the agent receives them (canonorder.js).
function confirmDetails(args) {
  const d = args && args.details;
  if (d === undefined || d === null) return null;
  if (typeof d !== 'object' || Array.isArray(d)) {
    return el('div', { class: 'confirm-details' }, el('pre', { class: 'mono', text: canonicalText(d, true) }));
  }
  return el('dl', { class: 'confirm-details kv' }, canonicalEntries(d).flatMap(([k, v]) => [
    el('dt', { class: 'mono', text: memberName(k) }), el('dd', { class: 'mono', text: canonicalText(v, false) }),
  ]));
}

// The governed intent's context: what the agent tells approvers besides
// its purpose. The approval binds it (parameter_hash covers the whole
// intent) and receipts keep it, so the card draws it, each name and value
// as JSON, as a confirm's details are drawn.
function intentContext(intent) {
  if (!intent || intent.context === undefined || intent.context === null) return null;
  return el('div', { class: 'intent-context' },
    el('div', { class: 'intent-context-label', text: 'Context (from the agent)' }),
    confirmDetails({ details: intent.context }));
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
            if (typedAnswer(other.value)) field.querySelectorAll('input[type=radio]').forEach((r) => { r.checked = false; });
          });
          field.addEventListener('change', (ev) => { if (ev.target.type === 'radio' && ev.target.checked) other.value = ''; });
        }
      }
    }
    form.append(field);
  }
  return form;
}

// BLANK is text that shows as nothing: white space, control characters
// and invisible ones (approval.Blank; visible.js's INVISIBLE without the
// private-use characters, which draw).
const BLANK = /^[\p{White_Space}\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800\u{1D159}]*$/u;

// typedAnswer is what a typed answer gives, trimmed: '' (no answer) when
// it shows as nothing, as chiod refuses such an answer, which JavaScript's
// trim() keeps (a zero-width space, a blank Braille cell).
function typedAnswer(s) {
  return BLANK.test(s) ? '' : s.trim();
}

// ANSWER_MAX_BYTES is approval.MaxAnswerText: chiod refuses a longer typed
// answer, counted in bytes of UTF-8 (2001 "é" are too many), so the form
// refuses it first, before anything is signed.
const ANSWER_MAX_BYTES = 4000;

function checkLength(answer, legend) {
  const n = new TextEncoder().encode(answer).length;
  if (n > ANSWER_MAX_BYTES) throw new Error(`shorten the answer to "${legend}": it is ${n} bytes of UTF-8; chio takes at most ${ANSWER_MAX_BYTES}`);
}

function collectAnswers(card) {
  // No prototype: a question id is any name, and answers['__proto__'] = …
  // on a plain object sets its prototype, leaving the answer unsigned.
  const answers = Object.create(null);
  for (const f of card.querySelectorAll('fieldset.question')) {
    const id = f.dataset.qid, type = f.dataset.type;
    if (type === 'text') {
      answers[id] = typedAnswer(f.querySelector('textarea').value);
      if (!answers[id]) throw new Error(`answer "${f.querySelector('legend').textContent}"`);
      checkLength(answers[id], f.querySelector('legend').textContent);
      continue;
    }
    const picks = Array.from(f.querySelectorAll('input[type=radio]:checked, input[type=checkbox]:checked'), (i) => i.value);
    const other = f.querySelector('.answer-other');
    const typed = other ? typedAnswer(other.value) : '';
    // chiod refuses a choice named twice (a tool acting once per pick
    // would act twice on it): refused here, before anything is signed.
    if (typed && picks.includes(typed)) {
      throw new Error(`answer "${typed}" once in "${f.querySelector('legend').textContent}": it is ticked, and typed under Other`);
    }
    if (typed) { checkLength(typed, f.querySelector('legend').textContent); picks.push(typed); }
    if (picks.length === 0) throw new Error(`answer "${f.querySelector('legend').textContent}"`);
    // A single answer is one pick: never sign one and drop the other.
    if (type !== 'multi' && picks.length > 1) throw new Error(`give one answer to "${f.querySelector('legend').textContent}": a choice or Other, not both`);
    answers[id] = type === 'multi' ? picks : picks[0];
  }
  return answers;
}

// skippedNote says why the request waits at a later tier than its
// timeouts brought it to (null when no tier was passed over): the words of
// Go's approval.Request.SkippedNote, tiers numbered from 1.
function skippedNote(req) {
  const skipped = req.skipped_tiers || [];
  if (skipped.length === 0) return null;
  return `escalated at once past tier ${skipped.map((t) => t + 1).join(', ')}: nobody there but the calling agent could decide ` +
    "(the kernel never counts an agent's vote on its own call, nor a requester's)";
}

// votesList lists every recorded vote, one a line, as Slack's message
// does: who, how, through which channel, and their note. Counted as the
// quorum line counts (counted): the vote of an approver the request no
// longer trusts (a reload removed them since they voted, or left them
// only in a later tier) stays on the request, but the kernel does not
// count it (the final receipt names it "uncounted"), and its line says so,
// as does that of an open question's approval outside its largest
// agreeing set (answeredOtherwise); the words are Go's approval.NoLongerApproverNote and
// approval.AnsweredOtherwiseNote (the e2e tests hold them to those). Names and notes are drawn as text (el: visible.js), never as markup.
function votesList(req, counted) {
  const votes = req.votes || [];
  if (votes.length === 0) return null;
  return el('div', { class: 'votes-block' },
    el('div', { class: 'votes-label', text: 'Votes' }),
    el('ul', { class: 'votes' }, votes.map((v) => {
      const token = parseJSON(v.token) || {};
      const amended = v.decision === 'approved' && token.amended_arguments !== undefined && token.amended_arguments !== null;
      return el('li', { class: 'vote vote-' + (v.decision === 'approved' ? 'approved' : 'denied') + (counted(v) ? '' : ' uncounted') },
        el('strong', { title: v.approver, text: v.display_name || shortKey(v.approver) }),
        ` ${v.decision}` + (v.channel ? ` via ${v.channel}` : ''),
        counted(v) ? null : el('span', { class: 'not-counted', text: ' (not counted: no longer an approver of this request)' }),
        answeredOtherwise(req, counted, v)
          ? el('span', { class: 'not-counted', text: ' (answered otherwise: not counted with the approvals that agree)' }) : null,
        v.custodial ? ' (custodial key)' : null,
        amended ? ' with amended arguments' : null,
        v.note ? el('span', { class: 'vote-note', text: ': ' + v.note }) : null);
    })));
}

// progressOf is what a card draws of a request's progress: its votes,
// tier and deadline, and who may decide it (a reload rewrites the trusted
// approvers, requesters and quorums, and with them which votes count and
// whether this approver may vote).
function progressOf(req) {
  return JSON.stringify([(req.votes || []).map((v) => v.token_id), req.tier, req.expires_at,
    req.trusted_approvers || [], req.requesters || [], req.quorum, req.deny_quorum]);
}

// approvalsOf counts req's approvals among the votes counted(v) keeps as
// the kernel decides (approval.Request.Progress): on a pending question
// only the largest set of them giving the same answers (LeadingApprovals;
// a reload that trusts an earlier voter again can bring a differing answer
// back into the count, and the kernel decides only by quorum agreeing
// answers), never every counted approval.
function approvalsOf(req, counted) {
  const approvals = (req.votes || []).filter((v) => v.decision === 'approved' && counted(v));
  if (req.kind !== 'question' || req.status !== 'pending') return approvals.length;
  return Math.max(0, ...approvals.map((v) => agreeingWith(approvals, v)));
}

// answeredOtherwise reports whether v is a counted approval on a pending
// question outside its largest agreeing set (approval.Request.AnsweredOtherwise).
function answeredOtherwise(req, counted, v) {
  if (req.kind !== 'question' || req.status !== 'pending' || v.decision !== 'approved' || !counted(v)) return false;
  const approvals = (req.votes || []).filter((w) => w.decision === 'approved' && counted(w));
  return agreeingWith(approvals, v) < approvalsOf(req, counted);
}

// agreeingWith counts the approvals giving v's answers (approval.Request.AgreeingWith).
// Answers are strings and lists of strings, which JSON.parse reads exactly;
// a token without answers agrees with nothing (approval.SameAnswers).
function agreeingWith(approvals, v) {
  const answersOf = (w) => {
    const token = parseJSON(w.token);
    return token && token.answers !== undefined && token.answers !== null ? canonicalText(token.answers) : null;
  };
  const mine = answersOf(v);
  return mine === null ? 0 : approvals.filter((w) => answersOf(w) === mine).length;
}

function renderCard(req) {
  const intent = parseJSON(req.governed_intent);
  const args = parseJSON(req.arguments);
  // Counted as the kernel counts (approval.Request.Progress): while pending,
  // only votes of approvers the request trusts now (a reload that removed
  // an approver keeps their vote but no longer counts it).
  const counted = (v) => req.status !== 'pending' || (req.trusted_approvers || []).includes(v.approver);
  const approved = approvalsOf(req, counted);
  const kind = req.kind || 'tool_call';
  const canAmend = kind === 'tool_call' && req.arguments !== undefined && req.arguments !== null && (req.quorum || 1) <= 1;
  const trusted = !state.key || (req.trusted_approvers || []).includes(state.key.publicKey);
  // The kernel never counts an agent's vote on its own call (approval.Verify).
  const ownCall = !!state.key && (req.subject_id === state.key.publicKey || req.subject_public_key === state.key.publicKey);
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
    el('textarea', { class: 'amend-args mono', rows: 6, spellcheck: 'false' }, canonicalText(args, true)),
  ) : null;

  const card = el('article', { class: 'card kind-' + kind, 'data-id': req.approval_id, id: 'req-' + req.approval_id });
  const setBusy = (b) => card.querySelectorAll('button, textarea, input').forEach((x) => { x.disabled = b; });

  async function act(decision, mode) {
    err.hidden = true;
    const extra = { note: note.value.trim() };
    const long = noteRefusal(extra.note);
    if (long) { err.textContent = long + ' Nothing was signed.'; err.hidden = false; return; }
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
        err.textContent = 'Please ' + e.message + '. Nothing was signed.'; err.hidden = false; return;
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
      box.replaceChildren(shownNode(done ? `${text}. Receipt ${res.receipt_id || '—'}` : text)); // may quote the tool's error
      box.hidden = false;
      // An approval whose call did not run stays a while longer: it is news.
      card.classList.add(failed ? 'decided-failed' : 'decided');
      if (done && !state.email) removeCard(req.approval_id); else flushDeferred(req.approval_id, card);
    } catch (e) {
      delete card.dataset.deciding;
      err.replaceChildren(shownNode(e.message));
      err.hidden = false;
      setBusy(false);
      // Resolved meanwhile (by someone else, or by this very vote): let it go.
      if (!state.pending.has(req.approval_id)) removeCard(req.approval_id); else flushDeferred(req.approval_id, card);
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
      detail('Escalation', skippedNote(req), 'skipped-tiers'),
      detail('Category', intent && intent.action_category),
      detail('Request', el('code', { class: 'reqid', text: req.approval_id })),
    ),
    intentContext(intent),
    kind === 'confirm' ? confirmDetails(args) : null,
    // Open: Approve signs for these arguments, so the card shows them
    // without a click (the approver may fold them away), in the order the
    // tool receives them (canonorder.js).
    args !== null && kind === 'tool_call' ? el('details', { class: 'args', open: true },
      el('summary', { text: 'Arguments' }),
      el('pre', { class: 'mono', text: canonicalText(args, true) })) : null,
    votesList(req, counted),
    kind === 'question' ? questionForm(req) : null,
    amendBox,
    note,
    !trusted ? el('p', { class: 'warn', text: 'Your key is not among the trusted approvers of this request; the kernel will refuse your decision.' })
      : ownCall ? el('p', { class: 'warn', text: 'This call was made with your own key: the kernel will refuse your decision on it; another approver decides it.' }) : null,
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
  if (c.tool_error) return { text: `Approved — ${noResultText(c.tool_error)}`, failed: true };
  if (kind === 'confirm') return { text: 'Confirmed' };
  if (kind === 'question') return { text: 'Answers sent' };
  return { text: mode === 'amend' ? 'Approved with amendments — executed' : 'Approved — executed' };
}
