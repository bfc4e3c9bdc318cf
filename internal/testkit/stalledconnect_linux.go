package testkit

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StalledConnectAddr is the address ("127.0.0.1:port") of a loopback
// listener whose TCP connects never complete: it listens with a backlog of
// 0 and never accepts, and its accept queue is filled first, so Linux drops
// every further SYN (the client keeps retransmitting it) until the test
// ends. Nothing of a request can reach it: a connect that never completed
// wrote no byte. Linux only: other systems answer an overflowing backlog
// differently. The SDK's and chio call's "not sent" tests use it.
func StalledConnectAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the accept queue until a connect no longer completes.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
		if i > 64 {
			t.Fatal("the listener's backlog never filled")
		}
	}
	return addr
}
