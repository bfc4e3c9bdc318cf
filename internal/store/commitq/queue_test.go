package commitq

import (
	"errors"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

func TestFullQueueFailsClosed(t *testing.T) {
	q := New[int](2)
	for i := 0; i < 2; i++ {
		if err := q.Put(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Put(2); !errors.Is(err, kernel.ErrQueueFull) {
		t.Fatalf("full queue: %v", err)
	}
	if q.Depth() != 2 {
		t.Fatalf("depth %d", q.Depth())
	}
}

func TestBatchesAreCappedAndAbsorbTakesWhatIsQueued(t *testing.T) {
	q := New[int](10)
	for i := 0; i < 5; i++ {
		_ = q.Put(i)
	}
	batch, ok := q.Next(nil, 3)
	if !ok || len(batch) != 3 || batch[0] != 0 || q.Depth() != 2 {
		t.Fatalf("batch %v ok %v depth %d", batch, ok, q.Depth())
	}
	if batch = q.Absorb(batch, 4); len(batch) != 4 || batch[3] != 3 || q.Depth() != 1 {
		t.Fatalf("absorbed %v depth %d", batch, q.Depth())
	}
}

// Close refuses new work but drains what it accepted before stopping.
func TestCloseDrainsWhatWasAccepted(t *testing.T) {
	q := New[int](10)
	for i := 0; i < 5; i++ {
		_ = q.Put(i)
	}
	if !q.Close() || q.Close() {
		t.Fatal("Close must report the first close only")
	}
	if err := q.Put(9); !errors.Is(err, kernel.ErrUnavailable) || !q.Closed() {
		t.Fatalf("put after close: %v", err)
	}
	var got []int
	for {
		batch, ok := q.Next(nil, 2)
		if !ok {
			break
		}
		got = append(got, batch...)
	}
	if len(got) != 5 || got[4] != 4 || q.Depth() != 0 {
		t.Fatalf("drained %v depth %d", got, q.Depth())
	}
	select {
	case <-q.Closing():
	default:
		t.Fatal("Closing not closed")
	}
}
