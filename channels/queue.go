package channels

import (
	"sync"

	"github.com/chiokernel/chio/approval"
)

// Shares of one channel's queue. An agent parking calls faster than a slow
// channel (Slack: ~1 message/s) drains them must not take the slots that
// other agents' requests need: each subject (the agent whose call is parked)
// may hold at most max(minSubjectJobs, QueueSize/subjectShare) queued jobs
// and QueueBytes/subjectShare bytes of them. A subject with nothing queued
// may always queue one job, whatever its size, while the channel's totals
// allow it.
const (
	subjectShare   = 8
	minSubjectJobs = 16
)

// Reasons push refuses a job, written into the recorded failure.
const (
	refusedFull  = "notification queue full"
	refusedShare = "notification queue full for this agent (its share of the channel's queue is taken by its earlier requests)"
)

// queue is one channel's pending jobs: a FIFO per subject, served
// round-robin across subjects, bounded in jobs and in bytes in total and
// per subject. It never blocks: push refuses what does not fit.
type queue struct {
	maxJobs, shareJobs   int
	maxBytes, shareBytes int64

	mu       sync.Mutex
	jobs     int   // queued jobs, all subjects
	bytes    int64 // their estimated size (jobBytes)
	subjects map[string]*subjectJobs
	turns    []string // subjects with queued jobs; the front one is served next
	// ready holds one token per queued job, sent under mu with the push, so
	// a worker that takes a token always finds a job to pop. Its capacity is
	// maxJobs, which the tokens never exceed: the send cannot block.
	ready chan struct{}
}

type subjectJobs struct {
	fifo  []job
	bytes int64
}

func newQueue(maxJobs int, maxBytes int64) *queue {
	return &queue{
		maxJobs: maxJobs, shareJobs: min(maxJobs, max(minSubjectJobs, maxJobs/subjectShare)),
		maxBytes: maxBytes, shareBytes: maxBytes / subjectShare,
		subjects: map[string]*subjectJobs{}, ready: make(chan struct{}, maxJobs),
	}
}

// push queues j behind its subject's earlier jobs, or returns why not
// (refusedFull, refusedShare) and changes nothing.
func (q *queue) push(j job) (refused string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.jobs >= q.maxJobs || q.bytes+j.bytes > q.maxBytes {
		return refusedFull
	}
	s := q.subjects[j.subject]
	if s != nil && (len(s.fifo) >= q.shareJobs || s.bytes+j.bytes > q.shareBytes) {
		return refusedShare // only this subject's own notification is dropped
	}
	if s == nil {
		s = &subjectJobs{}
		q.subjects[j.subject] = s
		q.turns = append(q.turns, j.subject)
	}
	s.fifo = append(s.fifo, j)
	s.bytes += j.bytes
	q.jobs++
	q.bytes += j.bytes
	q.ready <- struct{}{}
	return ""
}

// pop takes the oldest job of the subject whose turn it is; that subject
// then goes to the back of the turns if it has more.
func (q *queue) pop() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.turns) == 0 {
		return job{}, false
	}
	subject := q.turns[0]
	q.turns[0] = ""
	q.turns = q.turns[1:]
	s := q.subjects[subject]
	j := s.fifo[0]
	s.fifo[0] = job{} // the backing array must not pin the request
	s.fifo = s.fifo[1:]
	s.bytes -= j.bytes
	q.jobs--
	q.bytes -= j.bytes
	if len(s.fifo) == 0 {
		delete(q.subjects, subject)
	} else {
		q.turns = append(q.turns, subject)
	}
	return j, true
}

// drain empties the queue, returning what it held (for Close to report).
func (q *queue) drain() []job {
	var all []job
	for j, ok := q.pop(); ok; j, ok = q.pop() {
		all = append(all, j)
	}
	return all
}

// Fixed allowances in jobBytes for what a request holds besides its
// variable-length text: the struct, its ids, hashes, times and slice headers.
const (
	requestOverhead = 1024
	itemOverhead    = 64 // per string in a list, per vote
)

// jobBytes estimates the heap a queued job pins: its request's
// variable-length fields (exposed arguments up to kernel.MaxArgumentsBytes,
// questions, summary, intent, votes' tokens…) plus fixed allowances. The
// request is shared with other channels' jobs, so summing over channels
// overcounts, which errs on the safe side.
func jobBytes(r *approval.Request) int64 {
	n := requestOverhead + len(r.Arguments) + len(r.Questions) + len(r.GovernedIntent) +
		len(r.Summary) + len(r.SubjectLabel) + len(r.CallbackHint)
	for _, list := range [][]string{r.TrustedApprovers, r.TriggeredBy, r.Channels, r.Requesters, r.NotifyErrors} {
		for _, s := range list {
			n += itemOverhead + len(s)
		}
	}
	for _, v := range r.Votes {
		n += itemOverhead + len(v.Approver) + len(v.DisplayName) + len(v.TokenID) + len(v.Note) + len(v.Channel) + len(v.Token)
	}
	if res := r.Resolution; res != nil {
		n += itemOverhead + len(res.Reason) + len(res.Guard) + len(res.DecidedBy) + len(res.ToolError)
	}
	return int64(n)
}
