package daemon

import (
	"crypto/tls"
	"fmt"

	"github.com/chiokernel/chio/internal/secretfile"
	"github.com/chiokernel/chio/policy"
)

// loadTLS reads [kernel] tls_cert_file and tls_key_file (nil when chiod
// serves plain HTTP). They are read at start-up, before anything is
// written, so that a missing or broken certificate refuses the start
// instead of failing once chiod has said it is serving. The private key is
// read as the kernel key is (secretfile.Read): whoever can read it can pose
// as chiod and read the tokens clients send, so one that other users may
// read or change refuses the start.
func loadTLS(k policy.Kernel) (*tls.Config, error) {
	if k.TLSCertFile == "" {
		return nil, nil
	}
	certPEM, err := secretfile.ReadRegular(k.TLSCertFile) // a FIFO is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("[kernel] tls_cert_file: %w", err)
	}
	keyPEM, err := secretfile.Read(k.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("[kernel] tls_key_file: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("[kernel] tls_cert_file / tls_key_file: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}
