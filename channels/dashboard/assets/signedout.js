// chio dashboard: a session ended by "Sign out everywhere" (loaded before
// app.js; it uses app.js's state and screens when called). chiod answers
// such a session's requests, and a sign-in that presents it, 401
// signed_out_everywhere. A page left open elsewhere (a shared computer)
// still holds the key and would sign straight in again: on that code it
// forgets the key instead, ends any sign-in still under way, and asks for
// the key again.
'use strict';

const SIGNED_OUT_EVERYWHERE = 'signed_out_everywhere';

// signedOutEverywhere runs once per key held: api() calls it, without
// waiting, on the first answer carrying the code, so every request and
// sign-in the page makes after it is refused (state.leaving) rather than
// signed in again.
function signedOutEverywhere() {
  if (state.signedOutAll) return state.signedOutAll;
  state.leaving = true;
  if (state.es) state.es.close();
  state.signedOutAll = (async () => {
    // A sign-in already under way ends its own session (signIn).
    while (state.signingIn.size) await Promise.allSettled(state.signingIn);
    let kept = '';
    try { await forgetKey(); } catch (e) { kept = ` The key could not be removed from this browser (${e.message}): clear this site's data.`; }
    // Clear the ended session's cookie (HttpOnly: only chiod can), now
    // that the key is gone: a sign-in presenting it is refused, so the key
    // imported again would be lost again. Before the key went, a sign-in
    // without it would have gone through.
    await api('DELETE', '/v1/session').catch(() => {});
    state.key = null;
    state.me = null;
    $('registered').hidden = true;
    showSetup();
    showError('You were signed out everywhere (Sign out everywhere, from this or another browser): ' +
      'your key is removed from this browser; import your key again to sign in.' + kept);
  })();
  return state.signedOutAll;
}
