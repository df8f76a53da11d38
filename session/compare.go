package session

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/metrics"
)

// CompareMetrics are compared by default, with energy per token added when
// every column has it.
var CompareMetrics = []string{"e2e_ms", "ttft_ms", "tpot_ms", "output_tps"}

// RunVerdictMetrics are the verdicts of a run's arms against each other
// (the done view, the HTML report): the greedy-vs-sampling study's
// questions, does sampling cost latency, and how much does the gap
// between tokens jump about.
var RunVerdictMetrics = []string{"e2e_ms", "ttft_ms", "itl_mean_ms", "itl_max_ms", "itl_cv"}

// energyMetric joins the default comparison when both sides measured it.
const energyMetric = "j_per_token"

// rateStat names the row that shows a rate metric's Pooled figure in
// place of its mean.
const rateStat = "rate"

// CompareStats are the statistics shown for each metric.
var CompareStats = []string{"mean", "median", "p90", "p95", "p99", "max", "cv"}

// Ref is a compare argument: a manifest path and optionally one arm
// ("A.toml#greedy").
type Ref struct {
	Path string
	Arm  string
}

// ParseRef splits "path.toml#arm".
func ParseRef(arg string) Ref {
	path, arm, _ := strings.Cut(arg, "#")
	return Ref{Path: path, Arm: arm}
}

// Column is one session's arm in a comparison.
type Column struct {
	Label   string // "<session>#<arm>"
	Session string // the session's file stem
	Arm     string
	records []*Record
	// health counts the arm's degraded, truncated and cached trials.
	health ArmSummary
	// Baseline is the index of the column this one is compared against.
	Baseline int
	// Differences are how this column's session was set up unlike its
	// baseline's (ConfigDifferences); empty within one session.
	Differences []string
	manifest    *Manifest
}

// Values are the column's counted values of metric m.
func (c Column) Values(m Metric) []float64 { return Values(c.records, m) }

// Row is one metric statistic across the columns. Delta is the percent
// change against each column's baseline (NaN for a baseline itself).
type Row struct {
	Metric string
	Stat   string
	Values []float64
	Deltas []float64
}

// Comparison is a table of statistics across sessions or arms.
type Comparison struct {
	// Width is the text table's width, a terminal's: its columns go into
	// blocks that fit. 0 prints one block however wide.
	Width    int
	Metrics  []string // in row order
	Columns  []Column
	Rows     []Row
	Warnings []string
	// Caveats come first in every output: sessions that did not finish,
	// and degraded, truncated or cached trials in any column.
	Caveats []string
	// Tests are the A/B statistics, once RunTests has computed them;
	// Lengths test each column's output-token counts (see ABTests).
	Tests       []ABTest
	Lengths     []ABTest
	TestOptions TestOptions
	// Load holds the load results of each session that has them, named
	// by session where there are several.
	Load []string
}

// Energy is the column's energy figure, from its counted trials and its
// session's power info.
func (col Column) Energy() EnergyFigure {
	var power *PowerInfo
	if col.manifest != nil {
		power = col.manifest.Power
	}
	return EnergyOf(col.records, power)
}

