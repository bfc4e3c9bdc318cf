// chio dashboard: what an approver entered in a card survives its redraw
// (loaded before cardlist.js, whose upsert calls it).
'use strict';

// keepEntries carries what the approver entered in a card into the card
// drawn again for the same request (its progress changed): the note, the
// answers ticked and typed, the amended arguments and whether the Amend
// box is open. Keeping only the note closed an open Amend box and put
// Approve (the original call) where Approve amended stood. Fields pair up
// by what they are (fieldKey), not by position: a redraw may drop a field
// (a reload that raises the quorum takes Amend away) or add one, and the
// note must not be paired with the Amend box's text. A field without a
// pair is left as drawn, and the Amend box is opened again only where the
// fresh card has one.
function keepEntries(from, to) {
  const fresh = new Map();
  for (const y of to.querySelectorAll('textarea, input')) {
    const k = fieldKey(y);
    if (!fresh.has(k)) fresh.set(k, []);
    fresh.get(k).push(y);
  }
  for (const x of from.querySelectorAll('textarea, input')) {
    const y = (fresh.get(fieldKey(x)) || []).shift();
    if (!y) continue;
    if (x.type === 'radio' || x.type === 'checkbox') y.checked = x.checked; else y.value = x.value;
  }
  const box = from.querySelector('.amend'), toggle = to.querySelector('button[data-action="amend"]');
  if (box && !box.hidden && toggle) toggle.click(); // its own toggle: box and buttons together
}

// fieldKey names what a card's field is: its kind and class, the question
// it answers and, for a choice, the choice.
function fieldKey(x) {
  const q = x.closest('fieldset.question');
  const choice = x.type === 'radio' || x.type === 'checkbox' ? x.value : '';
  return JSON.stringify([x.tagName, x.type, x.className, q ? q.dataset.qid : null, choice]);
}
