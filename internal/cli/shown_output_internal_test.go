package cli

import "testing"

// shownOutput keeps the tool's bytes but for the characters it escapes
// inside strings (an escaped quote does not end a string) and a bare
// carriage return between tokens, which would move the cursor back over
// the line; a CR LF line end stays.
func TestShownOutputKeepsTheBytesItNeedNotEscape(t *testing.T) {
	for in, want := range map[string]string{
		"{\"a\": [1, 2],\r\n \"b\":\t\"x\"}":    "{\"a\": [1, 2],\r\n \"b\":\t\"x\"}",
		"{\"a\":\"q\\\"\u202e\\\\\",\r\"b\":1}": "{\"a\":\"q\\\"\\u202e\\\\\",\"b\":1}",
		"[\"\U000F0001 \\u202e \u0085\"]":       "[\"\\udb80\\udc01 \\u202e \\u0085\"]",
		"not json \u202e":                       "not json \\u202e",
	} {
		if got := shownOutput([]byte(in)); got != want {
			t.Errorf("shownOutput(%q) = %q, want %q", in, got, want)
		}
	}
}
