package runner

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// shardRecords runs plan as shard s of n (n 0: all of it) and returns
// its records.
func shardRecords(t *testing.T, plan *Plan, s, n int) []session.Record {
	t.Helper()
	return shardSession(t, plan, s, n).Records
}

// shardSession runs plan as shard s of n and reads its session back.
func shardSession(t *testing.T, plan *Plan, s, n int) *session.Session {
	t.Helper()
	plan.Shard = Shard{Index: s, Count: n}
	status, err, events := runPlan(t, context.Background(), plan, &fakeBackend{delays: []time.Duration{time.Millisecond}})
	if err != nil || status != session.StatusComplete {
		t.Fatalf("shard %d/%d: %s %v", s, n, status, err)
	}
	return finishedSession(t, events)
}

// The merge takes the shards of one plan only, each once; a shard that is
// missing leaves the merged session partial, naming it, and what was
// merged is still computed from the rows.
func TestTheMergeChecksItsShards(t *testing.T) {
	openLoop := func(seed int64) *Plan {
		p := testPlan(t, 0, 16, "greedy")
		p.Profile.Rate, p.Profile.Seed, p.OpenBlock = profiles.Rates{200}, seed, 40*time.Millisecond
		p.expandLoad()
		return p
	}
	first, third := shardSession(t, openLoop(1), 0, 3), shardSession(t, openLoop(1), 2, 3)
	merged, err := Merge([]string{first.Path, third.Path}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if merged.Status != session.StatusPartial || merged.Note != "shard 1 of 3 is missing" {
		t.Errorf("%+v", merged)
	}
	s, err := session.Load(merged.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Records); n != len(first.Records)+len(third.Records) || s.Manifest.Summary["greedy@r200"].TimedOK != n ||
		!strings.HasPrefix(session.SessionCaveats(s)[0], "status partial: the run did not finish its plan (shard 1 of 3 is missing)") {
		t.Errorf("%d records, summary %+v, caveats %q", n, s.Manifest.Summary["greedy@r200"], session.SessionCaveats(s))
	}
	for _, bad := range []struct {
		paths []string
		want  string
	}{
		{[]string{first.Path, first.Path}, "shard 0 of 3 twice"},
		{[]string{first.Path, shardSession(t, openLoop(2), 1, 3).Path}, "are not shards of one plan (their config hashes differ)"},
		{[]string{shardSession(t, openLoop(1), 1, 2).Path, third.Path}, "merge the shards of one run only"},
		{[]string{t.TempDir()}, "holds no session of a sharded run"},
	} {
		_, err := Merge(bad.paths, t.TempDir())
		var badInput *session.BadInputError
		if !errors.As(err, &badInput) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.paths, err, bad.want)
		}
	}
}

// A closed loop's shards run its streams I, I+N, …: together the streams
// of every block one process runs, each request numbered and placed as
// that process would number it (the stream, the block, the level of
// streams in flight), and each shard runs the same blocks.
func TestAClosedLoopsShardsRunItsStreams(t *testing.T) {
	plan := func() *Plan {
		p := testPlan(t, 0, 24, "greedy")
		p.Profile.Concurrency = profiles.Levels{4}
		p.expandLoad()
		return p
	}
	streams := map[int][]int{}
	trialsOf := map[int][]int{}
	for s := range 2 {
		for _, r := range shardRecords(t, plan(), s, 2) {
			if r.Concurrency != 4 || r.Shard != strconv.Itoa(s) {
				t.Errorf("shard %d trial %d: concurrency %d, shard %q", s, r.Trial, r.Concurrency, r.Shard)
			}
			if !slices.Contains(streams[s], r.Stream) {
				streams[s] = append(streams[s], r.Stream)
			}
			trialsOf[s] = append(trialsOf[s], r.Trial)
		}
		slices.Sort(streams[s])
		slices.Sort(trialsOf[s])
	}
	if !slices.Equal(streams[0], []int{1, 3}) || !slices.Equal(streams[1], []int{2, 4}) {
		t.Errorf("streams %v", streams)
	}
	// Each block of 4 streams × 4 requests: 16 trials, numbered stream by
	// stream in start order; 24 steady requests (12 a block) take 2.
	all := append(slices.Clone(trialsOf[0]), trialsOf[1]...)
	slices.Sort(all)
	if len(trialsOf[0]) != 16 || len(trialsOf[1]) != 16 || !slices.Equal(all, seq(1, 32)) {
		t.Errorf("trials %v", trialsOf)
	}
}

func seq(from, to int) []int {
	var out []int
	for k := from; k <= to; k++ {
		out = append(out, k)
	}
	return out
}

// A trace's shards replay every N-th line: line k by shard k mod N, due
// at its time, numbered as one replay numbers it.
func TestATracesShardsReplayEveryNthLine(t *testing.T) {
	lines := []string{}
	for k := range 7 {
		lines = append(lines, `{"timestamp": `+strconv.Itoa(20*k)+`, "prompt": "p`+strconv.Itoa(k)+`", "max_tokens": 1}`)
	}
	whole := map[int]float64{}
	for _, r := range shardRecords(t, tracePlan(t, lines, 1, time.Second), 0, 0) {
		whole[r.Trial] = r.ScheduledMs
	}
	got := map[int]float64{}
	for s := range 3 {
		for _, r := range shardRecords(t, tracePlan(t, lines, 1, time.Second), s, 3) {
			if (r.Trial-1)%3 != s {
				t.Errorf("shard %d sent trial %d", s, r.Trial)
			}
			got[r.Trial] = r.ScheduledMs
		}
	}
	if len(whole) != 7 || len(got) != 7 {
		t.Fatalf("%d requests replayed whole, %d by the shards", len(whole), len(got))
	}
	for k, due := range whole {
		if got[k] != due {
			t.Errorf("trial %d due at %g ms by its shard, %g ms in one replay", k, got[k], due)
		}
	}
}

