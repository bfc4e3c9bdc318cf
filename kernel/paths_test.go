package kernel

import (
	"encoding/json"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// pathCall is a call with one path argument under the given constraints.
func pathCall(c policy.Constraints, arg string) *Request {
	b, _ := json.Marshal(map[string]string{"path": arg})
	return req(grantWith(c), string(b), nil)
}

var etc = policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}

// The measured attacks: each of these reached the tool under
// forbidden_paths = ["/etc/**"].
func TestForbiddenPathsNormalize(t *testing.T) {
	folded := policy.Constraints{ForbiddenPaths: []string{"/etc/**"}, ForbiddenPathsCaseInsensitive: true}
	cases := []struct {
		name   string
		c      policy.Constraints
		arg    string
		want   Verdict
		reason string
	}{
		{"plain", etc, "/etc/passwd", Deny, `matches "/etc/**"`},
		{"proc self root alias", etc, "/proc/self/root/etc/passwd", Deny, `(read as "/etc/passwd")`},
		{"proc pid root alias", etc, "/proc/1/root/etc/shadow", Deny, "matches"},
		{"proc thread-self root alias", etc, "/proc/thread-self/root/etc/passwd", Deny, "matches"},
		{"proc task root alias", etc, "/proc/self/task/42/root/etc/passwd", Deny, "matches"},
		{"nested root aliases", etc, "/proc/self/root/proc/1/root/etc/passwd", Deny, "matches"},
		{"the alias itself may be forbidden", policy.Constraints{ForbiddenPaths: []string{"/proc/**"}}, "/proc/self/root/tmp/x", Deny, `matches "/proc/**"`},
		{"file URL", etc, "file:///etc/passwd", Deny, `(read as "/etc/passwd")`},
		{"file URL, one slash", etc, "file:/etc/passwd", Deny, "matches"},
		{"file URL, localhost", etc, "file://localhost/etc/passwd", Deny, "matches"},
		{"file URL, upper case scheme", etc, "FILE:///etc/passwd", Deny, "matches"},
		{"file URL, percent-encoded", etc, "file:///%65tc/passwd", Deny, "matches"},
		{"leading space", etc, " /etc/passwd", Deny, "a path has leading or trailing whitespace"},
		{"leading tab", etc, "\t/etc/passwd", Deny, "a path has leading or trailing whitespace"},
		{"trailing space", etc, "/etc/passwd ", Deny, "a path has leading or trailing whitespace"},
		{"interior NUL", etc, "/etc\u0000/passwd", Deny, "contains a NUL byte"},
		{"NUL before an allowed suffix", etc, "/tmp/x\u0000/../../etc/passwd", Deny, "NUL"},
		{"control character", etc, "/et\u0001c/passwd", Deny, "contains control characters"},
		{"percent-encoded", etc, "%2Fetc%2Fpasswd", Deny, `(read as "/etc/passwd")`},
		{"percent-encoded lower case", etc, "%2fetc%2fpasswd", Deny, "matches"},
		{"double percent-encoded", etc, "%252Fetc%252Fpasswd", Deny, "matches"},
		{"percent-encoded dots", etc, "/tmp/%2e%2e/etc/passwd", Deny, "matches"},
		{"percent-encoded with a stray %", etc, "%2Fetc%2Fpasswd%zz", Deny, "matches"},
		{"percent-encoded NUL", etc, "/etc/passwd%00.txt", Deny, "NUL"},
		{"percent-encoded too deep", etc, "%25252525252Fetc", Deny, "percent-encoded more than 3 times"},
		{"upper case, case-insensitive", folded, "/ETC/passwd", Deny, `matches "/etc/**"`},
		{"upper case pattern, case-insensitive", policy.Constraints{ForbiddenPaths: []string{"/ETC/**"}, ForbiddenPathsCaseInsensitive: true}, "/etc/passwd", Deny, "matches"},
		// Case-insensitive means Unicode case folding (strings.EqualFold),
		// not lower-casing: "ſ" (U+017F) is lower case and folds to "s".
		{"long s, case-insensitive", policy.Constraints{ForbiddenPaths: []string{"/etc/passwd"}, ForbiddenPathsCaseInsensitive: true}, "/etc/pa\u017fswd", Deny, "matches"},
		{"upper case and long s, case-insensitive", policy.Constraints{ForbiddenPaths: []string{"/home/*/.ssh/**"}, ForbiddenPathsCaseInsensitive: true}, "/HOME/u/.\u017f\u017fh/id_rsa", Deny, "matches"},
		{"Kelvin sign, case-insensitive", policy.Constraints{ForbiddenPaths: []string{"/srv/keys/**"}, ForbiddenPathsCaseInsensitive: true}, "/srv/\u212aeys/a", Deny, "matches"},
		{"dot-dot", etc, "/tmp/../etc/passwd", Deny, "matches"},
		{"dot segments", etc, "/./etc/./passwd", Deny, "matches"},
		{"repeated slashes", etc, "//etc///passwd", Deny, "matches"},
		{"backslashes", etc, `\etc\passwd`, Deny, "matches"},
		{"mixed separators and dot-dot", etc, `/tmp\..\etc/passwd`, Deny, "matches"},
		{"relative, as if from /", etc, "etc/passwd", Deny, "matches"},
		{"relative climbing", etc, "../../../etc/passwd", Deny, "matches"},
		{"the directory itself", policy.Constraints{ForbiddenPaths: []string{"/etc", "/etc/**"}}, "/etc/", Deny, "matches"},
		{"one path per line", etc, "/tmp/a\n/etc/passwd\n", Deny, "matches"},
		{"trailing newline", etc, "/etc/passwd\n", Deny, "matches"},
		{"line with a control character a tool might strip", etc, "notes\n/et\u0007c/passwd", Deny, "matches"},
		{"unicode line separator", etc, "x\u2028/etc/passwd", Deny, "matches"},
		{"fd alias", etc, "/dev/fd/3", Deny, "open file descriptor"},
		{"stdin alias", etc, "/dev/stdin", Deny, "open file descriptor"},
		{"proc fd alias", etc, "/proc/self/fd/7", Deny, "holds open"},
		{"proc cwd alias", etc, "/proc/1/cwd/passwd", Deny, "working directory"},
		{"proc task cwd alias", etc, "/proc/1/task/1/cwd/x", Deny, "working directory"},
		{"proc exe", etc, "/proc/self/exe", Deny, "holds open"},
		{"object key", etc, "", Deny, "key at /~1etc~1shadow"},

		{"upper case without the flag is another file", etc, "/ETC/passwd", Allow, ""},
		{"elsewhere", etc, "/tmp/x", Allow, ""},
		{"a name that merely starts like it", etc, "/etcetera/x", Allow, ""},
		{"dot-dot out of it", etc, "/etc/../tmp/x", Allow, ""},
		{"a sentence is not a path", etc, "  hello world  ", Allow, ""},
		{"text with lines and tabs", etc, "#!/bin/sh\n\techo /tmp/x\n", Allow, ""},
		{"a URL elsewhere", etc, "https://example.com/etc/passwd", Allow, ""},
		{"a harmless percent", etc, "/tmp/100%", Allow, ""},
		{"proc of something else", etc, "/proc/self/status", Allow, ""},
		{"dev elsewhere", etc, "/dev/null", Allow, ""},
	}
	p := testPipeline()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := pathCall(c.c, c.arg)
			if c.name == "object key" {
				r = req(grantWith(c.c), `{"/etc/shadow":true}`, nil)
			}
			d := p.Evaluate(r, true)
			if d.Verdict != c.want || c.want == Deny && (d.Guard != GuardForbiddenPaths || !strings.Contains(d.Reason, c.reason)) {
				t.Fatalf("got %v by %q: %s; want %v: …%s…", d.Verdict, d.Guard, d.Reason, c.want, c.reason)
			}
		})
	}
}

