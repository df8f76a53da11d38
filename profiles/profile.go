// Package profiles owns the benchmark profile: its TOML schema, the built-in
// profiles shipped inside the binary, user profiles from the config folder,
// and strict validation.
//
// Decisions where DESIGN.md is silent:
//   - A sampling arm is described by its parameters alone: temperature 0 is
//     greedy; top_k, top_p and min_p narrow sampling and are rejected on a
//     greedy arm, where they would silently do nothing.
//   - Every arm sees the same prompt and seed sequence (trial i uses prompt
//     i mod len(prompts) and seed seed+i), so arms differ only in sampling.
//   - Arms run in a seeded shuffled order per round by default ("shuffle"),
//     so a prompt cache or warm-up that favours one place in a round falls
//     on every arm alike; "alternate" keeps the declared order.
//   - A profile names a model per backend kind in [models]; which kinds exist
//     is the runner's business, so this package does not check the names.
package profiles

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// Profile is one resolved, validated benchmark profile.
type Profile struct {
	Name        string   `toml:"name"`
	Description string   `toml:"description"`
	MaxTokens   int      `toml:"max_tokens"`
	Warmup      int      `toml:"warmup"`
	Trials      int      `toml:"trials"`
	Timeout     string   `toml:"timeout"`
	Order       string   `toml:"order"`
	Seed        int64    `toml:"seed"`
	USDPerHour  float64  `toml:"usd_per_hour"`
	APIKeyEnv   string   `toml:"api_key_env"`
	Prompts     []string `toml:"prompts"`
	// PromptsFile names a file of prompts (text, JSONL or ShareGPT), in
	// place of Prompts; PromptFile is its older spelling.
	PromptsFile string            `toml:"prompts_file"`
	PromptFile  string            `toml:"prompt_file"`
	Models      map[string]string `toml:"models"`
	Arms        []Arm             `toml:"arms"`
	Stop        Stop              `toml:"stop"`
	// PromptCache lets a server reuse a cached prompt prefix between
	// trials. Off by default, where the server takes a switch: arms that
	// share a round's prompt would otherwise find it cached for all but
	// the first.
	PromptCache bool `toml:"prompt_cache"`
	// FixedLength asks for exactly max_tokens tokens per trial, past the
	// model's end of sequence, so that arms compare at the same length;
	// only backends that can be told so take it.
	FixedLength bool `toml:"fixed_length"`
	// Think is every arm's thinking switch, where an arm sets none.
	Think Think `toml:"think"`
	// InputTokens makes each prompt that many tokens long, in place of
	// Prompts, as the server's tokenizer counts them where it has one;
	// OutputTokens sets each request's output length and asks the server
	// to generate all of it. Either may be a distribution.
	InputTokens  TokenLength `toml:"input_tokens"`
	OutputTokens TokenLength `toml:"output_tokens"`
	// PrefixTokens puts before each prompt one of PrefixGroups system
	// prompts of that many tokens (a shared prefix, to measure prefix
	// caching on purpose with prompt_cache = true).
	PrefixTokens int `toml:"prefix_tokens"`
	PrefixGroups int `toml:"prefix_groups"`
	// MultiTurn sends a prompts file's conversations turn by turn, each
	// turn carrying the conversation so far; ThinkTime is the pause
	// before each turn after the first (a user reading and typing),
	// outside every measurement.
	MultiTurn bool   `toml:"multi_turn"`
	ThinkTime string `toml:"think_time"`
	// Turns makes synthetic conversations of that many user turns of
	// input_tokens each, their history's replies output_tokens long.
	Turns int `toml:"turns"`
	// Concurrency keeps that many requests in flight per arm, a closed
	// loop; several levels make a sweep (see Levels).
	Concurrency Levels `toml:"concurrency"`
	// Rate sends each arm's requests on a schedule at that many per
	// second, an open loop; several rates make a sweep (see Rates).
	// Arrival is the schedule's process (poisson, constant, gamma),
	// Burstiness gamma's shape, and MaxConcurrency caps the requests in
	// flight (0: none): one due past the cap waits in the client.
	Rate           Rates   `toml:"rate"`
	Arrival        string  `toml:"arrival"`
	Burstiness     float64 `toml:"burstiness"`
	MaxConcurrency int     `toml:"max_concurrency"`
	// Together names arms that run as one multi-agent group: concurrently
	// and, interleaved with that, one after the other.
	Together []string `toml:"together"`
	// SLO bounds each request's latencies, for goodput.
	SLO SLO `toml:"slo"`
	// Duration ends each load arm once its steady windows add up to it,
	// in place of a trial count ("60s").
	Duration string `toml:"duration"`
	// GPUMetrics are DCGM exporters whose GPUs are the run's power source
	// (a remote server's); --gpu-metrics replaces them.
	GPUMetrics []string `toml:"gpu_metrics"`

	// Source is "builtin" or the file the profile was read from.
	Source string `toml:"-"`
	// TrialTimeout is Timeout parsed.
	TrialTimeout time.Duration `toml:"-"`
	// LoadDuration is Duration parsed; 0 ends arms by their trial count.
	LoadDuration time.Duration `toml:"-"`
	// Dataset is PromptsFile read (its turns, with MultiTurn); nil where
	// the prompts are Prompts.
	Dataset *PromptsFile `toml:"-"`
	// ThinkPause is ThinkTime parsed.
	ThinkPause time.Duration `toml:"-"`

	keys keyLines
}

