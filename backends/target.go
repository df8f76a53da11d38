package backends

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// Target is one thing an arm runs on: a backend kind, how to reach it,
// the model, and how to tune it. Arms with equal targets share one
// backend; arms on different targets compare servers, models,
// quantizations or option sets within one interleaved run.
type Target struct {
	Kind string `json:"kind"`
	URL  string `json:"url,omitempty"`
	// Replicas are a fleet's addresses after URL: the arms' requests go
	// round-robin across URL and them, in schedule order.
	Replicas  []string `json:"replicas,omitempty"`
	Endpoint  string   `json:"endpoint,omitempty"`
	Model     string   `json:"model,omitempty"`
	APIKeyEnv string   `json:"api_key_env,omitempty"`
	// Threads and DType tune an in-process engine.
	Threads int    `json:"threads,omitempty"`
	DType   string `json:"dtype,omitempty"`
	// Options go to the server with every request, as-is (Ollama's
	// "options", llama-server's request fields, extra body fields of an
	// OpenAI-compatible server). Values are scalars.
	Options map[string]any `json:"options,omitempty"`
}

// Key is a canonical text of the target: equal keys, equal targets.
func (t Target) Key() string {
	data, err := json.Marshal(t) // map keys are sorted
	if err != nil {
		panic(err) // scalars only (CheckOptions): cannot fail
	}
	return string(data)
}

// OptionsText lists server options as "k=v" in key order, for messages;
// a profile's strings are outside text, so it is cleaned.
func OptionsText(options map[string]any) string {
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, options[k])
	}
	return untrusted.Line(strings.Join(parts, " "))
}

// CheckOptions tells whether kind can be sent options (see CheckOptions).
func (k Kind) CheckOptions(options map[string]any) error {
	if len(options) > 0 && k.OptionsGo == "" {
		return fmt.Errorf("the %s backend takes no options (it is tuned by dtype and threads)", k.Name)
	}
	return CheckOptions(options, k.ReservedOptions, k.KnownOptions)
}

// CheckOptions tells whether options can be sent to a server: each must be
// a scalar, none may be one of reserved, the fields tokentop sets itself
// from the arm (temperature, the token limit, ...), which would change the
// arm behind its back, nor think, which the arm's own think sets in each
// server's words; and where known is not nil, each must be one of them.
// The error names the option.
func CheckOptions(options map[string]any, reserved, known []string) error {
	keys := make([]string, 0, len(options))
	for key := range options {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		switch {
		case key == "think":
			return errors.New("options.think: thinking is set by think on the arm or profile, which tokentop sends in each server's own words (as an option a server ignores it, or takes it for something else)")
		case slices.Contains(reserved, key):
			return fmt.Errorf("options.%s: tokentop sets %s itself from the arm (its sampling, max_tokens, seed or prompt_cache); set it there instead", key, key)
		case known != nil && !slices.Contains(known, key):
			return fmt.Errorf("options.%s: the server takes no option of that name and would run without it, unsaid; use one of %s", key, strings.Join(known, ", "))
		}
		switch v := options[key].(type) {
		case string, bool, int64, int:
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("options.%s: %v is not a number a server can read", key, v)
			}
		default:
			return fmt.Errorf("options.%s: a %T; options are passed to the server as-is and must be a string, number or boolean", key, v)
		}
	}
	return nil
}
