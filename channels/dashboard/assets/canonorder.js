// JSON drawn for an approver: in the order the tool receives it, with runs
// of spaces in its strings marked (jsonLeaf).
//
// chiod canonicalizes a call's arguments and its governed intent (RFC 8785,
// internal/canon) before it stores, hashes or sends them: every object's
// members sorted by the UTF-16 code units of their names, so "1", "10",
// "9", "amount". The page gets them parsed into JavaScript objects, whose
// iteration order is not that: integer-like names come first, in numeric
// order ("1", "9", "10"), and JSON.stringify and Object.entries follow it.
// So nothing drawn for an approver iterates an object's own order: these
// sort the names as RFC 8785 does (Array.prototype.sort's default order is
// UTF-16 code units) and draw leaves with JSON.stringify, as jcs in
// signing.js does.
'use strict';

// canonicalNames lists an object's member names in canonical order.
function canonicalNames(o) {
  return Object.keys(o).filter((k) => o[k] !== undefined).sort();
}

// canonicalEntries is Object.entries(o) in canonical order.
function canonicalEntries(o) {
  return canonicalNames(o).map((k) => [k, o[k]]);
}

// jsonLeaf is JSON.stringify(v) for a name or a value that is not an
// object or an array, with every space (Unicode Zs) that follows a space
// in a string written as a JSON escape (\u0020: the same value). The panes
// keep whitespace and wrap where the card ends (style.css: break-spaces),
// so a run of spaces as long as the rest of its line ended the line and
// drew the text after it at the start of the next, indented as a member
// is: a member of its own to the reader. The CLI and Slack write runs so.
function jsonLeaf(v) {
  return JSON.stringify(v).replace(/(?<=\p{Zs})\p{Zs}/gu, (c) => '\\u' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0'));
}

// memberName is jsonLeaf(k) for a member's name, with every non-ASCII
// letter written as a JSON escape (the same name) when k holds an ASCII
// letter and a letter of another script than Latin: "tо" with a Cyrillic
// о draws exactly as "to", so {"to":"acct-MALLORY","tо":"acct-ALICE"}
// drew two members named "to" and the approver could not tell which the
// tool reads. Every Go-rendered view applies the same rule
// (internal/invisible/lookalike_names.go: LookalikeName).
const ASCII_LETTER = /[A-Za-z]/;
const OTHER_SCRIPT_LETTER = /(?!\p{Script=Latin})\p{L}/u;
const NON_ASCII_LETTER = /(?![A-Za-z])\p{L}/gu;
function memberName(k) {
  const text = jsonLeaf(k);
  if (!ASCII_LETTER.test(k) || !OTHER_SCRIPT_LETTER.test(k)) return text;
  return text.replace(NON_ASCII_LETTER, (c) => Array.from({ length: c.length },
    (_, i) => '\\u' + c.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')).join(''));
}

// canonicalText is JSON.stringify(v, null, indent ? 2 : 0) with every
// object's members in canonical order and runs of spaces in strings
// marked (jsonLeaf): compacted, it reads as the canonical text's value.
function canonicalText(v, indent, pad = '') {
  if (v === null || typeof v !== 'object') return jsonLeaf(v);
  const inner = indent ? pad + '  ' : '';
  const nl = indent ? '\n' : '';
  const items = Array.isArray(v)
    ? v.map((x) => inner + canonicalText(x, indent, inner))
    : canonicalNames(v).map((k) => inner + memberName(k) + (indent ? ': ' : ':') + canonicalText(v[k], indent, inner));
  const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
  if (items.length === 0) return open + close;
  return open + nl + items.join(',' + nl) + nl + pad + close;
}
