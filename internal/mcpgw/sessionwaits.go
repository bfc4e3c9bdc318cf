package mcpgw

import (
	"context"
	"sync"
)

// A session's waits end with the session. The SDK closes a session (DELETE)
// only once the requests it is running have returned, and a parked call's
// wait (Gateway.wait, up to MaxWait) is not told of the close, nor of its
// POST being dropped (a stream may be resumed): the DELETE hung, and the
// closed session kept the wait's goroutine, its subscriber in the kernel's
// wait pool (shared by every agent), the agent's wait slot and the
// session's place until the wait ran out. So each wait is listed under its
// agent and session, and that agent's DELETE of that session ends them
// before the SDK closes it. The call stays parked: chio_await or `chio
// await` fetches its outcome later.

// sessionWaits lists the waits running in each session. A key is only ever
// the agent's own (agent id and session id), so no agent ends another's
// waits by naming its session.
type sessionWaits struct {
	mu sync.Mutex
	m  map[string]map[*context.CancelFunc]struct{}
	// closing counts the DELETEs of each key under way (end to forget):
	// a wait that starts then (its call parked as the client closed) is
	// ended at once, or it would hold the DELETE for its whole wait.
	closing map[string]int
}

func sessionWaitKey(agentID, sessionID string) string { return agentID + "\x00" + sessionID }

// add lists a wait of key, ended by cancel; remove unlists it.
func (s *sessionWaits) add(key string, cancel context.CancelFunc) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[*context.CancelFunc]struct{}{}
	}
	if s.m[key] == nil {
		s.m[key] = map[*context.CancelFunc]struct{}{}
	}
	if s.closing[key] > 0 {
		cancel() // its session is being closed
	}
	c := &cancel
	s.m[key][c] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.m[key], c)
		if len(s.m[key]) == 0 {
			delete(s.m, key)
		}
	}
}

// end ends every wait of key (each unlists itself as it returns), and
// those that start until forget(key): a DELETE of the session is under
// way.
func (s *sessionWaits) end(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing == nil {
		s.closing = map[string]int{}
	}
	s.closing[key]++
	for c := range s.m[key] {
		(*c)()
	}
}

// forget follows end once the DELETE is served (the SDK has closed the
// session, its requests returned): no wait of key starts after it.
func (s *sessionWaits) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing[key]--; s.closing[key] <= 0 {
		delete(s.closing, key)
	}
}
