package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
)

// batchScope says, in words, everything a standing approval covers and
// limits: what the approver signed, said back whole (`chio approval batch
// create`). A pattern ending in "*" takes every name that starts so
// (approval.MatchPattern), which "demo/issue_*" alone does not say to
// everyone; the amount limits are on what each call's arguments move (the
// tool's declared amount, in its units), and a call with no declared
// amount, or in another currency, is not covered when they are set.
func batchScope(b *approval.BatchToken) string {
	var s strings.Builder
	if b.Subject != "" {
		fmt.Fprintf(&s, "  calls by agent %s\n", shown(b.Subject))
	} else {
		s.WriteString("  calls by any agent\n")
	}
	fmt.Fprintf(&s, "  to: %s, on %s\n", patternWords("tool", b.ToolPattern), patternWords("server", b.ServerPattern))
	fmt.Fprintf(&s, "  from %s until %s\n", time.Unix(b.NotBefore, 0).UTC().Format(time.RFC3339), time.Unix(b.NotAfter, 0).UTC().Format(time.RFC3339))
	if b.MaxCalls != nil {
		fmt.Fprintf(&s, "  at most %d calls\n", *b.MaxCalls)
	} else {
		s.WriteString("  no limit on the number of calls\n")
	}
	switch {
	case b.MaxAmountPerCall == nil && b.MaxTotalAmount == nil:
		s.WriteString("  no amount limit\n")
	default:
		if a := b.MaxAmountPerCall; a != nil {
			fmt.Fprintf(&s, "  each moving at most %d %s\n", a.Units, shown(a.Currency))
		}
		if a := b.MaxTotalAmount; a != nil {
			fmt.Fprintf(&s, "  at most %d %s in all\n", a.Units, shown(a.Currency))
		}
		s.WriteString("  (amounts as each call's arguments move them, in the tool's declared units; " +
			"a call with no declared amount, or in another currency, is not covered)\n")
	}
	return s.String()
}

// patternWords reads an exact, "*" or "prefix*" pattern of kind (tool,
// server) as words.
func patternWords(kind, p string) string {
	switch prefix, isPrefix := strings.CutSuffix(p, "*"); {
	case p == "*":
		return "every " + kind
	case isPrefix:
		return fmt.Sprintf("every %s whose name starts with %q", kind, prefix)
	}
	return kind + " " + shown(p)
}
