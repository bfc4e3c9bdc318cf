// JSON drawn for an approver in the order the tool receives it.
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

// canonicalText is JSON.stringify(v, null, indent ? 2 : 0) with every
// object's members in canonical order: compacted, it is the canonical text.
function canonicalText(v, indent, pad = '') {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const inner = indent ? pad + '  ' : '';
  const nl = indent ? '\n' : '';
  const items = Array.isArray(v)
    ? v.map((x) => inner + canonicalText(x, indent, inner))
    : canonicalNames(v).map((k) => inner + JSON.stringify(k) + (indent ? ': ' : ':') + canonicalText(v[k], indent, inner));
  const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
  if (items.length === 0) return open + close;
  return open + nl + items.join(',' + nl) + nl + pad + close;
}
