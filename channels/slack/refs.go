package slack

// Message references: where each request's message is, and what it shows.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/atomicfile"
)

// state orders what a message shows: a final state beats any pending one;
// among pending ones a higher tier, then more votes, is later.
type state struct {
	Final bool `json:"final"`
	Tier  int  `json:"tier"`
	Votes int  `json:"votes"`
}

func stateOf(r *approval.Request) state {
	return state{Final: r.Status != approval.StatusPending, Tier: r.Tier, Votes: len(r.Votes)}
}

func (s state) after(o state) bool {
	switch {
	case o.Final:
		return false
	case s.Final:
		return true
	case s.Tier != o.Tier:
		return s.Tier > o.Tier
	}
	return s.Votes > o.Votes
}

// msgRef is where a request's message is, and what it shows. TS is empty
// for a tombstone and for a post under way.
type msgRef struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	state
	UpdatedAt int64 `json:"updated_at"` // unix s
	// Posting: a chat.postMessage was sent and its answer not recorded
	// (lost, or chiod stopped): Slack may hold a message chiod cannot
	// update. Reposted: the message at TS was posted after such a post.
	Posting  bool `json:"posting,omitempty"`
	Reposted bool `json:"reposted,omitempty"`
}

// refStore keeps msgRefs in memory and, with a data dir, one file per
// approval in dir.
type refStore struct {
	dir string
	mu  sync.Mutex
	mem map[string]msgRef
}

func openRefStore(dataDir string, now time.Time) (*refStore, error) {
	s := &refStore{mem: map[string]msgRef{}}
	if dataDir == "" {
		return s, nil
	}
	s.dir = filepath.Join(dataDir, "slack", "messages")
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("slack: message store: %w", err)
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("slack: message store: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !validApprovalID(id) {
			continue
		}
		ref, ok, err := s.read(id)
		if err == nil && ok && ref.Final && now.Sub(time.Unix(ref.UpdatedAt, 0)) > MessageRetention {
			_ = os.Remove(filepath.Join(s.dir, name))
		}
	}
	return s, nil
}

func (s *refStore) read(id string) (msgRef, bool, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return msgRef{}, false, nil
	}
	if err != nil {
		return msgRef{}, false, fmt.Errorf("slack: message store: %w", err)
	}
	var ref msgRef
	if err := json.Unmarshal(b, &ref); err != nil {
		// Torn by a crash (a file of an older chiod, written without
		// fsync): whatever it said, a message may have been posted that
		// chiod cannot update. Refusing it failed every delivery of the
		// request; it is posted again, with repostedNotice.
		return msgRef{Posting: true}, true, nil
	}
	return ref, true, nil
}

func (s *refStore) get(id string) (msgRef, bool, error) {
	s.mu.Lock()
	ref, ok := s.mem[id]
	s.mu.Unlock()
	if ok || s.dir == "" {
		return ref, ok, nil
	}
	ref, ok, err := s.read(id)
	// A resolved request's reference stays on disk only (put): cached
	// here, each late delivery of a resolved request's event would leave
	// it in memory for the life of the process.
	if ok && !ref.Final {
		s.mu.Lock()
		s.mem[id] = ref
		s.mu.Unlock()
	}
	return ref, ok, err
}

// restore puts back what was stored for id before a post Slack refused:
// prev, or nothing when had is false.
func (s *refStore) restore(id string, prev msgRef, had bool) error {
	if had {
		return s.put(id, prev)
	}
	if s.dir != "" {
		if err := os.Remove(filepath.Join(s.dir, id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("slack: message store: %w", err)
		}
	}
	s.mu.Lock()
	delete(s.mem, id)
	s.mu.Unlock()
	return nil
}

func (s *refStore) put(id string, ref msgRef) error {
	if s.dir != "" {
		b, err := json.Marshal(ref)
		if err != nil {
			return err
		}
		// Durable before the post it announces: fsync, rename, fsync.
		if err := atomicfile.Write(filepath.Join(s.dir, id+".json"), b); err != nil {
			return fmt.Errorf("slack: message store: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref.Final {
		delete(s.mem, id) // on disk (or gone, in memory-only mode)
		if s.dir == "" {
			s.mem[id] = ref // memory-only: the tombstone must stay
		}
		return nil
	}
	s.mem[id] = ref
	return nil
}
