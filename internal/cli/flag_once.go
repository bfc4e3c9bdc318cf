package cli

import (
	"errors"
	"flag"
)

// A flag that takes one value, given twice, is refused. The flag package
// keeps the last value and drops the others without a word: `receipt
// verify --file EXPORT --checkpoint cp9.json --checkpoint cp7.json`
// checked the export against cp7.json alone and reported OK for an export
// cut back to 7, though the auditor had also named cp9.json. Repeatable
// flags (multi: --meta, --grant) take every value, and the global flags
// (--url, --output) may still be given before the command and again
// after it, the later winning (cli.go).

// errGivenTwice is the Set error of a one-value flag given again.
var errGivenTwice = errors.New("given more than once; it takes one value")

// onceValue wraps a one-value flag for one parse.
type onceValue struct {
	flag.Value
	set bool
}

func (o *onceValue) Set(v string) error {
	if o.set {
		return errGivenTwice
	}
	o.set = true
	return o.Value.Set(v)
}

// IsBoolFlag keeps a boolean flag usable without a value (--all).
func (o *onceValue) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// refuseRepeats wraps fs's one-value flags until the returned func puts
// them back (help names each flag's kind from its own Value).
func refuseRepeats(fs *flag.FlagSet) (restore func()) {
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if _, repeatable := f.Value.(*multi); !repeatable && !globalFlags[f.Name] {
			orig[f] = f.Value
			f.Value = &onceValue{Value: f.Value}
		}
	})
	return func() {
		for f, v := range orig {
			f.Value = v
		}
	}
}
