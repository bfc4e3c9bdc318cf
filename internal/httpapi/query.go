package httpapi

// Strict query strings. net/http's r.URL.Query() drops a pair it cannot
// parse (a bad %-escape, a ';' separator) and routes read only the names
// they know, so a misspelt, mangled or repeated filter used to be ignored:
// GET /v1/receipts?decison=deny answered with every receipt, and an
// auditor's script counting denies counted them all. Every route that
// takes a query now parses it here, and anything it would ignore is a 400
// naming it; the reading routes that take none (an export, a receipt and
// its proof, an approval, the event stream) refuse any (noQuery), and so
// does every route that acts (queryless): POST /v1/calls?wait=60 answered
// at once with the call parked, and a cancel or vote with a query looked
// as if the query applied.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// filterParams are the receipt list filters (FilterFromQuery); meta may
// repeat (every one must match), the others may not.
var filterParams = []string{"decision", "guard", "server", "tool", "subject", "request_id", "since", "until"}

// strictQuery parses r's query, refusing a malformed one, a name not in
// single or multi, and a name of single given more than once.
func strictQuery(r *http.Request, single []string, multi ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string: " + err.Error())
	}
	for name, vs := range q {
		switch {
		case slices.Contains(multi, name):
		case !slices.Contains(single, name):
			known := append(slices.Clone(single), multi...)
			slices.Sort(known)
			takes := "takes " + strings.Join(known, ", ")
			if len(known) == 0 {
				takes = "takes no query parameters"
			}
			return nil, badRequest(fmt.Sprintf("unknown query parameter %s (this route %s)", quoteParam(name), takes))
		case len(vs) > 1:
			return nil, badRequest(fmt.Sprintf("query parameter %s given %d times; it takes one value", quoteParam(name), len(vs)))
		}
	}
	return q, nil
}

// noQuery refuses any query on a route that takes none, before the route
// does anything (an export signs a checkpoint first): answered as if it
// were not there, ?since= or ?decision= on an export, ?size= on a proof or
// ?approver= on the event stream would look applied.
func noQuery(w http.ResponseWriter, r *http.Request) bool {
	if _, err := strictQuery(r, nil); err != nil {
		writeErr(w, err)
		return false
	}
	return true
}

// queryless wraps a route that takes no query: one given is refused
// (noQuery) before the route reads its body, authenticates or acts.
func queryless(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if noQuery(w, r) {
			h(w, r)
		}
	}
}

// quoteParam quotes a client's parameter name for a message, cut to a
// length worth reading (the URL's own limit bounds it anyway).
func quoteParam(name string) string {
	if r := []rune(name); len(r) > 64 {
		name = string(r[:64]) + "…"
	}
	return fmt.Sprintf("%q", name)
}
