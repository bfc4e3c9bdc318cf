package pgtest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// LoseAnswer returns a DSN that reaches the server of dsn through a
// loopback proxy which loses one answer: on the first connection whose
// client sends a message containing marker, the server's reply to that
// statement's execution (from its first DataRow, CommandComplete or
// BindComplete through the ReadyForQuery that follows) is withheld, and
// both connections are then cut. The statement has run to the end of its
// transaction (PostgreSQL sends ReadyForQuery after the implicit commit),
// but its client sees only a broken connection: an INSERT that committed
// and whose answer was lost. dsn must not use TLS (sslmode=disable).
func LoseAnswer(t testing.TB, dsn, marker string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("LoseAnswer: %v", err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("LoseAnswer: %v", err)
	}
	var (
		once sync.Once
		wg   sync.WaitGroup
	)
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			marked := make(chan struct{})
			wg.Add(2)
			go func() { // client to server: watch for marker
				defer wg.Done()
				defer server.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := client.Read(buf)
					if n > 0 && bytes.Contains(buf[:n], []byte(marker)) {
						// Before the server can answer: the reader below
						// knows which answer is the one to lose.
						once.Do(func() { close(marked) })
					}
					if n > 0 {
						if _, werr := server.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { // server to client, one message at a time
				defer wg.Done()
				defer client.Close()
				defer server.Close()
				withholding := false
				for {
					typ, msg, err := readMessage(server)
					if err != nil {
						return
					}
					select {
					case <-marked:
						switch typ {
						case 'D', 'C', '2': // the execution's answer begins
							withholding = true
						case 'Z':
							if withholding {
								return // committed; the client never hears of it
							}
						}
					default:
					}
					if withholding {
						continue
					}
					if _, err := client.Write(msg); err != nil {
						return
					}
				}
			}()
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

// readMessage reads one backend message (type byte, int32 length
// including itself, body) and returns its type and raw bytes.
func readMessage(r io.Reader) (byte, []byte, error) {
	head := make([]byte, 5)
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 {
		return 0, nil, io.ErrUnexpectedEOF
	}
	msg := make([]byte, 5+int(n)-4)
	copy(msg, head)
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return head[0], msg, nil
}
