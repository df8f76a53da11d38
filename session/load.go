package session

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics"
)

// Throughput is a load arm's aggregate over its blocks' steady windows. A
// block's window opens when every stream has finished its first (ramp-up)
// request and closes when the first stream has finished its last: between
// the two, exactly the block's concurrency was kept in flight.
type Throughput struct {
	Concurrency  int     `toml:"concurrency"`
	TokensPerS   float64 `toml:"tokens_per_s"`   // ok requests' output tokens that arrived in the windows / their length
	RequestsPerS float64 `toml:"requests_per_s"` // ok requests in the windows, each by its share of tokens there / their length
	// FailedTokensPerS is the output tokens of requests that failed
	// mid-stream that arrived in the windows / their length: the server
	// made them, but neither tok/s nor req/s counts them, so that tok/s
	// ÷ req/s stays the tokens of an ok request (64.85 for 64-token
	// requests where they were counted in tok/s alone).
	FailedTokensPerS float64 `toml:"failed_tokens_per_s,omitzero"`
	WindowS          float64 `toml:"window_s"` // the windows' total length
	Blocks           int     `toml:"blocks"`   // blocks that had a window
}

// TokensArrived is every output token that arrived in the windows, ok
// requests' and failed ones': the work energy per token is divided by.
func (t Throughput) TokensArrived() float64 { return (t.TokensPerS + t.FailedTokensPerS) * t.WindowS }

// LoadCost is what a load arm's blocks cost besides time. Its requests
// overlap, so none has energy or memory of its own: energy is measured
// over each steady window by the trial rules (the counter, else at least
// two power samples), above the idle baseline, and summed; memory is the
// peak over the blocks.
type LoadCost struct {
	EnergyJ   float64 `toml:"energy_j"`    // NaN when a window had no figure
	AvgPowerW float64 `toml:"avg_power_w"` // gross, over the windows
	JPerToken float64 `toml:"j_per_token"` // EnergyJ / the tokens that arrived in the windows
	// EnergyQuality is the weakest window's: counter, sampled, no_data,
	// or unavailable without a power source.
	EnergyQuality string `toml:"energy_quality"`
	// EnergyErrJ is how far EnergyJ may be off: the readings' resolution
	// over the windows, plus the idle baseline's drift over their length
	// where it was measured after the run.
	EnergyErrJ float64 `toml:"energy_err_j"`
	PeakRSSMB  float64 `toml:"peak_rss_mb"` // NaN when memory could not be read
}

// JPerTokenCell is the energy per token for a table: "≈ idle" where the
// net energy is within its uncertainty of zero (never a negative
// figure), "—" where unknown.
func (c *LoadCost) JPerTokenCell() string {
	switch {
	case math.IsNaN(c.JPerToken):
		return "—"
	case !(c.EnergyJ > c.EnergyErrJ):
		return "≈ idle"
	}
	return fmt.Sprintf("%.3f", c.JPerToken)
}

// LoadThroughput computes each load arm's Throughput from its timed
// records and their token arrivals; arms without windows are left out.
func LoadThroughput(records []Record, tokens map[TrialKey]Arrivals) map[string]Throughput {
	type blockKey struct {
		arm   string
		round int
	}
	blocks := map[blockKey][]*Record{}
	var order []blockKey
	for i := range records {
		r := &records[i]
		if r.Phase != PhaseTimed || r.Window == "" {
			continue
		}
		k := blockKey{r.Arm, r.Round}
		if _, ok := blocks[k]; !ok {
			order = append(order, k)
		}
		blocks[k] = append(blocks[k], r)
	}
	out := map[string]Throughput{}
	tokenCount, failedTokens, requestCount := map[string]int{}, map[string]int{}, map[string]float64{}
	for _, k := range order {
		from, to, ok := SteadyWindow(blocks[k])
		if !ok {
			continue
		}
		t := out[k.arm]
		t.Concurrency = blocks[k][0].Concurrency
		t.WindowS += to.Sub(from).Seconds()
		t.Blocks++
		out[k.arm] = t
		for _, r := range blocks[k] {
			a := tokens[TrialKey{r.Arm, r.Trial}]
			seen, inside := 0, 0
			for i, at := range a.AtMs {
				if inWindow(r.StartedAt.Add(time.Duration(at*float64(time.Millisecond))), from, to) {
					inside += a.Tokens[i] - seen
				}
				seen = a.Tokens[i]
			}
			if r.Status != StatusOK {
				failedTokens[k.arm] += inside
			} else {
				tokenCount[k.arm] += inside
			}
			// A request counts by the share of its tokens that arrived in
			// the window, as tokens are counted: counted whole where it
			// ended, a batch of completions landing microseconds past the
			// window's end (streams in lockstep under batching) was lost
			// while its tokens were not, and req/s read (2N+1)/(3N) of
			// the truth at N streams.
			switch {
			case r.Status != StatusOK:
			case seen > 0:
				requestCount[k.arm] += float64(inside) / float64(seen)
			case inWindow(end(r), from, to): // no tokens: where it ended
				requestCount[k.arm]++
			}
		}
	}
	for arm, t := range out {
		t.TokensPerS = float64(tokenCount[arm]) / t.WindowS
		t.FailedTokensPerS = float64(failedTokens[arm]) / t.WindowS
		t.RequestsPerS = requestCount[arm] / t.WindowS
		out[arm] = t
	}
	return out
}

