package runner

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/llamacpp"
	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// llamaServer replays recorded llama-server answers on a fixed loopback
// address, and can be killed (the stream in flight cut, new connections
// refused) and started again on the same address, as a real server is.
type llamaServer struct {
	t        *testing.T
	addr     string
	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	requests atomic.Int32
	// killAt is the /completion request that dies mid-stream, taking the
	// server with it (0: none).
	killAt int32
	// loading is how many /health probes get llama-server's 503.
	loading atomic.Int32
	// pace is the gap between a /completion stream's chunks (0: at once).
	pace   atomic.Int64
	stream replay.Exchange
}

func newLlamaServer(t *testing.T, stream string) *llamaServer {
	s := &llamaServer{t: t, stream: replay.Load(t, "llamacpp/"+stream)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.kill)
	return s
}

func (s *llamaServer) url() string { return "http://" + s.addr }

func (s *llamaServer) serve(ln net.Listener) {
	routes := replay.Route{
		"GET /props": replay.Serve(replay.Load(s.t, "llamacpp/props")),
		"GET /health": func(w http.ResponseWriter, r *http.Request) {
			if s.loading.Add(-1) >= 0 {
				replay.Serve(replay.Load(s.t, "llamacpp/loading_503_health"))(w, r)
				return
			}
			replay.Serve(replay.Load(s.t, "llamacpp/health"))(w, r)
		},
		"POST /completion": func(w http.ResponseWriter, r *http.Request) {
			if s.requests.Add(1) == s.killAt {
				ln.Close() // no new connections from here on
				replay.Cut(s.stream.WithoutEnd())(w, r)
				s.kill()
				return
			}
			replay.Paced(s.stream, time.Duration(s.pace.Load()))(w, r)
		},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := routes[r.Method+" "+r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	})}
	s.mu.Lock()
	s.srv, s.ln = srv, ln
	s.mu.Unlock()
	go srv.Serve(ln)
}

// kill closes the listener and every connection, kept-alive ones too, as
// a killed process does.
func (s *llamaServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		// The listener too: Close closes only those Serve has begun
		// on, and a kill right after the start would leave the port
		// taking connections that then close unanswered.
		s.ln.Close()
		s.srv.Close()
		s.srv, s.ln = nil, nil
	}
}

// restartAfter starts the server again pause after its requests-th
// /completion request (the one killAt killed it on).
func (s *llamaServer) restartAfter(requests int32, pause time.Duration) {
	go func() {
		for s.requests.Load() < requests {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(pause)
		s.restart()
	}()
}

func (s *llamaServer) restart() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Error(err)
		return
	}
	s.serve(ln)
}

func llamaPlan(t *testing.T, url string, warmup, trials int, wait time.Duration) *Plan {
	t.Helper()
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 32\ntrials = 1\nseed = 3\ntimeout = \"5s\"\nprompts = [\"Once upon a time\"]\n"+
		"[[arms]]\nname = \"greedy\"\n[[arms]]\nname = \"hot\"\ntemperature = 0.8\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(p, Options{Backend: "llamacpp", URL: url, OutDir: t.TempDir(), Trials: trials, Warmup: warmup,
		MaxTokens: NoOverride, ServerWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	return plan
}

