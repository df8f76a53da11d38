package profiles

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// ParseArmFlag reads one --arm flag: comma-separated key=value pairs with
// the keys of an [[arms]] table (ArmKeys), and options.KEY=VALUE for a
// server option, e.g. "name=q8,dtype=q8_0" or
// "name=ctx4k,backend=ollama,options.num_ctx=4096"; url may repeat, for a
// fleet's replicas. An option's value is a
// boolean, an integer or a number when it reads as one, else a string
// (quote it to keep "512" a string). Errors name the flag.
func ParseArmFlag(flag string) (Arm, error) {
	var a Arm
	fail := func(format string, args ...any) (Arm, error) {
		return Arm{}, fmt.Errorf("--arm %q: %s", flag, fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	for _, pair := range strings.Split(flag, ",") {
		key, value, ok := strings.Cut(pair, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return fail("%q is not key=value; write e.g. name=q8,dtype=q8_0", pair)
		}
		if seen[key] && key != "url" { // url again: a fleet's next replica
			return fail("%s is given twice", key)
		}
		seen[key] = true
		if option, isOption := strings.CutPrefix(key, "options."); isOption {
			if option == "" {
				return fail("options. needs an option name, e.g. options.num_ctx=4096")
			}
			if a.Options == nil {
				a.Options = map[string]any{}
			}
			a.Options[option] = scalar(value)
			continue
		}
		var err error
		switch key {
		case "name":
			a.Name = value
		case "backend":
			a.Backend = value
		case "url": // repeated: the replicas of a fleet
			a.URL = append(a.URL, value)
		case "model":
			a.Model = value
		case "model_path":
			a.ModelPath, err = filepath.Abs(value)
		case "dtype":
			a.DType = value
		case "temperature":
			a.Temperature, err = number(value)
		case "top_p":
			a.TopP, err = number(value)
		case "min_p":
			a.MinP, err = number(value)
		case "top_k":
			a.TopK, err = strconv.Atoi(value)
		case "threads":
			a.Threads, err = strconv.Atoi(value)
		case "seed":
			var seed int64
			seed, err = strconv.ParseInt(value, 10, 64)
			a.Seed = &seed
		case "think":
			a.Think = Think(value)
		case "prompt_cache":
			var allow bool
			allow, err = strconv.ParseBool(value)
			a.PromptCache = &allow
		default:
			return fail("unknown key %s; use %s, or options.NAME for a server option", key, strings.Join(ArmKeys[:len(ArmKeys)-1], ", "))
		}
		if err != nil {
			return fail("%s: %q is not a value for it", key, value)
		}
	}
	if a.Name == "" {
		return fail("no name; every arm needs one, e.g. name=q8")
	}
	a.from = fmt.Sprintf("--arm %q", flag)
	return a, nil
}

// number parses a finite float.
func number(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = fmt.Errorf("not finite")
	}
	return v, err
}

// scalar types an option value the way TOML would.
func scalar(s string) any {
	if unquoted, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		return unquoted
	}
	if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
		return b
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := number(s); err == nil {
		return f
	}
	return s
}

// WithArms returns a copy of p whose arms are arms (parsed --arm flags, in
// order), each checked as a profile's arm is; errors name the flag.
func (p *Profile) WithArms(arms []Arm) (*Profile, error) {
	q := *p
	q.Arms = arms
	seen := map[string]bool{}
	var errs []string
	for i := range q.Arms {
		a := &q.Arms[i]
		a.check(seen, func(key, msg string) { errs = append(errs, fmt.Sprintf("%s: %s: %s", a.from, key, msg)) })
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return &q, nil
}

// FromCommandLine reports whether the arm came from an --arm flag: the
// user's own words, where a profile's arm is a file's.
func (a Arm) FromCommandLine() bool { return a.from != "" }

// WhereArm locates an arm's key for errors raised by later stages: the
// --arm flag it came from, or "file:line" of the key, or of the arm's name
// when the key is not in the file (a value the arm lacks).
func (p *Profile) WhereArm(i int, key ...string) string {
	if from := p.Arms[i].from; from != "" {
		return from
	}
	for _, path := range []toml.Key{append(toml.Key{"arms"}, key...), {"arms", "name"}} {
		if line := p.keys.find(path, i); line > 0 {
			return fmt.Sprintf("%s:%d", p.Source, line)
		}
	}
	return p.Source
}

// PerModel returns a copy of p with an arm for each model file of paths
// (--model-path given more than once): each is p's one arm, on the
// built-in engine with that file, named after it ("gemma3-1b-Q8_0" for
// ~/models/gemma3-1b-Q8_0.gguf), so one profile compares models side by
// side. A profile of several arms has no one arm to copy; errors say to
// give the arms themselves.
func (p *Profile) PerModel(paths []string) (*Profile, error) {
	if len(p.Arms) != 1 {
		return nil, fmt.Errorf("--model-path given %d times makes an arm per model from the profile's one arm, and profile %s has %d; give each arm as --arm name=…,model_path=… instead", len(paths), p.Name, len(p.Arms))
	}
	arms := make([]Arm, 0, len(paths))
	seen := map[string]int{}
	for _, path := range paths {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("--model-path %q: %w", path, err)
		}
		a := p.Arms[0]
		a.Backend, a.Model, a.ModelPath, a.URL = "builtin", "", abs, nil
		a.Name = armNameOf(abs)
		if n := seen[a.Name]; n > 0 { // two files of one name in different folders
			seen[a.Name]++
			a.Name = fmt.Sprintf("%.60s-%d", a.Name, n+1)
		} else {
			seen[a.Name] = 1
		}
		a.from = fmt.Sprintf("--model-path %q", path)
		arms = append(arms, a)
	}
	return p.WithArms(arms)
}

// armNameOf makes a file's name an arm name: its base without the
// extension, each character an arm name cannot hold as '_', at most 64.
func armNameOf(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	name := []rune(base)
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') || i == 0 && (r == '.' || r == '-') {
			name[i] = '_'
		}
	}
	if len(name) == 0 {
		return "model"
	}
	return string(name[:min(len(name), 64)])
}