// SteadyWindow is a block's window: from the last end of a stream's
// first request to the first end of a stream's last request.
// Only streams that were served count: past its capacity a server sheds
// the streams over it at once, and a stream whose every request it shed
// never held a place at it (their ends would close the window before the
// served streams' first).
func SteadyWindow(block []*Record) (from, to time.Time, ok bool) {
	first, last := map[int]time.Time{}, map[int]time.Time{}
	served := map[int]bool{}
	for _, r := range block {
		served[r.Stream] = served[r.Stream] || r.Status == StatusOK
	}
	for _, r := range block {
		if !served[r.Stream] {
			continue
		}
		e := end(r)
		if f, seen := first[r.Stream]; !seen || e.Before(f) {
			first[r.Stream] = e
		}
		if l, seen := last[r.Stream]; !seen || e.After(l) {
			last[r.Stream] = e
		}
	}
	for s := range first {
		if from.IsZero() || first[s].After(from) {
			from = first[s]
		}
		if to.IsZero() || last[s].Before(to) {
			to = last[s]
		}
	}
	return from, to, to.After(from)
}

func end(r *Record) time.Time {
	return r.StartedAt.Add(time.Duration(r.E2EMs * float64(time.Millisecond)))
}

func inWindow(t, from, to time.Time) bool { return t.After(from) && !t.After(to) }

// Level is one concurrency level of a sweep.
type Level struct {
	Arm         string
	Concurrency int
	Throughput
	Cost    *LoadCost // from the summary; nil for a run killed before it
	N       int       // counted (steady) requests
	TTFTP95 float64   // ms, over the counted requests
	ITLP95  float64   // ms, over every inter-token gap of the counted requests
	// Goodput is the share of the level's timed steady requests (failed
	// ones included, Record.JudgedBySLO) that met every SLO bound; NaN without
	// an SLO.
	Goodput float64
	// Judged and Failed count the level's timed steady requests and those
	// that failed; TopError is the failures' most frequent error.
	Judged, Failed int
	TopError       string
}

// Sweep is one profile arm run at several concurrency levels.
type Sweep struct {
	Base   string
	Levels []Level
	// Knee is the level where throughput stopped rising (by KneeGain) or
	// p95 latency passed KneeLatency times the first level's; 0 if none.
	Knee    int
	KneeWhy string
	// BestGood is the highest level whose goodput held the target; 0 when
	// none did or there is no SLO.
	BestGood int
}

// The knee's thresholds, stated in every sweep's words.
const (
	KneeGain    = 0.10 // throughput rising by less than this from one level to the next has stopped rising
	KneeLatency = 2.0  // p95 TTFT or ITL above this multiple of the first level's
	// KneeFailures is the share of a level's requests failing (a server
	// shedding load: 503, 429) at which it breaks.
	KneeFailures = 0.10
)

