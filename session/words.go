package session

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/tokentop/tokentop/metrics"
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
		generated := fmt.Sprintf("%.0f tokens generated over the run", s.TokensGenerated)
		if s.TokensPerSecond > 0 {
			generated += fmt.Sprintf(", %s tok/s", FormatValue(s.TokensPerSecond))
		}
		switch {
		case s.Restarts > 0:
			generated = fmt.Sprintf("at least %s (its counters went back to zero %s: what it counted between its last read and each restart is lost)", generated, times(s.Restarts))
		case s.LastReadFailed:
			generated = fmt.Sprintf("at least %s (its last read failed: what it counted after the read before is lost)", generated)
		case s.FailedReads > 0:
			generated = fmt.Sprintf("at least %s (%d of its reads failed: had it restarted between them, what it counted before is lost)", generated, s.FailedReads)
		}
		parts := []string{generated}
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

// times words a count of occurrences: "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
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
	if l.Turns > 1 {
		out = append(out, fmt.Sprintf("conversations of %d user turns, each carrying the turns before it with made replies of the output length, sent turn by turn", l.Turns))
	}
	if l.PrefixTokens > 0 {
		out = append(out, fmt.Sprintf("shared prefix: each prompt opens with one of %d system prompts of %d tokens", l.PrefixGroups, l.PrefixTokens))
		if l.InputTokens == "" {
			for _, t := range l.Tokenizers {
				out = append(out, "  "+t)
			}
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

// PrefixCache is how much of an arm's prompts its server's prefix cache
// served, over its timed ok trials whose server said (cached_tokens), and
// the TTFT it bought: the median where a trial reused the shared prefix
// (at least half of its PrefixTokens, the workload's length, since the
// server's tokenizer may count the prefix a little differently) against
// where it did not; 0 where no trial was one. A trial that reused a few
// tokens (a BOS alone) did not reuse the prefix: its prefill was whole.
type PrefixCache struct {
	HitRate      float64 `toml:"hit_rate"` // Σ cached tokens / Σ prompt tokens
	PrefixTokens int     `toml:"prefix_tokens"`
	Hits         int     `toml:"hits"`   // trials that reused the shared prefix
	Misses       int     `toml:"misses"` // trials that did not
	TTFTHitMs    float64 `toml:"ttft_hit_ms,omitzero"`
	TTFTMissMs   float64 `toml:"ttft_miss_ms,omitzero"`
}

// PrefixCacheOf is the prefix cache of records whose prompts open with a
// shared prefix of prefixTokens; nil where no timed ok trial's server
// said how many prompt tokens it took from its cache.
func PrefixCacheOf(records []*Record, prefixTokens int) *PrefixCache {
	var cached, prompt float64
	var hits, misses []float64
	for _, r := range records {
		if r.Phase != PhaseTimed || r.Status != StatusOK || r.CachedTokens < 0 || r.PromptTokens <= 0 || math.IsNaN(r.TTFTMs) {
			continue
		}
		cached, prompt = cached+float64(r.CachedTokens), prompt+float64(r.PromptTokens)
		if 2*r.CachedTokens >= prefixTokens && r.CachedTokens > 0 {
			hits = append(hits, r.TTFTMs)
		} else {
			misses = append(misses, r.TTFTMs)
		}
	}
	if prompt == 0 {
		return nil
	}
	median := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return metrics.PercentileSorted(v, 0.5)
	}
	return &PrefixCache{HitRate: cached / prompt, PrefixTokens: prefixTokens, Hits: len(hits), Misses: len(misses), TTFTHitMs: median(hits), TTFTMissMs: median(misses)}
}

// Words say what the prefix cache served and bought.
func (c *PrefixCache) Words() string {
	s := fmt.Sprintf("prefix cache: %.0f%% of prompt tokens from the cache; %d trials reused the shared prefix (at least half its %d tokens), %d did not",
		100*c.HitRate, c.Hits, c.PrefixTokens, c.Misses)
	if c.Hits > 0 && c.Misses > 0 {
		s += fmt.Sprintf("; TTFT p50 %s ms where reused, %s ms where not", FormatValue(c.TTFTHitMs), FormatValue(c.TTFTMissMs))
	}
	return s
}

// TurnWords says, for a multi-turn arm's timed ok trials, the median TTFT
// of each turn: the history each turn carries lengthens its prompt, so
// its prefill grows unless the server's cache holds the turns before.
// "" where no trial had a turn.
func TurnWords(records []*Record) string {
	byTurn := map[int][]float64{}
	for _, r := range records {
		if r.Turn > 0 && r.Phase == PhaseTimed && r.Status == StatusOK && !math.IsNaN(r.TTFTMs) {
			byTurn[r.Turn] = append(byTurn[r.Turn], r.TTFTMs)
		}
	}
	if len(byTurn) == 0 {
		return ""
	}
	var parts []string
	for _, turn := range slices.Sorted(maps.Keys(byTurn)) {
		v := byTurn[turn]
		slices.Sort(v)
		parts = append(parts, fmt.Sprintf("turn %d %s ms (n %d)", turn, FormatValue(metrics.PercentileSorted(v, 0.5)), len(v)))
	}
	return "TTFT p50 by turn: " + strings.Join(parts, ", ")
}