func runLlama(t *testing.T, plan *Plan) (string, error, []Event) {
	t.Helper()
	b, err := llamacpp.Kind.New(plan.Targets[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	return runPlan(t, context.Background(), plan, b)
}

func eventsOf[E Event](events []Event) []E {
	var out []E
	for _, ev := range events {
		if e, ok := ev.(E); ok {
			out = append(out, e)
		}
	}
	return out
}

// TestDeadServerEndsTheRunAsPartial: kill -9 mid-run. The trial in flight
// is degraded, the next one finds nobody, and the runner waits for the
// server instead of burning the rest of the plan in a second; when it
// does not come back, the session is partial, the error says why, and
// the remaining trials were never counted as run.
func TestDeadServerEndsTheRunAsPartial(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	srv.killAt = 5
	plan := llamaPlan(t, srv.url(), 1, 300, 600*time.Millisecond)
	start := time.Now()
	status, err, events := runLlama(t, plan)
	if !errors.Is(err, ErrServerLost) || status != session.StatusPartial || time.Since(start) < 600*time.Millisecond {
		t.Fatalf("status %s, error %v after %v", status, err, time.Since(start))
	}
	recs := trials(events)
	if len(recs) != 6 || recs[4].Status != session.StatusError || recs[5].Status != session.StatusError ||
		!strings.Contains(recs[5].Error, "connection refused") {
		t.Fatalf("%d trials: %+v", len(recs), recs)
	}
	if len(eventsOf[Waiting](events)) == 0 {
		t.Error("no waiting event")
	}
	fin := eventsOf[Finished](events)[0]
	if !strings.Contains(fin.Note, "did not come back") || fin.Status != session.StatusPartial {
		t.Errorf("finished %+v", fin)
	}
	s, err := session.Load(fin.Manifest)
	if err != nil || s.Manifest.Status != session.StatusPartial || !strings.Contains(s.Manifest.StopNote, "stopped answering") {
		t.Fatalf("manifest %+v %v", s.Manifest, err)
	}
	// The report and the comparison say so first.
	report := session.BuildReport(s, session.TestOptions{Resamples: 100, Seed: 1}).Lines("", "  ")
	if !strings.HasPrefix(report[0], "caveat: status partial: the run did not finish its plan (the server stopped answering") {
		t.Errorf("report starts %q", report[0])
	}
	cmp, err := session.Compare([]session.Ref{{Path: fin.Manifest}}, []*session.Session{s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmp.Write(&out, "text")
	if !strings.HasPrefix(out.String(), "caveat: ") || !strings.Contains(out.String(), "1 of 2 timed trials degraded (most often error: stream ended before") {
		t.Errorf("comparison:\n%s", out.String())
	}
}

// TestServerBackAfterARestart: the server comes back within the wait; the
// run warms up again and finishes its plan, and the trial that found the
// server gone is recorded without taking a timed trial's place.
func TestServerBackAfterARestart(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	srv.killAt = 5
	srv.restartAfter(5, 400*time.Millisecond)
	plan := llamaPlan(t, srv.url(), 1, 4, 10*time.Second)
	status, err, events := runLlama(t, plan)
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	resumed := eventsOf[Resumed](events)
	if len(resumed) != 1 || resumed[0].Warmup != 1 {
		t.Fatalf("resumed %+v", resumed)
	}
	recs := trials(events)
	var phases strings.Builder
	for _, r := range recs {
		phases.WriteString(r.Phase[:1])
		if r.Status != session.StatusOK {
			phases.WriteString("!")
		}
	}
	// warmup round, one timed round, the cut trial, the refused one, a
	// warmup round again, then timed trials to the cap.
	if got := phases.String(); !strings.HasPrefix(got, "wwttt!t!ww") || strings.Count(got, "t") != 9 {
		t.Errorf("phases %s", got)
	}
	fin := eventsOf[Finished](events)[0]
	for arm, sum := range fin.Summary {
		if sum.TimedOK+sum.Degraded < 4 || sum.TimedOK < 3 {
			t.Errorf("%s: %+v", arm, sum)
		}
	}
}

// TestWaitsForTheModelToLoad: llama-server answers 503 "Loading model"
// while it loads; the run waits and says so, then starts.
func TestWaitsForTheModelToLoad(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	srv.loading.Store(3)
	status, err, events := runLlama(t, llamaPlan(t, srv.url(), 0, 1, 10*time.Second))
	waits := eventsOf[Waiting](events)
	if err != nil || status != session.StatusComplete || len(waits) != 3 || waits[0].What != "the model to load" ||
		!strings.Contains(waits[0].Why, "Loading model") {
		t.Fatalf("status %s error %v waits %+v", status, err, waits)
	}

	srv.loading.Store(1000)
	_, err, _ = runLlama(t, llamaPlan(t, srv.url(), 0, 1, 300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "Loading model") || !strings.Contains(err.Error(), "--server-wait") {
		t.Errorf("never loads: %v", err)
	}
}

// TestContextTruncationIsWarnedOnce replays llama-server cutting a
// generation at its context window (stop_type limit, truncated true).
func TestContextTruncationIsWarnedOnce(t *testing.T) {
	srv := newLlamaServer(t, "completion_ctx_limit_stream")
	plan := llamaPlan(t, srv.url(), 0, 2, time.Second)
	plan.Profile.MaxTokens = 2000
	status, err, events := runLlama(t, plan)
	warnings := eventsOf[Warning](events)
	if err != nil || status != session.StatusComplete || len(warnings) != 1 || !strings.Contains(warnings[0].Text, "after 251 of 2000 tokens") {
		t.Fatalf("status %s error %v warnings %+v", status, err, warnings)
	}
	for _, r := range trials(events) {
		if r.StopReason != "truncated" || r.CachedTokens != 0 {
			t.Errorf("%+v", r)
		}
	}
}

// TestArmsMeetTheSameCache replays llama-server's prompt cache: a request
// that lets the server cache (cache_prompt absent or true) with the same
// prompt as the one before it is a hit (cache_n 4, prompt_ms 0.298); any
// other is a miss. Arms of a round share a prompt, so with the cache on
// and a fixed order the first arm would pay every miss and the others get
// every hit: a false verdict. With the cache off every trial is a miss.
func TestArmsMeetTheSameCache(t *testing.T) {
	hit, miss, off := replay.Load(t, "llamacpp/cache_prompt_repeat_b"), replay.Load(t, "llamacpp/cache_prompt_repeat_a"),
		replay.Load(t, "llamacpp/cache_prompt_false_repeat")
	var mu sync.Mutex
	last := ""
	srv := replay.NewServer(t, replay.Route{
		"GET /health": replay.Serve(replay.Load(t, "llamacpp/health")),
		"GET /props":  replay.Serve(replay.Load(t, "llamacpp/props")),
		"POST /completion": func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				Prompt      string `json:"prompt"`
				CachePrompt *bool  `json:"cache_prompt"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			mu.Lock()
			same := body.Prompt == last
			last = body.Prompt
			mu.Unlock()
			switch {
			case body.CachePrompt != nil && !*body.CachePrompt:
				replay.Serve(off)(w, r)
			case same:
				replay.Serve(hit)(w, r)
			default:
				replay.Serve(miss)(w, r)
			}
		},
	})
	for _, allowed := range []bool{false, true} {
		plan := llamaPlan(t, srv.URL, 0, 12, time.Second)
		plan.Profile.PromptCache = allowed
		plan.Profile.MaxTokens = 16
		plan.Profile.Prompts = []string{"Once upon a time", "The cat sat", "Lily wanted"} // a new prompt each round
		status, err, events := runLlama(t, plan)
		if err != nil || status != session.StatusComplete {
			t.Fatal(status, err)
		}
		prefill := map[string][]float64{}
		cached := map[string]int{}
		for _, r := range trials(events) {
			if r.Phase == session.PhaseTimed {
				prefill[r.Arm] = append(prefill[r.Arm], r.ServerPrefillMs)
				cached[r.Arm] += r.CachedTokens
			}
		}
		t.Logf("prompt_cache %v: server prefill ms greedy %v, hot %v; cached tokens %v", allowed, prefill["greedy"], prefill["hot"], cached)
		if !allowed {
			for arm, p := range prefill {
				if cached[arm] != 0 || slices.Min(p) != 0.519 || slices.Max(p) != 0.519 {
					t.Errorf("cache off: %s prefill %v, cached %d", arm, p, cached[arm])
				}
			}
			continue
		}
		// Cache allowed: hits happen (and are counted), but the shuffled
		// order gives each arm the first place, and its miss, equally often.
		misses := map[string]int{}
		for arm, p := range prefill {
			for _, v := range p {
				if v == 0.762 {
					misses[arm]++
				}
			}
		}
		if cached["greedy"] == 0 || cached["hot"] == 0 || misses["greedy"] != 6 || misses["hot"] != 6 {
			t.Errorf("cache on: misses %v, cached tokens %v", misses, cached)
		}
	}
}

// countingBackend streams chunks chunks and says "length"; its own token
// count is count (-1: it gives none, as an OpenAI server without usage).
type countingBackend struct{ chunks, count int }

func (c countingBackend) Probe(context.Context, string) (backends.Info, error) {
	return backends.Info{}, nil
}

func (c countingBackend) Generate(_ context.Context, _ backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	for range c.chunks {
		onChunk(1, backends.Answer)
	}
	res := backends.NewResult()
	res.StopReason, res.OutputTokens = "length", c.count
	return res, nil
}

// TestTruncationNeedsTheServersCount: a "length" stop below max_tokens is
// the context window's only when the server counted the tokens; a stream
// whose chunks carry several tokens each shows fewer chunks than tokens.
func TestTruncationNeedsTheServersCount(t *testing.T) {
	for _, c := range []struct {
		backend countingBackend
		want    string
	}{{countingBackend{chunks: 4, count: -1}, "length"}, {countingBackend{chunks: 4, count: 4}, "truncated"}, {countingBackend{chunks: 4, count: 8}, "length"}} {
		plan := testPlan(t, 0, 1, "greedy")
		_, err, events := runPlan(t, context.Background(), plan, c.backend)
		if recs := trials(events); err != nil || len(recs) != 1 || recs[0].StopReason != c.want {
			t.Errorf("%+v: %+v %v", c.backend, recs, err)
		}
	}
}

// A sweep against recorded llama-server answers over real HTTP: every
// request is a row with its level, stream and in-flight count, each level
// has its throughput, the report and the comparison say the sweep, and a
// comparison of a level with a one-at-a-time run warns of the difference.
func TestSweepAgainstARecordedLlamaServer(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	// Paced as a server decodes: answered at once, four streams' requests
	// could end so nearly together, on a busy machine, that a block had no
	// steady window (a stream's first request ending after another's
	// last) and its level no throughput.
	srv.pace.Store(int64(time.Millisecond))
	plan := llamaPlan(t, srv.url(), 0, 8, time.Second)
	plan.Profile.Concurrency = profiles.Levels{1, 4}
	plan.expandLoad()
	status, err, events := runLlama(t, plan)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	for _, r := range trials(events) {
		if r.Status != session.StatusOK || r.OutputTokens != 32 || r.Stream < 1 || r.Stream > r.Concurrency || r.InFlight < 1 || r.InFlight > r.Concurrency {
			t.Errorf("%s trial %d: %s, %d tokens, stream %d of %d, %d in flight", r.Arm, r.Trial, r.Status, r.OutputTokens, r.Stream, r.Concurrency, r.InFlight)
		}
	}
	fin := eventsOf[Finished](events)[0]
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.LoadResults()
	if err != nil || res == nil || len(res.Sweeps) != 2 {
		t.Fatalf("load results %+v, %v", res, err)
	}
	for _, sw := range res.Sweeps {
		if len(sw.Levels) != 2 || !(sw.Levels[0].TokensPerS > 0) || !(sw.Levels[1].TokensPerS > 0) || sw.Levels[1].N < 8 {
			t.Errorf("sweep of %s: %+v", sw.Base, sw.Levels)
		}
	}
	report := strings.Join(session.BuildReport(s, session.TestOptions{Resamples: 100, Seed: 1}).Lines("", "  "), "\n")
	if !strings.Contains(report, "sweep of greedy (tok/s") || !regexp.MustCompile(`streams +tok/s +req/s`).MatchString(report) || !strings.Contains(report, "hot: ") {
		t.Errorf("report:\n%s", report)
	}

	one := llamaPlan(t, srv.url(), 0, 4, time.Second)
	one.Profile.Name = "single" // a session of its own name, though started within the same second
	_, err, events = runLlama(t, one)
	if err != nil {
		t.Fatal(err)
	}
	single := finishedSession(t, events)
	cmp, err := session.Compare([]session.Ref{{Path: fin.Manifest, Arm: "greedy@c4"}, {Path: single.Path, Arm: "greedy"}}, []*session.Session{s, single}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmp.Write(&out, "text")
	if text := out.String(); !strings.Contains(text, "concurrency 4 vs 1): their deltas and verdicts measure that too") || !strings.Contains(text, "load:\n") {
		t.Errorf("comparison of a level with a one-at-a-time run:\n%s", text)
	}
}

// The server dies in the middle of a load block and stays down: the
// request that found it gone is an error, the block's others are
// canceled, none counts as measured, and the session is partial (or
// failed, when the kill came before any stream's first steady request
// ended: the requests before it were warmup and ramp-up).
func TestLoadBlockAgainstAServerThatDies(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	srv.killAt = 7
	plan := llamaPlan(t, srv.url(), 0, 40, 300*time.Millisecond)
	plan.Profile.Arms = plan.Profile.Arms[:1]
	plan.Profile.Concurrency = profiles.Levels{4}
	plan.expandLoad()
	status, err, events := runLlama(t, plan)
	if !errors.Is(err, ErrServerLost) || (status != session.StatusPartial && status != session.StatusFailed) {
		t.Fatalf("status %s, error %v", status, err)
	}
	failed := 0
	for _, r := range trials(events) {
		if r.Status != session.StatusOK {
			failed++
			if r.Counted() {
				t.Errorf("failed request %d counted", r.Trial)
			}
		}
	}
	last := eventsOf[TrialDone](events)
	if failed == 0 || last[len(last)-1].Measured > 8 {
		t.Errorf("%d failed requests; %d measured (the server served 6 before it died)", failed, last[len(last)-1].Measured)
	}
}

// An open loop at two rates against the recorded llama-server shapes: every
// request succeeds, the trials CSV read back keeps each one's due time and
// queue, and the report gives each rate's offered and achieved req/s and
// its latencies both ways.
func TestRatesAgainstARecordedLlamaServer(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	srv.pace.Store(int64(time.Millisecond))
	plan := llamaPlan(t, srv.url(), 1, 16, time.Second)
	plan.Profile.Rate = profiles.Rates{20, 50}
	plan.expandLoad()
	plan.OpenBlock = 200 * time.Millisecond
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"greedy@r20", "hot@r20", "greedy@r50", "hot@r50"}) {
		t.Fatalf("derived arms %v", got)
	}
	status, err, events := runLlama(t, plan)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	s := finishedSession(t, events)
	timed := 0
	for _, r := range s.Records {
		if r.Status != session.StatusOK || r.OutputTokens != 32 || math.IsNaN(r.ScheduledMs) || !(r.QueueMs >= 0) {
			t.Errorf("%s trial %d read back: %s, %d tokens, scheduled %v ms, queue %v ms", r.Arm, r.Trial, r.Status, r.OutputTokens, r.ScheduledMs, r.QueueMs)
		}
		if r.Phase == session.PhaseTimed {
			timed++
		}
	}
	if timed < 4*16 {
		t.Errorf("%d timed requests, want 16 per arm at least", timed)
	}
	if s.Manifest.Profile.Load == nil || !slices.Equal(s.Manifest.Profile.Load.Rates, []float64{20, 50}) || s.Manifest.Profile.Load.Arrival != "poisson" {
		t.Errorf("manifest load %+v", s.Manifest.Profile.Load)
	}
	res, err := s.LoadResults()
	if err != nil || res == nil || len(res.Rates) != 2 {
		t.Fatalf("load results %+v, %v", res, err)
	}
	for _, sw := range res.Rates {
		for _, lv := range sw.Levels {
			if !(lv.Achieved > 0) || lv.N < 16 || lv.TTFTDueP95 < lv.TTFTP95 {
				t.Errorf("%s at %g/s: %+v", sw.Base, lv.Offered, lv)
			}
		}
	}
	report := strings.Join(session.BuildReport(s, session.TestOptions{Resamples: 100, Seed: 1}).Lines("", "  "), "\n")
	if !strings.Contains(report, "rates of greedy (") || !regexp.MustCompile(`offered req/s +scheduled +achieved`).MatchString(report) {
		t.Errorf("report:\n%s", report)
	}
}
