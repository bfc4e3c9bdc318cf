package kernel

import (
	"encoding/json"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// pathDiffConstraints are the grants every input is judged under, by both
// guards: case-sensitive and folded, absolute and relative, /proc itself,
// allowed_paths alone and with forbidden_paths.
var pathDiffConstraints = []policy.Constraints{
	{ForbiddenPaths: []string{"/etc/**"}},
	{ForbiddenPaths: []string{"/etc/**", "/root/**", "/home/*/.ssh/**", "**/*.pem", "**/.env"}},
	{ForbiddenPaths: []string{"/etc/**", "/home/*/.ssh/**", "/srv/keys/**", "/etc/passwd"}, ForbiddenPathsCaseInsensitive: true},
	{ForbiddenPaths: []string{"/proc/**", "/dev/**", "etc/*", "/"}},
	{AllowedPaths: []string{"/srv/data/**", "reports/*.csv", "/tmp/**"}},
	{AllowedPaths: []string{"/srv/**"}, ForbiddenPaths: []string{"/srv/secret/**"}},
}

// pathDiffTokens are the pieces generated inputs are made of: what the
// guards treat specially, and ordinary text.
var pathDiffTokens = []string{
	"/", "/", "/", "//", ".", "..", "./", "../", `\`, "~", "etc", "passwd", "ETC", "srv", "data", "secret", "tmp",
	"proc", "self", "1", "root", "task", "cwd", "fd", "exe", "map_files", "dev", "stdin", "null", "/proc/self/root",
	"/proc/1/task/2/root", "file:", "FILE:", "file://", "localhost", "host", "?", "#", "%", "%2F", "%2f", "%25",
	"%252F", "%2e", "%2E", "%00", "%zz", "%5C", "25", "2F", " ", "\t", "\n", "\r\n", "\u2028", "\u0085", "\v",
	"\x00", "\x07", "\x1b", "ſ", "K", "K", "s", "ı", "İ", "i", "é", "Ω", "a", "x.pem", ".env", ".ssh", "home", "u", "reports",
	"q1.csv", "*", "hello world", ":", "@",
}

// pathDiffInputs is the corpus: the path tests' cases, the fuzz seeds,
// the benchmark shapes at a small size, and generated strings.
func pathDiffInputs() []string {
	in := []string{
		"", "/", ".", "..", "~", "file:", "/etc/passwd", "/proc/self/root/etc/passwd", "/proc/1/root/etc/shadow",
		"/proc/thread-self/root/etc/passwd", "/proc/self/task/42/root/etc/passwd", "/proc/self/root/proc/1/root/etc/passwd",
		"/proc/self/root/tmp/x", "file:///etc/passwd", "file:/etc/passwd", "file://localhost/etc/passwd",
		"FILE:///etc/passwd", "file:///%65tc/passwd", " /etc/passwd", "\t/etc/passwd", "/etc/passwd ", "/etc\x00/passwd",
		"/tmp/x\x00/../../etc/passwd", "/et\x01c/passwd", "%2Fetc%2Fpasswd", "%2fetc%2fpasswd", "%252Fetc%252Fpasswd",
		"/tmp/%2e%2e/etc/passwd", "%2Fetc%2Fpasswd%zz", "/etc/passwd%00.txt", "%25252525252Fetc", "/ETC/passwd",
		"/etc/pa\u017fswd", "/HOME/u/.\u017f\u017fh/id_rsa", "/srv/\u212aeys/a", "/tmp/../etc/passwd", "/./etc/./passwd",
		"//etc///passwd", `\etc\passwd`, `/tmp\..\etc/passwd`, "etc/passwd", "../../../etc/passwd", "/etc/",
		"/tmp/a\n/etc/passwd\n", "/etc/passwd\n", "notes\n/et\u0007c/passwd", "x\u2028/etc/passwd", "/dev/fd/3",
		"/dev/stdin", "/proc/self/fd/7", "/proc/1/cwd/passwd", "/proc/1/task/1/cwd/x", "/proc/self/exe", "/tmp/x",
		"/etcetera/x", "/etc/../tmp/x", "  hello world  ", "#!/bin/sh\n\techo /tmp/x\n", "https://example.com/etc/passwd",
		"/tmp/100%", "/proc/self/status", "/dev/null", "/srv/data/a.txt", "/srv/data/my%20file", "reports/q1.csv",
		"/srv/data/../../etc/passwd", "/srv/data/%2e%2e/%2e%2e/etc/passwd", "/proc/self/root/srv/data/x",
		"file:///srv/data/x", "data/a.txt", "~/.ssh/id_rsa", "https://example.com/x", " /srv/data/a", "/srv/secret/k",
		"/srv/public/k", "/etc/" + strings.Repeat("a", 500), "\x1b[31m/etc/passwd", "file:///tmp/x?/../../etc/passwd",
		"file:///tmp/x#/../../etc/passwd", "file:/tmp/x?/../../etc/shadow", "file://localhost/tmp/x?/../../etc/passwd",
		"file:///tmp/report.txt?download=1", "/dev/fd/0", "%252e%252e/etc", "file://host/etc/x", "/tmp/ok", "hello",
		`C:\Windows`, "%" + strings.Repeat("25", 200), "discount 10%2525252525 applied", "/proc/1/root", "/proc/1/task",
		"/proc/1/task/2/root", "/proc/1/task/2", "/proc", "/proc/", "/dev", "/dev/", "file:%zz", "file://[::1/x",
		"file://h:99999/etc", "/proc/self/root/dev/fd/1", "/proc/self/root/proc/self/cwd", "/proc/x/root/../root/etc",
	}
	r := rand.New(rand.NewPCG(1, 2)) // the same corpus every run
	for range 6000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pathDiffTokens[r.IntN(len(pathDiffTokens))])
		}
		in = append(in, b.String())
	}
	return in
}

// judgePaths is both guards' results, and their errors, on the arguments.
type pathJudgement struct {
	forbidden, allowed       Result
	forbiddenErr, allowedErr string
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func judgePaths(c policy.Constraints, args string, reference bool) pathJudgement {
	g := grantWith(c)
	var j pathJudgement
	var fe, ae error
	if reference {
		j.forbidden, fe = refCheckForbiddenPaths(req(g, args, nil))
		j.allowed, ae = refCheckAllowedPaths(req(g, args, nil))
	} else {
		r := req(g, args, nil) // one request for both, as the pipeline does
		j.forbidden, fe = checkForbiddenPaths(r)
		j.allowed, ae = checkAllowedPaths(r)
	}
	j.forbiddenErr, j.allowedErr = errText(fe), errText(ae)
	return j
}

// checkPathsMatchReference requires the same verdicts, guards and reasons
// from the guards and from the reference, for s as a value, deeper in
// arrays and objects, and as an object key.
func checkPathsMatchReference(t *testing.T, s string) {
	t.Helper()
	shapes := []any{
		map[string]any{"path": s},
		map[string]any{"a": []any{"/tmp/ok", map[string]any{"b~/c": s}}, "z": s},
		map[string]any{s: 1},
	}
	for _, v := range shapes {
		b, err := json.Marshal(v)
		if err != nil {
			continue // not UTF-8: json.Marshal would change it
		}
		for _, c := range pathDiffConstraints {
			got, want := judgePaths(c, string(b), false), judgePaths(c, string(b), true)
			if got != want {
				t.Fatalf("%+v on %s:\n got  %+v\n want %+v", c, b, got, want)
			}
		}
	}
}

// The guards judge every input exactly as they did before their cost was
// made linear: the same verdict, by the same guard, for the same reason.
func TestPathGuardsMatchReference(t *testing.T) {
	for _, s := range pathDiffInputs() {
		checkPathsMatchReference(t, s)
		// The rewritten steps, on their own too.
		d, changed := percentDecode(s)
		if rd, rchanged := refPercentDecode(s); d != rd || changed != rchanged {
			t.Fatalf("percentDecode(%q) = %q, %v; was %q, %v", s, d, changed, rd, rchanged)
		}
		c := path.Clean(strings.ReplaceAll(s, `\`, "/"))
		p, why := resolveAliases(c)
		if rp, rwhy := refResolveAliases(c); p != rp || why != rwhy {
			t.Fatalf("resolveAliases(%q) = %q, %q; was %q, %q", c, p, why, rp, rwhy)
		}
	}
	for _, s := range pathShapes(8 << 10) {
		for _, c := range pathDiffConstraints {
			if got, want := judgePaths(c, s.args, false), judgePaths(c, s.args, true); got != want {
				t.Fatalf("%s under %+v:\n got  %+v\n want %+v", s.name, c, got, want)
			}
		}
	}
}

// FuzzPathGuardsMatchReference is the same comparison on any string; its
// seed corpus (the inputs above) runs as a normal test.
func FuzzPathGuardsMatchReference(f *testing.F) {
	for _, s := range pathDiffInputs()[:200] {
		f.Add(s)
	}
	f.Fuzz(checkPathsMatchReference)
}