// Compare builds the comparison of the given sessions (loaded in ref
// order). A ref without an arm contributes every arm of its session. The
// baseline of a column is the first column with the same arm name from the
// first ref, or else the very first column: comparing A.toml with B.toml
// pairs their arms by name; A.toml#x with A.toml#y compares y against x.
// No metric names means the defaults (CompareMetrics, and energy per token
// where every column has it). Sessions taken on different GPUs or drivers
// are compared with a warning that says so.
func Compare(refs []Ref, sessions []*Session, metricNames []string) (*Comparison, error) {
	// One session named whole is its arms against its first, as its run
	// ended: with no other session to pair them with, each arm would be
	// its own baseline and nothing would be tested (an 8-rate sweep's
	// HTML page once said "One arm: nothing to compare").
	if len(refs) == 1 && refs[0].Arm == "" {
		refs, sessions = ArmComparison(sessions[0])
	}
	c := &Comparison{}
	for i, ref := range refs {
		s := sessions[i]
		c.Warnings = append(c.Warnings, s.Warnings...)
		groups := ByArm(s.Records)
		arms := armOrder(s)
		if ref.Arm != "" {
			if !slices.Contains(arms, ref.Arm) {
				return nil, fmt.Errorf("%s has no arm %q; its arms are %s", ref.Path, ref.Arm, strings.Join(arms, ", "))
			}
			arms = []string{ref.Arm}
		}
		for _, arm := range arms {
			stem := FileStem(ref.Path)
			col := Column{Label: stem + "#" + arm, Session: stem, Arm: arm, records: Counted(groups[arm]), Baseline: -1, manifest: s.Manifest}
			health(groups[arm], &col.health)
			c.Columns = append(c.Columns, col)
		}
	}
	if len(c.Columns) == 0 {
		return nil, fmt.Errorf("nothing to compare: the sessions have no arms")
	}
	c.addLoad(sessions)
	firstRefColumns := len(armsOf(refs[0], sessions[0]))
	for i := range c.Columns {
		c.Columns[i].Baseline = 0
		for j := 0; j < firstRefColumns; j++ {
			if c.Columns[j].Arm == c.Columns[i].Arm {
				c.Columns[i].Baseline = j
				break
			}
		}
	}
	labels, _ := ShortLabels(c.Columns)
	warned := map[string]bool{}
	for i := range c.Columns {
		col, base := &c.Columns[i], c.Columns[c.Columns[i].Baseline]
		if col.Session == base.Session {
			continue
		}
		col.Differences = ConfigDifferences(base.manifest, col.manifest)
		// Requests in flight change latency by themselves: a request among
		// 8 at once is not one alone.
		if x, y := base.manifest.Concurrency(base.Arm), col.manifest.Concurrency(col.Arm); x != y {
			col.Differences = append(col.Differences, fmt.Sprintf("concurrency %d vs %d", x, y))
		}
		// An open loop's arrivals load the server as its rate says.
		baseArm, _ := base.manifest.Arm(base.Arm)
		colArm, _ := col.manifest.Arm(col.Arm)
		if x, y := baseArm.Rate, colArm.Rate; x != y {
			col.Differences = append(col.Differences, fmt.Sprintf("rate %s vs %s", rateWords(x), rateWords(y)))
		}
		if key := base.Session + " " + col.Session + " " + strings.Join(col.Differences, ";"); len(col.Differences) > 0 && !warned[key] {
			warned[key] = true
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s and %s were set up differently (%s): their deltas and verdicts measure that too",
				sessionLetter(labels[col.Baseline]), sessionLetter(labels[i]), strings.Join(col.Differences, "; ")))
		}
	}
	if len(metricNames) == 0 {
		metricNames = CompareMetrics
		if c.allHave(energyMetric) {
			metricNames = append(slices.Clone(metricNames), energyMetric)
		}
	}
	if c.Reasoned() {
		metricNames = withTTFO(metricNames)
	}
	if c.Scheduled() {
		metricNames = withDueTime(metricNames)
	}
	c.Metrics = metricNames
	c.Warnings = append(c.Warnings, machineDifferences(refs, sessions)...)
	c.Caveats = comparisonCaveats(sessions, c.Columns)
	for _, name := range metricNames {
		m, ok := LookupMetric(name)
		if !ok {
			return nil, fmt.Errorf("unknown metric %q; use one of %s", name, strings.Join(MetricNames(), ", "))
		}
		stats := make([]metrics.Stats, len(c.Columns))
		for i, col := range c.Columns {
			stats[i] = metrics.Describe(Values(col.records, m))
		}
		for _, stat := range CompareStats {
			row := Row{Metric: name, Stat: stat, Values: make([]float64, len(c.Columns)), Deltas: make([]float64, len(c.Columns))}
			pooled := stat == "mean" && m.Pooled != nil
			if pooled {
				row.Stat = rateStat
			}
			for i, col := range c.Columns {
				row.Values[i] = pick(stats[i], stat)
				if pooled {
					row.Values[i] = m.Pooled(col.records)
				}
			}
			for i, col := range c.Columns {
				row.Deltas[i] = math.NaN()
				if col.Baseline != i {
					base := row.Values[col.Baseline]
					row.Deltas[i] = (row.Values[i] - base) / base * 100
				}
			}
			c.Rows = append(c.Rows, row)
		}
	}
	return c, nil
}

