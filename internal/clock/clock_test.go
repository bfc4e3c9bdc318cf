package clock

import (
	"testing"
	"time"
)

func TestFakeFiresInOrderOnlyWhenDue(t *testing.T) {
	f := NewFake(time.Unix(1000, 0))
	fired := make(chan string, 3)
	f.AfterFunc(10*time.Second, func() { fired <- "a" })
	stopped := f.AfterFunc(5*time.Second, func() { fired <- "stopped" })
	f.AfterFunc(20*time.Second, func() { fired <- "b" })
	if !stopped.Stop() {
		t.Fatal("Stop on pending timer returned false")
	}
	f.Advance(9 * time.Second)
	select {
	case s := <-fired:
		t.Fatalf("fired early: %s", s)
	case <-time.After(20 * time.Millisecond):
	}
	f.Advance(1 * time.Second)
	if s := <-fired; s != "a" {
		t.Fatalf("got %s", s)
	}
	if f.Pending() != 1 {
		t.Fatalf("pending %d", f.Pending())
	}
	f.Advance(time.Hour)
	if s := <-fired; s != "b" {
		t.Fatalf("got %s", s)
	}
	if got := f.Now(); !got.Equal(time.Unix(1000+9+1+3600, 0)) {
		t.Fatalf("now %v", got)
	}
}
