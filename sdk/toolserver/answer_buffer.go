package toolserver

import (
	"bytes"
	"fmt"
	"net/http"
)

// answerBuffer is the http.ResponseWriter the wrapped handler writes to.
// It holds the handler's answer (status, headers, body) back from the
// client until Dedupe has made the key's record durable, so the client
// never holds an answer that a repeat of the key would not be given.
//
// It has only Header, WriteHeader and Write: no Flush, Hijack or Unwrap,
// through which the handler could reach the connection early (so
// http.ResponseController reports ErrNotSupported).
//
// An answer whose body grows past MaxRecordedBody cannot be kept. At that
// moment overflow is called to make the record durable ("done, too large
// to replay"); then the buffered part is sent and the rest streams through.
// If overflow fails, nothing has been sent and every later Write fails.
type answerBuffer struct {
	w        http.ResponseWriter // the client's; written only by send and when streaming
	header   http.Header         // what the handler sets
	sent     http.Header         // header as of the handler's WriteHeader (what net/http would send)
	status   int
	body     bytes.Buffer // at most MaxRecordedBody
	overflow func(*answerBuffer) error

	streaming bool  // the record is durable and the answer is going out: writes go straight to w
	err       error // overflow failed: nothing was sent
}

func newAnswerBuffer(w http.ResponseWriter, overflow func(*answerBuffer) error) *answerBuffer {
	// A copy: headers set by the handler must not reach the client with
	// anything but its own answer (not with a 502 sent in its place).
	return &answerBuffer{w: w, header: w.Header().Clone(), overflow: overflow}
}

func (a *answerBuffer) Header() http.Header { return a.header }

// WriteHeader keeps the first final status. Informational (1xx) answers
// are dropped: they would go out before the record is made.
func (a *answerBuffer) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http does, in the handler
	}
	if a.status != 0 || code < 200 {
		return
	}
	a.status, a.sent = code, a.header.Clone()
}

func (a *answerBuffer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	switch {
	case a.err != nil:
		return 0, a.err
	case a.streaming:
		return a.w.Write(p)
	case a.body.Len()+len(p) <= MaxRecordedBody:
		return a.body.Write(p)
	}
	if err := a.overflow(a); err != nil {
		a.err = fmt.Errorf("toolserver: the answer could not be recorded, so it is not sent: %w", err)
		return 0, a.err
	}
	a.streaming = true
	a.send()
	return a.w.Write(p)
}

// finalStatus is the status the client gets (200 if the handler set none).
func (a *answerBuffer) finalStatus() int {
	if a.status == 0 {
		return http.StatusOK
	}
	return a.status
}

// finalHeader is the header the client gets.
func (a *answerBuffer) finalHeader() http.Header {
	if a.sent == nil {
		return a.header
	}
	return a.sent
}

// send writes the held answer to the client. Call it only once the key's
// record is durable.
func (a *answerBuffer) send() {
	dst := a.w.Header()
	clear(dst)
	for k, v := range a.finalHeader() {
		dst[k] = v
	}
	a.w.WriteHeader(a.finalStatus())
	_, _ = a.w.Write(a.body.Bytes())
}
