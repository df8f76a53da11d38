package main

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui"
)

// sessionFiles is every file of the sessions in dir, read whole.
func sessionFiles(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	return all.String()
}

// TestServersThatDropEveryRequestEndTheRun: an Ollama or OpenAI-compatible
// server that answers its probes but closes or resets every generation
// used to be sent requests for ever (209,065 rows in 10 minutes). The run
// ends failed with a non-zero exit that names the URL that failed.
func TestServersThatDropEveryRequestEndTheRun(t *testing.T) {
	for _, c := range []struct {
		name, backend, path, model string
		routes                     replay.Route
	}{
		{"ollama", "ollama", "/api/generate", "tiny15m", replay.Route{
			"GET /api/version": replay.Serve(replay.Load(t, "ollama/api_version")),
			"GET /api/tags":    replay.Serve(replay.Load(t, "ollama/api_tags")),
			"POST /api/show":   replay.Serve(replay.Load(t, "ollama/api_show")),
		}},
		{"openai", "openai", "/v1/completions", "tiny15m:latest", replay.Route{
			"GET /v1/models": replay.Serve(replay.Load(t, "ollama/v1_models")),
		}},
	} {
		for _, reset := range []bool{false, true} {
			routes := maps.Clone(c.routes)
			routes["POST "+c.path] = replay.Drop(reset)
			srv := replay.NewServer(t, routes)
			url := srv.URL
			if c.backend == "openai" {
				url += "/v1"
			}
			out := t.TempDir()
			code, stdout, stderr := runCLI("run", "--backend", c.backend, "--url", url, "--model", c.model, "--profile", "quick",
				"--trials", "300", "--warmup", "2", "--server-wait", "1h", "--headless", "--out", out)
			if code != exitFailed || !strings.Contains(stderr, "failed every request") || !strings.Contains(stderr, url+strings.TrimPrefix(c.path, "/v1")+" closed the connection before answering") {
				t.Fatalf("%s (reset %v): exit %d\n%s\n%s", c.name, reset, code, stdout, stderr)
			}
			s, err := session.Load(manifests(t, out)[0])
			if err != nil || s.Manifest.Status != session.StatusFailed || len(s.Records) > 10 {
				t.Errorf("%s: %v, status %s, %d trials", c.name, err, s.Manifest.Status, len(s.Records))
			}
		}
	}
}

// TestAnEchoedAPIKeyIsNeverStoredOrPrinted: an OpenAI-compatible server's
// 401 says "Incorrect API key provided: Bearer sk-…". The key is in no
// file, no report and no line printed.
func TestAnEchoedAPIKeyIsNeverStoredOrPrinted(t *testing.T) {
	const key = "sk-proj-tokentop0123456789abcdef"
	t.Setenv("TOKENTOP_TEST_KEY", key)
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models": replay.Serve(replay.Load(t, "ollama/v1_models")),
		"POST /v1/completions": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + r.Header.Get("Authorization") + `. You can find your API key at https://platform.example/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`))
		},
	})
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--backend", "openai", "--url", srv.URL+"/v1", "--model", "tiny15m:latest", "--api-key-env", "TOKENTOP_TEST_KEY",
		"--profile", "quick", "--trials", "3", "--warmup", "0", "--headless", "--out", out)
	printed := stdout + stderr
	manifest := manifests(t, out)[0]
	_, report, reportErr := runCLI("report", manifest)
	page := filepath.Join(t.TempDir(), "r.html")
	runCLI("report", manifest, "--html", page)
	doc, _ := os.ReadFile(page)
	everything := printed + report + reportErr + sessionFiles(t, out) + html.UnescapeString(string(doc))
	if code != exitFailed || !strings.Contains(printed, "Incorrect API key provided: Bearer [redacted]") {
		t.Fatalf("exit %d:\n%s", code, printed)
	}
	if strings.Contains(everything, key) || strings.Contains(everything, "tokentop0123") {
		t.Error("the API key was stored or printed")
	}
}

