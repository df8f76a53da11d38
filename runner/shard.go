package runner

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/session"
)

// Shard is this process's share of a plan that several load generators
// run together (--shard I/N): the plan is built whole in each, and each
// sends only the requests whose index within their block's schedule (an
// open loop's), stream (a closed loop's) or line (a trace's) is I modulo
// N, at the due times one process would have used. Count 0: not sharded.
type Shard struct {
	Index, Count int
}

// JobIndexVariable is where Kubernetes puts an Indexed Job's pod's
// index, which --shard auto/N reads.
const JobIndexVariable = "JOB_COMPLETION_INDEX"

// ParseShard reads --shard: "I/N" with 0 ≤ I < N, or "auto/N", whose I
// comes from getenv(JobIndexVariable).
func ParseShard(v string, getenv func(string) string) (Shard, error) {
	index, count, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 || n > session.MaxShards {
		return Shard{}, fmt.Errorf("--shard %q: give I/N, this process's index I of N shards (0 ≤ I < N ≤ %d), e.g. 0/4, or auto/N on a Kubernetes Indexed Job", untrusted.Line(v), session.MaxShards)
	}
	from := ""
	if index == "auto" {
		index, from = getenv(JobIndexVariable), " (from "+JobIndexVariable+")"
		if index == "" {
			return Shard{}, fmt.Errorf("--shard auto/%d: %s is not set; auto reads it on a Kubernetes Indexed Job's pod, elsewhere give the index: --shard 0/%d", n, JobIndexVariable, n)
		}
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: index %q%s is not a whole number from 0 to %d", untrusted.Line(v), untrusted.Line(index), from, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// mine reports whether the request, stream or line of index k is this
// shard's.
func (s Shard) mine(k int) bool { return s.Count == 0 || k%s.Count == s.Index }

// String is "I/N", or "" when not sharded.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// ParseStartAt reads --start-at, an RFC 3339 time.
func ParseStartAt(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--start-at %q: give an RFC 3339 time, e.g. %s", untrusted.Line(v), time.Now().Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return t, nil
}

// maxStartWait bounds how far ahead --start-at may lie: a typo of a day
// would hold the run (and a Job's pods) for it.
const maxStartWait = 24 * time.Hour

// shardInfo is what a shard's manifest says of where and when it ran.
func shardInfo(s Shard, startAt time.Time) *session.ShardInfo {
	if s.Count == 0 && startAt.IsZero() {
		return nil
	}
	host, _ := os.Hostname()
	info := &session.ShardInfo{Index: s.Index, Count: s.Count, Host: untrusted.Line(host), Clock: clockError()}
	if !startAt.IsZero() {
		at := startAt.UTC()
		info.StartAt = &at
	}
	return info
}

// countBlock counts toward arm i's trial cap a sharded block's k
// requests, its own and the other shards' alike, as planned: every shard
// must stop its arms after the same blocks, and what each one sees (a
// request that found the server down, a closed loop's drain) differs
// from shard to shard. The stop says the cap was the shards' together.
func (r *run) countBlock(i, k int) {
	arm := &r.arms[i]
	if r.plan.Shard.Count == 0 || k == 0 || arm.stopped {
		return
	}
	arm.timed += k
	d := r.plan.Stop.Decide(r.plan.Profile.Arms[i].Name, arm.timed, &arm.e2e)
	if d.Stop {
		n := r.plan.Shard.Count
		d.Reason += fmt.Sprintf(", counted over the %d shards together", n)
		d.Short = strings.SplitN(d.Short, ",", 2)[0] + fmt.Sprintf(", %d shards", n)
		r.stopArm(i, d)
	}
}

// lateStart is how late after --start-at a first timed block may begin
// unremarked: a timer's slack and a request's set-up.
const lateStart = 10 * time.Millisecond

// beginTimed waits, before the run's first timed block (or trial), for
// --start-at: every shard's warmup is over by then, and their timed
// blocks begin together. One that gets there late says by how much; the
// manifest keeps the lateness either way.
func (r *run) beginTimed(ctx context.Context) {
	at := r.plan.StartAt
	if at.IsZero() || r.timedBegun {
		return
	}
	r.timedBegun = true
	if wait := time.Until(at); wait > 0 {
		r.events <- Warning{Text: fmt.Sprintf("waiting %v for --start-at %s, when every shard begins its first timed block", wait.Round(time.Millisecond), at.UTC().Format(time.RFC3339Nano))}
		sleep(ctx, wait)
	}
	late := time.Since(at)
	r.writer.SetStartLate(ms(late))
	if late > lateStart {
		r.events <- Warning{Text: fmt.Sprintf("began the first timed block %v after --start-at %s: later than the other shards, by up to that much", late.Round(time.Millisecond), at.UTC().Format(time.RFC3339Nano))}
	}
}
