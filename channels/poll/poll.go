// Package poll is the poll channel. It pushes nothing: an approver (or a
// script) polls GET /approvals/pending, served by chiod's HTTP API from the
// durable store, and answers with a signed token through the respond path
// like every other approver.
//
// Channel exists so that naming "poll" in a policy is valid on the hub and
// visible in /metrics (every notification counts as "ok", meaning "the
// request is in the store where pollers will find it", nothing more).
package poll

import (
	"context"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
)

// Name is the channel name used in policies and metrics.
const Name = channels.NamePoll

// Path is the HTTP API route pollers read.
const Path = "/approvals/pending"

// Channel is the no-op poll channel.
type Channel struct{}

var _ channels.Channel = Channel{}

// New returns the poll channel.
func New() Channel { return Channel{} }

// Name implements channels.Channel.
func (Channel) Name() string { return Name }

// Deliver implements channels.Channel: it does nothing and returns nil; the
// request is already durable and listed at Path.
func (Channel) Deliver(context.Context, string, *approval.Request) error { return nil }