// TestServerEscapesNeverReachTheTerminal: a server's version and error
// texts carry terminal escapes (set the window title, clear the screen).
// No ESC, BEL or other control character reaches the terminal, the files
// or the reports; the words around them do.
func TestServerEscapesNeverReachTheTerminal(t *testing.T) {
	good := replay.Serve(replay.Load(t, "ollama/api_generate_t0_stream"))
	calls := 0
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version": replay.Serve(replay.Exchange{Status: 200, ContentType: "application/json", Body: []byte(`{"version":"0.33\u001b]0;pwned\u0007-evil"}`)}),
		"GET /api/tags":    replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":   replay.Serve(replay.Load(t, "ollama/api_show")),
		"POST /api/generate": func(w http.ResponseWriter, r *http.Request) {
			if calls++; calls%2 == 0 {
				http.Error(w, `{"error":"boom\u001b[2J\u001b]0;pwned\u0007 \u009b31m done"}`, http.StatusInternalServerError)
				return
			}
			good(w, r)
		},
	})
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--backend", "ollama", "--url", srv.URL, "--model", "tiny15m", "--profile", "quick",
		"--trials", "4", "--warmup", "0", "--headless", "--out", out)
	if code != exitOK || !strings.Contains(stdout, "server 0.33-evil") || !strings.Contains(stdout, "HTTP 500: boom 31m done") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	manifest := manifests(t, out)[0]
	_, report, _ := runCLI("report", manifest)
	_, comparison, _ := runCLI("compare", manifest)
	for name, text := range map[string]string{"run": stdout + stderr, "report": report, "compare": comparison, "files": sessionFiles(t, out)} {
		if strings.ContainsAny(text, "\x1b\x07\u009b") || strings.Contains(text, "pwned") {
			t.Errorf("%s carries an escape: %q", name, text)
		}
	}
}

// TestAProfileNamedLikeAPathIsRefused: name = "x/../../../ESCAPED" wrote
// the session two folders above --out. It is refused, and nothing is
// written anywhere.
func TestAProfileNamedLikeAPathIsRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "b", "sessions")
	profile := filepath.Join(dir, "evil.toml")
	os.WriteFile(profile, []byte("name = \"x/../../../ESCAPED\"\nprompts = [\"x\"]\nmax_tokens = 4\n[[arms]]\nname = \"a\"\n"), 0o644)
	code, _, stderr := runCLI("run", "--profile", profile, "--out", out)
	if code != exitUsage || !strings.Contains(stderr, `evil.toml:1: name: "x/../../../ESCAPED" is not a profile name (it names the session's files)`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("something was written: %v", entries)
	}
}

