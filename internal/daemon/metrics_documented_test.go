package daemon_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chiokernel/chio/internal/daemon"
)

// documentedMetrics reads the series docs/platform.md's `GET /metrics`
// entry lists, written `chio_name` or `chio_name{label,label}`: name ->
// label names (sorted; none for an unlabelled series), and the entry's text.
func documentedMetrics(t *testing.T) (map[string][]string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "platform.md"))
	if err != nil {
		t.Fatal(err)
	}
	var entry []string
scan:
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "- `GET /metrics`"):
			entry = append(entry, line)
		case len(entry) > 0 && (strings.HasPrefix(line, "- ") || line == ""):
			break scan // the next top-level bullet (or paragraph) ends the entry
		case len(entry) > 0:
			entry = append(entry, line)
		}
	}
	if len(entry) == 0 {
		t.Fatal("docs/platform.md has no `GET /metrics` entry")
	}
	text := strings.Join(entry, " ")
	docs := map[string][]string{}
	for _, m := range regexp.MustCompile("`(chio_[a-z_]+)(?:\\{([a-z_,\\s]+)\\})?`").FindAllStringSubmatch(text, -1) {
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		docs[m[1]] = labels
	}
	return docs, text
}

// knownLabelValues are the label values every labelled series must show
// from the start (0 until it first counts), here for chiod with the
// poll and webhook channels. None of them is an id: ids never label a
// series.
var knownLabelValues = map[string][][]string{
	"chio_decisions_total":            {{"allowed"}, {"denied"}, {"pending_approval"}},
	"chio_commit_phase_seconds_total": {{"receipts"}, {"run"}, {"sign"}, {"write"}},
	"chio_channel_notifications_total": {
		{"poll", "failed"}, {"poll", "ok"}, {"poll", "retry"},
		{"webhook", "failed"}, {"webhook", "ok"}, {"webhook", "retry"}},
	"chio_event_subscribers":     {{"stream"}, {"wait"}},
	"chio_streams_refused_total": {{"credential"}, {"global"}},
}

// A freshly started chiod exports every series the operator docs list,
// with the documented labels and every known label value at 0, so an
// alert on rate(chio_streams_refused_total[5m]) reads 0, not "no data",
// and a misspelt series in an alert is told apart from a quiet system.
// Every chio_* series it exports is documented.
func TestMetricsOfAFreshChiodMatchTheDocs(t *testing.T) {
	dir := t.TempDir()
	// The quickstart policy with a webhook channel too (nothing listens at
	// its URL: nothing is notified in this test).
	qs, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "chio.toml")
	if err := os.WriteFile(cfg, append(qs, "\n[channels.webhook]\nurl = \"http://127.0.0.1:9/chio\"\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	r := start(t, daemon.Options{ConfigPath: cfg, DataDir: data})
	read, err := os.ReadFile(filepath.Join(data, daemon.ReadTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", r.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(read)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}

	docs, text := documentedMetrics(t)
	if len(docs) == 0 {
		t.Fatal("docs/platform.md's `GET /metrics` entry names no chio_* series")
	}
	for name, labels := range docs {
		f := fams[name]
		if f == nil {
			t.Errorf("%s is documented but absent from a fresh chiod's /metrics", name)
			continue
		}
		var got [][]string
		for _, m := range f.Metric {
			if names := labelNames(m); !slices.Equal(names, labels) {
				t.Errorf("%s: a series labelled %v, documented %v", name, names, labels)
				continue
			}
			got = append(got, labelValues(m))
		}
		want := knownLabelValues[name]
		if len(labels) == 0 {
			want = [][]string{nil}
		}
		sortValues(got)
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			t.Errorf("%s: series %v, want %v from the start", name, got, want)
		}
		undocumented := map[string]bool{}
		for _, vs := range want {
			for _, v := range vs {
				if !strings.Contains(text, "`"+v+"`") && !undocumented[v] {
					undocumented[v] = true
					t.Errorf("%s: label value %q is not documented", name, v)
				}
			}
		}
	}
	for name := range knownLabelValues {
		if _, ok := docs[name]; !ok {
			t.Errorf("%s: label values known to the test but the series is not documented", name)
		}
	}
	for name := range fams {
		if _, ok := docs[name]; strings.HasPrefix(name, "chio_") && !ok {
			t.Errorf("%s is exported but not documented in docs/platform.md", name)
		}
	}
}

// labelNames are m's label names, sorted.
func labelNames(m *dto.Metric) []string {
	var names []string
	for _, l := range m.Label {
		names = append(names, l.GetName())
	}
	sort.Strings(names)
	return names
}

// labelValues are m's label values in the order of their sorted names.
func labelValues(m *dto.Metric) []string {
	ls := slices.Clone(m.Label)
	sort.Slice(ls, func(i, j int) bool { return ls[i].GetName() < ls[j].GetName() })
	var vs []string
	for _, l := range ls {
		vs = append(vs, l.GetValue())
	}
	return vs
}

func sortValues(v [][]string) {
	sort.Slice(v, func(i, j int) bool { return slices.Compare(v[i], v[j]) < 0 })
}
