package receipt

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// repeatedLines produces n lines of size bytes without holding them all.
type repeatedLines struct {
	n    int
	line []byte
	cur  []byte
}

func (r *repeatedLines) Read(p []byte) (int, error) {
	if len(r.cur) == 0 {
		if r.n == 0 {
			return 0, io.EOF
		}
		r.n--
		r.cur = r.line
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// The verifier reads ahead a few chunks. A chunk was cut only every 4096
// lines, so an export of long lines (up to MaxExportLine each, or simply
// 1 MiB of garbage per line) was held in memory whole: 400 MiB of such lines
// took over 1 GiB of heap, and a file of a few GiB ended the verifier
// out of memory instead of with a report. A chunk must also end once its
// lines reach a byte budget, so memory is bounded whatever the file holds.
func TestVerifyChunksAreBoundedInBytes(t *testing.T) {
	const lineSize = 1 << 20
	const budget = 4 << 20 // at most this much per chunk, plus one line
	in := &repeatedLines{n: 64, line: []byte(`{"action":"` + strings.Repeat("x", lineSize) + "\"}\n")}
	work := make(chan *chunk, 100)
	order := make(chan *chunk, 100)
	if err := readChunks(in, work, order); err != nil {
		t.Fatal(err)
	}
	chunks, lines := 0, 0
	for c := range order {
		size := 0
		for _, it := range c.items {
			size += len(it.raw)
		}
		if size > budget+lineSize+64 {
			t.Fatalf("chunk %d holds %d lines, %d MiB: chunks are not bounded in bytes", chunks, len(c.items), size>>20)
		}
		chunks++
		lines += len(c.items)
	}
	if lines != 64 {
		t.Fatalf("%d lines read, want 64", lines)
	}
}

// A line over MaxExportLine is refused before it is parsed; the error must
// say which line and why, not bufio's "token too long".
func TestVerifyNamesTheOverlongLine(t *testing.T) {
	ls := lines(fxExport(t, fxReceipts(), fxKernel, nil))
	long := []byte(`{"action":"` + strings.Repeat("x", MaxExportLine) + `"}`)
	in := join([][]byte{ls[0], ls[1], long, ls[2]})
	_, err := VerifyExport(bytes.NewReader(in), VerifyOptions{KernelKey: fxKernel.Public(), Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "line 3 is longer than 16 MiB") {
		t.Fatalf("err = %v, want it to name line 3 and the 16 MiB limit", err)
	}
}
