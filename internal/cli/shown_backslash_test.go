package cli

import "testing"

// shown writes what a terminal would act on as an escape (a line break as
// \u000a), but wrote a backslash as it is: an argument holding the text
// "\u000a" (six characters, which a tool receives as such) printed exactly
// as one holding a line break, so an approver could not tell which the
// tool gets. A backslash that would read as the start of an escape is
// written \\.
func TestShownTellsALiteralEscapeFromAnEscapedRune(t *testing.T) {
	for _, c := range []struct{ literal, real string }{
		{`a\u000ab`, "a\nb"},
		{`x\u0020 y`, "x  y"},
		{`\U000f0000`, "\U000F0000"},
		{`\xff`, "\xff"},
	} {
		if shown(c.literal) == shown(c.real) {
			t.Fatalf("shown(%q) and shown(%q) both print %s: the approver cannot tell them apart", c.literal, c.real, shown(c.real))
		}
	}
	if got := shown(`C:\temp\new`); got != `C:\temp\new` {
		t.Fatalf("a backslash that reads as no escape is kept as it is: %s", got)
	}
}
