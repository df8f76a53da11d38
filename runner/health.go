package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/session"
)

// The failure policy. Backends classify a failure (refused, not ready,
// dropped, a status with a retry hint, a timeout, the client's own
// limit); the runner decides what to do about it, with one budget per
// target, whatever the kind of failure: the requests that failed in a
// row since its last answer.
//
//   - A server that is not there (a refused connection) is probed, with
//     its arms paused, until it answers. Its load block ends: the block's
//     other requests would find it gone too.
//   - A server that answers 503 or 429 is there: a request it shed is a
//     failed request of its level, counted in goodput and the knee, and
//     the next one is sent. Overload is a measurement, not a lost server.
//   - A Retry-After, where the server sends one, is honoured per request:
//     each request to that server waits it out before it is sent (an open
//     loop's wait counts in its queue). One longer than --server-wait
//     ends the server's arms: it asked for more than the user allows.
//   - The client's own limits (no file left for a socket, no local port)
//     are the client's: the request is recorded as failed by the client,
//     said once in words, and never blamed on the server.
//   - Any other failure (dropped, an error status, a cut stream, a
//     timeout) is a degraded trial, and the next one is sent.
//
// A target's arms end, the run partial or failed with ErrServerLost, once
// its failures in a row have lasted --server-wait (counted from when the
// first of them was sent: when answers stopped), or once
// FailuresToGiveUp of them came back at once: a server that answers its
// probe and drops every request would otherwise be sent the whole plan,
// forever. A shed request (503, 429) is an answer, and ends such a run.

// FailuresToGiveUp is how many requests in a row failing at once end a
// target's arms however little time they took.
const FailuresToGiveUp = 10

// targetState is what the run knows of one target's health. The
// collector alone reads and writes it; the Retry-After a request must
// wait out is run.holds, which workers read.
type targetState struct {
	// downSince is when a request found the server not there; zero while
	// it answers. Its arms wait, and it is probed, until it answers.
	downSince time.Time
	failing   failureRun
	// gaveUp says why its arms were ended; "" while they run.
	gaveUp string
	// warnedRefused, warnedResent and warnedHold are set once each was
	// reported.
	warnedRefused, warnedResent, warnedHold bool
}

// failureRun is a target's requests that failed in a row.
type failureRun struct {
	count int
	// atOnce counts those that failed with no wait asked for or needed.
	atOnce int
	since  time.Time // when the first was sent: when answers stopped
	first  string    // that request, e.g. "greedy trial 12"
	last   string    // the latest one's error
}

// words describe the run of failures for a stop reason.
func (f failureRun) words() string {
	return fmt.Sprintf("%d request(s) in a row failed since %s, when %s was sent (the last: %s)",
		f.count, f.since.Format("15:04:05"), f.first, f.last)
}

func isNotReady(err error) bool { return errors.Is(err, backends.ErrNotReady) }

// probeShouldWait reports a probe's failure that waiting may cure: a
// server not started yet, or one loading its model.
func probeShouldWait(err error) bool {
	return errors.Is(err, backends.ErrNotReady) || errors.Is(err, backends.ErrUnreachable)
}

// isDown reports a request that found no server to answer it.
func isDown(err error) bool { return errors.Is(err, backends.ErrUnreachable) }

// shed reports a request the server answered by refusing it for its
// load (503, 429): a result of the load, from a server that is there.
func shed(err error) bool {
	return errors.Is(err, backends.ErrNotReady) || errors.Is(err, backends.ErrOverloaded)
}

