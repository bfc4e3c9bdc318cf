package kernel

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// pathShapeBytes is about how large each benchmark's arguments are: just
// under MaxArgumentsBytes (256 KiB), the largest call the kernel accepts.
const pathShapeBytes = 250 << 10

// pathShape is one kind of ~250 KB arguments the path guards judge.
type pathShape struct {
	name string
	args string // JSON object
}

// fill repeats unit until the result is about n bytes once in JSON.
func fill(unit string, n int) string {
	return strings.Repeat(unit, n/(len(mustJSON(unit))-2))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// stringList is a list of generated strings, about n bytes in JSON.
func stringList(n int, gen func(i int) string) []string {
	var list []string
	for size, i := 0, 0; size < n; i++ {
		s := gen(i)
		list = append(list, s)
		size += len(mustJSON(s)) + 1
	}
	return list
}

// manyStrings is {"paths": [...]} of generated strings, about n bytes.
func manyStrings(n int, gen func(i int) string) string {
	return mustJSON(map[string]any{"paths": stringList(n, gen)})
}

// pathShapes are realistic and adversarial arguments of about n bytes, each allowed under
// benchPathConstraints (so every string is judged, none stops the scan)
// but percent_encoded_deep, refused after every decoding round.
func pathShapes(n int) []pathShape {
	nested := `"/srv/data/x"`
	for range 30 {
		nested = fmt.Sprintf(`{"k":[%s,"/srv/data/y"]}`, nested)
	}
	deep := `"` + fill("/srv/data/a", n/2) + `"`
	for range 60 {
		deep = `[` + deep + `]`
	}
	bigKey := fill("k", n/3)
	return []pathShape{
		{"ordinary_path_list", manyStrings(n, func(i int) string {
			return fmt.Sprintf("/srv/projects/app-%d/src/module_%d/handler_%d.go", i%97, i%13, i)
		})},
		{"ordinary_text_lines", mustJSON(map[string]any{"content": fill("import x from './lib/util.js' // see /srv/app/README\n", n)})},
		{"one_huge_path", mustJSON(map[string]any{"path": "/srv/" + fill("abcdefgh/", n)})},
		{"one_huge_word", mustJSON(map[string]any{"path": "/" + fill("a", n)})},
		{"many_short_strings", manyStrings(n, func(i int) string { return "/a" })},
		{"many_short_words", manyStrings(n, func(i int) string { return "ab" })},
		{"deep_nesting", `{"a":` + nested + `,"b":` + deep + `}`},
		{"long_key_over_many_paths", mustJSON(map[string]any{bigKey: stringList(2*n/3, func(i int) string { return "/a" })})},
		{"many_keys", mustJSON(func() map[string]int {
			m := map[string]int{}
			for i := range n / 16 {
				m[fmt.Sprintf("/srv/k%d", i)] = 1
			}
			return m
		}())},
		{"dot_dot_segments", mustJSON(map[string]any{"path": "/srv/" + fill("a/../", n)})},
		{"dot_segments", mustJSON(map[string]any{"path": "/srv/" + fill("./", n)})},
		{"backslashes", mustJSON(map[string]any{"path": `\srv\` + fill(`a\`, n)})},
		{"percent_encoded", mustJSON(map[string]any{"path": "%2Fsrv%2F" + fill("%61%2F", n)})},
		{"percent_encoded_3x", mustJSON(map[string]any{"path": "%25252Fsrv" + fill("%25252Fa", n)})},
		{"percent_encoded_deep", mustJSON(map[string]any{"note": "%" + fill("25", n)})},
		{"percent_stray", mustJSON(map[string]any{"path": "/srv/" + fill("%zz", n)})},
		{"unicode_segments", mustJSON(map[string]any{"path": "/srv/" + fill("ſſ-Ωé-K/", n)})},
		{"proc_root_aliases", mustJSON(map[string]any{"path": fill("/proc/1/root", n) + "/srv/x"})},
		{"proc_task_root_aliases", mustJSON(map[string]any{"path": fill("/proc/1/task/2/root", n) + "/srv/x"})},
		{"file_url", mustJSON(map[string]any{"path": "file:///srv/" + fill("a/", n)})},
		{"many_file_urls", manyStrings(n, func(i int) string { return fmt.Sprintf("file://localhost/srv/x%d?q=1", i) })},
		{"many_lines", mustJSON(map[string]any{"content": fill("a/\n", n)})},
		{"lines_with_controls", mustJSON(map[string]any{"content": fill("/sr\x07v/a\r\n", n)})},
		{"many_relative", manyStrings(n, func(i int) string { return fmt.Sprintf("./src/f%d", i) })},
	}
}

// benchPathConstraints is a realistic forbidden_paths list.
func benchPathConstraints(fold bool) policy.Constraints {
	return policy.Constraints{
		ForbiddenPaths:                []string{"/etc/**", "/root/**", "/home/*/.ssh/**", "**/*.pem", "**/.env"},
		ForbiddenPathsCaseInsensitive: fold,
	}
}

// BenchmarkForbiddenPaths measures the forbidden_paths guard as the
// pipeline's budget sees it: on a fresh request, so decoding the arguments
// (the first guard to read them pays for it) is included. Run with
// -benchmem; MB/s is of the arguments' bytes.
func BenchmarkForbiddenPaths(b *testing.B) {
	for _, fold := range []bool{false, true} {
		g := grantWith(benchPathConstraints(fold))
		for _, s := range pathShapes(pathShapeBytes) {
			name := s.name
			if fold {
				name += "/fold"
			}
			b.Run(name, func(b *testing.B) {
				if len(s.args) > MaxArgumentsBytes {
					b.Fatalf("%d bytes: over MaxArgumentsBytes", len(s.args))
				}
				if res, _ := checkForbiddenPaths(req(g, s.args, nil)); res.Verdict != Allow && s.name != "percent_encoded_deep" {
					b.Fatalf("%s: %v %s", s.name, res.Verdict, res.Reason)
				}
				b.SetBytes(int64(len(s.args)))
				for b.Loop() {
					checkForbiddenPaths(req(g, s.args, nil))
				}
			})
		}
	}
}

// BenchmarkDecodeArguments is the decoding share of the above.
func BenchmarkDecodeArguments(b *testing.B) {
	for _, s := range pathShapes(pathShapeBytes) {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(s.args)))
			for b.Loop() {
				if _, err := decodeArguments([]byte(s.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
