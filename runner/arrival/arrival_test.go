package arrival

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gapStats are the mean and CV of a schedule's gaps.
func gapStats(schedule []time.Duration) (mean, cv float64) {
	var gaps []float64
	prev := time.Duration(0)
	for _, at := range schedule {
		gaps = append(gaps, (at - prev).Seconds())
		prev = at
	}
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	ss := 0.0
	for _, g := range gaps {
		ss += (g - mean) * (g - mean)
	}
	return mean, math.Sqrt(ss/float64(len(gaps)-1)) / mean
}

// Each process keeps its rate on average and has the spread of its kind:
// Poisson's gaps a CV of 1, constant's 0, gamma's 1/√shape.
func TestSchedulesKeepTheirRateAndTheirSpread(t *testing.T) {
	for _, c := range []struct {
		p      Process
		wantCV float64
	}{
		{Process{Kind: Poisson, Rate: 8, Seed: 1}, 1},
		{Process{Kind: Constant, Rate: 8, Seed: 1}, 0},
		{Process{Kind: Gamma, Rate: 8, Burstiness: 0.25, Seed: 1}, 2},
		{Process{Kind: Gamma, Rate: 8, Burstiness: 4, Seed: 1}, 0.5},
		{Process{Kind: Gamma, Rate: 500, Burstiness: 1, Seed: 2}, 1},
	} {
		if err := c.p.Check(); err != nil {
			t.Fatal(err)
		}
		schedule := c.p.Schedule(40000)
		mean, cv := gapStats(schedule)
		if math.Abs(mean*c.p.Rate-1) > 0.03 || math.Abs(cv-c.wantCV) > 0.05*math.Max(c.wantCV, 0.2) {
			t.Errorf("%+v: mean gap %.4f s (want %.4f), CV %.3f (want %.2f)", c.p, mean, 1/c.p.Rate, cv, c.wantCV)
		}
		if !slices.IsSorted(schedule) || schedule[0] <= 0 {
			t.Errorf("%+v: the schedule does not rise from after the start", c.p)
		}
		if again := c.p.Schedule(40000); !slices.Equal(again, schedule) {
			t.Errorf("%+v: a seed gave two schedules", c.p)
		}
		other := c.p
		other.Seed++
		if c.p.Kind != Constant && slices.Equal(other.Schedule(100), schedule[:100]) {
			t.Errorf("%+v: another seed gave the same schedule", c.p)
		}
	}
	if got := (Process{Kind: Constant, Rate: 4}).Schedule(8); got[7] != 2*time.Second || got[0] != 250*time.Millisecond {
		t.Errorf("constant 4/s: %v", got)
	}
}

func TestABadProcessIsRefusedInWords(t *testing.T) {
	for _, c := range []struct {
		p    Process
		want string
	}{
		{Process{Kind: "bursty", Rate: 1}, `arrival "bursty" is not an arrival process; use one of poisson, constant, gamma`},
		{Process{Kind: Poisson, Rate: 0}, "rate 0 is not a rate"},
		{Process{Kind: Poisson, Rate: math.NaN()}, "rate NaN is not a rate"},
		{Process{Kind: Poisson, Rate: math.Inf(1)}, "rate +Inf is not a rate"},
		{Process{Kind: Gamma, Rate: 1, Burstiness: -1}, "burstiness -1 is not a gamma shape"},
	} {
		if err := c.p.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.p, err, c.want)
		}
	}
}

// The dispatcher sends on schedule whatever the requests before do: with
// each request taking 40 gaps, many are in flight at once, every one left
// at or after its time, in order.
func TestDispatchKeepsTheScheduleWhateverTheServerDoes(t *testing.T) {
	schedule := (Process{Kind: Constant, Rate: 1000}).Schedule(60)
	var inFlight, most atomic.Int32
	var mu sync.Mutex
	var sent []Sent
	n := Dispatch(context.Background(), time.Now(), schedule, 0, func(s Sent) {
		now := inFlight.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		mu.Lock()
		sent = append(sent, s)
		mu.Unlock()
		time.Sleep(40 * time.Millisecond)
		inFlight.Add(-1)
	})
	if n != len(schedule) || len(sent) != n {
		t.Fatalf("sent %d of %d", n, len(schedule))
	}
	if most.Load() < 10 {
		t.Errorf("at most %d in flight: the dispatcher waited for the server", most.Load())
	}
	slices.SortFunc(sent, func(a, b Sent) int { return a.Index - b.Index })
	for k, s := range sent {
		if s.Lag() < 0 {
			t.Errorf("request %d left %v before its time", k, -s.Lag())
		}
		if k > 0 && s.Sent.Before(sent[k-1].Sent) {
			t.Errorf("request %d left before request %d", k, k-1)
		}
	}
}

// Under a cap, a request due while the cap is full waits for a slot, in
// order, and its wait is its lag; the cap is never passed.
func TestDispatchUnderACapQueuesInOrder(t *testing.T) {
	schedule := (Process{Kind: Constant, Rate: 2000}).Schedule(20)
	var inFlight, most atomic.Int32
	lags := make([]time.Duration, len(schedule))
	Dispatch(context.Background(), time.Now(), schedule, 2, func(s Sent) {
		now := inFlight.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		lags[s.Index] = s.Lag()
		time.Sleep(10 * time.Millisecond)
		inFlight.Add(-1)
	})
	if most.Load() > 2 {
		t.Errorf("%d in flight under a cap of 2", most.Load())
	}
	// 20 requests due within 10 ms, 2 at a time for 10 ms each: the last
	// waits about 90 ms for its slot, far more than it was due apart.
	if lags[19] < 50*time.Millisecond {
		t.Errorf("the last request's lag %v: it did not wait for a slot", lags[19])
	}
}

// A cancelled dispatch sends no more and returns once those in flight end.
func TestDispatchStopsWhenCancelled(t *testing.T) {
	schedule := (Process{Kind: Constant, Rate: 100}).Schedule(1000) // 10 s
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan int)
	go func() { done <- Dispatch(ctx, time.Now(), schedule, 0, func(Sent) {}) }()
	select {
	case n := <-done:
		if n >= len(schedule) {
			t.Errorf("sent all %d after the cancel", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Dispatch did not return after its context ended")
	}
}
