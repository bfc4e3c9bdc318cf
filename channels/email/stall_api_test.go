package email

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// Through chiod's own API server (the email handler mounted as daemon.Run
// mounts it, behind HandleAnswers' writer), a stalled POST body is still
// cut at the deadline: the read deadline reaches the connection.
func TestStalledBodyIsCutThroughTheAPIServer(t *testing.T) {
	const limit = 200 * time.Millisecond
	lead, _ := keys.Generate(nil)
	now := time.Now()
	c := testChannel(t, &now)
	c.o.BodyReadTimeout = limit
	w := testkit.NewWorld(t, testkit.Options{
		PolicyTOML: fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")),
		Server:     "pay", Grants: []string{"deploys"}, Serve: true,
		BeforeServe: func(w *testkit.World) { w.API.HandleAnswers(LinkPath, c.Handler(w.Kernel)) }})
	c.o.Policy = w.Kernel.Policy
	path := LinkPath + c.Link("ar-1", lead.Public().String(), now.Add(time.Hour))
	conn, err := net.Dial("tcp", w.Srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{\"token\":", path)
	conn.SetReadDeadline(time.Now().Add(limit + 5*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the server still waits for the stalled body after %s: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