// requestEnded folds a finished request into its target's health; down
// says it found the server not there.
func (r *run) requestEnded(f finished, down bool) {
	rec := f.rec
	t := r.plan.ArmTarget[f.arm]
	state := &r.targets[t]
	if rec.Connection == backends.ConnectionResent && !state.warnedResent {
		state.warnedResent = true
		r.events <- Warning{Text: fmt.Sprintf("%s trial %d went out on a kept-alive connection that the server%s had closed before answering; it was sent again on a new connection "+
			"(the trials CSV's connection column says resent). After a second such close every request gets a new connection.", rec.Arm, rec.Trial, r.plan.nameOf(t))}
	}
	switch rec.Status {
	case session.StatusOK:
		state.failing = failureRun{}
		return
	case session.StatusCanceled:
		return
	}
	if errors.Is(f.err, backends.ErrClient) {
		if !r.warnedClient {
			r.warnedClient = true
			r.events <- Warning{Text: fmt.Sprintf("%s trial %d could not be sent: %s. It is recorded as failed by the client, not the server, as is every such request", rec.Arm, rec.Trial, rec.Error)}
		}
		return
	}
	now := time.Now()
	if wait := backends.RetryAfter(f.err); wait > 0 {
		if wait > r.plan.ServerWait {
			r.giveUp(t, fmt.Sprintf("its server asked to be left alone for %v (Retry-After on %s trial %d), longer than --server-wait %v", wait, rec.Arm, rec.Trial, r.plan.ServerWait))
			return
		}
		r.holdUntil(t, now.Add(wait))
		if !state.warnedHold {
			state.warnedHold = true
			r.events <- Warning{Text: fmt.Sprintf("the server%s asked for %v before its next request (Retry-After on %s trial %d): each request to it waits out what it asks before it is sent (an open loop's wait counts in its queue)",
				r.plan.nameOf(t), wait, rec.Arm, rec.Trial)}
		}
	}
	if shed(f.err) {
		state.failing = failureRun{} // it answered
		return
	}
	fr := &state.failing
	if fr.count == 0 {
		fr.since, fr.first = f.started, fmt.Sprintf("%s trial %d", rec.Arm, rec.Trial)
	}
	fr.count++
	fr.last = rec.Error
	switch {
	case down:
		if state.downSince.IsZero() {
			state.downSince = now
			if r.othersGoOn(t) {
				r.events <- Warning{Text: fmt.Sprintf("the server%s stopped answering at %s: the other arms go on, and it is probed each round for up to %v",
					r.plan.nameOf(t), fr.first, r.plan.ServerWait)}
			}
		}
	default:
		fr.atOnce++
	}
	if errors.Is(f.err, backends.ErrBadRequest) && !state.warnedRefused {
		state.warnedRefused = true
		r.events <- Warning{Text: fmt.Sprintf("%s trial %d was refused by its server: %s", rec.Arm, rec.Trial, rec.Error)}
	}
	switch {
	case fr.atOnce >= FailuresToGiveUp:
		r.giveUp(t, "its server failed every request: "+fr.words())
	case fr.count >= 2 && now.Sub(fr.since) >= r.plan.ServerWait:
		// The span can pass the setting by a trial's timeout: say both.
		r.giveUp(t, fmt.Sprintf("its server failed every request for %v, past --server-wait %v: %s", now.Sub(fr.since).Round(time.Second), r.plan.ServerWait, fr.words()))
	}
}

// holdUntil records that target t asked to be sent nothing before at
// (a later hold stands).
func (r *run) holdUntil(t int, at time.Time) {
	d := int64(at.Sub(r.epoch))
	for {
		old := r.holds[t].Load()
		if old >= d || r.holds[t].CompareAndSwap(old, d) {
			return
		}
	}
}

// heldFor is how long target t still asked to be left alone; 0 when not.
func (r *run) heldFor(t int) time.Duration {
	return max(0, time.Until(r.epoch.Add(time.Duration(r.holds[t].Load()))))
}

// waitOutHold waits, before a request to target t is sent, for what its
// server asked (Retry-After), or until ctx ends.
func (r *run) waitOutHold(ctx context.Context, t int) {
	if d := r.heldFor(t); d > 0 {
		sleep(ctx, d)
	}
}

// giveUp ends target t's arms, saying why.
func (r *run) giveUp(t int, why string) {
	state := &r.targets[t]
	if state.gaveUp != "" {
		return
	}
	state.gaveUp = why
	for i := range r.arms {
		if r.plan.ArmTarget[i] == t && !r.arms[i].stopped {
			d := Decision{Stop: true, Reason: why, Short: "server lost"}
			r.arms[i].stopped, r.arms[i].stop = true, d
			r.events <- ArmStopped{Arm: r.plan.Profile.Arms[i].Name, Decision: d}
		}
	}
}

// available reports whether target t can be sent a request now.
func (r *run) available(t int) bool { return !r.lost(t) && r.heldFor(t) == 0 }

// lost reports whether target t is not there or given up: a load block
// on it ends, since its other requests would find the same.
func (r *run) lost(t int) bool {
	s := &r.targets[t]
	return s.gaveUp != "" || !s.downSince.IsZero()
}

// othersGoOn reports whether some arm not on target t can still run.
func (r *run) othersGoOn(t int) bool {
	for i := range r.arms {
		if u := r.plan.ArmTarget[i]; u != t && !r.arms[i].stopped && r.available(u) {
			return true
		}
	}
	return false
}

// reprobeTimeout bounds the one probe per round of a target that went
// down while other targets go on: they wait for it between rounds.
const reprobeTimeout = 2 * time.Second

