package mcpgw

import (
	"context"
	"testing"
)

// A session's DELETE ends the waits listed under it. A tools/call of
// that session whose wait started just after the DELETE's turn (its
// Submit returned a parked call a moment later: the client closed as the
// call was parking) was not ended: the DELETE, which the SDK holds until
// the session's requests return, hung for the whole pending wait (up to
// MaxWait), and the wait kept its slot and its subscriber. A wait that
// starts in a session being closed ends at once.
func TestWaitStartingAfterItsSessionsDeleteEndsAtOnce(t *testing.T) {
	var s sessionWaits
	key := sessionWaitKey("agent", "session-1")
	s.end(key) // the DELETE's turn: no wait listed yet
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer s.add(key, cancel)()
	if ctx.Err() == nil {
		t.Fatal("a wait that started after its session's DELETE ended the session's waits goes on: " +
			"the DELETE hangs until the wait runs out")
	}
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	defer s.add(sessionWaitKey("agent", "session-2"), cancelOther)()
	if other.Err() != nil {
		t.Fatal("a wait of another session was ended")
	}
}