// Arm is one sampling strategy on one target. Zero values mean "not set":
// the target fields an arm leaves empty come from the run (the command
// line, then the profile), so arms that set none share one target.
type Arm struct {
	Name        string  `toml:"name"`
	Temperature float64 `toml:"temperature"`
	TopK        int     `toml:"top_k"`
	TopP        float64 `toml:"top_p"`
	MinP        float64 `toml:"min_p"`
	// Seed overrides the profile seed for this arm's sampling.
	Seed *int64 `toml:"seed"`

	// Backend, URL and Model pick the arm's own target; ModelPath is a
	// model file for an in-process engine (relative to the profile's
	// folder), DType and Threads tune one.
	Backend string `toml:"backend"`
	// URL is the arm's server, or a fleet's replicas: url = "…" or
	// url = ["…", "…"], the arm's requests going round-robin across them.
	URL       URLs   `toml:"url"`
	Model     string `toml:"model"`
	ModelPath string `toml:"model_path"`
	DType     string `toml:"dtype"`
	Threads   int    `toml:"threads"`
	// Options are sent to the arm's server as-is (scalars).
	Options map[string]any `toml:"options"`
	// PromptCache, when set, overrides the profile's prompt_cache for
	// this arm (true measures the cache on purpose).
	PromptCache *bool `toml:"prompt_cache"`
	// Concurrency, when set, is the arm's own level, in place of the
	// profile's.
	Concurrency int `toml:"concurrency"`
	// Rate, when set, is the arm's own request rate, in place of the
	// profile's.
	Rate float64 `toml:"rate"`
	// Think, when set, turns a reasoning model's thinking on or off for
	// this arm (or sets its effort), in place of the profile's.
	Think Think `toml:"think"`

	// from is the --arm flag the arm came from; "" for a profile's arm.
	from string
}

// ArmKeys are the keys of an [[arms]] table, in the order help lists them.
var ArmKeys = []string{"name", "temperature", "top_k", "top_p", "min_p", "seed",
	"backend", "url", "model", "model_path", "dtype", "threads", "prompt_cache", "concurrency", "rate", "think", "options"}

// AllowsPromptCache is whether the arm's server may reuse cached prompts:
// the arm's own choice, else the profile's.
func (p *Profile) AllowsPromptCache(a Arm) bool {
	if a.PromptCache != nil {
		return *a.PromptCache
	}
	return p.PromptCache
}

// Think is a reasoning model's thinking switch: ThinkDefault (the
// server's default), "true", "false", or an effort (ThinkEfforts). Each
// server is told it in its own words (backends.Request.Think).
type Think string

// ThinkDefault leaves thinking as the server and model have it.
const ThinkDefault Think = ""

// ThinkEfforts are the efforts think may name, as gpt-oss and Ollama take
// them.
var ThinkEfforts = []string{"low", "medium", "high"}

// URLs are an arm's server addresses: one, or a fleet's replicas.
type URLs []string

