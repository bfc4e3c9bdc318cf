//go:build !unix

package benchload

import "time"

// ProcessCPU is unknown here (0).
func ProcessCPU() time.Duration { return 0 }
