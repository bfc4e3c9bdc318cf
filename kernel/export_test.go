package kernel

// WaitSettles waits for the settle commits of calls answered before them
// (settling.go), so tests can count store updates deterministically.
func (k *Kernel) WaitSettles() { k.settles.Wait() }

// PendingKey and PendingCountedKey name the per-agent pending counters
// (pending_cap.go), for tests that stage a store written by an older build.
var PendingKey = pendingKey

const PendingCountedKey = pendingCountedKey