// --shard asks for a plan every shard can follow alone: a load run by the
// trial cap. --start-at asks for a time within a day.
func TestShardsAreRefusedWhatTheyCannotShare(t *testing.T) {
	p := testPlan(t, 0, 10, "greedy").Profile
	cases := []struct {
		opts Options
		want string
	}{
		{Options{}, "splits a load run's requests among load generators; set --rate, --concurrency or --trace too"},
		{Options{Rates: profiles.Rates{10}, UntilCI: 0.05}, "--until-ci (or the profile's [stop]: pick a profile without one) decides from the trials a shard sees"},
		{Options{Concurrency: profiles.Levels{4}, Duration: time.Minute}, "--duration ends a level by the steady windows a shard sees"},
	}
	for _, c := range cases {
		c.opts.Backend, c.opts.OutDir, c.opts.Trials, c.opts.Warmup, c.opts.MaxTokens = "ollama", t.TempDir(), 30, NoOverride, NoOverride
		c.opts.Shard = Shard{Index: 1, Count: 2}
		if _, err := Resolve(&p, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
	_, err := Resolve(&p, Options{Backend: "ollama", OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, StartAt: time.Now().Add(48 * time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "give a time within 24h0m0s") {
		t.Errorf("a start two days ahead: %v", err)
	}
	for v, want := range map[string]string{"3/3": "index \"3\" is not a whole number from 0 to 2", "1/0": "give I/N", "auto/4": "JOB_COMPLETION_INDEX is not set", "x": "give I/N"} {
		if _, err := ParseShard(v, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--shard %s: %v, want %q", v, err, want)
		}
	}
	if s, err := ParseShard("auto/4", func(string) string { return "2" }); err != nil || s != (Shard{Index: 2, Count: 4}) {
		t.Errorf("auto/4 on pod 2: %+v %v", s, err)
	}
}

// An arm on a fleet (several URLs) sends its requests round-robin across
// the replicas in schedule order, each request recording which; the
// manifest lists the replicas, each is read for its metrics, and the
// report gives a row per replica and says the slower one is slower.
func TestAFleetsReplicasTakeTheRequestsInTurn(t *testing.T) {
	replica := func(gap time.Duration) string {
		return replay.NewServer(t, replay.Route{
			"GET /v1/models":       replay.Serve(replay.Load(t, "ollama/v1_models")),
			"POST /v1/completions": replay.Paced(replay.Load(t, "ollama/v1_completions_stream_usage"), gap),
		}).URL + "/v1"
	}
	fast, slow := replica(0), replica(time.Millisecond)
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 32\nwarmup = 0\ntrials = 24\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\nurl = [\""+fast+"\", \""+slow+"\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, events := runComplete(t, p, Options{Backend: "openai", Model: "tiny15m:latest", OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, ServerMetrics: ServerMetricsOff})
	if got := plan.Targets[0].Target; got.URL != fast || !slices.Equal(got.Replicas, []string{slow}) {
		t.Fatalf("target %+v", got)
	}
	for _, r := range trials(events) {
		if r.Replica != strconv.Itoa((r.Trial-1)%2) {
			t.Errorf("trial %d went to replica %q", r.Trial, r.Replica)
		}
	}
	s := finishedSession(t, events)
	if got := s.Manifest.Targets[0].Replicas; !slices.Equal(got, []string{fast, slow}) {
		t.Errorf("manifest replicas %q", got)
	}
	if sources := plan.metricsSources(); len(plan.Targets) != 1 || len(sources) != 0 {
		t.Errorf("off: %d sources", len(sources))
	}
	plan.ServerMetrics = ""
	if sources := plan.metricsSources(); len(sources) != 2 || !slices.Equal(sources[1].Targets, []string{"openai replica 1"}) {
		t.Errorf("each replica read for its metrics, named by its index: %+v", sources)
	}
	report := strings.Join(session.BuildReport(s, session.TestOptions{Resamples: 100, Seed: 1}).Lines("", "  "), "\n")
	for _, want := range []string{"replicas:\n", "0  " + fast + "  12  ", "1  " + slow + "  12  ",
		"replica 1 (" + slow + ") is slower than replica 0 (" + fast + "): its e2e is the longer in 100% of pairs of their trials (Mann-Whitney on the pair's trials, p < 0.001); medians "} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// Each shard's stop says its own usable count; the merge keeps what is
// common to them and counts the usable trials of the merged rows.
func TestTheMergeTakesTheShardsStopWithoutTheirCounts(t *testing.T) {
	shard := func(ok, degraded int) *session.Session {
		sum := session.ArmSummary{TimedOK: ok, Degraded: degraded}
		sum.StoppedBy = "reached the trial cap of 300, counted over the 2 shards together" + usableWords(sum)
		return &session.Session{Manifest: &session.Manifest{Summary: map[string]session.ArmSummary{"a": sum}}}
	}
	if got := shardsStop([]*session.Session{shard(140, 10), shard(150, 0)}, "a"); got != "reached the trial cap of 300, counted over the 2 shards together" {
		t.Errorf("%q", got)
	}
	other := shard(150, 0)
	other.Manifest.Summary["a"] = session.ArmSummary{StoppedBy: "replayed the whole trace (300 requests of t.jsonl)"}
	if got := shardsStop([]*session.Session{shard(140, 10), other}, "a"); got != "" {
		t.Errorf("shards stopped otherwise: %q", got)
	}
}
