package kernel

// One agent's calls in flight: Submits of its calls running at once, from
// authentication to their answer. From its decision on a Submit runs to
// its end even when its client has gone (a call's effects are never cut
// half way), so an agent that sends calls to a slow tool and hangs up at
// once would otherwise hold goroutines, arguments and tool connections in
// chiod without limit, and fill the commit queue every agent and
// approver shares. Past its share an agent's call is refused before
// anything is decided or written (ErrTooManyCalls); it may be sent again,
// under the same request id, once one of its calls has ended.

import (
	"errors"
	"fmt"
	"sync"

	"github.com/chiokernel/chio/internal/keys"
)

// ErrTooManyCalls: the agent already has its most calls in flight; this
// one was refused with nothing decided (HTTP 429).
var ErrTooManyCalls = errors.New("too many calls in flight")

// callsInFlight counts each agent's running Submits. An agent is
// remembered only while it has one, so the map is bounded by the calls
// in flight.
type callsInFlight struct {
	mu sync.Mutex
	n  map[keys.PublicKey]int
}

// acquire counts one more call of subject; an error when it has max.
func (c *callsInFlight) acquire(subject keys.PublicKey, max int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[subject] >= max {
		return fmt.Errorf("%w: this agent already has %d calls in flight, the most one agent may; "+
			"nothing was decided: send it again once one of them has been answered", ErrTooManyCalls, max)
	}
	if c.n == nil {
		c.n = map[keys.PublicKey]int{}
	}
	c.n[subject]++
	return nil
}

// release ends a call counted by acquire.
func (c *callsInFlight) release(subject keys.PublicKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[subject]--; c.n[subject] <= 0 {
		delete(c.n, subject)
	}
}
