package storetest

import (
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// Records keep the bytes of their raw JSON members: a call's arguments and
// intent are what parameter_hash covers and what an approved call (resumed
// from its record) sends the tool; an approval's arguments and intent are
// what the approver was shown; a vote's token is the approver's signed
// token exactly as received. encoding/json would write "<", ">" and "&"
// inside them as \u003c, \u003e and \u0026: the same JSON value, other
// bytes. Checked inside the writing function, after the commit and after
// a reopen.
func testRecordsKeepRawBytes(t *testing.T, b Backend) {
	const args, intent = `{"path":"/tmp/<a>&b","n":1.5}`, `{"purpose":"clean <tmp> & logs"}`
	const token = `{"approver":"ed25519:aa","note":"ok <3 & go","signature":"00"}`
	call := &kernel.CallRecord{RequestID: "raw-call", Status: kernel.StatusPendingApproval, Arguments: []byte(args), Intent: []byte(intent)}
	req := &approval.Request{ApprovalID: "ar-raw", Status: approval.StatusApproved, Arguments: []byte(args), GovernedIntent: []byte(intent),
		Votes: []approval.Vote{{Approver: "ed25519:aa", TokenID: "at-raw", Decision: approval.DecisionApproved, Token: []byte(token)}}}
	check := func(when string, tx kernel.ReadTx) {
		t.Helper()
		c, err := tx.Call(call.RequestID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if string(c.Arguments) != args || string(c.Intent) != intent {
			t.Errorf("%s: call holds arguments %s and intent %s; want %s and %s", when, c.Arguments, c.Intent, args, intent)
		}
		r, err := tx.Approval(req.ApprovalID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if string(r.Arguments) != args || string(r.GovernedIntent) != intent || len(r.Votes) != 1 || string(r.Votes[0].Token) != token {
			t.Errorf("%s: approval holds arguments %s, intent %s, votes %+v", when, r.Arguments, r.GovernedIntent, r.Votes)
		}
	}
	s, loc := open(t, b)
	update(t, s, func(tx kernel.Tx) error {
		if err := tx.PutCall(call); err != nil {
			return err
		}
		if err := tx.PutApproval(req); err != nil {
			return err
		}
		check("in the writing function", tx)
		return nil
	})
	view := func(when string, s Store) {
		t.Helper()
		if err := s.View(func(tx kernel.ReadTx) error { check(when, tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	view("after the commit", s)
	s.Close()
	view("after a reopen", reopen(t, b, loc, nil))
}