// comparisonCaveats are the compared sessions' caveats: each session that
// did not finish, then each column's degraded, truncated and cached
// trials, named as the columns are.
func comparisonCaveats(sessions []*Session, columns []Column) []string {
	labels, _ := ShortLabels(columns)
	var out []string
	seen := map[string]bool{}
	for _, s := range sessions {
		if seen[s.Path] { // A.toml#greedy A.toml#hot: one session, said once
			continue
		}
		seen[s.Path] = true
		if line := statusCaveat(s.Manifest.Status, s.Manifest.StopNote); line != "" {
			out = append(out, FileStem(s.Path)+": "+line)
		}
		if p := s.Precision(); p.Missed {
			out = append(out, FileStem(s.Path)+": "+p.Line)
		}
		if line := cacheCaveat(s.Manifest); line != "" {
			out = append(out, FileStem(s.Path)+" "+line)
		}
	}
	var perColumn [][caveatKinds]string
	for i, col := range columns {
		perColumn = append(perColumn, armCaveats(labels[i], col.health))
	}
	return append(out, weightiestFirst(perColumn)...)
}

// allHave reports whether every column has a value of the metric.
// Reasoning is what trials say of a reasoning model: how many there are,
// their mean reasoning and output tokens, and their median TTFT (the first
// token, thinking included) and TTFO (the answer's first).
type Reasoning struct {
	N                         int
	ReasoningMean, OutputMean float64
	TTFTMedian, TTFOMedian    float64
}

// ReasoningOf is the Reasoning of records (counted ones, as a column's).
func ReasoningOf(records []*Record) Reasoning {
	stat := func(name string) metrics.Stats {
		m, _ := LookupMetric(name)
		return metrics.Describe(Values(records, m))
	}
	return Reasoning{N: len(records), ReasoningMean: stat(reasoningMetric).Mean, OutputMean: stat(lengthMetric).Mean,
		TTFTMedian: stat("ttft_ms").Median, TTFOMedian: stat("ttfo_ms").Median}
}

// Reasoning is the column's thinking against its output.
func (c Column) Reasoning() Reasoning { return ReasoningOf(c.records) }

// ReasoningTable is, where a model reasoned (else ok is false), each
// column's Reasoning. The text comparison and the HTML report print this
// one.
func (c *Comparison) ReasoningTable() (t Table, ok bool) {
	if !c.Reasoned() {
		return Table{}, false
	}
	labels, _ := ShortLabels(c.Columns)
	t.Header = []string{"", "n", "reasoning tokens", "output tokens", "TTFT p50 ms", "TTFO p50 ms"}
	for i, col := range c.Columns {
		r := col.Reasoning()
		t.Rows = append(t.Rows, []string{labels[i], strconv.Itoa(r.N), orDash("%.1f", r.ReasoningMean),
			orDash("%.1f", r.OutputMean), orDash("%.1f", r.TTFTMedian), orDash("%.1f", r.TTFOMedian)})
	}
	return t, true
}

// Reasoned reports whether any column's model reasoned in a counted
// trial: its TTFT then times the first thinking token, and TTFO the first
// of the answer.
func (c *Comparison) Reasoned() bool {
	for _, col := range c.Columns {
		for _, r := range col.records {
			if r.ReasoningTokens > 0 {
				return true
			}
		}
	}
	return false
}

// reasoningMetric is tested beside the output lengths where a model
// reasoned (Comparison.Lengths).
const reasoningMetric = "reasoning_tokens"