func TestAllowedPaths(t *testing.T) {
	srv := policy.Constraints{AllowedPaths: []string{"/srv/data/**", "reports/*.csv"}}
	both := policy.Constraints{AllowedPaths: []string{"/srv/**"}, ForbiddenPaths: []string{"/srv/secret/**"}}
	cases := []struct {
		name   string
		c      policy.Constraints
		args   string
		want   Verdict
		guard  string
		reason string
	}{
		{"inside", srv, `{"path":"/srv/data/a.txt"}`, Allow, "", ""},
		{"inside, percent-encoded space", srv, `{"path":"/srv/data/my%20file"}`, Allow, "", ""},
		{"relative under a relative pattern", srv, `{"path":"reports/q1.csv"}`, Allow, "", ""},
		{"no path-like argument", srv, `{"n":5,"name":"report"}`, Allow, "", ""},
		{"outside", srv, `{"path":"/etc/passwd"}`, Deny, GuardAllowedPaths, "matches no allowed_paths pattern"},
		{"climbing out", srv, `{"path":"/srv/data/../../etc/passwd"}`, Deny, GuardAllowedPaths, `(read as "/etc/passwd")`},
		{"climbing out, percent-encoded", srv, `{"path":"/srv/data/%2e%2e/%2e%2e/etc/passwd"}`, Deny, GuardAllowedPaths, "/etc/passwd"},
		{"proc root alias out", srv, `{"path":"/proc/self/root/etc/passwd"}`, Deny, GuardAllowedPaths, "/etc/passwd"},
		{"proc root alias in: the alias itself is not allowed", srv, `{"path":"/proc/self/root/srv/data/x"}`, Deny, GuardAllowedPaths, "/proc/self/root/srv/data/x"},
		{"file URL in", srv, `{"path":"file:///srv/data/x"}`, Deny, GuardAllowedPaths, "file:"}, // its raw reading is not a path under /srv
		{"fd alias", srv, `{"path":"/dev/fd/3"}`, Deny, GuardAllowedPaths, "open file descriptor"},
		{"relative, unknown working directory", srv, `{"path":"data/a.txt"}`, Deny, GuardAllowedPaths, "matches no"},
		{"home", srv, `{"path":"~/.ssh/id_rsa"}`, Deny, GuardAllowedPaths, "matches no"},
		{"every path must match", srv, `{"from":"/srv/data/a","to":"/tmp/b"}`, Deny, GuardAllowedPaths, "/to"},
		{"a URL is path-like too", srv, `{"url":"https://example.com/x"}`, Deny, GuardAllowedPaths, "/url"},
		{"leading whitespace", srv, `{"path":" /srv/data/a"}`, Deny, GuardAllowedPaths, "whitespace"},
		{"forbidden inside allowed", both, `{"path":"/srv/secret/k"}`, Deny, GuardForbiddenPaths, "matches"},
		{"allowed and not forbidden", both, `{"path":"/srv/public/k"}`, Allow, "", ""},
		{"routed to a human", policy.Constraints{AllowedPaths: []string{"/srv/**"}, OnTrigger: map[string]string{"allowed_paths": "require_approval"}},
			`{"path":"/etc/hosts"}`, PendingApproval, GuardAllowedPaths, "matches no"},
	}
	p := testPipeline()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Evaluate(req(grantWith(c.c), c.args, nil), true)
			got := d.Guard
			if d.Verdict == PendingApproval {
				got = d.TriggeredBy[0]
			}
			if d.Verdict != c.want || got != c.guard || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("got %v by %q: %s; want %v by %q: …%s…", d.Verdict, got, d.Reason, c.want, c.guard, c.reason)
			}
		})
	}
}

