package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/runner/grid"
	"github.com/tokentop/tokentop/session"
)

// ollamaServer replays recorded Ollama answers; each generation streams
// its 33 recorded lines gap apart.
func ollamaServer(t testing.TB, gap time.Duration) string {
	t.Helper()
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version":   replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":      replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":     replay.Serve(replay.Load(t, "ollama/api_show")),
		"POST /api/generate": replay.Paced(replay.Load(t, "ollama/api_generate_t0_stream"), gap),
	})
	return srv.URL
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func manifests(t *testing.T, dir string) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	return paths
}

func TestRunHeadlessThenCompare(t *testing.T) {
	url := ollamaServer(t, 0)
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--backend", "ollama", "--url", url, "--model", "tiny15m", "--profile", "greedy-vs-sampling",
		"--trials", "4", "--warmup", "1", "--headless", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"backend ollama at " + url, "server 0.33.0-rc2", "greedy   warmup 1/1", "temp-0.8 timed  4/4", "top-k-40", "e2e mean", "status complete", "saved " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	paths := manifests(t, out)
	if len(paths) != 1 {
		t.Fatalf("manifests %v", paths)
	}
	s, err := session.Load(paths[0])
	if err != nil || len(s.Records) != 15 || s.Manifest.Targets[0].Digest == "" {
		t.Fatalf("%v %d %+v", err, len(s.Records), s.Manifest.Targets)
	}
	code, stdout, stderr = runCLI("compare", paths[0]+"#greedy", paths[0]+"#temp-0.8", "--metric", "e2e_ms", "--format", "md")
	if code != exitOK || !strings.Contains(stdout, "| e2e_ms | mean |") || !strings.Contains(stdout, "temp-0.8 is compared with greedy") ||
		!strings.Contains(stdout, "- temp-0.8 ") || !strings.Contains(stdout, "Holm-adjusted (family size 1") {
		t.Errorf("compare exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr = runCLI("compare", paths[0], "--resamples", "0"); code != exitUsage || !strings.Contains(stderr, "--resamples 0") {
		t.Errorf("--resamples 0: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = runCLI("report", paths[0], "--format", "md")
	if code != exitOK || !strings.Contains(stdout, "### greedy: 4 timed trials (+1 warmup)") || !strings.Contains(stdout, "too few trials to judge the warmup") {
		t.Errorf("report exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr = runCLI("report", paths[0], "--format", "xml"); code != exitUsage || !strings.Contains(stderr, `unknown format "xml"`) {
		t.Errorf("report --format xml: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI("compare", "--tui", paths[0])
	if code != exitUsage || !strings.Contains(stderr, "--tui needs a terminal") {
		t.Errorf("compare --tui without a terminal: exit %d, %s", code, stderr)
	}
}

// A typo gets one line that stays on an 80x24 screen, not the whole usage.
func TestUnknownCommandIsOneLineWithTheNearestCommand(t *testing.T) {
	for _, c := range []struct{ arg, want string }{
		{"runn", `unknown command "runn"; did you mean run?`},
		{"mtrix", "did you mean matrix?"},
		{"Compare", "did you mean compare?"},
		{"frobnicate", `unknown command "frobnicate" ('tokentop -h' lists the commands)`},
	} {
		code, stdout, stderr := runCLI(c.arg)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("tokentop %s: exit %d, stdout %q, stderr %q; want one line with %q", c.arg, code, stdout, stderr, c.want)
		}
	}
}

func TestHelpCommandPrintsThatCommandsHelp(t *testing.T) {
	_, viaHelp, _ := runCLI("help", "run")
	_, viaFlag, _ := runCLI("run", "-h")
	if viaHelp != viaFlag || !strings.Contains(viaHelp, "--profile") {
		t.Errorf("tokentop help run printed %q, want run -h's %q", viaHelp, viaFlag)
	}
	if code, _, stderr := runCLI("help", "runn"); code != exitUsage || !strings.Contains(stderr, "did you mean run?") {
		t.Errorf("tokentop help runn: exit %d, %q", code, stderr)
	}
	// A command without flags prints no empty Flags: heading.
	if _, help, _ := runCLI("profiles", "-h"); strings.Contains(help, "Flags:") || !strings.Contains(help, "Usage: tokentop profiles") {
		t.Errorf("tokentop profiles -h:\n%s", help)
	}
}

func TestBadInputExitsWithAClearMessage(t *testing.T) {
	out := t.TempDir()
	profile := filepath.Join(t.TempDir(), "p.toml")
	os.WriteFile(profile, []byte("prompts = [\"x\"]\nmax_tokens = 4\ntrials = -1\n[[arms]]\nname = \"a\"\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--backend", "vllm"}, exitUsage, `unknown backend "vllm"`},
		{[]string{"run", "--backend", "ollama", "--profile", profile}, exitUsage, "p.toml:3: trials: -1 is not a trial count"},
		{[]string{"run", "--backend", "ollama", "--url", replay.ClosedURL(t), "--server-wait", "0s", "--out", out}, exitFailed, "connection refused (is the server running?)"},
		// What the user named is not a session: bad input, exit 2, the path
		// named once.
		{[]string{"compare", filepath.Join(out, "missing.toml")}, exitUsage, filepath.Join(out, "missing.toml") + ": no such file or directory\n"},
		{[]string{"report", "/nope.toml"}, exitUsage, "tokentop: /nope.toml: no such file or directory\n"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"run", "--power", "nvidia", "--out", out}, exitUsage, `--power "nvidia": use one of auto, powermetrics, off`},
		// -1 is the flags' "not given"; typed, it must not quietly mean
		// the profile's value.
		{[]string{"run", "--trials", "-1", "--out", out}, exitUsage, "--trials -1: a count cannot be negative"},
		{[]string{"run", "--warmup", "-1", "--out", out}, exitUsage, "--warmup -1: a count cannot be negative"},
		{[]string{"run", "--max-tokens=-1", "--out", out}, exitUsage, "--max-tokens -1: a count cannot be negative"},
		{[]string{"run", "--backend", "ollama", "--url", "notaurl", "--out", out}, exitUsage, `--url "notaurl" is not a server address; write it like http://127.0.0.1:11434`},
		{[]string{"run", "--model-path", out, "--out", out}, exitFailed, "builtin backend (in process): model file " + out + " is a folder"},
		{[]string{"compare", profile}, exitUsage, "p.toml: no schema key: this TOML file is not a tokentop session manifest"},
		{[]string{"compare", filepath.Join(out, "S.trials.csv")}, exitUsage, "S.trials.csv is one of a session's CSV files; name its manifest, " + filepath.Join(out, "S") + ".toml"},
	}
	if runtime.GOOS != "darwin" {
		cases = append(cases, struct {
			args []string
			code int
			want string
		}{[]string{"run", "--power", "powermetrics", "--out", out}, exitUsage, "--power powermetrics: powermetrics exists only on macOS"})
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if len(manifests(t, out)) != 0 {
		t.Error("a failed start left a session behind")
	}
}

func TestUnknownModelIsRefusedBeforeAnyTrial(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version": replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":    replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":   replay.Serve(replay.Load(t, "ollama/error_unknown_model_show")),
	})
	code, _, stderr := runCLI("run", "--backend", "ollama", "--url", srv.URL, "--model", "nope", "--out", t.TempDir())
	if code != exitFailed || !strings.Contains(stderr, "ollama pull nope") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestProfilesAndBackendsCommands(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	code, stdout, _ := runCLI("profiles")
	if code != exitOK || !strings.Contains(stdout, "greedy-vs-sampling") || !strings.Contains(stdout, "repeatability") || !strings.Contains(stdout, "quick") {
		t.Errorf("profiles:\n%s", stdout)
	}
	code, stdout, _ = runCLI("backends", "--url", ollamaServer(t, 0))
	if code != exitOK || !strings.Contains(stdout, "builtin   in process\n          tokentop's own pure-Go llama engine, in process (no server)\n          reachable, server tokentop-builtin 4") || !strings.Contains(stdout, "reachable, server 0.33.0-rc2, models: tiny15m:latest") || !strings.Contains(stdout, "not reachable") {
		t.Errorf("backends:\n%s", stdout)
	}
}

// built is the tokentop binary the tests run, compiled once per test
// process (without the race detector: the tests that run it exercise the
// built-in engine, which the detector slows tenfold, or signals).
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildBinary is the compiled tokentop, built on first use.
func buildBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		// CI's emulated arm64 suite runs -short: the binary's studies
		// took minutes there, and run natively in full.
		t.Skip("builds the binary and runs it")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "tokentop-test-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "tokentop")
		if out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatalf("build: %v", built.err)
	}
	return built.path
}

// runBinary runs the compiled tokentop with args, as runCLI runs it in
// process: for runs of the built-in engine, whose arithmetic the race
// detector makes minutes long.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// startRun starts the binary on a slow replayed server and waits until at
// least n trials are on disk.
func startRun(t *testing.T, bin string, n int) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "--backend", "ollama", "--url", ollamaServer(t, 2*time.Millisecond), "--model", "tiny15m",
		"--profile", "quick", "--warmup", "0", "--trials", "1000", "--out", out)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if paths := manifests(t, out); len(paths) == 1 {
			data, _ := os.ReadFile(strings.TrimSuffix(paths[0], ".toml") + ".trials.csv")
			if bytes.Count(data, []byte("\n")) > n {
				return cmd, paths[0], &stdout
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %d trials within 30s:\n%s", n, stdout.String())
	return nil, "", nil
}

func TestKill9MidRunKeepsEveryFinishedTrial(t *testing.T) {
	cmd, manifest, _ := startRun(t, buildBinary(t), 3)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	s, err := session.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if s.Manifest.Status != session.StatusRunning || len(s.Records) < 3 {
		t.Errorf("status %s, %d records", s.Manifest.Status, len(s.Records))
	}
	for _, r := range s.Records {
		if r.Status != session.StatusOK || r.OutputTokens != 32 {
			t.Errorf("a finished trial was damaged: %+v", r)
		}
	}
	code, stdout, stderr := runCLI("compare", manifest)
	const killed = "status running (the run was killed or is in progress)"
	if code != exitOK || !strings.Contains(stdout, "e2e_ms") || strings.Count(stdout+stderr, killed) != 1 {
		t.Errorf("compare of a killed session must say so once: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestSigintSavesAPartialSessionAndExits130(t *testing.T) {
	cmd, manifest, output := startRun(t, buildBinary(t), 2)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v\n%s", err, output.String())
	}
	s, err := session.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if s.Manifest.Status != session.StatusPartial || len(s.Warnings) != 0 || s.Manifest.Summary["greedy"].TimedOK < 2 {
		t.Errorf("status %s warnings %v summary %+v", s.Manifest.Status, s.Warnings, s.Manifest.Summary)
	}
	if !strings.Contains(output.String(), "tokentop: interrupted; the session is saved as partial\n") {
		t.Errorf("the interrupt's line does not name the status saved:\n%s", output.String())
	}
	// The signal lands during a trial (recorded as canceled) or between
	// two (nothing to cancel); either way only the last record may differ.
	for i, r := range s.Records {
		last := i == len(s.Records)-1
		if r.Status != session.StatusOK && !(last && r.Status == session.StatusCanceled) {
			t.Errorf("record %d of %d: %+v", i+1, len(s.Records), r)
		}
	}
}

func TestServerCuttingAStreamDegradesOneTrialOnly(t *testing.T) {
	good, cut := replay.Serve(replay.Load(t, "ollama/api_generate_t0_stream")), replay.Cut(replay.Load(t, "ollama/kill9_serve_api_generate_stream"))
	var calls atomic.Int32
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version": replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":    replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":   replay.Serve(replay.Load(t, "ollama/api_show")),
		"POST /api/generate": func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 2 {
				cut(w, r)
				return
			}
			good(w, r)
		},
	})
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--backend", "ollama", "--url", srv.URL, "--model", "tiny15m", "--profile", "quick", "--warmup", "0", "--trials", "4", "--out", out)
	if code != exitOK || !strings.Contains(stdout, "status complete") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	s, err := session.Load(manifests(t, out)[0])
	if err != nil {
		t.Fatal(err)
	}
	if sum := s.Manifest.Summary["greedy"]; sum.TimedOK != 3 || sum.Degraded != 1 || s.Records[1].Status != session.StatusError ||
		!strings.Contains(s.Records[1].Error, "stream ended before the server's final message") || s.Records[1].OutputTokens != 2 {
		t.Errorf("summary %+v, record 2 %+v", sum, s.Records[1])
	}
}