// revive tends the targets that cannot be sent a request. One that asked
// for time is waited for when no other arm can run. One that went down
// is probed: once, briefly, while other arms go on; patiently (up to
// ServerWait from when answers stopped) when no arm can run without it.
// One that answers runs warmup again for its arms; one past ServerWait
// ends its arms.
func (r *run) revive(ctx context.Context) {
	for t := range r.targets {
		state := &r.targets[t]
		if state.gaveUp != "" {
			continue
		}
		if wait := r.heldFor(t); wait > 0 && state.downSince.IsZero() {
			if !r.othersGoOn(t) {
				r.events <- Waiting{What: "the server" + r.plan.nameOf(t) + ", which asked for time", Why: "Retry-After", Elapsed: 0, Limit: wait}
				sleep(ctx, wait)
			}
			continue
		}
		if state.downSince.IsZero() {
			continue
		}
		target := &r.plan.Targets[t]
		since := state.failing.since
		var err error
		if r.othersGoOn(t) {
			probeCtx, cancel := context.WithTimeout(ctx, reprobeTimeout)
			_, err = r.backends[t].Probe(probeCtx, target.Target.Model)
			cancel()
			if err != nil && time.Since(since) < r.plan.ServerWait {
				continue
			}
		} else {
			_, err = waitForServer(ctx, r.backends[t], r.plan, target, since, "the server to come back", probeShouldWait, r.events)
			if ctx.Err() != nil {
				return
			}
		}
		if err != nil {
			if waited := (*waitedInVain)(nil); errors.As(err, &waited) {
				err = waited.last // the reason says the wait
			}
			r.giveUp(t, fmt.Sprintf("its server stopped answering at %s (%s) and did not come back within %v (--server-wait): %v",
				state.failing.first, since.Format("15:04:05"), r.plan.ServerWait, err))
			continue
		}
		warmup := max(r.plan.Profile.Warmup, 1)
		for i := range r.arms {
			if r.plan.ArmTarget[i] == t {
				r.arms[i].warmupLeft = warmup
			}
		}
		back := Resumed{After: time.Since(state.downSince), Warmup: warmup}
		if len(r.plan.Targets) > 1 {
			back.Arms = target.Arms
		}
		r.events <- back
		state.downSince = time.Time{}
	}
}

// waitedInVain is the error of a wait for a server that did not answer
// within --server-wait: the last probe's error, which it wraps.
type waitedInVain struct {
	last  error
	what  string
	limit time.Duration
}

func (e *waitedInVain) Error() string {
	return fmt.Sprintf("%v; still so after waiting %v for %s (--server-wait)", e.last, e.limit, e.what)
}

func (e *waitedInVain) Unwrap() error { return e.last }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// lostNote says which targets' arms were ended by their server; empty
// when none were.
func (r *run) lostNote() string {
	var lost []string
	for t, state := range r.targets {
		if state.gaveUp == "" {
			continue
		}
		who := "the server"
		if len(r.targets) > 1 {
			who = "the server of " + r.plan.named(&r.plan.Targets[t])
		}
		lost = append(lost, who+" "+strings.TrimPrefix(state.gaveUp, "its server "))
	}
	return strings.Join(lost, "; ")
}

// anyGaveUp reports whether some target's arms were ended by it.
func (r *run) anyGaveUp() bool {
	for _, t := range r.targets {
		if t.gaveUp != "" {
			return true
		}
	}
	return false
}

// waitForServer probes target t's backend b until it answers. While the
// failure is one that waiting can cure (retry says which) it probes again
// with a growing pause, telling the front end, until plan.ServerWait has
// passed since the wait began (since: now, or when answers stopped). what
// says what is waited for; "" at the start, where the failure says it:
// a server not started yet, or one loading its model.
func waitForServer(ctx context.Context, b backends.Backend, plan *Plan, t *PlanTarget, since time.Time, what string, retry func(error) bool, events chan<- Event) (backends.Info, error) {
	pause := 250 * time.Millisecond
	for {
		probeCtx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		info, err := b.Probe(probeCtx, t.Target.Model)
		cancel()
		if err == nil || !retry(err) || ctx.Err() != nil || plan.ServerWait <= 0 {
			return info, err
		}
		waited := what
		switch {
		case waited != "":
		case isNotReady(err):
			waited = "the model to load"
		default:
			waited = "the server to start"
		}
		if len(plan.Targets) > 1 {
			waited += " (" + t.Name + ", " + armWords(t) + ")"
		}
		elapsed := time.Since(since)
		if elapsed >= plan.ServerWait {
			return info, &waitedInVain{last: err, what: waited, limit: plan.ServerWait}
		}
		events <- Waiting{What: waited, Why: err.Error(), Elapsed: elapsed, Limit: plan.ServerWait}
		sleep(ctx, min(pause, plan.ServerWait-elapsed))
		pause = min(2*pause, 4*time.Second)
	}
}
