package mcp

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// The first bytes of an oversized message make it a response to an id
// only when they show "result" or "error", no "method", and the whole id,
// and the message goes on past them.
func TestResponseIDReadsOnlyCertainResponses(t *testing.T) {
	tail := strings.Repeat("x", 100) // the head ends inside this string
	cases := []struct {
		name, head string
		id         int64 // 0: not a response
	}{
		{"answer", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + tail, 7},
		{"error answer", ` {"id":7,"error":{"code":1,"message":"` + tail, 7},
		{"id last but within the head", `{"jsonrpc":"2.0","result":{"a":1},"id":7,"x":"` + tail, 7},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + tail, 0},
		{"server request", `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":"` + tail, 0},
		{"method after result", `{"id":7,"result":{},"method":"x","params":"` + tail, 0},
		{"method in other case", `{"id":7,"result":{},"Method":"x","params":"` + tail, 0},
		{"id after a cut result", `{"jsonrpc":"2.0","result":{"content":"` + tail, 0},
		{"no result yet", `{"jsonrpc":"2.0","id":7,"params":"` + tail, 0},
		{"id cut", `{"result":{},"id":12`, 0},
		{"id string cut", `{"result":{},"id":"ab`, 0},
		{"id in other case", `{"ID":7,"result":"` + tail, 0},
		{"duplicate id", `{"id":7,"id":8,"result":"` + tail, 0},
		{"fractional id", `{"id":7.5,"result":"` + tail, 0},
		{"exponent id", `{"id":7e0,"result":"` + tail, 0},
		{"object id", `{"id":{"a":1},"result":"` + tail, 0},
		{"null id", `{"id":null,"result":"` + tail, 0},
		{"nested members do not count", `{"params":{"id":7,"result":1},"x":"` + tail, 0},
		{"whole message in the head", `{"id":7,"result":{}}`, 0},
		{"a message then more", `{"id":7,"result":{}} {"x":"` + tail, 0},
		{"bad JSON", `{"id":7,"result":{} x "` + tail, 0},
		{"not an object", `["id",7,"result","` + tail, 0},
		{"empty", ``, 0},
	}
	for _, c := range cases {
		id, ok := responseID([]byte(c.head))
		if ok != (c.id != 0) || (ok && id != mustID(t, c.id)) {
			t.Errorf("%s: responseID = %v, %v; want id %d (0: none)", c.name, id.Raw(), ok, c.id)
		}
	}
	id, ok := responseID([]byte(`{"id":"abc\/d","result":"` + tail))
	if want := "abc/d"; !ok || id.Raw() != want {
		t.Errorf("string id: responseID = %v, %v; want %q", id.Raw(), ok, want)
	}
}

// tap.overflow marks only the waiting call the message answers, and
// never marks a call sent.
func TestOverflowMarksOnlyTheCallItAnswers(t *testing.T) {
	tp := newTap()
	open := func(key string, id int64) *slot {
		s, err := tp.expect(key)
		if err != nil {
			t.Fatal(err)
		}
		tp.byID[mustID(t, id)] = s
		return s
	}
	a, b := open("a", 1), open("b", 2)
	tail := `"` + strings.Repeat("x", 100)
	for _, h := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":` + tail,
		`{"jsonrpc":"2.0","id":3,"result":` + tail, // another request's answer
		`{"jsonrpc":"2.0","result":` + tail,
	} {
		tp.overflow([]byte(h), nil)
	}
	if tp.view(a).oversize || tp.view(b).oversize {
		t.Fatal("a message that answers neither call was attributed to one")
	}
	tp.overflow([]byte(`{"jsonrpc":"2.0","id":2,"result":`+tail), a) // on a's stream
	if tp.view(b).oversize || tp.view(a).oversize {
		t.Fatal("b's answer on a's stream was attributed")
	}
	tp.overflow([]byte(`{"jsonrpc":"2.0","id":2,"result":`+tail), nil)
	if va, vb := tp.view(a), tp.view(b); va.oversize || !vb.oversize || vb.sent || va.sent {
		t.Fatalf("b's answer: a oversize=%v, b oversize=%v sent=%v; want false, true, false", va.oversize, vb.oversize, vb.sent)
	}
}

