package cli

import (
	"flag"
	"slices"
)

// refuseEmptyFlags refuses any of the named flags given an empty value,
// where empty would read as "not given": `chio approval list --tool
// "$TOOL"` with TOOL unset listed the pending requests of every tool (for
// a script to approve them all), and `chio approval batch create --subject
// "$AGENT" --max-total "$CAP"` signed a standing approval for any agent
// with no amount limit; `chio approval approve --amend "$ARGS"` approved
// the call unamended; `chio receipt verify --all --kernel-key "$KEY"`
// trusted the server's key.
func refuseEmptyFlags(fs *flag.FlagSet, cmd string, names ...string) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if err == nil && slices.Contains(names, fl.Name) && fl.Value.String() == "" {
			err = usageErr(cmd, "--%s is empty: give it a value or leave it out (empty, it would be taken for none)", fl.Name)
		}
	})
	return err
}
