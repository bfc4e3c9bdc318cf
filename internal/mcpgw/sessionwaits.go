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

// end ends every wait of key (each unlists itself as it returns).
func (s *sessionWaits) end(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.m[key] {
		(*c)()
	}
}
