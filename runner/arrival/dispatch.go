package arrival

import (
	"context"
	"sync"
	"time"
)

// spinBefore is how long before a request is due the dispatcher stops
// sleeping and waits busily for the moment: a sleep wakes a little late,
// and at hundreds of requests a second a gap is a couple of milliseconds.
const spinBefore = 200 * time.Microsecond

// Sent is one request's dispatch: when it was due and when it left.
type Sent struct {
	Index    int
	Intended time.Time
	Sent     time.Time
}

// Lag is how late the request left: its time in the client's own queue
// (waiting for a free slot under a cap) and the dispatcher's lateness.
func (s Sent) Lag() time.Duration { return s.Sent.Sub(s.Intended) }

// Dispatch sends request k at start+schedule[k] (never before), each in
// its own goroutine calling send, whatever became of the ones before: a
// slow server does not slow the arrivals. With maxInFlight over 0 a
// request due while that many are in flight waits, in order, for one to
// end, and its wait is part of its lag. It returns when every request sent
// has ended, or, once ctx is done, sends no more and waits for those in
// flight. It reports how many were sent.
func Dispatch(ctx context.Context, start time.Time, schedule []time.Duration, maxInFlight int, send func(Sent)) int {
	var wg sync.WaitGroup
	var slots chan struct{}
	if maxInFlight > 0 {
		slots = make(chan struct{}, maxInFlight)
	}
	sent := 0
	for k, offset := range schedule {
		due := start.Add(offset)
		if !waitUntil(ctx, due) {
			break
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		s := Sent{Index: k, Intended: due, Sent: time.Now()}
		sent++
		wg.Go(func() {
			send(s)
			if slots != nil {
				<-slots
			}
		})
	}
	wg.Wait()
	return sent
}

// waitUntil sleeps until shortly before due, then waits busily for it;
// false if ctx ended first. It sleeps in slices of at most
// cancelCheckEvery, so a long gap still notices a cancel.
func waitUntil(ctx context.Context, due time.Time) bool {
	const cancelCheckEvery = 20 * time.Millisecond
	for {
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(due) - spinBefore
		if d <= 0 {
			break
		}
		preciseSleep(min(d, cancelCheckEvery))
	}
	// A busy wait, not runtime.Gosched: yielding puts the dispatcher on
	// the global run queue behind every request's goroutine, which made
	// it milliseconds late with a thousand in flight.
	for time.Now().Before(due) {
	}
	return ctx.Err() == nil
}