func TestBuiltinEngineIsTheDefault(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--profile", "quick", "--trials", "3", "--warmup", "1", "--threads", "1", "--out", out)
	if code != exitOK || !strings.Contains(stdout, "backend builtin in process") || !strings.Contains(stdout, "model stories260K, server tokentop-builtin") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	s, err := session.Load(manifests(t, out)[0])
	if err != nil {
		t.Fatal(err)
	}
	target := s.Manifest.Targets[0]
	d := target.Details
	if target.Kind != "builtin" || d["weights"] != "embedded" || d["threads"] != "1" || d["shape"] == "" || target.Digest == "" {
		t.Errorf("backend %+v", target)
	}
	for _, r := range s.Records {
		if r.Status != session.StatusOK || r.OutputTokens != 64 || r.PromptTokens != 5 || r.StopReason != "length" || math.IsNaN(r.ServerDecodeMs) {
			t.Errorf("record %+v", r)
		}
	}
	// Each token's id is in the tokens CSV: greedy trials of one prompt
	// generate the same ids, as the files can now show.
	tokens, _, err := session.LoadTokens(s)
	if err != nil {
		t.Fatal(err)
	}
	var generations [][]int
	for _, r := range s.Records {
		var ids []int
		for _, chunk := range tokens[session.TrialKey{Arm: r.Arm, Trial: r.Trial}].IDs {
			ids = append(ids, chunk...)
		}
		if len(ids) != 64 {
			t.Errorf("trial %d: %d token ids for 64 tokens", r.Trial, len(ids))
		}
		generations = append(generations, ids)
	}
	if !slices.Equal(generations[1], generations[2]) || !slices.Equal(generations[1], generations[3]) {
		t.Errorf("greedy trials of one prompt generated %v", generations)
	}
	code, _, stderr = runCLI("run", "--model-path", filepath.Join(t.TempDir(), "missing.gguf"), "--out", out)
	if code != exitFailed || !strings.Contains(stderr, "missing.gguf: no such file") {
		t.Errorf("missing model file: exit %d: %s", code, stderr)
	}
}

