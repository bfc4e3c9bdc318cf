package mcpgw

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
)

func TestGatewayRefusesIntegerIDsTheSDKRounds(t *testing.T) {
	w := newRawWorld(t, &rawUp{tools: benignPay}, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.RefusesRoundedIDs(t, w.URL+Path, bearer)
}

func TestGatewayRefusesBatchReusingID(t *testing.T) {
	w := newRawWorld(t, &rawUp{tools: benignPay}, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.RefusesBatchReusingID(t, w.URL+Path, bearer)
}
