package session

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ConfigDifferences lists, in a few words each, how session b was set up
// differently from session a in what changes latency by itself: the model,
// the backend, the prompts, max_tokens, fixed-length generation, and the
// sampling of the arms they share by name. A comparison across such
// sessions measures those differences as much as anything else, so every
// output that compares them says so. Empty when the setups match.
func ConfigDifferences(a, b *Manifest) []string {
	var out []string
	differ := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %s vs %s", what, x, y))
		}
	}
	differ("model", modelName(a.Backend), modelName(b.Backend))
	differ("backend", a.Backend.Kind, b.Backend.Kind)
	if a.Backend.Kind == b.Backend.Kind && a.Backend.Quantization != b.Backend.Quantization {
		differ("quantization", a.Backend.Quantization, b.Backend.Quantization)
	}
	differ("max_tokens", strconv.Itoa(a.Profile.MaxTokens), strconv.Itoa(b.Profile.MaxTokens))
	if !slices.Equal(a.Profile.Prompts, b.Profile.Prompts) {
		out = append(out, fmt.Sprintf("prompts (%d vs %d, not the same text)", len(a.Profile.Prompts), len(b.Profile.Prompts)))
	}
	if a.Profile.FixedLength != b.Profile.FixedLength {
		differ("fixed_length", strconv.FormatBool(a.Profile.FixedLength), strconv.FormatBool(b.Profile.FixedLength))
	}
	shared := false
	for _, x := range a.Arms {
		for _, y := range b.Arms {
			if x.Name != y.Name {
				continue
			}
			shared = true
			if sx, sy := sampling(x), sampling(y); sx != sy {
				out = append(out, fmt.Sprintf("sampling of %s (%s vs %s)", x.Name, sx, sy))
			}
		}
	}
	if !shared && len(a.Arms) > 0 && len(b.Arms) > 0 {
		out = append(out, "no arm in common by name (each arm is set against the first)")
	}
	return out
}

func modelName(b BackendInfo) string {
	if b.ModelActual != "" {
		return b.ModelActual
	}
	return b.ModelRequested
}

// sampling is an arm's sampling settings in one short phrase.
func sampling(a ArmInfo) string {
	if a.Temperature == 0 {
		return "greedy"
	}
	parts := []string{"temperature " + strconv.FormatFloat(a.Temperature, 'g', -1, 64)}
	if a.TopK > 0 {
		parts = append(parts, "top_k "+strconv.Itoa(a.TopK))
	}
	if a.TopP > 0 && a.TopP < 1 {
		parts = append(parts, "top_p "+strconv.FormatFloat(a.TopP, 'g', -1, 64))
	}
	if a.MinP > 0 {
		parts = append(parts, "min_p "+strconv.FormatFloat(a.MinP, 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}
