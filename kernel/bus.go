package kernel

// Events between replicas. A kernel publishes lifecycle events to its own
// subscribers (SSE streams, long-polls); when several kernels share a store,
// a client may wait on one replica for a call that another one decides. An
// EventRelay carries each event to the other replicas, which publish it to
// their subscribers with PublishRemote. Channels (Slack, email, webhook) are
// notified by the replica where the event happened, never again by the
// others, so a request is announced once.

// EventRelay sends this kernel's events to the other kernels sharing its
// store. Relay is called after the event's state is durable, must not
// block, and may drop an event only when it cannot keep up (subscribers
// then learn the state when their wait ends, as after being dropped for
// falling behind).
type EventRelay interface {
	Relay(Event)
}

// PublishRemote publishes an event that happened on another replica to this
// kernel's subscribers. Its state is already durable in the shared store.
// It is not relayed again and no channel is notified.
func (k *Kernel) PublishRemote(e Event) { k.events.publishLocal(e) }

// ResetSubscribers drops every subscriber, as if each had fallen behind:
// live views reconnect and long-polls re-read their call. A relay calls it
// after a gap in which other replicas' events may have been missed.
func (k *Kernel) ResetSubscribers() {
	b := k.events
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, subs := range b.pools {
		for ch := range subs {
			delete(subs, ch)
			drain(ch)
			close(ch)
		}
	}
}

// HasSubscribers reports whether any stream or long-poll is subscribed, so
// a relay need not fetch the state of remote events nobody waits for.
func (k *Kernel) HasSubscribers() bool {
	return k.Subscribers(PoolStream) > 0 || k.Subscribers(PoolWait) > 0
}
