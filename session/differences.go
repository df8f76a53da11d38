package session

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/backends"
)

// ConfigDifferences lists, in a few words each, how session b was set up
// differently from session a in what changes latency by itself: the model,
// the backend and its version, the prompts, max_tokens, fixed-length
// generation, and the sampling of the arms they share by name. A
// comparison across such sessions measures those differences as much as
// anything else, so every output that compares them says so. Empty when
// the setups match.
func ConfigDifferences(a, b *Manifest) []string {
	var out []string
	differ := func(what, x, y string) {
		if line := fmt.Sprintf("%s %s vs %s", what, x, y); x != y && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	for _, pair := range armPairs(a, b) {
		x, y := a.TargetOf(pair[0]), b.TargetOf(pair[1])
		differ("model", x.Model(), y.Model())
		differ("backend", x.Kind, y.Kind)
		if x.Kind == y.Kind && x.Quantization != y.Quantization {
			differ("quantization", x.Quantization, y.Quantization)
		}
		// A server that did not say its version is not called different.
		if x.Kind == y.Kind && x.ServerVersion != "" && y.ServerVersion != "" {
			differ("server", x.ServerVersion, y.ServerVersion)
		}
		differ("options", orNone(backends.OptionsText(x.Options)), orNone(backends.OptionsText(y.Options)))
	}
	differ("max_tokens", strconv.Itoa(a.Profile.MaxTokens), strconv.Itoa(b.Profile.MaxTokens))
	switch fa, fb := a.Profile.PromptsFile, b.Profile.PromptsFile; {
	case fa != nil || fb != nil:
		differ("prompts", promptsDrawn(a.Profile), promptsDrawn(b.Profile))
	case !slices.Equal(a.Profile.Prompts, b.Profile.Prompts):
		out = append(out, fmt.Sprintf("prompts (%d vs %d, not the same text)", len(a.Profile.Prompts), len(b.Profile.Prompts)))
	}
	if a.Profile.FixedLength != b.Profile.FixedLength {
		differ("fixed_length", strconv.FormatBool(a.Profile.FixedLength), strconv.FormatBool(b.Profile.FixedLength))
	}
	shared := false
	for _, x := range a.Arms {
		if y, ok := b.Arm(x.Name); ok {
			shared = true
			if sx, sy := sampling(x), sampling(y); sx != sy {
				out = append(out, fmt.Sprintf("sampling of %s (%s vs %s)", x.Name, sx, sy))
			}
			if x.Think != y.Think {
				out = append(out, fmt.Sprintf("think of %s (%s vs %s)", x.Name, orDefault(x.Think), orDefault(y.Think)))
			}
		}
	}
	if !shared && len(a.Arms) > 0 && len(b.Arms) > 0 {
		out = append(out, "no arm in common by name (each arm is set against the first)")
	}
	return out
}

// armPairs are the arms a and b share by name, or their first arms when
// they share none.
func armPairs(a, b *Manifest) [][2]string {
	var pairs [][2]string
	for _, x := range a.Arms {
		if _, ok := b.Arm(x.Name); ok {
			pairs = append(pairs, [2]string{x.Name, x.Name})
		}
	}
	if len(pairs) == 0 && len(a.Arms) > 0 && len(b.Arms) > 0 {
		pairs = append(pairs, [2]string{a.Arms[0].Name, b.Arms[0].Name})
	}
	return pairs
}

// orDefault names an unset think.
func orDefault(think string) string {
	if think == "" {
		return "the server's default"
	}
	return think
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ArmLabels names each arm of m by what sets its target apart from the
// others', and only that: "q8_0" and "f32" for arms that differ in dtype
// alone, "ollama" and "llamacpp" for one model on two servers,
// "num_ctx=512" for an option set, an address only between servers of one
// kind. Sampling is left to the arm's strategy,
// which every output gives already; labels are empty where the arms
// share one target and cache setting.
func ArmLabels(m *Manifest) map[string]string {
	facets := []func(a ArmInfo, t TargetInfo) string{
		func(_ ArmInfo, t TargetInfo) string { return t.Kind },
		// The address says something only between servers of one kind.
		func(_ ArmInfo, t TargetInfo) string {
			for _, u := range m.Targets {
				if u.Kind == t.Kind && u.URL != t.URL {
					return t.URL
				}
			}
			return ""
		},
		func(_ ArmInfo, t TargetInfo) string { return t.Model() },
		func(_ ArmInfo, t TargetInfo) string { return t.Quantization },
		func(_ ArmInfo, t TargetInfo) string {
			if n := t.Details["threads"]; n != "" {
				return n + " threads"
			}
			return ""
		},
	}
	var optionKeys []string
	for _, t := range m.Targets {
		for k := range t.Options {
			if !slices.Contains(optionKeys, k) {
				optionKeys = append(optionKeys, k)
			}
		}
	}
	slices.Sort(optionKeys)
	for _, k := range optionKeys {
		facets = append(facets, func(_ ArmInfo, t TargetInfo) string {
			if v, ok := t.Options[k]; ok {
				return fmt.Sprintf("%s=%v", k, v)
			}
			return k + " default"
		})
	}
	facets = append(facets,
		func(a ArmInfo, _ TargetInfo) string {
			switch {
			case strings.HasPrefix(a.PromptCache, "allowed"):
				return "cache allowed"
			case strings.HasPrefix(a.PromptCache, "off"):
				return "cache off"
			}
			return "may cache" // a server with no switch (promptCacheWords)
		})
	labels := make(map[string]string, len(m.Arms))
	for _, facet := range facets {
		values := make([]string, len(m.Arms))
		for i, a := range m.Arms {
			values[i] = facet(a, m.TargetOf(a.Name))
		}
		if len(values) == 0 || slices.Equal(values, slices.Repeat(values[:1], len(values))) {
			continue
		}
		// An empty value is a facet the arm's target does not have (no
		// URL in process, no threads on a server): nothing to say.
		for i, a := range m.Arms {
			if values[i] != "" {
				labels[a.Name] = strings.TrimPrefix(labels[a.Name]+" · "+values[i], " · ")
			}
		}
	}
	return labels
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

// LabelledArm is an arm's name with its label (ArmLabels) where the name
// does not already say it: "q8 (q8_0)", but "f32" for the arm named f32.
func LabelledArm(arm, label string) string {
	if label == "" || label == arm {
		return arm
	}
	return arm + " (" + label + ")"
}

// promptsDrawn says where a session's prompts came from, as far as two
// sessions differ by it: a prompts file by its digest and the seed that
// ordered it, else the count of the profile's own.
func promptsDrawn(p ProfileInfo) string {
	if f := p.PromptsFile; f != nil {
		return fmt.Sprintf("file %s (sha256 %.12s, drawn by seed %d)", filepath.Base(f.File), f.SHA256, p.Seed)
	}
	return fmt.Sprintf("%d listed in the profile", len(p.Prompts))
}
