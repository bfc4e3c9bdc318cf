package daemon

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chiokernel/chio/policy"
)

// serversReachedAlike checks that a reloaded policy reaches its servers as
// the running one does. The dispatcher is built once, at start, from each
// [[servers]] entry's id, transport, url, command and timeout_seconds
// (internal/dispatch.New); a reload does not rebuild it. A policy that adds
// or removes a server or changes one of those fields would be in force
// (its policy_hash on every receipt) while calls still went to the old
// endpoints, so it is refused whole: restart chiod to apply it.
//
// Everything else in [[servers]] (the declared tools, their category,
// action, amount and currency pointers, delivery and retry_deadline_seconds)
// is read by the kernel from the policy in force on each call, so a reload
// applies it.
func serversReachedAlike(next, running []policy.Server) error {
	was := make(map[string]*policy.Server, len(running))
	for i := range running {
		was[running[i].ID] = &running[i]
	}
	is := make(map[string]bool, len(next))
	for i := range next {
		n := &next[i]
		is[n.ID] = true
		r := was[n.ID]
		if r == nil {
			return restartForServers(n.ID, "is new")
		}
		var fields []string
		if n.Transport != r.Transport {
			fields = append(fields, "transport")
		}
		if n.URL != r.URL {
			fields = append(fields, "url")
		}
		if !slices.Equal(n.Command, r.Command) {
			fields = append(fields, "command")
		}
		if n.TimeoutSeconds != r.TimeoutSeconds {
			fields = append(fields, "timeout_seconds")
		}
		if len(fields) > 0 {
			return restartForServers(n.ID, "changed its "+strings.Join(fields, ", "))
		}
	}
	for i := range running {
		if !is[running[i].ID] {
			return restartForServers(running[i].ID, "was removed")
		}
	}
	return nil
}

func restartForServers(id, what string) error {
	return fmt.Errorf("[[servers]] %q %s, but chiod connects to its servers only at start: "+
		"calls would still go where they went before; restart chiod to apply this policy", id, what)
}
