package kernel

// WaitSettles waits for the settle commits of calls answered before them
// (settling.go), so tests can count store updates deterministically.
func (k *Kernel) WaitSettles() { k.settles.Wait() }