// TopError is the most frequent error of failed requests, cut to its
// first clause ("HTTP 503: server busy"), with how many had it; "" for
// none.
func TopError(failed []*Record) string {
	counts := map[string]int{}
	best := ""
	for _, r := range failed {
		e, _, _ := strings.Cut(r.Error, " (")
		if e = untrusted.Line(e); len(e) > 80 {
			e = e[:80] + "…"
		}
		counts[e]++
		if counts[e] > counts[best] || counts[e] == counts[best] && e < best {
			best = e
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("%s, %d of them", best, counts[best])
}

// Sweeps finds each profile arm run at a level of streams (or more) and
// describes its levels, their aggregate rates, its knee (with two levels
// or more) and goodput.
func Sweeps(m *Manifest, records []Record, tokens map[TrialKey]Arrivals) []Sweep {
	var sweeps []Sweep
	byArm := ByArm(records)
	throughput := LoadThroughput(records, tokens) // from the files, so a killed run has it too
	for _, a := range m.Arms {
		// An open loop's cap in flight is not a level of streams: its
		// rates are its levels (RateSweeps).
		if a.Concurrency == 0 || a.Mode != "" || a.Rate > 0 {
			continue
		}
		i := slices.IndexFunc(sweeps, func(s Sweep) bool { return s.Base == a.Base })
		if i < 0 {
			sweeps = append(sweeps, Sweep{Base: a.Base})
			i = len(sweeps) - 1
		}
		lv := Level{Arm: a.Name, Concurrency: a.Concurrency, Goodput: math.NaN()}
		var ok bool
		if lv.Throughput, ok = throughput[a.Name]; !ok {
			// No block had a steady window: no rate is known, not 0.
			lv.Throughput = Throughput{Concurrency: a.Concurrency, TokensPerS: math.NaN(), RequestsPerS: math.NaN()}
		}
		if sum, ok := m.Summary[a.Name]; ok {
			lv.Cost = sum.LoadCost
		}
		var ttft, gaps []float64
		met, timed := 0, 0
		var failed []*Record
		for _, r := range byArm[a.Name] {
			if !r.JudgedBySLO() {
				continue
			}
			timed++
			if r.Status == StatusOK && MeetsSLO(r, m.Profile.Load) {
				met++
			}
			if r.Status != StatusOK {
				failed = append(failed, r)
			}
			if !r.Counted() {
				continue
			}
			lv.N++
			ttft = append(ttft, r.TTFTMs)
			_, g := tokens[TrialKey{r.Arm, r.Trial}].Gaps()
			gaps = append(gaps, g...)
		}
		lv.TTFTP95, lv.ITLP95 = p95(ttft), p95(gaps)
		lv.Judged, lv.Failed, lv.TopError = timed, len(failed), TopError(failed)
		if l := m.Profile.Load; l != nil && l.SLO != nil && timed > 0 {
			lv.Goodput = float64(met) / float64(timed)
		}
		sweeps[i].Levels = append(sweeps[i].Levels, lv)
	}
	for i := range sweeps {
		s := &sweeps[i]
		if len(s.Levels) >= 2 { // one level has its aggregate rates, not a knee
			s.Knee, s.KneeWhy = knee(s.Levels)
		}
		if l := m.Profile.Load; l != nil && l.SLO != nil {
			for _, lv := range s.Levels {
				if lv.Goodput >= l.SLO.Goodput {
					s.BestGood = lv.Concurrency
				}
			}
		}
	}
	return sweeps
}

// JudgedBySLO reports whether a request counts toward goodput: a timed
// steady one, failed or not, unless the run itself cut it (canceled).
func (r Record) JudgedBySLO() bool {
	return r.Phase == PhaseTimed && r.Window == WindowSteady && r.Status != StatusCanceled
}

// MeetsSLO reports whether a request kept within every bound of the load
// run's SLO (true without one). An open loop's request is judged from its
// due time, the wait its user had: a request that queued past its bound
// did not meet it, however fast the server was once it was sent.
func MeetsSLO(r *Record, l *LoadInfo) bool {
	if l == nil || l.SLO == nil {
		return true
	}
	s := l.SLO
	ttft, e2e := r.TTFTMs, r.E2EMs
	if !math.IsNaN(r.QueueMs) {
		ttft, e2e = r.TTFTFromDueMs(), r.E2EFromDueMs()
	}
	return (s.TTFTMs == 0 || ttft <= s.TTFTMs) && (s.ITLMs == 0 || !(r.ITLP99Ms > s.ITLMs)) && (s.E2EMs == 0 || e2e <= s.E2EMs)
}

func p95(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	slices.Sort(values)
	return metrics.PercentileSorted(values, 0.95)
}

// knee is the lowest level that breaks: its p95 TTFT or ITL is over
// KneeLatency times the first level's, or no higher level raises
// throughput by KneeGain or more over it (throughput has stopped rising;
// the top level cannot show that, having none above it).
func knee(levels []Level) (int, string) {
	ref := levels[0]
	for i, lv := range levels {
		if lv.Judged > 0 && float64(lv.Failed) >= KneeFailures*float64(lv.Judged) {
			return lv.Concurrency, fmt.Sprintf("%d of its %d requests failed (%.0f%%; most often %s)", lv.Failed, lv.Judged, 100*float64(lv.Failed)/float64(lv.Judged), lv.TopError)
		}
		for _, l := range []struct {
			name     string
			now, ref float64
		}{{"p95 TTFT", lv.TTFTP95, ref.TTFTP95}, {"p95 ITL", lv.ITLP95, ref.ITLP95}} {
			if l.ref > 0 && l.now > KneeLatency*l.ref {
				return lv.Concurrency, fmt.Sprintf("%s is %.1f× its value at %s (over %g×)", l.name, l.now/l.ref, streamWords(ref.Concurrency), KneeLatency)
			}
		}
		if i == len(levels)-1 || !(lv.TokensPerS > 0) {
			continue
		}
		// Only levels whose throughput is known (a steady window) are
		// evidence that it stopped rising.
		best := Level{Throughput: Throughput{TokensPerS: math.NaN()}}
		for _, above := range levels[i+1:] {
			if above.TokensPerS > best.TokensPerS || math.IsNaN(best.TokensPerS) && !math.IsNaN(above.TokensPerS) {
				best = above
			}
		}
		if best.TokensPerS < lv.TokensPerS*(1+KneeGain) {
			return lv.Concurrency, fmt.Sprintf("throughput stopped rising: no higher level beat its %.1f tok/s by %.0f%% (best %+.1f%%, at %s)",
				lv.TokensPerS, 100*KneeGain, 100*(best.TokensPerS/lv.TokensPerS-1), streamWords(best.Concurrency))
		}
	}
	return 0, ""
}

func streamWords(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

// TogetherStudy is a together group's result (TR116): per round, the
// agents' alone requests one after the other against their together
// requests at once.
type TogetherStudy struct {
	Agents []string
	Rounds int // rounds with every request of both passes ok
	// Speedup is sequential time / concurrent time (Σ alone e2e over the
	// together pass's wall time), Efficiency Speedup / len(Agents); means
	// across rounds with bootstrap 95% intervals.
	Speedup, Efficiency metrics.Estimate
	PerAgent            []AgentDelta
}

// AgentDelta is one agent together against alone: median ratios of TTFT
// and of output tok/s (together / alone), and contention: the together
// requests whose TTFT was above the alone requests' p95.
type AgentDelta struct {
	Agent         string
	TTFT, TPS     metrics.Estimate
	Anomalies, Of int
	// AloneP95TTFTMs is the alone TTFT that a together request exceeds
	// with Chance where sharing costs nothing: the AloneP95Rank-th of the
	// alone requests (metrics.ChanceBound).
	AloneP95TTFTMs    float64
	AloneP95Rank      int
	Chance            float64
	AloneN, TogetherN int
}

// Together reads a together group's study from a session; nil when it
// has none.
func Together(m *Manifest, records []Record, seed uint64) *TogetherStudy {
	if m.Profile.Load == nil || len(m.Profile.Load.Together) == 0 {
		return nil
	}
	st := &TogetherStudy{Agents: m.Profile.Load.Together}
	mode := map[string]string{}
	base := map[string]string{}
	for _, a := range m.Arms {
		mode[a.Name], base[a.Name] = a.Mode, a.Base
	}
	type pass struct {
		ok         int     // requests that succeeded
		failed     bool    // a request failed: the round has no pair
		sum        float64 // Σ e2e (alone)
		start, end time.Time
	}
	rounds := map[int]map[string]*pass{}
	alone, together := map[string][]*Record{}, map[string][]*Record{}
	for i := range records {
		r := &records[i]
		if r.Phase != PhaseTimed {
			continue
		}
		md := mode[r.Arm]
		if rounds[r.Round] == nil {
			rounds[r.Round] = map[string]*pass{"alone": {}, "together": {}}
		}
		p := rounds[r.Round][md]
		if p == nil {
			continue
		}
		if r.Status != StatusOK {
			p.failed = true
			continue
		}
		p.ok++
		p.sum += r.E2EMs
		if p.start.IsZero() || r.StartedAt.Before(p.start) {
			p.start = r.StartedAt
		}
		if e := end(r); e.After(p.end) {
			p.end = e
		}
		if md == "alone" {
			alone[base[r.Arm]] = append(alone[base[r.Arm]], r)
		} else {
			together[base[r.Arm]] = append(together[base[r.Arm]], r)
		}
	}
	var speedups []float64
	for _, r := range slices.Sorted(maps.Keys(rounds)) {
		a, t := rounds[r]["alone"], rounds[r]["together"]
		if a.failed || t.failed || a.ok != len(st.Agents) || t.ok != len(st.Agents) {
			continue
		}
		speedups = append(speedups, a.sum/float64(t.end.Sub(t.start))*float64(time.Millisecond))
	}
	st.Rounds = len(speedups)
	n := float64(len(st.Agents))
	st.Speedup = metrics.Estimate{Value: metrics.Mean(speedups), CI: metrics.Bootstrap(speedups, metrics.Mean, metrics.ReportResamples, seed)}
	st.Efficiency = metrics.Estimate{Value: st.Speedup.Value / n, CI: metrics.CI{Lo: st.Speedup.Lo / n, Hi: st.Speedup.Hi / n}}
	for _, agent := range st.Agents {
		d := AgentDelta{Agent: agent, AloneN: len(alone[agent]), TogetherN: len(together[agent])}
		field := func(rs []*Record, f func(*Record) float64) []float64 {
			var out []float64
			for _, r := range rs {
				out = append(out, f(r))
			}
			return out
		}
		ttft := func(r *Record) float64 { return r.TTFTMs }
		tps := func(r *Record) float64 { return r.OutputTPS }
		d.TTFT = metrics.BootstrapTwoSample(field(alone[agent], ttft), field(together[agent], ttft), metrics.ReportResamples, seed).MedianRatio
		d.TPS = metrics.BootstrapTwoSample(field(alone[agent], tps), field(together[agent], tps), metrics.ReportResamples, seed).MedianRatio
		aloneTTFT := field(alone[agent], ttft)
		slices.Sort(aloneTTFT)
		d.AloneP95TTFTMs, d.AloneP95Rank, d.Chance = metrics.ChanceBound(aloneTTFT, 0.95)
		for _, r := range together[agent] {
			d.Of++
			if r.TTFTMs > d.AloneP95TTFTMs {
				d.Anomalies++
			}
		}
		st.PerAgent = append(st.PerAgent, d)
	}
	return st
}

// Verdict says the study in words: speedup and efficiency with their
// intervals, and what sharing cost each agent.
func (st *TogetherStudy) Verdict() []string {
	if st.Rounds == 0 {
		return []string{"no round had every request of both passes succeed: no speedup to report"}
	}
	n := len(st.Agents)
	lines := []string{fmt.Sprintf("%d agents together: speedup %.2f× [%.2f, %.2f] over one after the other, efficiency %.0f%% [%.0f%%, %.0f%%] (speedup / %d), over %d rounds",
		n, st.Speedup.Value, st.Speedup.Lo, st.Speedup.Hi, 100*st.Efficiency.Value, 100*st.Efficiency.Lo, 100*st.Efficiency.Hi, n, st.Rounds)}
	switch {
	case st.Speedup.Lo > 1:
		lines[0] += ": running them together is faster, significantly (the interval is above 1×)"
	case st.Speedup.Hi < 1:
		lines[0] += ": running them together is slower than one after the other, significantly"
	case !math.IsNaN(st.Speedup.Lo):
		lines[0] += ": not significantly different from one after the other"
	default:
		lines[0] += fmt.Sprintf(": too few rounds for an interval (%d needed)", metrics.MinIntervalN)
	}
	for _, d := range st.PerAgent {
		lines = append(lines, fmt.Sprintf("%s together vs alone: median TTFT %s, output tok/s %s; contention: %d of %d together requests had a TTFT above the alone p95 (%.1f ms, the %s of %d alone TTFTs: %.1f%% would be above it by chance)",
			d.Agent, ratioWords(d.TTFT), ratioWords(d.TPS), d.Anomalies, d.Of, d.AloneP95TTFTMs, ordinal(d.AloneP95Rank), d.AloneN, 100*d.Chance))
	}
	return lines
}

// ordinal writes 1st, 2nd, 3rd, 20th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// ratioWords writes a median ratio as a signed change with its interval.
func ratioWords(e metrics.Estimate) string {
	if math.IsNaN(e.Lo) {
		return fmt.Sprintf("%+.1f%% (too few for an interval)", 100*(e.Value-1))
	}
	return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*(e.Value-1), 100*(e.Lo-1), 100*(e.Hi-1))
}

// LoadResults are what a load run found: each sweep, or a together
// group's study, and the SLO they were judged by.
type LoadResults struct {
	Sweeps []Sweep
	Rates  []RateSweep
	Study  *TogetherStudy
	SLO    *SLOInfo
}

// ReadLoadResults reads a load run's results from its files; nil for a
// session that ran one trial at a time.
func ReadLoadResults(manifest string) (*LoadResults, error) {
	s, err := Load(manifest)
	if err != nil {
		return nil, err
	}
	return s.LoadResults()
}

// LoadResults are the session's load results, its tokens file read for
// the sweeps' windows; nil for a session that ran one trial at a time.
func (s *Session) LoadResults() (*LoadResults, error) {
	l := s.Manifest.Profile.Load
	if l == nil {
		return nil, nil
	}
	res := &LoadResults{SLO: l.SLO, Study: Together(s.Manifest, s.Records, uint64(s.Manifest.Profile.Seed))}
	if res.Study != nil {
		return res, nil
	}
	tokens, _, err := LoadTokens(s)
	if err != nil {
		return nil, err
	}
	res.Sweeps = Sweeps(s.Manifest, s.Records, tokens)
	res.Rates = RateSweeps(s.Manifest, s.Records)
	return res, nil
}

// Words say the results: each sweep's knee and goodput after its name,
// or the together study's verdict.
func (res *LoadResults) Words() []string {
	if res.Study != nil {
		return res.Study.Verdict()
	}
	var lines []string
	for _, sw := range res.Sweeps {
		for _, w := range sw.Words(res.SLO) {
			lines = append(lines, sw.Base+": "+w)
		}
	}
	for _, sw := range res.Rates {
		for _, w := range sw.Words(res.SLO) {
			lines = append(lines, sw.Base+": "+w)
		}
	}
	return lines
}

// Lines are the results for a text report: each sweep's table of levels,
// then the Words.
func (res *LoadResults) Lines() []string {
	var lines []string
	for _, sw := range res.Sweeps {
		lines = append(lines, fmt.Sprintf("sweep of %s (tok/s and req/s over the steady windows; p95 over the steady requests):", sw.Base))
		lines = append(lines, sw.Table().Lines()...)
	}
	for _, sw := range res.Rates {
		lines = append(lines, fmt.Sprintf("rates of %s (%s):", sw.Base, RateTableCaption))
		lines = append(lines, sw.Table().Lines()...)
	}
	return append(lines, res.Words()...)
}

// Table is a figure in rows: a header and its cells, as text.
type Table struct {
	Header []string
	Rows   [][]string
}

// Lines are the table as plain text, its columns aligned right.
func (t Table) Lines() []string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// failedTokenWords say, where requests failed mid-stream in the steady
// windows, that tok/s and req/s count ok requests alone, and what the
// failed ones made; "" where none did.
func failedTokenWords(levels []Level) string {
	var at []string
	for _, lv := range levels {
		if lv.FailedTokensPerS > 0 {
			at = append(at, fmt.Sprintf("%s tok/s at %s", FormatValue(lv.FailedTokensPerS), streamWords(lv.Concurrency)))
		}
	}
	if len(at) == 0 {
		return ""
	}
	return "tok/s and req/s count ok requests alone, so that tok/s ÷ req/s is an ok request's tokens; requests that failed mid-stream made " +
		strings.Join(at, ", ") + " more (J/token counts them: the server did that work)"
}

// Table is a sweep's levels: streams, aggregate tok/s and req/s, p95
// TTFT and ITL, goodput and n, then J/token and peak memory where some
// level has them. The terminal, the text report and the HTML report all
// print this one.
func (sw Sweep) Table() Table {
	t := Table{Header: []string{"streams", "tok/s", "req/s", "p95 TTFT", "p95 ITL", "goodput", "n"}}
	energy, memory := false, false
	for _, lv := range sw.Levels {
		energy = energy || lv.Cost != nil && !math.IsNaN(lv.Cost.JPerToken)
		memory = memory || lv.Cost != nil && !math.IsNaN(lv.Cost.PeakRSSMB)
	}
	if energy {
		t.Header = append(t.Header, "J/token")
	}
	if memory {
		t.Header = append(t.Header, "peak RSS")
	}
	for _, lv := range sw.Levels {
		cost := lv.Cost
		if cost == nil {
			cost = &LoadCost{JPerToken: math.NaN(), PeakRSSMB: math.NaN()}
		}
		row := []string{fmt.Sprint(lv.Concurrency), orDash("%.1f", lv.TokensPerS), orDash("%.2f", lv.RequestsPerS),
			orDash("%.1f ms", lv.TTFTP95), orDash("%.2f ms", lv.ITLP95), orDash("%.0f%%", 100*lv.Goodput), fmt.Sprint(lv.N)}
		if energy {
			row = append(row, cost.JPerTokenCell())
		}
		if memory {
			row = append(row, orDash("%.0f MB", cost.PeakRSSMB))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// orDash formats v, or "—" when it is unknown.
func orDash(format string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

// sloWords say an SLO's bounds: "TTFT ≤ 500 ms, request p99 ITL ≤ 50 ms".
func sloWords(slo *SLOInfo) string {
	var bounds []string
	for _, b := range []struct {
		name string
		v    float64
	}{{"TTFT", slo.TTFTMs}, {"request p99 ITL", slo.ITLMs}, {"e2e", slo.E2EMs}} {
		if b.v > 0 {
			bounds = append(bounds, fmt.Sprintf("%s ≤ %g ms", b.name, b.v))
		}
	}
	return strings.Join(bounds, ", ")
}

// Words say a sweep's knee and, under an SLO, its goodput.
func (sw Sweep) Words(slo *SLOInfo) []string {
	var lines []string
	if len(sw.Levels) == 1 {
		lv := sw.Levels[0]
		lines = append(lines, fmt.Sprintf("one level, %s: %s tok/s and %s req/s in aggregate over the steady windows (each request's own figures are in the numbers)",
			streamWords(lv.Concurrency), orDash("%.1f", lv.TokensPerS), orDash("%.2f", lv.RequestsPerS)))
	} else if sw.Knee > 0 {
		lines = append(lines, fmt.Sprintf("knee at %s: %s", streamWords(sw.Knee), sw.KneeWhy))
	} else {
		lines = append(lines, fmt.Sprintf("no knee up to %s: each level was beaten by %.0f%% or more by a higher one, and p95 latency stayed within %g× the first level's",
			streamWords(sw.Levels[len(sw.Levels)-1].Concurrency), 100*KneeGain, KneeLatency))
	}
	if w := failedTokenWords(sw.Levels); w != "" {
		lines = append(lines, w)
	}
	if slo == nil {
		return lines
	}
	within := fmt.Sprintf("goodput (SLO %s): ", sloWords(slo))
	if sw.BestGood > 0 {
		return append(lines, within+fmt.Sprintf("the highest level with at least %.0f%% of requests within it is %s", 100*slo.Goodput, streamWords(sw.BestGood)))
	}
	return append(lines, within+fmt.Sprintf("no level kept %.0f%% of requests within it", 100*slo.Goodput))
}
