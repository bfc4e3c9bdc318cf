package kernel

import "context"

// untilClose is ctx, also cancelled when Close begins. A delivery attempt
// runs under it: chiod calls Close once the shutdown's grace period has
// ended, and a tool that still has not answered (a hung HTTP tool server,
// a stdio server that never replies) is then cut off. Its call stays in
// flight for the next start (deliverMarkedAfter) and its caller gets that
// answer, instead of a connection cut without one when chiod exits. The
// returned cancel must be called when the attempt ends.
func (k *Kernel) untilClose(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	// A callback on k.stopped, not a goroutine per attempt: this is on
	// every call's path.
	unhook := context.AfterFunc(k.stopped, cancel)
	return ctx, func() { unhook(); cancel() }
}