func TestParsePercent(t *testing.T) {
	for in, want := range map[string]float64{"1%": 0.01, " 2.5 % ": 0.025, "0.05": 0.05} {
		if got, err := parsePercent(in); err != nil || math.Abs(got-want) > 1e-15 {
			t.Errorf("parsePercent(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1", "100%", "0%", "-1%", "one percent", "NaN%"} {
		if _, err := parsePercent(in); err == nil || !strings.Contains(err.Error(), strconv.Quote(in)) {
			t.Errorf("parsePercent(%q): %v, want an error naming the input", in, err)
		}
	}
}

func FuzzParsePercent(f *testing.F) {
	for _, seed := range []string{"1%", "0.01", "5 %", "1e-3", "%", "100%"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := parsePercent(in)
		if err != nil {
			return
		}
		if !(v > 0 && v < 1) {
			t.Fatalf("parsePercent(%q) = %g, outside (0, 1)", in, v)
		}
		if again, err := parsePercent(strconv.FormatFloat(v*100, 'g', -1, 64) + "%"); err != nil || math.Abs(again-v) > 1e-9*v+1e-300 {
			t.Fatalf("%q: %g does not round-trip as a percent (%g, %v)", in, v, again, err)
		}
	})
}

// The HTML report from a built-in engine session and from a recorded
// Ollama server's, alone and compared.
func TestHTMLReportsFromTheBuiltinEngineAndARecordedServer(t *testing.T) {
	builtinOut, ollamaOut := t.TempDir(), t.TempDir()
	if code, stdout, stderr := runBinary(t, "run", "--trials", "6", "--warmup", "1", "--threads", "1", "--out", builtinOut); code != exitOK {
		t.Fatalf("builtin run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI("run", "--backend", "ollama", "--url", ollamaServer(t, 0), "--model", "tiny15m",
		"--trials", "4", "--warmup", "1", "--max-tokens", "32", "--out", ollamaOut); code != exitOK {
		t.Fatalf("ollama run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	builtin, ollama := manifests(t, builtinOut)[0], manifests(t, ollamaOut)[0]
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	code, stdout, stderr := runCLI("report", builtin, "--html", page)
	if code != exitOK || stdout != "wrote "+page+"\n" {
		t.Fatalf("report --html: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(string(doc))
	for _, want := range []string{"temp-0.8 ", "top-k-40 ", "vs greedy", `<figure id="timeline">`, "stories260K"} {
		if !strings.Contains(text, want) {
			t.Errorf("the builtin report lacks %q", want)
		}
	}
	if info, err := os.Stat(page); err != nil || info.Mode().Perm()&0o044 == 0 {
		t.Errorf("the report is not readable by others: %v %v", info.Mode(), err)
	}
	both := filepath.Join(dir, "both.html")
	charts := filepath.Join(dir, "charts")
	code, stdout, stderr = runCLI("compare", builtin, ollama, "--html", both, "--svg", charts)
	if code != exitOK || !strings.Contains(stdout, "wrote 12 svg charts to "+charts) {
		t.Fatalf("compare --html: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc, _ = os.ReadFile(both)
	text = html.UnescapeString(string(doc))
	// Different backends and models: the caveat leads, and both set-ups
	// are listed.
	for _, want := range []string{"were set up differently", "greedy-vs-sampling · builtin · stories260K vs greedy-vs-sampling · ollama · tiny15m:latest", "0.33.0-rc2"} {
		if !strings.Contains(text, want) {
			t.Errorf("the comparison lacks %q", want)
		}
	}
	if code, _, stderr = runCLI("report", builtin, ollama, "--html", page); code != exitUsage || !strings.Contains(stderr, "take one session") {
		t.Errorf("report of two sessions into one page: exit %d, %s", code, stderr)
	}
}

// TestF32VersusQ8RunsAnywhereAndNamesTheFasterDType: the built-in
// f32-vs-q8 profile, headless and short, interleaves two targets of the
// built-in engine and ends with a verdict on e2e that names q8 (q8_0) and
// its interval. With the AVX2 kernels Q8_0 is the faster (it reads a
// quarter of f32's weight bytes per token); the portable build's Q8_0
// kernel is slower than its f32 one, and the verdict must say which.
func TestF32VersusQ8RunsAnywhereAndNamesTheFasterDType(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runBinary(t, "run", "--profile", "f32-vs-q8", "--trials", "8", "--warmup", "0", "--max-tokens", "4", "--headless", "--power", "off", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"target builtin-f32 (f32): backend builtin in process", "target builtin-q8 (q8): backend builtin in process",
		"arms f32, q8 (q8_0): 0 warmup + 8 timed trials each", "verdicts, each arm against f32 (the baseline):"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	s, err := session.Load(manifests(t, out)[0])
	if err != nil {
		t.Fatal(err)
	}
	m := s.Manifest
	// The verdict's words must agree with its own median change. Which
	// dtype wins is not asserted: 8 trials of 4 tokens beside CI's CPU
	// hog once made f32 look as fast (a timed assertion, which this
	// suite does not make).
	verdict := regexp.MustCompile(`\n  q8 \(q8_0\) (is faster than|is slower than|vs) f32: (no significant difference in e2e \()?median e2e ([-+])\d+\.\d% \[[-+]\d+\.\d%, [-+]\d+\.\d%\]`).FindStringSubmatch(stdout)
	if verdict == nil || verdict[1] == "is faster than" && verdict[3] != "-" || verdict[1] == "is slower than" && verdict[3] != "+" {
		t.Errorf("no e2e verdict, or one whose words contradict its median change:\n%s", stdout)
	}
	if m.Schema != session.Schema || len(m.Targets) != 2 || m.TargetOf("q8").DType != "q8_0" || m.TargetOf("q8").Quantization != "q8_0" ||
		m.TargetOf("f32").Quantization != "f32" || !strings.Contains(m.TargetOf("q8").RSSProcess, "one process holds the 2 in-process engines") {
		t.Errorf("targets %+v", m.Targets)
	}
}

// TestArmFlagsMakeAQuickAB: two --arm flags replace the profile's arms;
// a bad one is refused naming the flag, before anything runs.
func TestArmFlagsMakeAQuickAB(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--profile", "quick", "--arm", "name=two,threads=2", "--arm", "name=one,threads=1",
		"--trials", "3", "--warmup", "0", "--max-tokens", "8", "--headless", "--power", "off", "--out", out)
	if code != exitOK || !strings.Contains(stdout, "arms two (2 threads), one (1 threads): 0 warmup + 3 timed trials each") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--arm", "name=a,dtype"}, `--arm "name=a,dtype": "dtype" is not key=value`},
		{[]string{"--arm", "name=a,top_k=5"}, `--arm "name=a,top_k=5": top_k: has no effect on a greedy arm`},
		{[]string{"--arm", "name=a,backend=ollama,dtype=q8_0"}, `--arm "name=a,backend=ollama,dtype=q8_0": arm a: dtype: tunes an in-process engine`},
	} {
		code, _, stderr := runCLI(append([]string{"run", "--out", out}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, stderr, c.want)
		}
	}
	if len(manifests(t, out)) != 1 {
		t.Error("a refused start left a session behind")
	}
}

// The load studies from a clean checkout on the built-in engine: the
// dual-agent profile says its speedup and efficiency, a sweep prints its
// levels and knee, and the reports (text and HTML) carry both.
func TestLoadStudiesOnTheBuiltinEngine(t *testing.T) {
	dualOut, sweepOut := t.TempDir(), t.TempDir()
	// The smallest model keeps it quick under the race detector too.
	code, stdout, stderr := runBinary(t, "run", "--profile", "dual-agent", "--model", "stories260K", "--trials", "3", "--warmup", "1", "--max-tokens", "16",
		"--threads", "1", "--headless", "--out", dualOut)
	if code != exitOK || !strings.Contains(stdout, "2 agents together: speedup ") || !strings.Contains(stdout, "efficiency ") {
		t.Fatalf("dual-agent: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runBinary(t, "run", "--profile", "quick", "--concurrency", "1,2", "--trials", "6", "--warmup", "1", "--threads", "1", "--headless", "--out", sweepOut)
	if code != exitOK || !strings.Contains(stdout, "sweep of greedy (tok/s and req/s over the steady windows") || !regexp.MustCompile(`streams +tok/s +req/s`).MatchString(stdout) {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// 200 tokens a request, not 64: stories260K's 64 take 2 ms, and in a
	// busy CI one stream's first request once outlasted the other's four
	// in three blocks in a row (no steady window; the run said so).
	code, stdout, stderr = runBinary(t, "run", "--profile", "quick", "--concurrency", "2", "--duration", "300ms", "--max-tokens", "200", "--threads", "1", "--headless", "--out", t.TempDir())
	if code != exitOK || !strings.Contains(stdout, "2 warmup, then 300ms of steady load each") || !strings.Contains(stdout, "greedy@c2 stopped: ran 300ms of steady load") {
		t.Errorf("a level run for a duration: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr = runCLI("run", "--profile", "quick", "--duration", "1s", "--headless"); code != exitUsage || !strings.Contains(stderr, "duration 1s: it ends a load run's arms by their steady time; set concurrency or rate too") {
		t.Errorf("--duration without --concurrency: exit %d, %s", code, stderr)
	}
	dual, sweep := manifests(t, dualOut)[0], manifests(t, sweepOut)[0]
	if code, stdout, stderr = runCLI("report", dual); code != exitOK || !strings.Contains(stdout, "load\n  2 agents together: speedup ") {
		t.Errorf("report of the dual-agent run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	page := filepath.Join(t.TempDir(), "sweep.html")
	if code, stdout, stderr = runCLI("report", sweep, "--html", page); code != exitOK {
		t.Fatalf("report --html: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc, _ := os.ReadFile(page)
	text := html.UnescapeString(string(doc))
	for _, want := range []string{`<h2 id="load">`, "<caption>sweep of greedy", "<th>streams</th>", `<figure id="throughput-vs-concurrency">`,
		`<figure id="ttft-p95-vs-concurrency">`, "greedy@c2 "} {
		if !strings.Contains(text, want) {
			t.Errorf("the sweep's report lacks %q", want)
		}
	}
	if !regexp.MustCompile(`greedy: (knee at [12] streams?|no knee up to 2 streams)`).MatchString(text) {
		t.Error("the sweep's report does not say where its knee is, or that it has none")
	}
	if strings.Index(text, `<h2 id="load">`) > strings.Index(text, `<h2 id="verdicts">`) {
		t.Error("the load results do not lead the sweep's report")
	}
}

// sessionInFlight reports whether there are at least n manifests, the
// grid's own has a run in flight, and that run's session (one of the
// others) is still running.
func sessionInFlight(paths []string, n int) bool {
	if len(paths) < n {
		return false
	}
	running := 0
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), `status = "running"`) {
			running++
		}
	}
	return running == 2
}

// A grid of 12 cells on the built-in engine, killed with SIGKILL in the
// middle of a cell's session and started again, finishes every cell with
// no trial lost or run twice, and its comparison ranks all 12.
func TestGridSurvivesKill9AndResumes(t *testing.T) {
	dir := t.TempDir()
	gridFile := filepath.Join(dir, "g.toml")
	os.WriteFile(gridFile, []byte(`name = "kill"
profile = "quick"
backend = "builtin"
model = "stories260K"
trials = 40
warmup = 1
seed = 5
[axes]
threads = [1, 2]
max_tokens = [8, 16, 24, 32, 40, 48]
`), 0o644)
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[axes]\nthreads = [0]\n"), 0o644)
	if code, _, stderr := runCLI("matrix", bad); code != exitUsage || !strings.Contains(stderr, "bad.toml:2: axes.threads: value 1: 0 is not a whole number of threads") {
		t.Errorf("a bad grid: exit %d, %s", code, stderr)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(buildBinary(t), "matrix", gridFile, "--out", out, "--power", "off")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	folder := filepath.Join(out, "grid-kill")
	// Killed once the 4th session is in flight (grid.toml and 4 sessions,
	// the grid's record of it and its own manifest both "running"): a
	// session lasts tens of ms, so the kill waits for one caught mid-run
	// rather than for a count alone, which a busy machine let pass
	// between sessions.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && !sessionInFlight(manifests(t, folder), 5) {
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n := len(manifests(t, folder)); n < 5 || strings.Contains(stdout.String(), "grid ran for") {
		t.Fatalf("killed with %d manifests in the folder:\n%s", n, stdout.String())
	}
	code, stdout2, stderr := runBinary(t, "matrix", gridFile, "--out", out, "--power", "off")
	if code != exitOK || !strings.Contains(stdout2, "12 cells × 1 repetition(s)") || strings.Contains(stdout2, "12 of 12 sessions to run") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout2, stderr)
	}
	code, table, stderr := runCLI("compare", folder, "--format", "csv")
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(table), "\n")
	if len(rows) != 13 || !strings.HasPrefix(rows[0], "rank,cell,label,arm,n,") {
		t.Fatalf("comparison:\n%s", table)
	}
	// The killed session's cell finished in the session after it: no
	// "did not finish its plan" for a complete cell, one line for the
	// resume.
	if _, text, _ := runCLI("compare", folder); strings.Contains(text, "did not finish its plan") || !strings.Contains(text, "cut short by a kill and their repetition resumed") {
		t.Errorf("a finished grid's caveats:\n%s", text)
	}
	for _, row := range rows[1:] {
		f := strings.Split(row, ",")
		// 40 timed trials per cell: a killed session's are kept, and its
		// rest ran as a second session, never more.
		if f[4] != "40" || f[0] == "" {
			t.Errorf("cell %s: rank %q, n %s; want 40 trials and a rank", f[1], f[0], f[4])
		}
	}
	page := filepath.Join(dir, "grid.html")
	if code, stdout, stderr := runCLI("compare", folder, "--html", page); code != exitOK || stdout != "wrote "+page+"\n" {
		t.Fatalf("compare --html: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc, _ := os.ReadFile(page)
	text := html.UnescapeString(string(doc))
	for _, want := range []string{"tokentop grid: kill", `<h2 id="cells">Cells, ranked</h2>`, "<td>c12</td>", `<figure id="cells">`, grid.PhaseSplitMethod + ":", "threads 1 · arm greedy, TPOT against context"} {
		if !strings.Contains(text, want) {
			t.Errorf("the grid's HTML report lacks %q", want)
		}
	}
	if strings.Contains(text, `id="verdicts"`) {
		t.Error("a grid's report has a verdicts section against a baseline")
	}
}

// A typo gets one line and a hint, not the whole usage; -h gets the
// synopsis in the docs' syntax, defaults that are values (never the
// -1 that means "the profile's"), and examples; --version the build's.
func TestHelpAndVersion(t *testing.T) {
	code, stdout, stderr := runCLI("run", "--trails", "5")
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != exitUsage || stdout != "" || len(lines) != 2 ||
		lines[0] != "flag provided but not defined: -trails" || lines[1] != "run 'tokentop run -h' for its flags and examples" {
		t.Errorf("a typo: exit %d, stderr %q", code, stderr)
	}
	for _, c := range []struct{ command, want string }{
		{"run", "tokentop run --arm name=f32 --arm name=q8,dtype=q8_0"},
		{"compare", "Usage: tokentop compare A.toml B.toml [...] | S.toml#arm1 S.toml#arm2 | GRID-FOLDER [flags]"},
		{"matrix", "tokentop matrix GRID.toml | engine-grid | phase-grid | servers-grid"},
		{"report", "tokentop report S.toml --html report.html"},
	} {
		code, stdout, stderr := runCLI(c.command, "-h")
		if code != exitOK || stderr != "" || !strings.Contains(stdout, c.want) || !strings.Contains(stdout, "Examples:") || strings.Contains(stdout, "(default -1)") {
			t.Errorf("%s -h: exit %d, stderr %q, stdout:\n%s", c.command, code, stderr, stdout)
		}
	}
	if _, stdout, _ := runCLI("run", "-h"); !strings.Contains(stdout, "--trials int\n    \ttimed trials per arm (overrides the profile)\n") || !strings.Contains(stdout, "(default builtin)") {
		t.Errorf("run -h:\n%s", stdout)
	}
	if code, stdout, _ := runCLI("--version"); code != exitOK || !regexp.MustCompile(`^tokentop \S+ \(.+, go1\.\d+`).MatchString(stdout) {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}

// A single-rate open loop's headless end prints its rate table and words,
// as a sweep's does: they are what the run is for.
func TestASingleRateEndsWithItsRateTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	out := t.TempDir()
	code, stdout, stderr := runBinary(t, "run", "--profile", "quick", "--rate", "40", "--trials", "16", "--warmup", "0", "--slo", "ttft_ms=500", "--headless", "--power", "off", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"rates of greedy", "offered req/s", "40 req/s offered", "goodput (SLO TTFT ≤ 500 ms"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("%q missing from the end of a single-rate run:\n%s", want, stdout)
		}
	}
}

// An open loop past the process's open-files limit: the requests the
// client could not open a connection for are its own failures, said as
// such, and the run ends complete within its plan. (With ulimit -n 1024
// at 500 req/s a run wrote 43,883 rows in 300 s and never ended; a closed
// loop past the limit ended failed, blaming the server.)
func TestAnOpenLoopPastTheOpenFilesLimitEndsBlamingTheClient(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary under ulimit")
	}
	url := ollamaServer(t, 10*time.Millisecond) // each answer takes a few hundred ms
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -n 48 && exec "$0" "$@"`, buildBinary(t), "run", "--backend", "ollama", "--url", url, "--model", "tiny15m",
		"--profile", "quick", "--rate", "400", "--trials", "200", "--warmup", "0", "--headless", "--power", "off", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running after 90 s:\n%s", stdout.String())
	}
	text := stdout.String()
	for _, want := range []string{"status complete", "recorded as failed by the client, not the server", "the client itself could not send"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing:\n%s", want, text)
		}
	}
	if strings.Contains(text, "server lost") || strings.Contains(text, "is back after") {
		t.Errorf("the client's limit was blamed on the server:\n%s", text)
	}
}

// TestCPUModelsComparesModelFiles: the multi-model study from model
// paths, one arm per file, ends with each model's per-token latency,
// decode rate and memory, and the report's JSON carries the same rows;
// a second --model-path with --arm flags is refused.
func TestCPUModelsComparesModelFiles(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join("backends", "builtin", "testdata", "archs")
	code, stdout, stderr := runCLI("run", "--profile", "cpu-models", "--model-path", filepath.Join(dir, "llama-q8_0.gguf"),
		"--model-path", filepath.Join(dir, "gemma3-q4_k_m.gguf"), "--trials", "4", "--warmup", "1", "--max-tokens", "16",
		"--threads", "1", "--headless", "--power", "off", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"arms llama-q8_0 (llama-q8_0.gguf · q8_0), gemma3-q4_k_m (gemma3-q4_k_m.gguf · q4_K", "models:\n  llama-q8_0 (llama-q8_0.gguf · q8_0): per-token mean ",
		"  gemma3-q4_k_m (gemma3-q4_k_m.gguf · q4_K", "; memory weights ", "weights: the models ran on the built-in engine in one process"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI("report", "--format", "json", manifests(t, out)[0])
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	var rep struct {
		Models []struct {
			Arm       string  `json:"arm"`
			N         int     `json:"n"`
			Mean      float64 `json:"per_token_mean_ms"`
			P99       float64 `json:"per_token_p99_ms"`
			DecodeTPS float64 `json:"decode_tps"`
			WeightMiB float64 `json:"weight_mib"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Models) != 2 || rep.Models[0].Arm != "llama-q8_0" || rep.Models[1].Arm != "gemma3-q4_k_m" {
		t.Fatalf("models %+v", rep.Models)
	}
	for _, m := range rep.Models {
		// 15 gaps a trial: the pooled mean gap is the inverse of the
		// pooled decode rate (Σ decode time / Σ tokens after the first),
		// within the chunks' timing, which decode time does not share.
		if m.N != 4 || !(m.P99 >= m.Mean) || m.WeightMiB <= 0 || math.Abs(1000/m.DecodeTPS-m.Mean) > 0.2*m.Mean {
			t.Errorf("%+v", m)
		}
	}
	code, _, stderr = runCLI("run", "--profile", "cpu-models", "--model-path", "a.gguf", "--model-path", "b.gguf", "--arm", "name=x", "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "give the models as --arm name=…,model_path=… flags or as --model-path flags, not both") {
		t.Errorf("both: exit %d %q", code, stderr)
	}
}