// TestReportOfADamagedSessionNamesTheLines: one e2e_ms of 1e160 made
// `report` spin at 100% CPU for ever and `report --html` panic; a
// negative one moved the mean by −35% without a word. Both lines are
// named and left out; the report is written.
func TestReportOfADamagedSessionNamesTheLines(t *testing.T) {
	out := t.TempDir()
	if code, stdout, stderr := runCLI("run", "--backend", "ollama", "--url", ollamaServer(t, 0), "--model", "tiny15m", "--profile", "quick",
		"--trials", "8", "--warmup", "0", "--headless", "--out", out); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	manifest := manifests(t, out)[0]
	trialsCSV := strings.TrimSuffix(manifest, ".toml") + ".trials.csv"
	data, _ := os.ReadFile(trialsCSV)
	lines := strings.Split(string(data), "\n")
	e2e := slices.Index(strings.Split(lines[0], ","), "e2e_ms")
	for i, v := range map[int]string{3: "1e160", 5: "-35.000"} {
		fields := strings.Split(lines[i], ",")
		fields[e2e] = v
		lines[i] = strings.Join(fields, ",")
	}
	os.WriteFile(trialsCSV, []byte(strings.Join(lines, "\n")), 0o644)
	code, stdout, stderr := runCLI("report", manifest)
	if code != exitOK || !strings.Contains(stderr, ".trials.csv:4: column e2e_ms: \"1e160\": not a time in ms") ||
		!strings.Contains(stderr, ".trials.csv:6: column e2e_ms: \"-35.000\"") || !strings.Contains(stdout, "greedy") {
		t.Errorf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if code, _, stderr := runCLI("report", manifest, "--html", page); code != exitOK {
		t.Errorf("report --html: exit %d, %s", code, stderr)
	}
}

// TestACrashIsReportedNeverExitsZero: the done view's panic exited 0. A
// crash prints itself and its stack, says where the session is and in
// which state, leaves a crash report beside its manifest, and exits 70.
func TestACrashIsReportedNeverExitsZero(t *testing.T) {
	out := t.TempDir()
	w, err := session.Create(out, &session.Manifest{ID: "S"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	var stderr bytes.Buffer
	crash := &ui.Crash{Value: "runtime error: slice bounds out of range [:1] with capacity 0", Stack: []byte("goroutine 1 [running]:\nui.(*doneView).verdictLines")}
	if code := reportCrash(&stderr, crash, w.ManifestPath(), session.StatusComplete); code != exitCrashed {
		t.Errorf("exit %d", code)
	}
	report := filepath.Join(out, "S.crash.txt")
	data, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(data), "slice bounds out of range") || !strings.Contains(string(data), "verdictLines") {
		t.Fatalf("crash report %q: %v", data, err)
	}
	for _, want := range []string{"internal error (a bug in tokentop): runtime error: slice bounds", "verdictLines",
		"what was measured is saved, status complete: " + w.ManifestPath(), "this crash report is written beside it: " + report} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("%q missing from\n%s", want, stderr.String())
		}
	}
}

// A password or key in --url, and a token in --server-metrics, reach the
// server (the request paths go before the query, as the server expects)
// and nothing else: not the lines printed, the manifest, the exports, the
// report, the HTML page or the backends listing.
func TestSecretsInURLsAreSentAndNeverShown(t *testing.T) {
	const password, key, token = "PW-s3cr3t-1", "KEY-s3cr3t-2", "TOK-s3cr3t-3"
	var asked []string
	var mu sync.Mutex
	ask := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			user, pass, _ := r.BasicAuth()
			mu.Lock()
			asked = append(asked, fmt.Sprintf("%s %s?%s %s:%s", r.Method, r.URL.Path, r.URL.RawQuery, user, pass))
			mu.Unlock()
			next(w, r)
		}
	}
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models":       ask(replay.Serve(replay.Load(t, "ollama/v1_models"))),
		"POST /v1/completions": ask(replay.Serve(replay.Load(t, "ollama/v1_completions_stream_usage"))),
		"GET /metrics":         ask(replay.Serve(replay.Load(t, "llamacpp/metrics_busy"))),
	})
	withSecrets := strings.Replace(srv.URL, "http://", "http://bob:"+password+"@", 1) + "/v1?api_key=" + key
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--backend", "openai", "--url", withSecrets, "--model", "tiny15m:latest",
		"--server-metrics", srv.URL+"/metrics?token="+token, "--profile", "quick", "--trials", "2", "--warmup", "0", "--headless", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	if !slices.ContainsFunc(asked, func(a string) bool { return strings.HasPrefix(a, "POST /v1/completions?api_key="+key+" bob:"+password) }) {
		t.Errorf("no completion went out with the address's query and password: %q", asked)
	}
	mu.Unlock()
	manifest := manifests(t, out)[0]
	_, report, _ := runCLI("report", manifest)
	_, records, _ := runCLI("export", manifest)
	_, summary, _ := runCLI("export", manifest, "--summary")
	page := filepath.Join(t.TempDir(), "r.html")
	runCLI("report", manifest, "--html", page)
	doc, _ := os.ReadFile(page)
	_, backendsOut, backendsErr := runCLI("backends", "--url", withSecrets)
	everything := stdout + stderr + report + records + summary + sessionFiles(t, out) + html.UnescapeString(string(doc)) + backendsOut + backendsErr
	for _, secret := range []string{password, key, token} {
		if strings.Contains(everything, secret) {
			t.Errorf("%s was stored or shown", secret)
		}
	}
	if data, _ := os.ReadFile(manifest); !strings.Contains(stdout, "bob:xxxxx@") || !strings.Contains(string(data), "bob:xxxxx@") || !strings.Contains(string(data), "api_key=xxxxx") {
		t.Errorf("the address as shown and stored:\n%s\n%s", stdout, data)
	}
}

