package session

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// health counts, over an arm's timed trials, what a reader must know
// before trusting its numbers; SummarizeArm stores it in the summary and
// Compare computes it alone, so both word it through armCaveats.
func health(records []*Record, s *ArmSummary) {
	reasons := map[string]int{}
	for _, r := range records {
		if r.Phase != PhaseTimed || r.Window == WindowRamp || r.Window == WindowDrain {
			continue // not measured: a load block's ramp-up and drain
		}
		if r.Degraded() {
			s.Degraded++
			reasons[r.Status+": "+r.Error]++
		}
		if r.Status != StatusOK {
			continue
		}
		s.TimedOK++
		if r.StopReason == StopTruncated {
			s.Truncated++
		}
		if r.CachedTokens > 0 && 10*r.CachedTokens >= r.PromptTokens {
			s.CacheHits++ // a BOS alone from the cache leaves the prefill whole
		}
		if r.ServerLoadMs >= ModelLoadMs {
			s.ModelLoads++
			s.MaxModelLoadMs = max(s.MaxModelLoadMs, r.ServerLoadMs)
		}
	}
	s.DegradedReason = mostFrequent(reasons)
}

func mostFrequent(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best := ""
	for _, k := range keys {
		if best == "" || counts[k] > counts[best] {
			best = k
		}
	}
	return best
}

// ModelLoadMs is the server's load time (Ollama's load_duration) from
// which a trial carried a model load: a loaded model's is a few ms (0.7–3.8
// in Ollama's recorded answers), a load hundreds (266 and 513).
const ModelLoadMs = 50

// caveatKinds is how many kinds of caveat an arm can have.
const caveatKinds = 4

// armCaveats words an arm's health for the top of a report, in order of
// weight: degraded trials, truncated ones, model loads, cache hits; ""
// where none.
func armCaveats(arm string, s ArmSummary) [caveatKinds]string {
	var out [caveatKinds]string
	if s.Degraded > 0 {
		out[0] = fmt.Sprintf("%s: %d of %d timed trials degraded (most often %s); they are left out of every statistic",
			arm, s.Degraded, s.TimedOK+s.Degraded, strings.TrimSuffix(s.DegradedReason, ": "))
	}
	if s.Truncated > 0 {
		out[1] = fmt.Sprintf("%s: %d of %d timed trials were cut at the context window (stop reason truncated): not full-length generations",
			arm, s.Truncated, s.TimedOK)
	}
	if s.ModelLoads > 0 {
		out[2] = fmt.Sprintf("%s: %d of %d timed trials carried a model load (the server's load time up to %s ms, server_load_ms): "+
			"the server had unloaded the model between trials, and their e2e and TTFT include loading it", arm, s.ModelLoads, s.TimedOK, FormatValue(s.MaxModelLoadMs))
	}
	if s.CacheHits > 0 {
		out[3] = fmt.Sprintf("%s: %d of %d timed trials took a tenth of their prompt or more from the server's cache: their TTFT is not a full prefill's",
			arm, s.CacheHits, s.TimedOK)
	}
	return out
}

// weightiestFirst lists the arms' caveats kind by kind, so that degraded
// trials of any arm come before any arm's cache hits.
func weightiestFirst(perArm [][caveatKinds]string) []string {
	var out []string
	for kind := range caveatKinds {
		for _, c := range perArm {
			if c[kind] != "" {
				out = append(out, c[kind])
			}
		}
	}
	return out
}

// statusCaveat says that a session did not finish its plan, and why;
// empty for a complete one.
func statusCaveat(status, note string) string {
	switch status {
	case StatusComplete, "": // "": a comparison built in memory, not read from files
		return ""
	case StatusRunning:
		status = "running (the run was killed or is in progress)"
	}
	line := "status " + status + ": the run did not finish its plan"
	if note != "" {
		line += " (" + note + ")"
	}
	return line
}

// Caveats are what a reader must know first about a session: that it did
// not finish its plan, then ArmCaveats. Empty for a clean session.
func Caveats(status, note string, arms []string, summary map[string]ArmSummary) []string {
	var out []string
	if line := statusCaveat(status, note); line != "" {
		out = append(out, line)
	}
	return append(out, ArmCaveats(arms, summary)...)
}

// ArmCaveats are the arms' degraded, truncated and cached trials, for a
// screen that says the session's status itself.
func ArmCaveats(arms []string, summary map[string]ArmSummary) []string {
	var perArm [][caveatKinds]string
	for _, arm := range arms {
		perArm = append(perArm, armCaveats(arm, summary[arm]))
	}
	return weightiestFirst(perArm)
}

// SessionCaveats are Caveats computed from a session's records, so they
// hold for a session killed before its summary was written, or written
// before the summary counted truncation and cache hits.
func SessionCaveats(s *Session) []string {
	groups := ByArm(s.Records)
	arms := armOrder(s)
	summary := map[string]ArmSummary{}
	for _, arm := range arms {
		var sum ArmSummary
		health(groups[arm], &sum)
		summary[arm] = sum
	}
	out := Caveats(s.Manifest.Status, s.Manifest.StopNote, arms, summary)
	if p := s.Precision(); p.Missed {
		out = append([]string{p.Line}, out...)
	}
	if line := s.Manifest.Shard.Caveat(); line != "" {
		out = append([]string{line}, out...)
	}
	if line := cacheCaveat(s.Manifest); line != "" {
		out = append(out, line)
	}
	return out
}

// Caveat says that a shard's session holds its share of a run, not the
// run; "" for a session of one process, or a merged one.
func (s *ShardInfo) Caveat() string {
	if s == nil || s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("shard %d of %d: this session holds every %s request of the run, and its rates and counts are its share; 'tokentop merge' joins the shards' sessions into the run",
		s.Index, s.Count, ordinal(s.Count))
}

// MayCache reports whether the arm's server may have served its repeated
// prompts from a cache that tokentop could not turn off: one with no
// per-request switch (the runner's words start "allowed" or "off"
// otherwise).
func (a ArmInfo) MayCache() bool {
	return a.PromptCache != "" && !strings.HasPrefix(a.PromptCache, "allowed") && !strings.HasPrefix(a.PromptCache, "off")
}

// cacheCaveat says which arms asked for prompt_cache = false of a server
// that cannot be told it: their repeated prompts may have come from its
// cache, and a server that reports no hits (Ollama) leaves no trace of
// it in cached_tokens.
func cacheCaveat(m *Manifest) string {
	var arms, kinds []string
	for _, a := range m.Arms {
		if a.MayCache() {
			arms = append(arms, a.Name)
			if kind := m.TargetOf(a.Name).Kind; !slices.Contains(kinds, kind) {
				kinds = append(kinds, kind)
			}
		}
	}
	if len(arms) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: prompt_cache = false could not be enforced: %s takes no per-request switch, so repeated prompts may have been served from its cache "+
		"(their TTFT then not a full prefill's); only hits the server reports show in cached_tokens, and Ollama reports none", strings.Join(arms, ", "), strings.Join(kinds, " and "))
}

// Precision is what the session's stop rule reached.
func (s *Session) Precision() Precision {
	return PrecisionOf(s.Manifest.Profile.Stop, s.Manifest.Profile.Trials, armOrder(s), s.Manifest.Summary)
}