func TestPathReasonsQuoteSafely(t *testing.T) {
	long := "/etc/" + strings.Repeat("a", 500)
	d := testPipeline().Evaluate(pathCall(etc, long), true)
	if d.Verdict != Deny || len(d.Reason) > 300 || !strings.Contains(d.Reason, "…") {
		t.Fatalf("reason not bounded: %d bytes: %s", len(d.Reason), d.Reason)
	}
	d = testPipeline().Evaluate(pathCall(etc, "\x1b[31m/etc/passwd"), true)
	if d.Verdict != Deny || strings.ContainsRune(d.Reason, '\x1b') {
		t.Fatalf("control characters reached the reason: %q", d.Reason)
	}
}

// FuzzPathGuard checks properties of the forbidden_paths guard on any
// argument: it never panics, and whatever it lets through under
// forbidden_paths = ["/etc/**"], no way of reading it that a tool might use
// (trimmed, percent-decoded, cleaned, rooted) lands under /etc, and
// wrapping it in a /proc/self/root alias changes nothing.
func FuzzPathGuard(f *testing.F) {
	for _, s := range []string{"/etc/passwd", "/proc/self/root/etc/passwd", "file:///etc/passwd", " /etc/passwd",
		"\t/etc/passwd", "/etc\x00/passwd", "%2Fetc%2Fpasswd", "/ETC/passwd", "/tmp/../etc/x", "a\n/etc/x", "/dev/fd/0",
		"%252e%252e/etc", "file://host/etc/x", "/tmp/ok", "hello", "~/.ssh/id", `C:\Windows`} {
		f.Add(s)
	}
	p := testPipeline()
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(map[string]string{"path": s})
		if err != nil || !json.Valid(b) {
			return
		}
		d := p.Evaluate(req(grantWith(etc), string(b), nil), true)
		if d.Verdict == Deny && d.Guard != GuardForbiddenPaths {
			t.Fatalf("denied by %q: %s", d.Guard, d.Reason)
		}
		if d.Verdict != Allow {
			return
		}
		for _, reading := range simpleReadings(s) {
			if reading == "/etc" || strings.HasPrefix(reading, "/etc/") {
				t.Fatalf("%q allowed, but a tool may read it as %q", s, reading)
			}
		}
		// A plain absolute path reads the same through the root alias.
		if strings.HasPrefix(s, "/") && !strings.Contains(s, "..") && !strings.ContainsFunc(s, func(r rune) bool { return r == '%' || r < ' ' || r == 0x7f }) {
			if d := p.Evaluate(pathCall(etc, "/proc/self/root"+s), true); d.Verdict != Allow {
				t.Fatalf("%q allowed but /proc/self/root%s denied: %s", s, s, d.Reason)
			}
		}
	})
}

