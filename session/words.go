package session

import (
	"fmt"
	"strings"
)

// Words say, a line per server, what its own metrics told over the run,
// or why it gave none.
func (info *ServerMetricsInfo) Words() []string {
	if info == nil {
		return nil
	}
	var out []string
	for _, s := range info.Servers {
		name := "server " + strings.Join(s.Targets, ", ")
		if s.Status != "scraped" {
			out = append(out, fmt.Sprintf("%s: no metrics (%s)", name, strings.TrimPrefix(s.Status, "none: ")))
			continue
		}
		parts := []string{fmt.Sprintf("%.0f tokens generated over the run", s.TokensGenerated)}
		if s.PrefixHitRate > 0 {
			parts = append(parts, fmt.Sprintf("its prefix cache served %.0f%% of the prompt tokens", 100*s.PrefixHitRate))
		}
		peaks := fmt.Sprintf("at most %.0f requests running and %.0f waiting", s.PeakRunning, s.PeakWaiting)
		if s.PeakKVCache > 0 {
			peaks += fmt.Sprintf(", %.0f%% of its KV cache in use", 100*s.PeakKVCache)
		}
		parts = append(parts, peaks)
		out = append(out, fmt.Sprintf("%s, by its own metrics: %s (every scrape in %s)", name, strings.Join(parts, "; "), info.File))
	}
	return out
}

// Words say, a line each, the lengths asked and how each target's
// prompts were made.
func (l *LengthsInfo) Words() []string {
	if l == nil {
		return nil
	}
	var out []string
	if l.InputTokens != "" {
		out = append(out, fmt.Sprintf("prompt lengths: %s tokens, %d prompts, the same for every arm", l.InputTokens, l.Prompts))
		for _, t := range l.Tokenizers {
			out = append(out, "  "+t)
		}
	}
	if l.OutputTokens != "" {
		line := fmt.Sprintf("output lengths: %s tokens, the end of sequence ignored", l.OutputTokens)
		if len(l.OutputNotForced) > 0 {
			line += fmt.Sprintf(" (not by %s: it cannot be told)", strings.Join(l.OutputNotForced, ", "))
		}
		out = append(out, line)
	}
	return out
}