// `tokentop run --profile shared.toml`, no other flag: a shared profile
// whose prompts_file is a credentials file and whose arm names its own
// server once sent that file's lines and the user's OPENAI_API_KEY there.
// Now the run is refused before anything is sent; the user may allow
// the host by name.
func TestASharedProfileSendsNoFileAndNoKeyToItsServer(t *testing.T) {
	const key = "sk-USERS-REAL-KEY-0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	var got []string
	var mu sync.Mutex
	record := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			next(w, r)
		}
	}
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models":       record(replay.Serve(replay.Load(t, "ollama/v1_models"))),
		"POST /v1/completions": record(replay.Serve(replay.Load(t, "ollama/v1_completions_stream_usage"))),
	})
	home, shared := t.TempDir(), t.TempDir()
	creds := filepath.Join(home, "credentials")
	os.WriteFile(creds, []byte("aws_secret_access_key = s3cr3t\n"), 0o600)
	write := func(prompts string) string {
		path := filepath.Join(shared, "shared.toml")
		os.WriteFile(path, []byte("name = \"shared\"\nmax_tokens = 8\ntrials = 1\nwarmup = 0\n"+prompts+"\n[[arms]]\nname = \"a\"\nbackend = \"openai\"\nurl = \""+srv.URL+"/v1\"\nmodel = \"tiny15m:latest\"\n"), 0o644)
		return path
	}
	code, _, stderr := runCLI("run", "--profile", write("prompts_file = \""+creds+"\""), "--headless", "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "is outside the folder of shared.toml") {
		t.Errorf("a prompts file outside: exit %d\n%s", code, stderr)
	}
	profile := write("prompts = [\"Once upon a time\"]")
	code, _, stderr = runCLI("run", "--profile", profile, "--headless", "--out", t.TempDir())
	host := strings.TrimPrefix(srv.URL, "http://")
	if code != exitUsage || !strings.Contains(stderr, "only to servers you name yourself: to send it there, add --api-key-host "+host) || strings.Contains(stderr, key) {
		t.Errorf("a profile's server and the user's key: exit %d\n%s", code, stderr)
	}
	mu.Lock()
	if len(got) > 0 {
		t.Errorf("the profile's server was sent %q before the user allowed it", got)
	}
	got = nil
	mu.Unlock()
	if code, stdout, stderr := runCLI("run", "--profile", profile, "--api-key-host", host, "--headless", "--out", t.TempDir()); code != exitOK {
		t.Fatalf("allowed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || !strings.HasSuffix(got[len(got)-1], "Bearer "+key) {
		t.Errorf("allowed, the key went with %q", got)
	}
}

// A prompts file's name is outside text too: one named to set the
// terminal's title did so through the run's "prompts:" line.
func TestAPromptsFilesNameReachesNoTerminalRaw(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "x\x1b]0;pwned\x07.txt")
	if err := os.WriteFile(name, []byte("Once upon a time\n"), 0o644); err != nil {
		t.Skipf("this file system takes no such name: %v", err)
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--profile", "quick", "--prompts-file", name, "--trials", "2", "--warmup", "0", "--headless", "--out", out)
	data, _ := os.ReadFile(manifests(t, out)[0])
	if code != exitOK || !strings.Contains(stdout, "prompts: ") || strings.ContainsAny(stdout+stderr+string(data), "\x1b\x07") {
		t.Errorf("exit %d:\n%q\n%q", code, stdout, stderr)
	}
}
