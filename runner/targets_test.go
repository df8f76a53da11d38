package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// twoServerPlan runs arm "a" on server urlA and arm "b" on urlB, both
// llama-servers replaying recorded streams.
func twoServerPlan(t *testing.T, urlA, urlB string, trials int, wait time.Duration) (*Plan, []backends.Backend) {
	t.Helper()
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 32\ntrials = 1\nwarmup = 1\nseed = 3\ntimeout = \"5s\"\nprompts = [\"Once upon a time\"]\n"+
		"[[arms]]\nname = \"a\"\nbackend = \"llamacpp\"\nurl = \""+urlA+"\"\n[[arms]]\nname = \"b\"\nbackend = \"llamacpp\"\nurl = \""+urlB+"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, bs, err := Prepare(p, Options{OutDir: t.TempDir(), Trials: trials, Warmup: NoOverride, MaxTokens: NoOverride, ServerWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	return plan, bs
}

// runComplete prepares profile p with opts, runs it with no power source
// and requires it to complete.
func runComplete(t *testing.T, p *profiles.Profile, opts Options) (*Plan, []Event) {
	t.Helper()
	plan, bs, err := Prepare(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	status, err, events := runTargets(t, plan, bs)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	return plan, events
}

func runTargets(t *testing.T, plan *Plan, bs []backends.Backend) (string, error, []Event) {
	t.Helper()
	events := make(chan Event, 4096)
	status, err := Run(context.Background(), plan, bs, events)
	var got []Event
	for ev := range events {
		got = append(got, ev)
	}
	return status, err, got
}

// TestOneTargetDiesTheOtherGoesOn: arm a's server dies mid-run and stays
// down; arm b, on another server, runs its whole plan meanwhile. a's
// arm ends as "server lost", the run ends partial with ErrServerLost, and
// the manifest lists both targets with their arms.
func TestOneTargetDiesTheOtherGoesOn(t *testing.T) {
	dying, healthy := newLlamaServer(t, "completion_t0_stream"), newLlamaServer(t, "completion_t0_stream")
	dying.killAt = 3 // warmup, timed 1, then the cut stream
	// 2 s of waiting for a's server, while b runs its plan.
	plan, bs := twoServerPlan(t, dying.url(), healthy.url(), 12, 2*time.Second)
	if len(plan.Targets) != 2 || plan.Targets[0].Name != "llamacpp-a" || plan.Targets[1].Name != "llamacpp-b" {
		t.Fatalf("targets %+v", plan.Targets)
	}
	status, err, events := runTargets(t, plan, bs)
	if !errors.Is(err, ErrServerLost) || status != session.StatusPartial || !strings.Contains(err.Error(), "the server of llamacpp-a (arm a) stopped answering at a trial 3 (") {
		t.Fatalf("status %s, error %v", status, err)
	}
	var goOn bool
	for _, w := range eventsOf[Warning](events) {
		goOn = goOn || strings.Contains(w.Text, "the server of llamacpp-a (arm a) stopped answering at a trial 3: the other arms go on")
	}
	if !goOn {
		t.Errorf("no warning that the other arms go on: %+v", eventsOf[Warning](events))
	}
	// b runs to its cap whether or not a's wait ends first: on a machine
	// busy enough (CI's every-size sweep beside it, once), the wait ended
	// before b's twelfth trial, so the order of the two stops is not held.
	stopped := eventsOf[ArmStopped](events)
	short := map[string]string{}
	for _, s := range stopped {
		short[s.Arm] = s.Short
	}
	if len(stopped) != 2 || short["a"] != "server lost" || short["b"] != "trial cap 12" {
		t.Errorf("stops %+v", stopped)
	}
	fin := eventsOf[Finished](events)[0]
	if a, b := fin.Summary["a"], fin.Summary["b"]; b.TimedOK != 12 || b.Degraded != 0 || a.TimedOK != 1 || a.Degraded != 1 || !strings.Contains(a.StoppedBy, "did not come back") {
		t.Errorf("a %+v\nb %+v", a, b)
	}
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Manifest
	if len(m.Targets) != 2 || m.TargetOf("a").URL != dying.url() || m.TargetOf("b").URL != healthy.url() || m.Arms[1].Target != "llamacpp-b" || !strings.HasSuffix(m.ID, "-t-llamacpp") {
		t.Errorf("manifest targets %+v arms %+v id %s", m.Targets, m.Arms, m.ID)
	}
	if labels := session.ArmLabels(m); labels["a"] != dying.url() || labels["b"] != healthy.url() {
		t.Errorf("labels %v", labels)
	}
}

// TestALostTargetComesBackAndWarmsUpAgain: a's server is back within the
// wait; its arm runs warmup again and both arms finish their plans.
func TestALostTargetComesBackAndWarmsUpAgain(t *testing.T) {
	flaky, steady := newLlamaServer(t, "completion_t0_stream"), newLlamaServer(t, "completion_t0_stream")
	flaky.killAt = 3
	flaky.restartAfter(3, 150*time.Millisecond)
	plan, bs := twoServerPlan(t, flaky.url(), steady.url(), 40, 10*time.Second)
	status, err, events := runTargets(t, plan, bs)
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	resumed := eventsOf[Resumed](events)
	if len(resumed) != 1 || len(resumed[0].Arms) != 1 || resumed[0].Arms[0] != "a" || resumed[0].Warmup != 1 {
		t.Fatalf("resumed %+v", resumed)
	}
	var warmupsOfA int
	for _, r := range trials(events) {
		if r.Arm == "a" && r.Phase == session.PhaseWarmup {
			warmupsOfA++
		}
	}
	fin := eventsOf[Finished](events)[0]
	if warmupsOfA != 2 || fin.Summary["a"].TimedOK < 38 || fin.Summary["b"].TimedOK != 40 {
		t.Errorf("a warmed up %d times; a %+v b %+v", warmupsOfA, fin.Summary["a"], fin.Summary["b"])
	}
}

// TestAProbeFailureNamesTheArm: of two targets, the one that does not
// answer is named with its arm, before anything is written.
func TestAProbeFailureNamesTheArm(t *testing.T) {
	up := newLlamaServer(t, "completion_t0_stream")
	down := newLlamaServer(t, "completion_t0_stream")
	down.kill()
	plan, bs := twoServerPlan(t, up.url(), down.url(), 3, 100*time.Millisecond)
	status, err, _ := runTargets(t, plan, bs)
	if status != session.StatusFailed || err == nil || !strings.Contains(err.Error(), "llamacpp backend at "+down.url()+", arm b: ") {
		t.Fatalf("status %s, error %v", status, err)
	}
}

func TestResolveGivesEachArmItsTarget(t *testing.T) {
	parse := func(arms string) *profiles.Profile {
		t.Helper()
		p, err := profiles.Parse("/p/ab.toml", []byte("name = \"ab\"\nmax_tokens = 8\ntrials = 3\nprompts = [\"x\"]\n[models]\nollama = \"gemma3:270m\"\n"+arms))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride}
	p := parse("[[arms]]\nname = \"f32\"\n[[arms]]\nname = \"hot\"\ntemperature = 0.7\n[[arms]]\nname = \"q8\"\ndtype = \"q8_0\"\n" +
		"[[arms]]\nname = \"ctx\"\nbackend = \"ollama\"\n[arms.options]\nnum_ctx = 512\n")
	o := base
	o.Threads = 1
	plan, err := Resolve(p, o)
	if err != nil {
		t.Fatal(err)
	}
	// f32 and hot share the run's target (sampling is not a target).
	var names []string
	for _, tg := range plan.Targets {
		names = append(names, tg.Name+"="+strings.Join(tg.Arms, "+"))
	}
	if got := strings.Join(names, " "); got != "builtin-f32=f32+hot builtin-q8=q8 ollama=ctx" || plan.ArmTarget[3] != 2 {
		t.Fatalf("targets %s, arm targets %v", got, plan.ArmTarget)
	}
	q8, ctx := plan.Targets[1].Target, plan.Targets[2].Target
	if q8.DType != "q8_0" || q8.Threads != 1 || plan.Targets[0].Target.DType != "" || ctx.Model != "gemma3:270m" || ctx.URL != "http://127.0.0.1:11434" ||
		ctx.Threads != 0 || ctx.Options["num_ctx"] != int64(512) {
		t.Errorf("q8 %+v ctx %+v", q8, ctx)
	}

	// The hash changes with any arm's target, and with nothing else.
	hash := plan.ConfigHash()
	again, _ := Resolve(p, o)
	if again.ConfigHash() != hash {
		t.Error("config hash not stable")
	}
	for name, edit := range map[string]string{
		"an option": "[[arms]]\nname = \"f32\"\n[[arms]]\nname = \"hot\"\ntemperature = 0.7\n[[arms]]\nname = \"q8\"\ndtype = \"q8_0\"\n[[arms]]\nname = \"ctx\"\nbackend = \"ollama\"\n[arms.options]\nnum_ctx = 1024\n",
		"a dtype":   "[[arms]]\nname = \"f32\"\n[[arms]]\nname = \"hot\"\ntemperature = 0.7\n[[arms]]\nname = \"q8\"\ndtype = \"f32\"\n[[arms]]\nname = \"ctx\"\nbackend = \"ollama\"\n[arms.options]\nnum_ctx = 512\n",
		"a url":     "[[arms]]\nname = \"f32\"\n[[arms]]\nname = \"hot\"\ntemperature = 0.7\n[[arms]]\nname = \"q8\"\ndtype = \"q8_0\"\n[[arms]]\nname = \"ctx\"\nbackend = \"ollama\"\nurl = \"http://127.0.0.1:11435\"\n[arms.options]\nnum_ctx = 512\n",
	} {
		if changed, err := Resolve(parse(edit), o); err != nil || changed.ConfigHash() == hash {
			t.Errorf("%s: hash unchanged (%v)", name, err)
		}
	}

	for _, c := range []struct {
		arms string
		edit func(*Options)
		want string
	}{
		{"[[arms]]\nname = \"a\"\nbackend = \"olama\"\n", nil, `/p/ab.toml:9: arm a: backend: unknown backend "olama"`},
		{"[[arms]]\nname = \"a\"\nbackend = \"ollama\"\ndtype = \"q8_0\"\n", nil, "/p/ab.toml:10: arm a: dtype: tunes an in-process engine such as builtin; the ollama server chooses its own"},
		{"[[arms]]\nname = \"a\"\nbackend = \"ollama\"\nmodel_path = \"m.gguf\"\n", nil, "/p/ab.toml:10: arm a: model_path: names a model file for an in-process engine such as builtin; the ollama server loads its own (set model instead)"},
		{"[[arms]]\nname = \"a\"\ndtype = \"q4\"\n", nil, `/p/ab.toml:9: arm a: dtype: "q4" is not a weight format of builtin; use one of f32, q8_0`},
		{"[[arms]]\nname = \"a\"\nurl = \"http://x\"\n", nil, "/p/ab.toml:9: arm a: url: the builtin backend runs in process and takes no URL"},
		{"[[arms]]\nname = \"a\"\nbackend = \"ollama\"\nurl = \"localhost:11434\"\n", nil, `/p/ab.toml:10: arm a: url: "localhost:11434" is not a server address`},
		{"[[arms]]\nname = \"a\"\n[arms.options]\nnum_ctx = 1\n", nil, "/p/ab.toml:10: arm a: options.num_ctx: the builtin backend takes no options"},
		{"[[arms]]\nname = \"a\"\nbackend = \"ollama\"\n[arms.options]\nseed = 1\n", nil, "/p/ab.toml:11: arm a: options.seed: tokentop sets seed itself"},
		{"[[arms]]\nname = \"a\"\nbackend = \"ollama\"\n[arms.options]\nnum_ctxx = 1\n", nil, "/p/ab.toml:11: arm a: options.num_ctxx: the server takes no option of that name and would run without it, unsaid"},
		{"[[arms]]\nname = \"a\"\nbackend = \"openai\"\n", nil, "/p/ab.toml:8: arm a: model: no model for backend openai: set model in the arm"},
		{"[[arms]]\nname = \"a\"\ndtype = \"f32\"\n[[arms]]\nname = \"b\"\ndtype = \"q8_0\"\n", func(o *Options) { o.DType = "q8_0" }, "--dtype q8_0 would change no arm: every arm of profile ab sets its own dtype"},
		{"[[arms]]\nname = \"a\"\nbackend = \"ollama\"\nmodel = \"m\"\n", func(o *Options) { o.Model = "x" }, "--model x would change no arm"},
		{"[[arms]]\nname = \"a\"\nbackend = \"llamacpp\"\n[[arms]]\nname = \"b\"\nbackend = \"ollama\"\n", func(o *Options) { o.ServerPID = 7 }, "--server-pid 7: the arms run on 2 servers"},
	} {
		o := base
		if c.edit != nil {
			c.edit(&o)
		}
		if _, err := Resolve(parse(c.arms), o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.arms, err, c.want)
		}
	}
}