// UnmarshalTOML takes a string or an array of strings.
func (u *URLs) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*u = URLs{v}
		return nil
	case []any:
		out := make(URLs, 0, len(v))
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return fmt.Errorf("url: %v is not an address; give a string, or an array of strings for several replicas", untrusted.Line(fmt.Sprint(item)))
			}
			out = append(out, s)
		}
		*u = out
		return nil
	}
	return fmt.Errorf("url: give a string, or an array of strings for several replicas")
}

// UnmarshalTOML takes a boolean or a string; check says what is wrong
// with anything else, naming the line.
func (t *Think) UnmarshalTOML(v any) error {
	*t = Think(fmt.Sprint(v))
	return nil
}

// valid reports whether t is a value think may take.
func (t Think) valid() bool {
	return t == ThinkDefault || t == "true" || t == "false" || slices.Contains(ThinkEfforts, string(t))
}

// thinkRule says the values of think in words, for errors.
const thinkRule = "use true, false, or an effort: low, medium or high"

// ThinkOf is the arm's thinking switch: its own, else the profile's.
func (p *Profile) ThinkOf(a Arm) Think {
	if a.Think != ThinkDefault {
		return a.Think
	}
	return p.Think
}

// Stop is the optional early-stopping rule: an arm ends before its
// `trials` cap once the anytime-valid 95% confidence interval of its e2e
// statistic is within ±UntilCI of the estimate.
type Stop struct {
	// UntilCI is the target half-width as a fraction (0.01 for ±1%); 0
	// turns the rule off.
	UntilCI float64 `toml:"until_ci,omitzero"`
	// Statistic is "median" (exact at any n, the default) or "mean"
	// (asymptotic, needs at least 30 trials).
	Statistic string `toml:"statistic,omitempty"`
	// MinTrials is the least number of timed trials before an arm may
	// stop (default 10 for the median, 30 for the mean).
	MinTrials int `toml:"min_trials,omitzero"`
}

// StopStatistics lists the allowed values of stop.statistic.
var StopStatistics = []string{"median", "mean"}

// MinTrialsForMean is the least min_trials for the mean: its confidence
// sequence is asymptotic, and below about 30 trials of skewed latencies it
// misses more often than it says.
const MinTrialsForMean = 30

// Enabled reports whether the rule is switched on.
func (s Stop) Enabled() bool { return s.UntilCI != 0 }

// Effective is the rule with its defaults filled in: the median, and a
// minimum of 10 trials (30 for the mean).
func (s Stop) Effective() Stop {
	if !s.Enabled() {
		return s
	}
	if s.Statistic == "" {
		s.Statistic = StopStatistics[0]
	}
	if s.MinTrials == 0 {
		s.MinTrials = 10
		if s.Statistic == "mean" {
			s.MinTrials = MinTrialsForMean
		}
	}
	return s
}

// Check validates the rule against the trial cap, telling bad about each
// problem by key (e.g. "min_trials").
func (s Stop) Check(trials int, bad func(key, msg string)) {
	if s == (Stop{}) {
		return
	}
	if s.UntilCI <= 0 || s.UntilCI >= 1 {
		bad("until_ci", fmt.Sprintf("%g is out of range; use a fraction in (0, 1), e.g. 0.01 for ±1%%", s.UntilCI))
		return
	}
	s = s.Effective()
	if !slices.Contains(StopStatistics, s.Statistic) {
		bad("statistic", fmt.Sprintf("%q is not allowed; use one of %s", s.Statistic, strings.Join(StopStatistics, ", ")))
	}
	switch {
	case s.MinTrials < 2:
		bad("min_trials", fmt.Sprintf("%d is too few; use 2 or more", s.MinTrials))
	case s.Statistic == "mean" && s.MinTrials < MinTrialsForMean:
		bad("min_trials", fmt.Sprintf("%d is too few for the mean, whose interval is only valid from about %d trials; raise it or use statistic = \"median\"", s.MinTrials, MinTrialsForMean))
	case s.MinTrials > trials:
		bad("min_trials", fmt.Sprintf("%d is more than trials = %d, the cap; the rule could never stop an arm early", s.MinTrials, trials))
	}
}

// Greedy reports whether the arm always picks the most likely token.
func (a Arm) Greedy() bool { return a.Temperature == 0 }

