package cli

import "flag"

// approvalListFilters are the filter flags of `chio approval list`.
var approvalListFilters = map[string]bool{"subject": true, "server": true, "tool": true}

// refuseEmptyApprovalFilter refuses a filter of `chio approval list` given
// an empty value: dropped as not given, `--tool "$TOOL"` with TOOL unset
// listed the pending requests of every tool, and a script that approves
// what it lists would have approved them all (as receipt list's
// refuseEmpty, receipts.go).
func refuseEmptyApprovalFilter(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if err == nil && approvalListFilters[fl.Name] && fl.Value.String() == "" {
			err = usageErr("approval list", "--%s is empty: give it a value or leave it out (empty, it would filter nothing)", fl.Name)
		}
	})
	return err
}