// TestServerProfilesRunOnRecordedServers: the built-in ollama-vs-llamacpp
// profile, its arms pointed at recorded Ollama and llama-server answers,
// interleaves the two servers and records each one's target; two-models
// resolves to two targets on one server that differ in the model alone.
func TestServerProfilesRunOnRecordedServers(t *testing.T) {
	llama := newLlamaServer(t, "completion_t0_stream")
	ollama := replay.NewServer(t, replay.Route{
		"GET /api/version":   replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":      replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":     replay.Serve(replay.Load(t, "ollama/api_show")),
		"POST /api/generate": replay.Serve(replay.Load(t, "ollama/api_generate_t0_stream")),
	})
	p, err := profiles.Find("ollama-vs-llamacpp")
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.Arms = slices.Clone(p.Arms)
	q.Arms[0].URL, q.Arms[1].URL, q.Models = profiles.URLs{ollama.URL}, profiles.URLs{llama.url()}, map[string]string{"ollama": "tiny15m"}
	plan, bs, err := Prepare(&q, Options{OutDir: t.TempDir(), Trials: 6, Warmup: 1, MaxTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	status, err, events := runTargets(t, plan, bs)
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	var order strings.Builder
	for _, r := range trials(events) {
		order.WriteString(r.Arm[:1])
	}
	// Each round runs both servers, in a shuffled order.
	if got := order.String(); len(got) != 14 || strings.Count(got, "o") != 7 || got[:2] == got[2:4] && got[2:4] == got[4:6] {
		t.Errorf("trial order %s", got)
	}
	s := finishedSession(t, events)
	m := s.Manifest
	o, l := m.TargetOf("ollama"), m.TargetOf("llamacpp")
	if o.Kind != "ollama" || o.ServerVersion != "0.33.0-rc2" || o.Model() != "tiny15m:latest" || l.Kind != "llamacpp" || !strings.Contains(l.ServerVersion, "b10470") ||
		!strings.Contains(m.Arms[0].PromptCache, "ollama has no per-request switch") || !strings.HasPrefix(m.Arms[1].PromptCache, "off") {
		t.Errorf("targets %+v\narms %+v", m.Targets, m.Arms)
	}
	// One model on two kinds of server: the kind, the model's names and
	// the cache set them apart, not the addresses.
	if labels := session.ArmLabels(m); labels["ollama"] != "ollama · tiny15m:latest · may cache" || labels["llamacpp"] != "llamacpp · /opt/models/tinyllm/tiny15m.gguf · cache off" {
		t.Errorf("labels %v", labels)
	}

	two, _ := profiles.Find("two-models")
	plan, err = Resolve(two, Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride})
	if err != nil || len(plan.Targets) != 2 || plan.Targets[0].Name != "ollama-gemma3-270m" || plan.Targets[1].Target.Model != "qwen3:0.6b" ||
		plan.Targets[0].Target.URL != plan.Targets[1].Target.URL {
		t.Errorf("two-models: %+v %v", plan, err)
	}
}

// TestARefusedRequestNamesTheOptionsItCarried: llama-server's recorded
// 400 for every request; the arm's options are named in the trial's error
// and in one live warning, with where they went.
func TestARefusedRequestNamesTheOptionsItCarried(t *testing.T) {
	srv := newLlamaServer(t, "error_missing_prompt_completion")
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 8\ntrials = 3\nwarmup = 0\nprompts = [\"x\"]\n"+
		"[[arms]]\nname = \"keep\"\nbackend = \"llamacpp\"\nurl = \""+srv.url()+"\"\n[arms.options]\nn_keep = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, bs, err := Prepare(p, Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	status, _, events := runTargets(t, plan, bs)
	const carried = "(the request carried the options n_keep=1, as fields of the /completion request (n_keep, n_probs, dry_multiplier, ...); a server refuses one it does not take)"
	recs := trials(events)
	warnings := eventsOf[Warning](events)
	if status != session.StatusFailed || len(recs) != 3 || !strings.HasSuffix(recs[2].Error, carried) ||
		len(warnings) != 1 || !strings.HasPrefix(warnings[0].Text, "keep trial 1 was refused by its server: HTTP 400") || !strings.HasSuffix(warnings[0].Text, carried) {
		t.Errorf("status %s, trials %+v, warnings %+v", status, recs, warnings)
	}
}

// The multi-agent study with each agent on its own recorded llama-server
// (TR116's two servers): the alone and together passes keep their
// agents' targets, and the study has a speedup over every round.
func TestTogetherAgentsOnTheirOwnServers(t *testing.T) {
	srvA, srvB := newLlamaServer(t, "completion_t0_stream"), newLlamaServer(t, "completion_t0_stream")
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 32\ntrials = 1\nwarmup = 1\nseed = 3\ntimeout = \"5s\"\nprompts = [\"Once upon a time\"]\n"+
		"together = [\"a\", \"b\"]\n"+
		"[[arms]]\nname = \"a\"\nbackend = \"llamacpp\"\nurl = \""+srvA.url()+"\"\n[[arms]]\nname = \"b\"\nbackend = \"llamacpp\"\nurl = \""+srvB.url()+"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, events := runComplete(t, p, Options{OutDir: t.TempDir(), Trials: 5, Warmup: NoOverride, MaxTokens: NoOverride, ServerWait: time.Second})
	for i, a := range plan.Profile.Arms {
		want := map[byte]string{'a': srvA.url(), 'b': srvB.url()}[a.Name[0]]
		if got := plan.Targets[plan.ArmTarget[i]].Config.URL; got != want {
			t.Errorf("%s runs on %s, want %s", a.Name, got, want)
		}
	}
	if a, b := srvA.requests.Load(), srvB.requests.Load(); a != 12 || b != 12 {
		t.Errorf("requests %d and %d; want 12 each (6 rounds, alone and together)", a, b)
	}
	fin := eventsOf[Finished](events)[0]
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	st := session.Together(s.Manifest, s.Records, 1)
	if st == nil || st.Rounds != 5 || !(st.Speedup.Value > 0) || len(st.PerAgent) != 2 {
		t.Fatalf("study %+v", st)
	}
}

// Arms that differ only by model on one URL are one server: Ollama, vLLM
// and any OpenAI-compatible server serve several models at one address,
// so --server-pid names its process. (It was refused: "the arms run on 2
// servers".)
func TestServerPIDTakesArmsOfOneServerWithSeveralModels(t *testing.T) {
	p, err := profiles.Parse("two.toml", []byte("name = \"two\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[[arms]]\nname = \"small\"\nbackend = \"ollama\"\nmodel = \"gemma3:270m\"\n[[arms]]\nname = \"big\"\nbackend = \"ollama\"\nmodel = \"qwen3:0.6b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(p, Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, ServerPID: 4242})
	if err != nil || len(plan.Targets) != 2 {
		t.Fatalf("one server of two models with --server-pid: %v (%d targets)", err, len(plan.Targets))
	}
}

// A shared profile's arm names its own server: the user's API key does
// not go there unless the user named that server or allowed its host. (It
// sent OPENAI_API_KEY as a Bearer token on every probe and request.)
func TestTheAPIKeyGoesOnlyToServersTheUserNamed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-USERS-REAL-KEY-0123")
	shared, err := profiles.Parse("/shared/p.toml", []byte("name = \"p\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\nbackend = \"openai\"\nurl = \"http://collector.example:8000/v1\"\nmodel = \"m\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(p *profiles.Profile, opts Options) (*Plan, error) {
		opts.OutDir, opts.Trials, opts.Warmup, opts.MaxTokens = t.TempDir(), NoOverride, NoOverride, NoOverride
		return Resolve(p, opts)
	}
	_, err = resolve(shared, Options{})
	if err == nil || !strings.Contains(err.Error(), "/shared/p.toml:8 names the server http://collector.example:8000/v1 for arms a; tokentop sends your API key ($OPENAI_API_KEY) only to servers you name yourself: to send it there, add --api-key-host collector.example:8000") {
		t.Fatalf("a profile's server and the user's key: %v", err)
	}
	if _, err := resolve(shared, Options{KeyHosts: []string{"collector.example:8000"}}); err != nil {
		t.Errorf("the host allowed: %v", err)
	}
	// The user's own --url, and the backend's usual local address, get it.
	mine, err := profiles.Parse("mine.toml", []byte("name = \"mine\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[models]\nopenai = \"m\"\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"http://my-server:8000/v1", ""} {
		if _, err := resolve(mine, Options{Backend: "openai", URL: url}); err != nil {
			t.Errorf("--url %q: %v", url, err)
		}
	}
	// A grid file's url is a file's, not the user's.
	if _, err := resolve(mine, Options{Backend: "openai", URL: "http://collector.example:8000/v1", URLFrom: "/shared/g.toml"}); err == nil || !strings.HasPrefix(err.Error(), "/shared/g.toml names the server") {
		t.Errorf("a grid file's server: %v", err)
	}
	// Without a key there is nothing to send.
	t.Setenv("OPENAI_API_KEY", "")
	if _, err := resolve(shared, Options{}); err != nil {
		t.Errorf("no key: %v", err)
	}
}

// A final usage of two billion completion tokens for a stream of 32
// chunks in milliseconds is not believed: it became output_tokens 2e9
// and 1e10 tok/s. The chunks' count is recorded, the arm's token-count
// note counts it, and a warning says so once.
func TestACountTheStreamCouldNotCarryIsNotTaken(t *testing.T) {
	stream := replay.Load(t, "ollama/v1_completions_stream_usage")
	stream.Body = []byte(strings.Replace(string(stream.Body), `"completion_tokens":32,`, `"completion_tokens":2000000000,`, 1))
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models":       replay.Serve(replay.Load(t, "ollama/v1_models")),
		"POST /v1/completions": replay.Serve(stream),
	})
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 64\nwarmup = 0\ntrials = 3\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, events := runComplete(t, p, Options{Backend: "openai", URL: srv.URL + "/v1", Model: "tiny15m:latest", OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride})
	for _, r := range trials(events) {
		if r.OutputTokens != 32 || r.OutputTPS > 1e7 {
			t.Errorf("trial %d: %d tokens, %.0f tok/s", r.Trial, r.OutputTokens, r.OutputTPS)
		}
	}
	warned := 0
	for _, w := range eventsOf[Warning](events) {
		if strings.Contains(w.Text, "the server said it generated 2000000000 tokens, more than the 64 asked for and its 32 chunks could carry (4096 tokens each at most); the 32 tokens its chunks brought are recorded") {
			warned++
		}
	}
	if fin := eventsOf[Finished](events)[0]; warned != 1 || fin.Summary["a"].TokenCountMismatches != 3 {
		t.Errorf("%d warnings, %d mismatches", warned, fin.Summary["a"].TokenCountMismatches)
	}
}
