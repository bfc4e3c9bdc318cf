package boltstore

const (
	// QueueCapacity bounds pending Update calls before new ones fail closed.
	QueueCapacity = 16384
	// MaxBatch bounds how many Update calls share one commit, so one commit's
	// latency stays bounded under overload.
	MaxBatch = 4096
)
