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
// Inside a JSON string the escape is a JSON escape of the same character,
// so JSON text stays valid with the same value.
'use strict';

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800\u{1D159}]/gu;

function visible(s) {
  return String(s).replace(INVISIBLE, (c) => (c === '\n' || c === '\t' ? c
    : Array.from({ length: c.length }, (_, i) => '\\u' + c.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')).join('')));
}
