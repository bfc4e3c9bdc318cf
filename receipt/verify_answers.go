package receipt

import "github.com/go-json-experiment/json/jsontext"

// The answers of a question's approvals (accounted, verify_votes.go). The
// kernel counts an approval toward the deciding vote only when it gives
// the same answers (approval.Request.AgreeingWith), and names every other
// approval of the deciding side in "uncounted" (chainReceipt). So each
// key a final receipt lists with the deciding vote, and not in uncounted,
// must have a token whose answers are the deciding token's. checkToken
// canonicalizes each token's answers (a token is stored as presented, in
// whatever encoding its SDK wrote), so equal answers are equal bytes; a tool call
// or confirm carries none, nor does a denial (kernel Respond refuses
// them there), so there both sides are empty.

const answersRule = "the kernel counts an approval of a question only when it gives the deciding vote's answers, and names the others in uncounted"

// answersText is a token's answers as a problem quotes them.
func answersText(a jsontext.Value) string {
	if len(a) == 0 {
		return "nothing"
	}
	return string(a)
}