// rateWords says an arm's rate: "20 req/s", or "none" for a closed loop.
func rateWords(rate float64) string {
	if rate <= 0 {
		return "none (a closed loop)"
	}
	return fmt.Sprintf("%g req/s", rate)
}

// Scheduled reports whether every column ran an open loop (its arm had a
// rate): its requests had due times, and their latencies from them are
// compared too.
func (c *Comparison) Scheduled() bool {
	for _, col := range c.Columns {
		if col.manifest == nil {
			return false
		}
		if a, _ := col.manifest.Arm(col.Arm); a.Rate <= 0 {
			return false
		}
	}
	return len(c.Columns) > 0
}

// withDueTime puts each latency's due-time twin after it in names
// (e2e_due_ms after e2e_ms, ttft_due_ms after ttft_ms), where it is not
// there.
func withDueTime(names []string) []string {
	out := slices.Clone(names)
	for _, pair := range [][2]string{{"e2e_ms", "e2e_due_ms"}, {"ttft_ms", "ttft_due_ms"}} {
		if i := slices.Index(out, pair[0]); i >= 0 && !slices.Contains(out, pair[1]) {
			out = slices.Insert(out, i+1, pair[1])
		}
	}
	return out
}

// withTTFO puts ttfo_ms after ttft_ms in names, where it is not there.
func withTTFO(names []string) []string {
	i := slices.Index(names, "ttft_ms")
	if i < 0 || slices.Contains(names, "ttfo_ms") {
		return names
	}
	return slices.Insert(slices.Clone(names), i+1, "ttfo_ms")
}

func (c *Comparison) allHave(metric string) bool {
	m, _ := LookupMetric(metric)
	for _, col := range c.Columns {
		if len(col.Values(m)) == 0 {
			return false
		}
	}
	return true
}

// machineDifferences warns when sessions ran on different GPUs or NVIDIA
// drivers than the first: their numbers measure the machines as much as
// the models.
func machineDifferences(refs []Ref, sessions []*Session) []string {
	gpus := func(e Environment) string {
		var names []string
		for _, g := range e.GPUs {
			names = append(names, g.Name)
		}
		if len(names) == 0 {
			return "no GPU"
		}
		return strings.Join(names, " + ")
	}
	base := sessions[0].Manifest.Environment
	var warnings []string
	for i, s := range sessions[1:] {
		env, name := s.Manifest.Environment, filepath.Base(refs[i+1].Path)
		if a, b := gpus(base), gpus(env); a != b {
			warnings = append(warnings, fmt.Sprintf("%s ran on %s, %s on %s: different GPUs", filepath.Base(refs[0].Path), a, name, b))
		}
		if base.Driver != env.Driver && base.Driver != "" && env.Driver != "" {
			warnings = append(warnings, fmt.Sprintf("%s ran on NVIDIA driver %s, %s on %s: different drivers", filepath.Base(refs[0].Path), base.Driver, name, env.Driver))
		}
	}
	return warnings
}

func armsOf(ref Ref, s *Session) []string {
	if ref.Arm != "" {
		return []string{ref.Arm}
	}
	return armOrder(s)
}

// armOrder lists a session's arms as the manifest declares them, then any
// arm that only appears in the CSV.
// ArmComparison is what Compare takes to set a run's arms against each
// other: a ref per arm, in the profile's order (the first is every other's
// baseline), each with the session.
func ArmComparison(s *Session) ([]Ref, []*Session) {
	var refs []Ref
	var sessions []*Session
	for _, arm := range armOrder(s) {
		refs, sessions = append(refs, Ref{Path: s.Path, Arm: arm}), append(sessions, s)
	}
	return refs, sessions
}

// VerdictMetrics are RunVerdictMetrics, and energy per token where every
// column compared measured it.
func VerdictMetrics(refs []Ref, sessions []*Session) []string {
	if probe, err := Compare(refs, sessions, []string{"e2e_ms"}); err == nil && probe.allHave(energyMetric) {
		return append(slices.Clone(RunVerdictMetrics), energyMetric)
	}
	return RunVerdictMetrics
}

