package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const validProfile = `name = "t"
max_tokens = 16
warmup = 1
trials = 5
timeout = "30s"
prompts = ["hi"]

[models]
ollama = "m"

[[arms]]
name = "greedy"

[[arms]]
name = "hot"
temperature = 0.9
top_k = 40
`

func TestBuiltinsAreValidAndComplete(t *testing.T) {
	want := map[string]bool{"greedy-vs-sampling": false, "repeatability": false, "quick": false, "f32-vs-q8": false, "ollama-vs-llamacpp": false, "two-models": false, "dual-agent": false, "cpu-models": false}
	for _, p := range Builtins() {
		want[p.Name] = true
		if p.Source != "builtin" {
			t.Errorf("%s: source %q", p.Name, p.Source)
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("built-in profile %s missing", name)
		}
	}
	gvs, err := Find(DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	var strategies []string
	for _, a := range gvs.Arms {
		strategies = append(strategies, a.Strategy())
	}
	if got := strings.Join(strategies, "; "); got != "greedy; temperature 0.8; temperature 0.8, top-k 40" {
		t.Errorf("greedy-vs-sampling arms: %s", got)
	}
	rep, _ := Find("repeatability")
	if rep.Warmup != 5 || rep.Trials != 100 || len(rep.Arms) != 1 || len(rep.Prompts) != 3 {
		t.Errorf("repeatability plan: warmup %d trials %d arms %d prompts %d", rep.Warmup, rep.Trials, len(rep.Arms), len(rep.Prompts))
	}
}

func TestParseValid(t *testing.T) {
	p, err := Parse("t.toml", []byte(validProfile))
	if err != nil {
		t.Fatal(err)
	}
	if p.TrialTimeout != 30*time.Second || p.Order != "shuffle" || p.PromptCache || p.FixedLength || p.Models["ollama"] != "m" {
		t.Errorf("resolved %+v", p)
	}
	if !p.Arms[0].Greedy() || p.Arms[1].TopK != 40 {
		t.Errorf("arms %+v", p.Arms)
	}
	if got := p.Where("models", "ollama"); got != "t.toml:9" {
		t.Errorf("Where = %q", got)
	}
}

func TestParseErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct {
		name, edit, want string
	}{
		{"syntax", strings.Replace(validProfile, `trials = 5`, `trials = = 5`, 1), "t.toml:4:"},
		{"unknown key", strings.Replace(validProfile, "temperature = 0.9", "tempreature = 0.9", 1), "t.toml:16: arms.tempreature: unknown key; allowed keys are name, temperature"},
		{"unknown top key", strings.Replace(validProfile, "warmup = 1", "warmups = 1", 1), "t.toml:3: warmups: unknown key; allowed keys are name, description, max_tokens"},
		{"negative trials", strings.Replace(validProfile, `trials = 5`, `trials = -3`, 1), "t.toml:4: trials: -3 is not a trial count"},
		{"negative temperature", strings.Replace(validProfile, "temperature = 0.9", "temperature = -0.5", 1), "t.toml:16: arms[1].temperature: -0.5 is negative"},
		{"greedy with top_k", strings.Replace(validProfile, "name = \"greedy\"", "name = \"greedy\"\ntop_k = 5", 1), "t.toml:13: arms[0].top_k: has no effect on a greedy arm"},
		{"bad order", strings.Replace(validProfile, `timeout = "30s"`, "timeout = \"30s\"\norder = \"random\"", 1), `t.toml:6: order: "random" is not allowed; use one of shuffle, alternate`},
		{"bare int timeout", strings.Replace(validProfile, `timeout = "30s"`, `timeout = 30`, 1), "t.toml"},
		{"bad timeout", strings.Replace(validProfile, `timeout = "30s"`, `timeout = "soon"`, 1), `t.toml:5: timeout: "soon" is not a duration`},
		{"duplicate arm", strings.Replace(validProfile, `name = "hot"`, `name = "greedy"`, 1), `t.toml:15: arms[1].name: "greedy" is used by another arm`},
		{"no prompts", strings.Replace(validProfile, `prompts = ["hi"]`, ``, 1), "prompts: no prompts"},
		{"top_p range", strings.Replace(validProfile, "top_k = 40", "top_p = 1.5", 1), "t.toml:17: arms[1].top_p: 1.5 is out of range"},
		{"stop margin", validProfile + "[stop]\nuntil_ci = 1\n", "t.toml:19: stop.until_ci: 1 is out of range; use a fraction in (0, 1)"},
		{"stop statistic", validProfile + "[stop]\nuntil_ci = 0.01\nstatistic = \"p90\"\n", `t.toml:20: stop.statistic: "p90" is not allowed; use one of median, mean`},
		{"stop mean too early", validProfile + "[stop]\nuntil_ci = 0.01\nstatistic = \"mean\"\nmin_trials = 3\n", "t.toml:21: stop.min_trials: 3 is too few for the mean"},
		{"stop after the cap", validProfile + "[stop]\nuntil_ci = 0.01\nmin_trials = 8\n", "t.toml:20: stop.min_trials: 8 is more than trials = 5, the cap"},
		{"concurrency not a number", strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = \"four\"", 1), "t.toml:5: concurrency: four is not a whole number or a list of them"},
		{"concurrency falls", strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = [1, 4, 2]", 1), "t.toml:5: concurrency: levels must rise (2 after 4)"},
		{"concurrency too high", strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = 1000", 1), "t.toml:5: concurrency: 1000 is out of range; use 1 to 256 streams"},
		{"arm concurrency", strings.Replace(validProfile, "top_k = 40", "top_k = 40\nconcurrency = -2", 1), "t.toml:18: arms[1].concurrency: -2 is out of range"},
		{"together one arm", strings.Replace(validProfile, "trials = 5", "trials = 5\ntogether = [\"hot\"]", 1), "t.toml:5: together: a group runs two or more arms at once"},
		{"together unknown arm", strings.Replace(validProfile, "trials = 5", "trials = 5\ntogether = [\"hot\", \"cold\"]", 1), `t.toml:5: together: "cold" is not an arm of this profile`},
		{"duration not a duration", strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = 2\nduration = \"a minute\"", 1), "t.toml:6: duration: \"a minute\" is not a duration"},
		{"duration without load", strings.Replace(validProfile, "trials = 5", "trials = 5\nduration = \"30s\"", 1), "t.toml:5: duration: it ends a load run's arms by their steady time; set concurrency or rate too"},
		{"duration with a stop rule", strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = 2\nduration = \"30s\"", 1) + "[stop]\nuntil_ci = 0.05\n", "duration: it replaces the trial count as the end of each arm, and [stop]"},
		{"together with concurrency", strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = 2\ntogether = [\"hot\", \"greedy\"]", 1), "t.toml:6: together: a together group runs each of its arms as one stream"},
		{"rate falls", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = [4, 2]", 1), "t.toml:5: rate: rates must rise (2 after 4)"},
		{"rate zero", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = 0", 1), "t.toml:5: rate: 0 is out of range; use over 0 and up to 10000 requests per second"},
		{"rate not a number", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = \"fast\"", 1), "t.toml:5: rate: fast is not a number or a list of them"},
		{"rate with concurrency", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = 2\nconcurrency = 4", 1), "t.toml:5: rate: an open loop (rate) and a closed loop (concurrency) are two ways to load a server; keep one"},
		{"arm rate", strings.Replace(validProfile, "top_k = 40", "top_k = 40\nrate = -1", 1), "t.toml:18: arms[1].rate: -1 is out of range"},
		{"arrival unknown", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = 2\narrival = \"bursty\"", 1), `t.toml:6: arrival: "bursty" is not an arrival process; use one of poisson, constant, gamma`},
		{"burstiness without gamma", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = 2\nburstiness = 0.5", 1), `t.toml:6: burstiness: only a gamma arrival has a burstiness; set arrival = "gamma"`},
		{"burstiness negative", strings.Replace(validProfile, "trials = 5", "trials = 5\nrate = 2\narrival = \"gamma\"\nburstiness = -1", 1), "t.toml:7: burstiness: -1 is not a gamma shape"},
		{"max_concurrency without rate", strings.Replace(validProfile, "trials = 5", "trials = 5\nmax_concurrency = 8", 1), "t.toml:5: max_concurrency: it caps an open loop's requests in flight; set rate too"},
		{"slo goodput", validProfile + "[slo]\nttft_ms = 500\ngoodput = 90\n", "t.toml:20: slo.goodput: 90 is out of range"},
		{"slo unknown", validProfile + "[slo]\nttft = 500\n", "t.toml:19: slo.ttft: unknown key; allowed keys are ttft_ms, itl_ms, e2e_ms, goodput"},
		{"stop unknown key", validProfile + "[stop]\nuntil = 0.01\n", "t.toml:19: stop.until: unknown key; allowed keys are until_ci, statistic, min_trials"},
		// A profile's name is its sessions' file names: no path, no escape.
		{"name is a path", strings.Replace(validProfile, `name = "t"`, `name = "x/../../../ESCAPED"`, 1), `t.toml:1: name: "x/../../../ESCAPED" is not a profile name`},
		{"name is dots", strings.Replace(validProfile, `name = "t"`, `name = ".."`, 1), `t.toml:1: name: ".." is not a profile name`},
		{"name has an escape", strings.Replace(validProfile, `name = "t"`, `name = "a\u001b]0;x\u0007"`, 1), `t.toml:1: name: "a\x1b]0;x\a" is not a profile name`},
		{"name has quotes", strings.Replace(validProfile, `name = "t"`, `name = "<a href='x'>"`, 1), `is not a profile name`},
		{"arm name is dots", strings.Replace(validProfile, `name = "hot"`, `name = ".."`, 1), `t.toml:15: arms[1].name: ".." is not an arm name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.toml", []byte(c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// A shared prefix needs its length; its groups default to one; both are
// bounded.
func TestSharedPrefixKeys(t *testing.T) {
	for _, c := range []struct{ keys, want string }{
		{"prefix_groups = 4", "prefix_groups: needs prefix_tokens"},
		{"prefix_tokens = -1", "prefix_tokens: -1 is out of range"},
		{"prefix_tokens = 64\nprefix_groups = 100000", "prefix_groups: 100000 is out of range"},
	} {
		_, err := Parse("p.toml", []byte(strings.Replace(validProfile, `prompts = ["hi"]`, `prompts = ["hi"]`+"\n"+c.keys, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.keys, err, c.want)
		}
	}
	p, err := Parse("p.toml", []byte(strings.Replace(validProfile, `prompts = ["hi"]`, "input_tokens = 32\nprefix_tokens = 64", 1)))
	if err != nil || p.PrefixGroups != 1 || p.InputTokens.Fixed != 32 {
		t.Errorf("%+v %v", p, err)
	}
}

func TestPromptFileAndFindByPath(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prompts.txt"), []byte("first prompt\n\n  second prompt  \n"), 0o644)
	src := strings.Replace(validProfile, `prompts = ["hi"]`, `prompt_file = "prompts.txt"`, 1)
	path := filepath.Join(dir, "mine.toml")
	os.WriteFile(path, []byte(src), 0o644)
	p, err := Find(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Dataset; d == nil || len(d.Prompts) != 2 || d.Prompts[1].Text != "second prompt" || d.Prompts[1].Line != 3 || d.Format != FormatText || p.Source != path {
		t.Errorf("prompts %+v source %q", d, p.Source)
	}
	os.Remove(filepath.Join(dir, "prompts.txt"))
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "prompt_file") {
		t.Errorf("missing prompt file: %v", err)
	}
}

func TestUserProfilesShadowBuiltinsAndBrokenFilesReported(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	dir, err := UserDir()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "quick.toml"), []byte(strings.Replace(validProfile, `name = "t"`, `name = "quick"`, 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.toml"), []byte("trials = ["), 0o644)
	all, errs := All()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken.toml:1") {
		t.Errorf("errors %v", errs)
	}
	p, err := Find("quick")
	if err != nil || p.Source != filepath.Join(dir, "quick.toml") {
		t.Errorf("Find(quick) = %v, %v", p, err)
	}
	if len(all) != len(Builtins())+1 {
		t.Errorf("%d profiles", len(all))
	}
	if _, err := Find("nope"); err == nil || !strings.Contains(err.Error(), "known profiles: ") {
		t.Errorf("unknown profile error: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(validProfile))
	for _, p := range []string{"greedy-vs-sampling", "repeatability", "quick", "f32-vs-q8", "ollama-vs-llamacpp", "two-models", "dual-agent", "cpu-models"} {
		data, _ := builtinFS.ReadFile("builtin/" + p + ".toml")
		f.Add(data)
	}
	f.Add([]byte("[[arms]]\n[[arms]]\nname = 3"))
	f.Add([]byte(targetsProfile))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.toml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if p.Trials < 1 || p.MaxTokens < 1 || len(p.Arms) == 0 || len(p.Prompts) == 0 || p.TrialTimeout <= 0 {
			t.Fatalf("invalid profile accepted: %+v", p)
		}
	})
}

func TestStopRuleDefaults(t *testing.T) {
	p, err := Parse("t.toml", []byte(strings.Replace(validProfile, "trials = 5", "trials = 100", 1)+"[stop]\nuntil_ci = 0.02\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Stop.Effective(); got != (Stop{UntilCI: 0.02, Statistic: "median", MinTrials: 10}) {
		t.Errorf("effective rule %+v", got)
	}
	if got := (Stop{UntilCI: 0.02, Statistic: "mean"}).Effective(); got.MinTrials != MinTrialsForMean {
		t.Errorf("mean's default minimum %d, want %d", got.MinTrials, MinTrialsForMean)
	}
	if (Stop{}).Enabled() || (Stop{}).Effective() != (Stop{}) {
		t.Error("no [stop] table must mean no rule")
	}
}

func TestLoadProfiles(t *testing.T) {
	p, err := Parse("t.toml", []byte(strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = [1, 2, 8]", 1)+"[slo]\nttft_ms = 500\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.RunsLoad() || len(p.Concurrency) != 3 || p.Concurrency[2] != 8 || p.SLO.TTFTMs != 500 || p.SLO.Goodput != DefaultGoodput {
		t.Errorf("sweep profile: load %v, levels %v, slo %+v", p.RunsLoad(), p.Concurrency, p.SLO)
	}
	if p, _ := Parse("t.toml", []byte(strings.Replace(validProfile, "trials = 5", "trials = 5\nconcurrency = 1", 1))); p.RunsLoad() {
		t.Error("concurrency = 1 is one trial at a time, not a load run")
	}
	for flag, want := range map[string]string{"1,2,4,8": "[1 2 4 8]", "4": "[4]", " 2, 16": "[2 16]"} {
		if l, err := ParseLevels(flag); err != nil || fmt.Sprint(l) != want {
			t.Errorf("ParseLevels(%q) = %v, %v; want %s", flag, l, err, want)
		}
	}
	for flag, want := range map[string]string{"1,x": `"x" is not a whole number`, "0": "0 is out of range", "4,2": "levels must rise", "": `"" is not a whole number`} {
		if _, err := ParseLevels(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLevels(%q): %v, want %q", flag, err, want)
		}
	}
}

func FuzzParseLevels(f *testing.F) {
	for _, s := range []string{"1,2,4,8", "4", "", ",", "1,,2", "-1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		l, err := ParseLevels(flag)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--concurrency") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if len(l) == 0 || l.check() != nil {
			t.Fatalf("%q accepted as %v", flag, l)
		}
	})
}

// TestThinkTakesABooleanOrAnEffort: think on a profile is every arm's
// unless an arm sets its own; --arm takes it too; anything else is named
// with its line.
func TestThinkTakesABooleanOrAnEffort(t *testing.T) {
	p, err := Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\nthink = false\n[[arms]]\nname = \"a\"\n[[arms]]\nname = \"b\"\nthink = \"high\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.ThinkOf(p.Arms[0]) != "false" || p.ThinkOf(p.Arms[1]) != "high" {
		t.Errorf("think %q %q", p.ThinkOf(p.Arms[0]), p.ThinkOf(p.Arms[1]))
	}
	if a, err := ParseArmFlag("name=direct,think=false"); err != nil || a.Think != "false" {
		t.Errorf("--arm think: %+v %v", a, err)
	}
	if _, err := p.WithArms([]Arm{{Name: "x", Think: "lots"}}); err == nil || !strings.Contains(err.Error(), `think: "lots" is not a think value; use true, false, or an effort`) {
		t.Errorf("--arm think=lots: %v", err)
	}
	_, err = Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\n[arms.options]\nthink = true\n"))
	if err == nil || !strings.Contains(err.Error(), "t.toml:8: arms[0].options.think: thinking is set by think on the arm or profile") {
		t.Errorf("options.think: %v", err)
	}
	_, err = Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\nthink = 1\n"))
	if err == nil || !strings.Contains(err.Error(), `t.toml:7: arms[0].think: "1" is not a think value`) {
		t.Errorf("think = 1: %v", err)
	}
}

// A bad profile lists every problem at once, in the file's order and in
// a profile's words: values of the wrong type (each stops the decoder, so
// their lines are set aside and the file read again), unknown keys, and
// each field's own check, with no echo of a key already named.
func TestEveryProblemOfAProfileAtOnce(t *testing.T) {
	src := "name = \"x\"\ntrials = \"ten\"\nwarmup = -3\nbogus = 1\nprompts = [\"a\"]\nmax_tokens = true\n[[arms]]\nname = \"a\"\ntemperature = \"hot\"\ncolour = 3\n"
	_, err := Parse("bad.toml", []byte(src))
	if err == nil {
		t.Fatal("a bad profile parsed")
	}
	want := []string{
		"bad.toml:2: trials: text (in quotes) where a whole number belongs",
		"bad.toml:3: warmup: -3 is negative; use 0 or more warmup trials per arm",
		"bad.toml:4: bogus: unknown key;",
		"bad.toml:6: max_tokens: true or false where a whole number belongs",
		"bad.toml:9: arms.temperature: text (in quotes) where a number belongs",
		"bad.toml:10: arms.colour: unknown key;",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: %q, want %q", i+1, lines[i], w)
		}
	}
}

// Synthetic turns need a length for each turn, and go with no file's
// conversations.
func TestTurnsKeys(t *testing.T) {
	for _, c := range []struct{ keys, want string }{
		{"turns = 3", "turns: makes each user turn input_tokens long"},
		{"input_tokens = 8\nturns = 1", "turns: 1 is out of range; use 2 to 64"},
		{"input_tokens = 8\nturns = 65", "turns: 65 is out of range"},
		{"think_time = \"1s\"", "think_time: is the pause between a conversation's turns"},
	} {
		_, err := Parse("p.toml", []byte(strings.Replace(validProfile, `prompts = ["hi"]`, `prompts = ["hi"]`+"\n"+c.keys, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.keys, err, c.want)
		}
	}
	p, err := Parse("p.toml", []byte(strings.Replace(validProfile, `prompts = ["hi"]`, "input_tokens = 8\nturns = 4\nthink_time = \"2s\"", 1)))
	if err != nil || p.Turns != 4 || p.ThinkPause != 2*time.Second {
		t.Errorf("%+v %v", p, err)
	}
}

// A conversation file with no user turn to send is an error naming the
// file, not a run with nothing to draw from.
func TestMultiTurnWithNoUserTurnIsAnError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.jsonl"), []byte(`{"messages": [{"role": "system", "content": "be brief"}]}`+"\n"), 0o644)
	src := strings.Replace(validProfile, `prompts = ["hi"]`, "prompts_file = \"c.jsonl\"\nmulti_turn = true", 1)
	path := filepath.Join(dir, "p.toml")
	os.WriteFile(path, []byte(src), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "multi_turn: "+filepath.Join(dir, "c.jsonl")+"'s conversations have no user turn to send") {
		t.Errorf("%v", err)
	}
}