// Strategy describes the arm in a few words, e.g. "temperature 0.8, top-k 40".
func (a Arm) Strategy() string {
	if a.Greedy() {
		return "greedy"
	}
	parts := []string{fmt.Sprintf("temperature %g", a.Temperature)}
	if a.TopK > 0 {
		parts = append(parts, fmt.Sprintf("top-k %d", a.TopK))
	}
	if a.TopP > 0 {
		parts = append(parts, fmt.Sprintf("top-p %g", a.TopP))
	}
	if a.MinP > 0 {
		parts = append(parts, fmt.Sprintf("min-p %g", a.MinP))
	}
	return strings.Join(parts, ", ")
}

// Orders lists the allowed values of `order`, the default first.
var Orders = []string{"shuffle", "alternate"}

const (
	defaultTimeout = 120 * time.Second
	maxMaxTokens   = 1 << 20
)

// namePattern is what a profile, an arm or a grid may be called: the
// profile's and the grid's names become file and folder names, and an
// arm's a CSV field, so a name is letters, digits, '.', '_' and '-',
// never starting with '.' or '-' (no "..", no hidden file, no flag), at
// most 64 of them.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$`)

// nameRule says namePattern in words, for errors.
const nameRule = "use up to 64 letters, digits, '.', '_' or '-', starting with a letter, digit or '_'"

// nameFromFile is the name of a profile or grid that sets none: its
// file's name, with what a name may not hold made '-' (fallback when
// nothing is left).
func nameFromFile(file, fallback string) string {
	name := []rune(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			name[i] = '-'
		}
	}
	s := strings.TrimLeft(string(name), ".-")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return fallback
	}
	return s
}

// Error is a problem in a profile, located as precisely as the source allows.
type Error struct {
	File string
	Line int // 0 when unknown
	Key  string
	Msg  string
	// typeMismatch marks the decoder's value of the wrong type.
	typeMismatch bool
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
}

// Load reads and validates the profile file at path.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a profile. file names it in errors; a relative
// prompt_file is resolved against file's folder.
func Parse(file string, data []byte) (*Profile, error) {
	// Every problem at once, so that a file is mended in one pass: a
	// value of the wrong type stops the decoder, so its line is set aside
	// and the file decoded again, up to maxTypeErrors times; then the
	// unknown keys and every field's own check.
	var errs []error
	typed := map[string]bool{} // keys with a type error: their other errors would repeat it
	for range maxTypeErrors + 1 {
		p := &Profile{Source: file, keys: scanKeyLines(data)}
		md, err := decode(file, data, p)
		var te *Error
		if errors.As(err, &te) && te.typeMismatch && len(errs) < maxTypeErrors {
			errs = append(errs, te)
			typed[te.Key] = true
			data = blankLine(data, te.Line)
			continue
		}
		if err != nil {
			if len(errs) > 0 {
				// Setting a line aside can break a value that spans
				// lines: what was found stands on its own.
				return nil, joinByLine(errs)
			}
			return nil, err
		}
		for _, k := range md.Undecoded() {
			errs = append(errs, &Error{File: file, Line: p.keys.find(k, -1), Key: k.String(),
				Msg: "unknown key; allowed keys are " + allowedKeys(k)})
		}
		if err := p.resolve(file); err != nil {
			for _, e := range unjoin(err) {
				if fe, ok := e.(*Error); !ok || !typed[armIndex.ReplaceAllString(fe.Key, "")] {
					errs = append(errs, e)
				}
			}
		}
		if len(errs) > 0 {
			return nil, joinByLine(errs)
		}
		return p, nil
	}
	return nil, joinByLine(errs)
}

// joinByLine joins errors in the order of their lines in the file, those
// without a line last.
func joinByLine(errs []error) error {
	line := func(e error) int {
		if fe, ok := e.(*Error); ok && fe.Line > 0 {
			return fe.Line
		}
		return math.MaxInt
	}
	slices.SortStableFunc(errs, func(a, b error) int { return cmp.Compare(line(a), line(b)) })
	return errors.Join(errs...)
}

// maxTypeErrors bounds how many values of the wrong type Parse reports
// (and how many times it decodes a file).
const maxTypeErrors = 20

// armIndex is an arm's index in an error's key: "arms[2].seed".
var armIndex = regexp.MustCompile(`\[\d+\]`)

