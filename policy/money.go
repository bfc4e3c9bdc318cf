package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Where a tool's money lives. A tool declares JSON Pointers into its
// arguments (amount = "/amount", currency = "/currency"); the kernel derives
// the amount from the arguments the tool will receive, so neither a
// threshold nor an intent's envelope rests on the agent's word alone.

// CheckCurrency accepts a currency code: 1 to MaxCurrencyLen printable
// ASCII characters, no spaces ("USD", "usd", "USDC"). Codes compare
// exactly as written. The kernel applies the same rule to the currency it
// reads from a call's arguments.
func CheckCurrency(s string) error {
	switch {
	case s == "":
		return errors.New("must not be empty")
	case len(s) > MaxCurrencyLen:
		return fmt.Errorf("is longer than %d characters", MaxCurrencyLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return errors.New("must be printable ASCII without spaces, like \"USD\"")
		}
	}
	return nil
}

// checkPointer accepts an RFC 6901 JSON Pointer to a member inside the
// arguments object ("/amount", "/payment/currency", "/items/0/price").
func checkPointer(p string) error {
	switch {
	case p == "" || p[0] != '/':
		return errors.New("must be a JSON Pointer into the arguments that starts with \"/\", like \"/amount\"")
	case len(p) > MaxPatternLen:
		return fmt.Errorf("is %d bytes; the limit is %d", len(p), MaxPatternLen)
	case !jsontext.Pointer(p).IsValid():
		return errors.New("is not a valid JSON Pointer (RFC 6901: write ~0 for ~ and ~1 for / inside a name)")
	}
	return nil
}

// toolAmount checks a tool's amount and currency pointers: both or neither,
// because an amount without its currency could be 200 USD or 200 BTC.
func (v *validator) toolAmount(base []string, t *Tool) {
	switch {
	case t.Amount == "" && t.Currency == "":
		return
	case v.probs.reported[pathKey(sub(base, "amount"))] || v.probs.reported[pathKey(sub(base, "currency"))]:
		return // the decoder refused one of them already
	case t.Amount == "":
		v.at(base, k("currency"), "tool %q declares currency but no amount: add amount = \"/amount\", the JSON Pointer to the amount in minor units", t.Name)
	case t.Currency == "":
		v.at(base, k("amount"), "tool %q declares amount but no currency: add currency = \"/currency\"; an amount without its currency could be 200 USD or 200 BTC", t.Name)
	}
	if t.Amount != "" {
		if err := checkPointer(t.Amount); err != nil {
			v.at(base, k("amount"), "amount = %q %v", t.Amount, err)
		}
	}
	if t.Currency != "" {
		if err := checkPointer(t.Currency); err != nil {
			v.at(base, k("currency"), "currency = %q %v", t.Currency, err)
		}
	}
}

// threshold checks require_approval_above and that every tool it can
// govern declares where its amount lives: the threshold compares the
// amount derived from the arguments, never the agent's intent alone.
func (v *validator) threshold(base []string, g *Grant) {
	t := g.Constraints.RequireApprovalAbove
	if t == nil {
		return
	}
	at := k("require_approval_above")
	switch {
	case t.ThresholdUnits < 0:
		v.at(base, append(at, "threshold_units"), "threshold_units must be 0 or more, not %d", t.ThresholdUnits)
	case t.ThresholdUnits > MaxThresholdUnits:
		v.at(base, append(at, "threshold_units"), "threshold_units = %d is more than the limit of 2^53", t.ThresholdUnits)
	}
	// Every amount carries its currency (tools must declare both
	// pointers), so a threshold without one would compare units across
	// currencies: refused, not guessed.
	if t.Currency == "" {
		v.at(base, at, "require_approval_above names no currency: every amount carries one, and a threshold without it "+
			"would let 199 BTC pass a limit of 200 meant in USD; write { threshold_units = %d, currency = \"USD\" }", t.ThresholdUnits)
	} else if err := CheckCurrency(t.Currency); err != nil {
		v.at(base, append(at, "currency"), "currency = %q %v", t.Currency, err)
	}
	s := v.servers[g.Server]
	if s == nil || g.Tool == "" || !validToolPattern(g.Tool) {
		return // grantTarget reports these
	}
	if !strings.ContainsAny(g.Tool, globMeta) {
		tool := declaredTool(s, g.Tool)
		if tool != nil && tool.Amount == "" {
			v.at(base, at, "grant %q has require_approval_above, but tool %q declares no amount: "+
				"add amount = \"/amount\" and currency = \"/currency\" (JSON Pointers into its arguments) to its [[servers.tools]] entry",
				g.ID, g.Tool)
		}
		return
	}
	// A pattern grant: every declared tool it covers must declare its
	// amount. (An undeclared tool it matches at run time asks a human.)
	var missing []string
	for i := range s.Tools {
		if ok, _ := path.Match(g.Tool, s.Tools[i].Name); ok && s.Tools[i].Amount == "" {
			missing = append(missing, fmt.Sprintf("%q", s.Tools[i].Name))
		}
	}
	if len(missing) > 0 {
		if len(missing) > 5 {
			missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
		}
		v.at(base, at, "grant %q has require_approval_above and covers tool = %q, but these tools of server %q declare no amount: %s; "+
			"add amount and currency (JSON Pointers into their arguments) to each, or narrow the grant's tool pattern",
			g.ID, g.Tool, s.ID, strings.Join(missing, ", "))
	}
}

// declaredTool returns the tool a server declares under this name, or for
// a builtin server its builtin definition; nil when there is none.
func declaredTool(s *Server, name string) *Tool {
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	if s.Transport == TransportBuiltin {
		return builtinTool(name)
	}
	return nil
}
