package daemon

import (
	"os"
	"testing"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
