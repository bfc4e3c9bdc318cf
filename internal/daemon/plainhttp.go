package daemon

import (
	"log/slog"
	"net"
)

// warnPlainHTTP logs a warning when chiod serves plain HTTP (no [kernel]
// tls_cert_file) on an address other machines may reach: the bearer
// tokens, approval tokens and session cookies its clients present then
// cross the network in clear. It does not refuse the start: chiod behind a
// TLS-terminating proxy is a sound deployment. Loopback is not warned of.
func warnPlainHTTP(log *slog.Logger, addr net.Addr, tls bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if tls || (ok && tcp.IP.IsLoopback()) {
		return
	}
	log.Warn("serving plain HTTP beyond loopback: bearer tokens, approval tokens and session cookies cross the network in clear; "+
		"set [kernel] tls_cert_file and tls_key_file, or listen on loopback behind a TLS-terminating proxy", "addr", addr.String())
}