// RunVerdicts reads the saved run at manifest and tests each of its arms
// against the first (Verdicts).
func RunVerdicts(manifest string) (*Comparison, error) {
	s, err := Load(manifest)
	if err != nil {
		return nil, err
	}
	return Verdicts(s)
}

// Verdicts tests each of a session's arms against its first on
// VerdictMetrics: the verdicts a run ends with, in the done view and
// headless alike.
func Verdicts(s *Session) (*Comparison, error) {
	refs, sessions := ArmComparison(s)
	cmp, err := Compare(refs, sessions, VerdictMetrics(refs, sessions))
	if err != nil {
		return nil, err
	}
	cmp.RunTests(DefaultTestOptions)
	return cmp, nil
}

// FileStem names a session by its manifest's file name without ".toml",
// as tables, labels and reports do.
func FileStem(manifestPath string) string {
	return strings.TrimSuffix(filepath.Base(manifestPath), ".toml")
}

func armOrder(s *Session) []string {
	var arms []string
	for _, a := range s.Manifest.Arms {
		arms = append(arms, a.Name)
	}
	var extra []string
	for arm := range ByArm(s.Records) {
		if !slices.Contains(arms, arm) {
			extra = append(extra, arm)
		}
	}
	sort.Strings(extra)
	return append(arms, extra...)
}

func pick(st metrics.Stats, stat string) float64 {
	switch stat {
	case "mean":
		return st.Mean
	case "median":
		return st.Median
	case "p90":
		return st.P90
	case "p95":
		return st.P95
	case "p99":
		return st.P99
	case "max":
		return st.Max
	case "cv":
		return st.CV
	}
	panic("unknown statistic " + stat)
}

// MetricNames are the metrics' names, for help and errors.
func MetricNames() []string {
	var names []string
	for _, m := range Metrics {
		names = append(names, m.Name)
	}
	return names
}

// sessionLetter is the session part of a short label ("B" of "B#greedy").
func sessionLetter(label string) string {
	letter, _, _ := strings.Cut(label, "#")
	return letter
}

// ShortLabels names the columns by arm, with what sets its target apart
// (LabelledArm), when they all come from one session, else "A#arm",
// "B#arm" with a legend: session stems are long and differ only in their
// timestamps, which a narrow column would cut.
func ShortLabels(columns []Column) (labels, legend []string) {
	var stems []string
	for _, col := range columns {
		if !slices.Contains(stems, col.Session) {
			stems = append(stems, col.Session)
		}
	}
	var armLabels map[string]string
	for _, col := range columns {
		if len(stems) == 1 {
			if armLabels == nil && col.manifest != nil {
				armLabels = ArmLabels(col.manifest) // one session: one manifest
			}
			labels = append(labels, LabelledArm(col.Arm, armLabels[col.Arm]))
			continue
		}
		letter := string(rune('A' + slices.Index(stems, col.Session)))
		labels = append(labels, letter+"#"+col.Arm)
	}
	if len(stems) > 1 {
		for i, stem := range stems {
			role := ""
			if i == 0 {
				role = " (baseline)"
			}
			legend = append(legend, fmt.Sprintf("%c = %s%s", 'A'+i, stem, role))
		}
	}
	return labels, legend
}

// addLoad adds each distinct session's load results.
func (c *Comparison) addLoad(sessions []*Session) {
	var seen []*Session
	for _, s := range sessions {
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	for _, s := range seen {
		res, err := s.LoadResults()
		prefix := ""
		if len(seen) > 1 {
			prefix = FileStem(s.Path) + ": "
		}
		if err != nil {
			c.Warnings = append(c.Warnings, prefix+"no load results: "+err.Error())
		}
		if res == nil {
			continue
		}
		for _, line := range res.Lines() {
			c.Load = append(c.Load, prefix+line)
		}
	}
}