// lineLimit passes lines up to MaxMessageBytes, fails the first line past
// it, and hands the tap that line's first bytes (not an earlier line's).
func TestLineLimitAttributesAnOversizedLineByItsHead(t *testing.T) {
	for _, c := range []struct {
		name, big string
		want      bool
	}{
		{"answer", `{"jsonrpc":"2.0","id":1,"result":{"text":"`, true},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`, false},
	} {
		tp := newTap()
		s, _ := tp.expect("a")
		tp.byID[mustID(t, 1)] = s
		small := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" // not read as a's: below the limit
		if c.name == "answer" {
			small = `{"jsonrpc":"2.0","method":"x"}` + "\n"
		}
		in := small + c.big + strings.Repeat("y", MaxMessageBytes) + "\n"
		l := &lineLimit{r: io.NopCloser(&oneByteThenRest{r: strings.NewReader(in)}), tap: tp}
		got, err := io.ReadAll(l)
		if err != errTooLarge {
			t.Fatalf("%s: err %v; want errTooLarge", c.name, err)
		}
		if want := len(small) + MaxMessageBytes; len(got) != want || !bytes.HasPrefix(got, []byte(small)) {
			t.Fatalf("%s: passed %d bytes; want %d", c.name, len(got), want)
		}
		if v := tp.view(s); v.oversize != c.want || v.sent {
			t.Fatalf("%s: oversize=%v sent=%v; want %v, false", c.name, v.oversize, v.sent, c.want)
		}
	}
}

// oneByteThenRest splits its reads oddly, so lines cross reads.
type oneByteThenRest struct {
	r *strings.Reader
	n int
}

func (o *oneByteThenRest) Read(p []byte) (int, error) {
	o.n++
	if o.n%2 == 1 && len(p) > 1 {
		p = p[:1]
	} else if len(p) > 3000 {
		p = p[:3000]
	}
	return o.r.Read(p)
}

// sseTap keeps the first bytes of an oversized event's data, across data
// lines and reads, and attributes the event to the stream's own call only
// when they show its answer.
func TestSSETapAttributesAnOversizedEventByItsHead(t *testing.T) {
	big := strings.Repeat("y", MaxMessageBytes)
	for _, c := range []struct {
		name, stream string
		want         bool
	}{
		{"answer", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"" + big + "\"}}\n\n", true},
		{"answer over two data lines", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{\"t\":\"" + big + "\"}}\r\n\r\n", true},
		{"notification", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":\"" + big + "\"}\n\n", false},
		{"another call's answer", "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"t\":\"" + big + "\"}}\n\n", false},
		{"small answer with a huge comment", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n:" + big + "\n\n", false},
		// The SDK fails the stream as soon as the event passes the limit and
		// reads no further: the event's end never comes.
		{"answer cut off where the SDK stops reading", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"" + big, true},
		// The SDK counts field names and line ends too: many short data
		// lines pass its limit while their values alone stay under it.
		{"answer over many short data lines", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":[\n" + strings.Repeat("data: 1,\n", MaxMessageBytes/9+1), true},
	} {
		tp := newTap()
		s, _ := tp.expect("a")
		tp.byID[mustID(t, 1)] = s
		other, _ := tp.expect("b")
		tp.byID[mustID(t, 2)] = other
		st := &sseTap{r: io.NopCloser(&oneByteThenRest{r: strings.NewReader(c.stream)}), tap: tp, slot: s}
		if _, err := io.ReadAll(st); err != nil {
			t.Fatal(err)
		}
		if v := tp.view(s); v.oversize != c.want || v.sent || v.answered {
			t.Errorf("%s: oversize=%v sent=%v answered=%v; want %v, false, false", c.name, v.oversize, v.sent, v.answered, c.want)
		}
		if tp.view(other).oversize {
			t.Errorf("%s: another call was marked", c.name)
		}
	}
}