// simpleReadings is an independent, deliberately plain model of how tools
// read a path: trim it, percent-decode it up to three times with the
// standard library, clean it, and root a relative one at "/".
func simpleReadings(s string) []string {
	var out []string
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		x := strings.ReplaceAll(strings.TrimSpace(line), `\`, "/")
		for range 4 {
			// A bare name ("etc") is not judged as a path: see docs/platform.md.
			if strings.ContainsRune(x, '/') || strings.HasPrefix(x, ".") {
				c := path.Clean(x)
				out = append(out, c, path.Clean("/"+c))
			}
			if u, err := url.PathUnescape(x); err == nil && u != x {
				x = u
				continue
			}
			break
		}
	}
	return out
}

// A file: URL whose "?" or "#" hides ".." segments: the URL's path is
// /tmp/x, but a tool that strips the "file://" prefix reads
// "/tmp/x?/../../etc/passwd", which cleans to /etc/passwd. Every such
// reading is judged.
func TestFileURLQueryCannotHideDotDot(t *testing.T) {
	for _, arg := range []string{
		"file:///tmp/x?/../../etc/passwd",
		"file:///tmp/x#/../../etc/passwd",
		"file:/tmp/x?/../../etc/shadow",
		"file://localhost/tmp/x?/../../etc/passwd",
	} {
		if d := testPipeline().Evaluate(pathCall(etc, arg), true); d.Verdict != Deny {
			t.Errorf("%q under forbidden_paths = [\"/etc/**\"]: %v", arg, d.Verdict)
		}
	}
	// An ordinary file: URL outside the forbidden tree is still allowed.
	if d := testPipeline().Evaluate(pathCall(etc, "file:///tmp/report.txt?download=1"), true); d.Verdict != Allow {
		t.Errorf("file:///tmp/report.txt?download=1: %v %s", d.Verdict, d.Reason)
	}
}
