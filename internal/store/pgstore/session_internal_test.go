package pgstore

import (
	"testing"
	"time"
)

// Every connection asks the server to end a vanished replica's session
// (session.go); a setting the DSN makes itself is left as it is.
func TestSessionParamsBoundIdleTransactionsAndLeaveTheDSNs(t *testing.T) {
	params := map[string]string{"tcp_user_timeout": "30000"}
	sessionParams(params, 5*time.Second)
	want := map[string]string{
		"idle_in_transaction_session_timeout": "5000",
		"tcp_user_timeout":                    "30000", // the DSN's
		"tcp_keepalives_idle":                 "5",
		"tcp_keepalives_interval":             "2",
		"tcp_keepalives_count":                "3",
	}
	for k, v := range want {
		if params[k] != v {
			t.Errorf("%s = %q, want %q", k, params[k], v)
		}
	}
}
