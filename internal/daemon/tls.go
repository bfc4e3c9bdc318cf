package daemon

import (
	"crypto/tls"
	"fmt"

	"github.com/chiokernel/chio/policy"
)

// loadTLS reads [kernel] tls_cert_file and tls_key_file (nil when chiod
// serves plain HTTP). They are read at start-up, before anything is
// written, so that a missing or broken certificate refuses the start
// instead of failing once chiod has said it is serving.
func loadTLS(k policy.Kernel) (*tls.Config, error) {
	if k.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(k.TLSCertFile, k.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("[kernel] tls_cert_file / tls_key_file: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}
