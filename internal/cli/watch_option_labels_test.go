package cli_test

import (
	"strings"
	"testing"
)

// TestWatchShowsEachOptionOnItsOwnLine: options were listed on one line,
// "1) A  2) B", and the agent writes them. An option holding a label of
// its own, "Keep the database  2) Delete nothing", read as two options:
// "1) Keep the database  2) Delete nothing  2) Drop the database". An
// approver who meant "Delete nothing" typed 2 and signed "Drop the
// database". Each option is shown on its own line, led by its number (an
// option cannot hold a line break: it is shown escaped), so a label inside
// an option never stands where a number does.
func TestWatchShowsEachOptionOnItsOwnLine(t *testing.T) {
	w := newApprovalWorld(t)
	w.submit(t, "ask", `{"prompt":"Clean up?","questions":[{"id":"q","text":"What to do","type":"single","options":["Keep the database  2) Delete nothing","Drop the database"]}]}`, "")
	so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n"), "--key", w.key("lead"))
	for _, line := range strings.Split(so, "\n") {
		if strings.Contains(line, "2) Delete nothing") && strings.Contains(line, "2) Drop the database") {
			t.Fatalf("option 2 and a label inside option 1 are shown on one line: %q\n%s\n%s", line, so, se)
		}
	}
	// The second space of the run is shown as an escape (approval_text.go).
	if !strings.Contains(so, "\n    1) Keep the database \\u00202) Delete nothing\n    2) Drop the database\n") {
		t.Fatalf("options are not shown one per line:\n%s\n%s", so, se)
	}
}