// unjoin is the errors an errors.Join holds, or err alone.
func unjoin(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

// blankLine empties line n (from 1) of data, keeping every other line's
// number.
func blankLine(data []byte, n int) []byte {
	lines := bytes.Split(data, []byte("\n"))
	if n >= 1 && n <= len(lines) {
		lines[n-1] = nil
	}
	return bytes.Join(lines, []byte("\n"))
}

// typeMismatch is the decoder's words for a value of the wrong type.
var typeMismatch = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): incompatible types: TOML value has type ([\w.]+); destination has type ([\w.\[\]]+)$`)

// tomlTypeWords says a TOML or Go type the way a profile's reader thinks
// of it.
func tomlTypeWords(t string) string {
	switch {
	case strings.Contains(t, "string"):
		return "text (in quotes)"
	case strings.Contains(t, "int"):
		return "a whole number"
	case strings.Contains(t, "float"):
		return "a number"
	case strings.Contains(t, "bool"):
		return "true or false"
	case strings.HasPrefix(t, "[]") || strings.Contains(t, "array") || strings.Contains(t, "slice"):
		return "a list in [brackets]"
	case strings.Contains(t, "map") || strings.Contains(t, "table") || strings.Contains(t, "struct"):
		return "a table"
	}
	return t
}

// decode reads TOML into v; a syntax error names the file and line, and a
// value of the wrong type says so in a profile's words.
func decode(file string, data []byte, v any) (toml.MetaData, error) {
	md, err := toml.Decode(string(data), v)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return md, &Error{File: file, Line: perr.Position.Line, Msg: perr.Message}
		}
		if m := typeMismatch.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return md, &Error{File: file, Line: line, Key: m[2], typeMismatch: true,
				Msg: fmt.Sprintf("%s where %s belongs", tomlTypeWords(m[3]), tomlTypeWords(m[4]))}
		}
		return md, &Error{File: file, Msg: err.Error()}
	}
	return md, nil
}

func allowedKeys(k toml.Key) string {
	switch {
	case len(k) > 2 && k[0] == "arms" && k[1] == "options":
		return "any option name the arm's server takes, with a string, number or boolean value"
	case len(k) > 1 && k[0] == "arms":
		return strings.Join(ArmKeys, ", ")
	case len(k) > 1 && k[0] == "stop":
		return "until_ci, statistic, min_trials"
	case len(k) > 1 && k[0] == "slo":
		return "ttft_ms, itl_ms, e2e_ms, goodput"
	case len(k) > 1 && k[0] == "models":
		return "one model name per backend kind, e.g. ollama = \"gemma3:270m\""
	default:
		return "name, description, max_tokens, warmup, trials, timeout, order, seed, usd_per_hour, api_key_env, prompts, prompts_file, input_tokens, output_tokens, prefix_tokens, prefix_groups, multi_turn, turns, think_time, prompt_cache, fixed_length, think, concurrency, rate, arrival, burstiness, max_concurrency, duration, together, [models], [[arms]], [stop], [slo]"
	}
}

// resolve fills defaults, reads the prompt file and validates every field,
// reporting all problems at once so a user fixes a file in one pass.
// ArmNames are the profile's arm names in its order.
func (p *Profile) ArmNames() []string {
	names := make([]string, len(p.Arms))
	for i, a := range p.Arms {
		names[i] = a.Name
	}
	return names
}

func (p *Profile) resolve(file string) error {
	var errs []error
	bad := func(arm int, key, format string, args ...any) {
		path := toml.Key{key}
		name := key
		if arm >= 0 {
			path = toml.Key{"arms", key}
			name = fmt.Sprintf("arms[%d].%s", arm, key)
		}
		errs = append(errs, &Error{File: file, Line: p.keys.find(path, arm), Key: name, Msg: fmt.Sprintf(format, args...)})
	}

	if p.Name == "" {
		p.Name = nameFromFile(file, "profile")
	} else if !namePattern.MatchString(p.Name) {
		bad(-1, "name", "%q is not a profile name (it names the session's files); %s", p.Name, nameRule)
	}
	// Shown in the picker and by `tokentop profiles`: one clean line.
	p.Description = untrusted.Line(p.Description)
	if p.MaxTokens < 1 || p.MaxTokens > maxMaxTokens {
		bad(-1, "max_tokens", "%d is out of range; use 1 to %d", p.MaxTokens, maxMaxTokens)
	}
	if p.Warmup < 0 {
		bad(-1, "warmup", "%d is negative; use 0 or more warmup trials per arm", p.Warmup)
	}
	if p.Trials < 1 {
		bad(-1, "trials", "%d is not a trial count; use 1 or more timed trials per arm", p.Trials)
	}
	p.TrialTimeout = defaultTimeout
	if p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		switch {
		case err != nil:
			bad(-1, "timeout", "%q is not a duration; write it like \"120s\" or \"2m\"", p.Timeout)
		case d <= 0:
			bad(-1, "timeout", "%q must be positive", p.Timeout)
		default:
			p.TrialTimeout = d
		}
	}
	if p.Order == "" {
		p.Order = Orders[0]
	} else if !slices.Contains(Orders, p.Order) {
		bad(-1, "order", "%q is not allowed; use one of %s", p.Order, strings.Join(Orders, ", "))
	}
	if p.USDPerHour < 0 {
		bad(-1, "usd_per_hour", "%g is negative", p.USDPerHour)
	}
	if len(p.GPUMetrics) > maxGPUMetrics {
		bad(-1, "gpu_metrics", "names %d exporters; at most %d", len(p.GPUMetrics), maxGPUMetrics)
	}
	for _, raw := range p.GPUMetrics {
		if msg := CheckGPUMetricsURL(raw); msg != "" {
			bad(-1, "gpu_metrics", "%s", msg)
		}
	}
	promptsKey := "prompts_file"
	if p.PromptsFile == "" && p.PromptFile != "" {
		p.PromptsFile, promptsKey = p.PromptFile, "prompt_file"
	}
	switch {
	case p.PromptsFile != "" && p.PromptFile != "" && p.PromptsFile != p.PromptFile:
		bad(-1, "prompt_file", "is the older spelling of prompts_file; keep one")
	case len(p.Prompts) > 0 && p.PromptsFile != "":
		bad(-1, promptsKey, "set either prompts or %s, not both", promptsKey)
	case p.PromptsFile != "":
		path, err := BesideFile(file, p.PromptsFile, "--prompts-file")
		if err == nil {
			err = p.ReadPrompts(path)
		}
		if err != nil {
			bad(-1, promptsKey, "%v", err)
		}
	case p.PromptsFile != "" && p.InputTokens.Set():
		bad(-1, "input_tokens", "makes prompts of its own; drop %s or input_tokens", promptsKey)
	case len(p.Prompts) == 0 && !p.InputTokens.Set():
		bad(-1, "prompts", "no prompts; give prompts = [\"...\"], prompts_file = \"prompts.jsonl\" or input_tokens = 512")
	}
	if msg := p.InputTokens.Problem(MaxInputTokens); msg != "" {
		bad(-1, "input_tokens", "%s", msg)
	}
	if msg := p.OutputTokens.Problem(MaxOutputTokens); msg != "" {
		bad(-1, "output_tokens", "%s", msg)
	}
	if msg := p.ApplyTurns(); msg != "" {
		bad(-1, "multi_turn", "%s", msg)
	}
	if p.ThinkTime != "" {
		d, err := time.ParseDuration(p.ThinkTime)
		switch {
		case err != nil || d < 0:
			bad(-1, "think_time", "%q is not a duration; write it like \"2s\"", p.ThinkTime)
		case !p.MultiTurn && p.Turns < 2:
			bad(-1, "think_time", "is the pause between a conversation's turns; set multi_turn = true or turns too")
		default:
			p.ThinkPause = d
		}
	}
	switch {
	case p.Turns == 0:
	case p.Turns < 2 || p.Turns > MaxTurns:
		bad(-1, "turns", "%d is out of range; use 2 to %d user turns a conversation", p.Turns, MaxTurns)
	case !p.InputTokens.Set():
		bad(-1, "turns", "makes each user turn input_tokens long; set input_tokens too")
	case p.MultiTurn:
		bad(-1, "turns", "makes conversations of its own; drop multi_turn (a file's conversations) or turns")
	}
	switch {
	case p.PrefixTokens < 0 || p.PrefixTokens > MaxInputTokens:
		bad(-1, "prefix_tokens", "%d is out of range; use 1 to %d tokens of shared prefix", p.PrefixTokens, MaxInputTokens)
	case p.PrefixGroups < 0 || p.PrefixGroups > MaxPrefixGroups:
		bad(-1, "prefix_groups", "%d is out of range; use 1 to %d prefixes", p.PrefixGroups, MaxPrefixGroups)
	case p.PrefixGroups > 0 && p.PrefixTokens == 0:
		bad(-1, "prefix_groups", "needs prefix_tokens, the length of each shared prefix")
	case p.PrefixTokens > 0 && p.PrefixGroups == 0:
		p.PrefixGroups = 1
	}
	for i, prompt := range p.Prompts {
		if strings.TrimSpace(prompt) == "" {
			bad(-1, "prompts", "prompt %d is empty", i+1)
		}
	}
	if !p.Think.valid() {
		bad(-1, "think", "%q is not a think value; %s", p.Think, thinkRule)
	}
	p.Stop.Check(p.Trials, func(key, msg string) {
		errs = append(errs, &Error{File: file, Line: p.keys.find(toml.Key{"stop", key}, -1), Key: "stop." + key, Msg: msg})
	})
	p.checkLoad(func(key, msg string) {
		path := toml.Key{key}
		if sub, ok := strings.CutPrefix(key, "slo."); ok {
			path = toml.Key{"slo", sub}
		}
		errs = append(errs, &Error{File: file, Line: p.keys.find(path, -1), Key: key, Msg: msg})
	}, func(arm int, key, msg string) { bad(arm, key, "%s", msg) })
	if len(p.Arms) == 0 {
		errs = append(errs, &Error{File: file, Key: "arms", Msg: "no arms; add at least one [[arms]] table with a name"})
	}
	seen := map[string]bool{}
	for i := range p.Arms {
		a := &p.Arms[i]
		a.check(seen, func(key, msg string) {
			path := toml.Key{"arms", key}
			if option, ok := strings.CutPrefix(key, "options."); ok {
				path = toml.Key{"arms", "options", option}
				if p.keys.find(path, i) == 0 {
					path = toml.Key{"arms", "options"}
				}
			}
			errs = append(errs, &Error{File: file, Line: p.keys.find(path, i), Key: fmt.Sprintf("arms[%d].%s", i, key), Msg: msg})
		})
		if a.ModelPath != "" && !a.FromCommandLine() {
			path, err := BesideFile(file, a.ModelPath, "--model-path")
			if err != nil {
				bad(i, "model_path", "%v", err)
			}
			a.ModelPath = path
		}
	}
	return errors.Join(errs...)
}

// check validates one arm, telling bad about each problem by key; seen
// holds the names of the arms before it.
func (a *Arm) check(seen map[string]bool, bad func(key, msg string)) {
	badf := func(key, format string, args ...any) { bad(key, fmt.Sprintf(format, args...)) }
	switch {
	case !namePattern.MatchString(a.Name):
		badf("name", "%q is not an arm name; %s", a.Name, nameRule)
	case seen[a.Name]:
		badf("name", "%q is used by another arm; arm names must be unique", a.Name)
	}
	seen[a.Name] = true
	if a.Temperature < 0 {
		badf("temperature", "%g is negative; use 0 for greedy or a positive temperature", a.Temperature)
	}
	if a.TopK < 0 {
		badf("top_k", "%d is negative; use 0 (off) or a positive count", a.TopK)
	}
	if a.TopP < 0 || a.TopP > 1 {
		badf("top_p", "%g is out of range; use a probability in (0, 1]", a.TopP)
	}
	if a.MinP < 0 || a.MinP >= 1 {
		badf("min_p", "%g is out of range; use a probability in [0, 1)", a.MinP)
	}
	if a.Greedy() {
		for _, knob := range []struct {
			key string
			set bool
		}{{"top_k", a.TopK != 0}, {"top_p", a.TopP != 0}, {"min_p", a.MinP != 0}} {
			if knob.set {
				badf(knob.key, "has no effect on a greedy arm (temperature 0); remove it or set temperature > 0")
			}
		}
	}
	if a.Threads < 0 {
		badf("threads", "%d is negative; use 1 or more worker threads (or leave it out for one per core)", a.Threads)
	}
	if a.Model != "" && a.ModelPath != "" {
		badf("model_path", "set either model or model_path, not both")
	}
	if !a.Think.valid() {
		badf("think", "%q is not a think value; %s", a.Think, thinkRule)
	}
	if err := backends.CheckOptions(a.Options, nil, nil); err != nil {
		key, msg, _ := strings.Cut(err.Error(), ": ")
		bad(key, msg)
	}
}

// relativeTo resolves name against the folder of the profile file
// (a built-in profile's against the working folder).
// BesideFile is the path of name, a file that file (a profile or a grid)
// names, where it lies in file's folder or below: a shared file's files
// travel with it. One outside (an absolute path, "..", a link that leads
// out) could be any of the user's files, read and sent to a server as
// prompts, so only the user's own command line (flag) names such a file.
// A built-in file names none.
func BesideFile(file, name, flag string) (string, error) {
	if file == "builtin" {
		return name, nil
	}
	outside := fmt.Errorf("%q is outside the folder of %s, which may read only files beside it or below; to use that file, name it yourself with %s",
		untrusted.Line(name), filepath.Base(file), flag)
	dir := filepath.Dir(file)
	local := name
	if filepath.IsAbs(name) {
		if abs, err := filepath.Abs(dir); err == nil {
			if rel, err := filepath.Rel(abs, name); err == nil {
				local = rel // an absolute name inside the folder is inside
			}
		}
	}
	if !filepath.IsLocal(local) {
		return "", outside
	}
	// A link inside that leads out is found by opening the name through
	// the folder as a root; a name that is not there is its reader's to
	// report.
	if root, err := os.OpenRoot(dir); err == nil {
		defer root.Close()
		if _, err := root.Stat(local); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", outside
		}
	}
	return filepath.Join(dir, local), nil
}

// ReadPrompts makes the prompts file at path the profile's prompts, in
// place of any it had (--prompts-file).
func (p *Profile) ReadPrompts(path string) error {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the manifest names it wherever it is read from
	}
	f, err := ReadPromptsFile(path)
	if err != nil {
		return err
	}
	p.Dataset, p.PromptsFile, p.PromptFile, p.Prompts = f, path, "", nil
	if p.MultiTurn {
		p.Dataset = f.Turns() // what ApplyTurns checks
	}
	return nil
}

// ApplyTurns makes the prompts file's conversations' turns the prompts
// where multi_turn is set (ReadPrompts does as it reads a file; this is
// for a file read before multi_turn was set), and says what keeps
// multi_turn from running, if anything: it needs a prompts file of
// conversations, and makes the prompts itself.
func (p *Profile) ApplyTurns() string {
	switch {
	case !p.MultiTurn:
		return ""
	case p.Dataset == nil:
		return "needs a prompts_file of conversations (JSONL messages or ShareGPT)"
	case p.InputTokens.Set() || p.PrefixTokens > 0:
		return "sends the file's conversations; drop input_tokens and prefix_tokens"
	}
	if len(p.Dataset.Prompts) > 0 && p.Dataset.Prompts[0].Turn == 0 {
		p.Dataset = p.Dataset.Turns()
	}
	if len(p.Dataset.Prompts) == 0 {
		return p.Dataset.Path + "'s conversations have no user turn to send"
	}
	return ""
}

// Where locates a key of this profile as "file:line" for errors raised by
// later stages (for example a [models] entry for an unknown backend).
func (p *Profile) Where(key ...string) string {
	if line := p.keys.find(key, -1); line > 0 {
		return fmt.Sprintf("%s:%d", p.Source, line)
	}
	return p.Source
}

// maxGPUMetrics bounds the DCGM exporters one run reads.
const maxGPUMetrics = 16

// CheckGPUMetricsURL says what is wrong with a DCGM exporter's address
// ("" when nothing is): an http(s) address with a host. What it says
// names no password the address holds.
func CheckGPUMetricsURL(raw string) string {
	if !IsServerURL(raw) || len(raw) > 2048 {
		return fmt.Sprintf("%q is not the http(s) address of a DCGM exporter's metrics; write it like http://gpu-node:9400/metrics", untrusted.URL(raw))
	}
	return ""
}

// IsServerURL reports whether raw is an http(s) address with a host: a
// server's, its metrics', or an exporter's.
func IsServerURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
