// chio dashboard: the list of cards: drawing a request's card in it, again
// when its progress changes, taking it out when the request is resolved,
// holding the cards still under the pointer, the counts and the
// countdowns (loaded before app.js, which holds the state and helpers it
// uses; after cards.js, which draws a card, and entries.js).
'use strict';

function upsert(req) {
  if (!req || req.status !== 'pending') { if (req) removeCard(req.approval_id); return; }
  state.pending.set(req.approval_id, req);
  const old = state.cards.get(req.approval_id);
  if (old) {
    // Keep what the approver typed: only refresh when progress changed.
    if (progressOf(old.req) === progressOf(req)) return;
    // This approver's vote is in flight: its answer goes to this card, so
    // the card is drawn again once the answer is shown (act: flushDeferred).
    if (old.el.dataset.deciding) { old.next = req; return; }
    const fresh = renderCard(req);
    keepEntries(old.el, fresh);
    old.el.replaceWith(fresh);
    state.cards.set(req.approval_id, { el: fresh, req });
  } else {
    const card = renderCard(req);
    card.classList.add('enter');
    state.cards.set(req.approval_id, { el: card, req });
    // Oldest first, like GET /approvals/pending; while the pointer is over
    // the list, below the others (hold.unsorted: placed when it leaves).
    const list = $('cards');
    const after = Array.from(list.children).find((c) => (state.pending.get(c.dataset.id) || {}).created_at > req.created_at);
    if (after && hold.pointer) hold.unsorted = true;
    list.insertBefore(card, hold.pointer ? null : after || null);
  }
  refreshCounts();
  tick();
  focusDeepLink();
}

// flushDeferred draws card again for the progress that arrived while its
// approver's vote was in flight (upsert kept it in .next), carrying the
// vote's answer (shown on card) over to the fresh card.
function flushDeferred(id, card) {
  const e = state.cards.get(id);
  if (!e || e.el !== card || !e.next) return;
  const next = e.next;
  delete e.next;
  upsert(next);
  const fresh = state.cards.get(id);
  if (!fresh || fresh.el === card) return;
  for (const sel of ['.card-ok', '.card-error']) {
    const from = card.querySelector(sel), to = fresh.el.querySelector(sel);
    if (from && to) { to.replaceChildren(...from.childNodes); to.hidden = from.hidden; }
  }
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
    setTimeout(() => leave(c.el), linger);
  }
  refreshCounts();
}

// Cards hold still under the pointer. A card leaving the list moves every
// card below it up, and one placed above moves them down: the button under
// the approver's pointer would become another request's, and a click aimed
// at one request would decide the next. So while the pointer is over the
// list, a card that leaves stays where it is, greyed and inert, saying so,
// and a new card goes below the others; when the pointer leaves the list,
// the held cards go and the order is restored. A finger (or a pen) is not
// a resting pointer: it leaves the list each time it is lifted, between
// the approver's scroll or first tap and the tap on Approve. So after a
// touch the cards hold still on for touchHoldMs, from the last touch.
const hold = { pointer: false, cards: new Set(), unsorted: false, touchTimer: 0 };
let touchHoldMs = 10000; // let: a test shortens it

function leave(el) {
  if (!el.isConnected) return;
  if (hold.pointer) {
    if (!el.classList.contains('gone')) {
      el.classList.add('gone');
      // Its height must not change: the note is an overlay (style.css).
      for (const x of el.querySelectorAll('button, input, textarea, select')) x.disabled = true;
    }
    hold.cards.add(el);
    return;
  }
  el.classList.add('leave');
  setTimeout(() => el.remove(), 250);
}

function holdCards(list) {
  // Held while a mouse rests on the list or a touch was made on it less
  // than touchHoldMs ago (on a touch screen laptop, both).
  let mouse = false, touched = false;
  const release = () => {
    if (mouse || touched) return;
    hold.pointer = false;
    for (const el of hold.cards) leave(el);
    hold.cards.clear();
    if (hold.unsorted) {
      hold.unsorted = false;
      const at = (c) => (state.pending.get(c.dataset.id) || {}).created_at || 0;
      list.append(...Array.from(list.children).sort((x, y) => at(x) - at(y)));
    }
  };
  const grab = (e) => {
    hold.pointer = true;
    if (e.pointerType === 'mouse') mouse = true;
    else { touched = true; clearTimeout(hold.touchTimer); }
  };
  list.addEventListener('pointerenter', grab);
  list.addEventListener('pointerdown', grab);
  list.addEventListener('pointerleave', (e) => {
    if (e.pointerType === 'mouse') { mouse = false; release(); return; }
    clearTimeout(hold.touchTimer);
    hold.touchTimer = setTimeout(() => { touched = false; release(); }, touchHoldMs);
  });
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
