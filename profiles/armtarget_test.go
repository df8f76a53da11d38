package profiles

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const targetsProfile = `name = "t"
max_tokens = 16
trials = 5
prompts = ["hi"]

[[arms]]
name = "small-ctx"
backend = "ollama"
model = "gemma3:270m"
prompt_cache = true
[arms.options]
num_ctx = 512
low_vram = true

[[arms]]
name = "q8"
dtype = "q8_0"
threads = 2
model_path = "models/m.gguf"
`

func TestArmsSetTheirOwnTargets(t *testing.T) {
	p, err := Parse("/p/t.toml", []byte(targetsProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, q8 := p.Arms[0], p.Arms[1]
	if ctx.Backend != "ollama" || ctx.Model != "gemma3:270m" || ctx.Options["num_ctx"] != int64(512) || ctx.Options["low_vram"] != true || !p.AllowsPromptCache(ctx) {
		t.Errorf("small-ctx %+v", ctx)
	}
	if q8.DType != "q8_0" || q8.Threads != 2 || q8.ModelPath != filepath.Join("/p", "models/m.gguf") || p.AllowsPromptCache(q8) {
		t.Errorf("q8 %+v", q8)
	}
	if got := p.WhereArm(1, "dtype"); got != "/p/t.toml:17" {
		t.Errorf("WhereArm = %q", got)
	}
}

func TestArmTargetErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct{ name, edit, want string }{
		{"option not a scalar", strings.Replace(targetsProfile, "low_vram = true", "low_vram = [1, 2]", 1), "t.toml:13: arms[0].options.low_vram: a []interface {}; options are passed to the server as-is"},
		{"unknown arm key", strings.Replace(targetsProfile, "threads = 2", "thread = 2", 1), "t.toml:18: arms.thread: unknown key; allowed keys are name, temperature, top_k, top_p, min_p, seed, backend, url, model, model_path, dtype, threads, prompt_cache, concurrency, rate, think, options"},
		{"negative threads", strings.Replace(targetsProfile, "threads = 2", "threads = -2", 1), "t.toml:18: arms[1].threads: -2 is negative"},
		{"model and model_path", strings.Replace(targetsProfile, "threads = 2", "model = \"x\"", 1), "t.toml:19: arms[1].model_path: set either model or model_path, not both"},
		{"prompt_cache not a bool", strings.Replace(targetsProfile, "prompt_cache = true", "prompt_cache = 1", 1), `t.toml:10: arms.prompt_cache: a whole number where true or false belongs`},
		{"url list of another type", strings.Replace(targetsProfile, "threads = 2", "url = [\"http://a:8000/v1\", 3]", 1), `url: 3 is not an address; give a string, or an array of strings for several replicas`},
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

func TestArmFlags(t *testing.T) {
	a, err := ParseArmFlag("name=ctx4k, backend=ollama,options.num_ctx=4096,options.stop=\"512\",options.mirostat_tau=5.5,options.f16_kv=false,temperature=0.8,top_k=40,seed=9,prompt_cache=true")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "ctx4k" || a.Backend != "ollama" || a.Temperature != 0.8 || a.TopK != 40 || *a.Seed != 9 || !*a.PromptCache {
		t.Errorf("%+v", a)
	}
	if a.Options["num_ctx"] != int64(4096) || a.Options["stop"] != "512" || a.Options["mirostat_tau"] != 5.5 || a.Options["f16_kv"] != false {
		t.Errorf("options %#v", a.Options)
	}
	for flag, want := range map[string]string{
		"dtype=q8_0":               `--arm "dtype=q8_0": no name`,
		"name=a,dtype":             `--arm "name=a,dtype": "dtype" is not key=value`,
		"name=a,threads=two":       `--arm "name=a,threads=two": threads: "two" is not a value for it`,
		"name=a,name=b":            "name is given twice",
		"name=a,colour=red":        "unknown key colour; use name, temperature",
		"name=a,options.=1":        "options. needs an option name",
		"name=a,temperature=NaN":   `temperature: "NaN" is not a value for it`,
		"name=a,prompt_cache=mayb": "prompt_cache",
	} {
		if _, err := ParseArmFlag(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", flag, err, want)
		}
	}
	if fleet, err := ParseArmFlag("name=f,url=http://a:8000/v1,url=http://b:8000/v1"); err != nil || len(fleet.URL) != 2 || fleet.URL[1] != "http://b:8000/v1" {
		t.Errorf("a fleet's replicas: %+v %v", fleet.URL, err)
	}
	p, _ := Parse("t.toml", []byte(validProfile))
	bad, _ := ParseArmFlag("name=hot,temperature=-1")
	dup, _ := ParseArmFlag("name=hot")
	if _, err := p.WithArms([]Arm{dup, bad}); err == nil || !strings.Contains(err.Error(), `--arm "name=hot,temperature=-1": name: "hot" is used by another arm`) ||
		!strings.Contains(err.Error(), `--arm "name=hot,temperature=-1": temperature: -1 is negative`) {
		t.Errorf("WithArms: %v", err)
	}
	q, err := p.WithArms([]Arm{dup})
	if err != nil || len(q.Arms) != 1 || len(p.Arms) != 2 || q.WhereArm(0, "dtype") != `--arm "name=hot"` {
		t.Errorf("WithArms replaced %v, kept %d arms, %v", q, len(p.Arms), err)
	}
}

func FuzzParseArmFlag(f *testing.F) {
	for _, s := range []string{"name=q8,dtype=q8_0", "name=a,options.num_ctx=4096,options.x=\"y\"", "name=a,temperature=0.8,top_k=40", "=,", "name=a,seed=-1,prompt_cache=false"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		a, err := ParseArmFlag(flag)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--arm ") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if a.Name == "" {
			t.Fatalf("an arm without a name accepted: %q", flag)
		}
		p := &Profile{}
		if q, err := p.WithArms([]Arm{a}); err == nil && len(q.Arms) != 1 {
			t.Fatalf("arms %v", q.Arms)
		}
	})
}

func TestModelPathsMakeAnArmEach(t *testing.T) {
	p, err := Find("cpu-models")
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.PerModel([]string{"/m/gemma3-1b-Q8_0.gguf", "/other/gemma3-1b-Q8_0.gguf", "/m/Llama 3.2 (1B).gguf", "/m/.hidden.gguf"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range q.Arms {
		names = append(names, a.Name)
		if a.Backend != "builtin" || a.Temperature != 0 || !a.FromCommandLine() {
			t.Errorf("%s: %+v", a.Name, a)
		}
	}
	want := []string{"gemma3-1b-Q8_0", "gemma3-1b-Q8_0-2", "Llama_3.2__1B_", "_hidden"}
	if !slices.Equal(names, want) || q.Arms[1].ModelPath != "/other/gemma3-1b-Q8_0.gguf" {
		t.Errorf("arms %v (%s), want %v", names, q.Arms[1].ModelPath, want)
	}
	if len(p.Arms) != 1 {
		t.Error("PerModel changed the profile it copied")
	}
	two, _ := Find("f32-vs-q8")
	if _, err := two.PerModel([]string{"a.gguf", "b.gguf"}); err == nil || !strings.Contains(err.Error(), "profile f32-vs-q8 has 2; give each arm as --arm name=…,model_path=…") {
		t.Errorf("two-arm profile: %v", err)
	}
}
