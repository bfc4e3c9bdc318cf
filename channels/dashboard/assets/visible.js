// Text from a request, drawn as sent.
//
// Summaries, purposes, questions, options and arguments come from the agent
// (errors from the tool). A bidi override or isolate (U+202E, U+2066…)
// reorders what the browser draws, so the approver reads "00 0310 …" where
// the tool receives "DE89 3704 …"; a zero-width character, a variation
// selector or a Hangul filler hides; a control character draws nothing.
// visible writes each of these (Unicode categories Cc, Cf, Zl, Zp, the
// other default-ignorable code points, and the blank symbols U+2800 and
// U+1D159: the set internal/invisible names, plus controls; newlines and
// tabs excepted) as a \uXXXX escape (two for a character beyond U+FFFF),
// so the approver sees it is there and the order drawn is the order sent.
// So is a run of combining marks that would draw as one (MARK_RUN below).
// Inside a JSON string the escape is a JSON escape of the same character,
// so JSON text stays valid with the same value. Private-use characters
// (Co: U+E000–F8FF, planes 15 and 16) are escaped too: they draw as
// whatever a font puts there, so they can stand for anything.
//
// Without any such character, the Unicode Bidirectional Algorithm still
// reorders: digits after a Hebrew or Arabic letter take its right-to-left
// direction, so "שלום 1234 5678" is drawn "5678 1234 םולש" and the
// approver reads an account number with its groups swapped. shownNode
// draws text holding right-to-left letters inside <bdo dir="ltr"> (an
// override: everything in it is drawn in stored order, left to right),
// each run of right-to-left letters (with their marks and the single
// spaces between them, never a digit or punctuation) in its own
// <bdi dir="rtl"> so that words stay readable: such a run holds no
// character whose place the algorithm could change but by reversing the
// whole run, which is what right-to-left reading expects.
'use strict';

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Co}\u2800\u{1D159}]/gu;

// A right-to-left letter: a letter in the blocks Unicode gives the
// right-to-left bidi classes R and AL (Hebrew, Arabic, Syriac, Thaana,
// NKo, Samaritan, Mandaic and the others up to U+08FF, the Hebrew and
// Arabic presentation forms, and the right-to-left ranges of the
// supplementary planes). A letter missed here is drawn in stored order
// (left to right) by the override: unreadable, never reordered.
const RTL = '(?=\\p{L})[\\u0590-\\u08FF\\uFB1D-\\uFDFF\\uFE70-\\uFEFF\\u{10800}-\\u{10FFF}\\u{1E800}-\\u{1EFFF}]';
// Arabic numbers (bidi class AN: Arabic-Indic digits and their
// separators) are not letters, but two groups of them alone are drawn
// swapped ("٣٣٣٣ ٤٤٤٤" as "٤٤٤٤ ٣٣٣٣"): text holding them is drawn in
// stored order too. They never join a right-to-left run.
const ARABIC_NUMBER = '[\\u0600-\\u0605\\u0660-\\u0669\\u066B\\u066C\\u06DD\\u0890\\u0891\\u08E2\\u{10D30}-\\u{10D39}\\u{10E60}-\\u{10E7E}]';
const HAS_RTL = new RegExp(`${RTL}|${ARABIC_NUMBER}`, 'u');
const RTL_RUN = new RegExp(`${RTL}(?:\\p{M}|${RTL}| +${RTL})*`, 'gu');
const STORED_ORDER_NOTE = 'contains right-to-left text; shown in stored order';

// A run of combining marks (category M) stacks on the character before
// it: three hundred of them draw as one character, piled on it (or cut off
// above the card), and the same mark twice draws as once, while the tool
// gets every one. A run longer than MAX_MARKS (more than the scripts that
// stack marks put on one letter) or holding a mark right after the same
// mark is written as escapes, as invisible characters are. This is the
// rule every Go-rendered view applies (internal/invisible/stacked.go:
// StackedMarks, MaxMarks): an escaped mark (the combining grapheme joiner,
// a variation selector) ends a run there as its escape ends it here.
const MARK_RUN = /\p{M}+/gu;
const MAX_MARKS = 4;

function escapeUnits(c) {
  return Array.from({ length: c.length }, (_, i) => '\\u' + c.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')).join('');
}

function visible(s) {
  return String(s).replace(INVISIBLE, (c) => (c === '\n' || c === '\t' ? c : escapeUnits(c)))
    .replace(MARK_RUN, (run) => {
      const marks = Array.from(run);
      return marks.length > MAX_MARKS || marks.some((m, i) => i > 0 && m === marks[i - 1]) ? escapeUnits(run) : run;
    });
}

// shownNode returns what draws s for an approver: visible(s) as text, and
// where it holds right-to-left letters, in stored order as said above.
function shownNode(s) {
  const text = visible(s);
  if (!HAS_RTL.test(text)) return document.createTextNode(text);
  const bdo = document.createElement('bdo');
  bdo.dir = 'ltr';
  bdo.className = 'stored-order';
  bdo.title = STORED_ORDER_NOTE;
  let at = 0;
  for (const m of text.matchAll(RTL_RUN)) {
    if (m.index > at) bdo.append(text.slice(at, m.index));
    const run = document.createElement('bdi');
    run.dir = 'rtl';
    run.textContent = m[0];
    bdo.append(run);
    at = m.index + m[0].length;
  }
  if (at < text.length) bdo.append(text.slice(at));
  return bdo;
}
