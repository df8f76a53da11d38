package session

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
)

// EnergyFigure is an arm's energy per token as a figure only where it is
// one. A trial's net energy (above the idle baseline measured before the
// run) is off by up to its readings' resolution (Record.EnergyErrJ: the
// energy counter's step at each end, or a sample interval's energy) plus
// the idle baseline's drift over the run (PowerInfo.DriftW) times the
// trial's length; with arms a few watts above idle that is the size of the
// figure itself (5 of 28 trials came out negative on an H200). So the
// interval of the median J/token (its order statistics: distribution-free,
// and cheap enough to redo as each trial arrives) is widened
// by the drift's share per token, which every trial shares and no
// averaging removes, and by the resolution's over √n; where it then holds
// zero, the arm's energy is not distinguishable from idle, and no figure
// is printed for it.
type EnergyFigure struct {
	N      int `toml:"n"`      // counted trials with an energy figure
	Trials int `toml:"trials"` // counted trials
	// JPerToken is the median of the trials' J/token, Lo and Hi its 95%
	// interval widened by Uncertainty.
	JPerToken float64 `toml:"j_per_token"`
	Lo        float64 `toml:"j_per_token_lo"`
	Hi        float64 `toml:"j_per_token_hi"`
	// Uncertainty is what the interval was widened by at each end, in
	// J/token.
	Uncertainty float64 `toml:"uncertainty_j_per_token"`
	// AvgPowerW is the median of the trials' average power (gross: what
	// the devices drew).
	AvgPowerW float64 `toml:"avg_power_w"`
	// Quality says where the energy came from: "counter", "sampled", or
	// how many trials each where they mix.
	Quality string `toml:"quality"`
	// DriftKnown is false where the idle baseline was not measured again
	// after the run (an older session, or one stopped early): the drift
	// is then not in the interval, and the words say so.
	DriftKnown bool `toml:"drift_in_interval"`
	// ResolutionKnown is false where no trial recorded its resolution
	// (a session from before energy_err_j): it is then not in the
	// interval, and the words say so.
	ResolutionKnown bool `toml:"resolution_in_interval"`
	// AboveIdle says the energy is distinguishable from idle: the
	// interval lies above zero, or, with too few trials for an interval
	// (Lo and Hi NaN), every trial lies above zero by more than the
	// uncertainty.
	AboveIdle bool `toml:"above_idle"`
	// UpdateMs is how often the slowest of the devices summed updated
	// its readings (telemetry.UpdateInterval); 0 where not measured.
	UpdateMs float64 `toml:"update_ms,omitzero"`
	// TrialMs is the median length of the counted trials: where the
	// readings update less often than twice a trial, a trial's figure is
	// mostly held readings (or none), and the words say so.
	TrialMs float64 `toml:"trial_ms"`
}

// EnergyOf is the energy figure of an arm's counted records, with the
// session's power info (nil: no power source).
func EnergyOf(records []*Record, power *PowerInfo) EnergyFigure {
	nan := math.NaN()
	e := EnergyFigure{Trials: len(records), JPerToken: nan, Lo: nan, Hi: nan, AvgPowerW: nan, Uncertainty: nan}
	drift := 0.0
	if power != nil && len(power.BaselineAfter) > 0 && !math.IsNaN(power.DriftW) {
		drift, e.DriftKnown = power.DriftW, true
	}
	if power != nil {
		for _, d := range power.Devices {
			if string(d.Kind) == power.EnergySource {
				e.UpdateMs = max(e.UpdateMs, d.UpdateMs)
			}
		}
	}
	var perToken, watts, driftShare, resolution, lengths []float64
	qualities := map[string]int{}
	for _, r := range records {
		lengths = append(lengths, r.E2EMs)
		if math.IsNaN(r.JPerToken) || r.OutputTokens <= 0 {
			continue
		}
		e.N++
		perToken = append(perToken, r.JPerToken)
		watts = append(watts, r.AvgPowerW)
		qualities[r.EnergyQuality]++
		tokens := float64(r.OutputTokens)
		driftShare = append(driftShare, drift*r.E2EMs/1000/tokens)
		// Power readings held between updates (a DCGM exporter's, every
		// few seconds) are no finer than an update's energy, however
		// often they were sampled; a counter's steps say so themselves.
		errJ := r.EnergyErrJ
		if r.EnergyQuality == string(telemetry.QualitySampled) && e.UpdateMs > 0 && !math.IsNaN(r.AvgPowerW) {
			errJ = max(errJ, r.AvgPowerW*e.UpdateMs/1000)
		}
		if !math.IsNaN(errJ) {
			resolution = append(resolution, errJ/tokens)
		}
	}
	e.TrialMs = metrics.Median(lengths)
	if e.N == 0 {
		return e
	}
	e.Quality = qualityWords(qualities)
	e.AvgPowerW = metrics.Median(watts)
	e.Uncertainty = metrics.Median(driftShare)
	if len(resolution) > 0 {
		e.Uncertainty += metrics.Median(resolution) / math.Sqrt(float64(e.N))
		e.ResolutionKnown = true
	}
	slices.Sort(perToken)
	ci := metrics.QuantileCI(perToken, 0.5)
	e.JPerToken, e.Lo, e.Hi = metrics.PercentileSorted(perToken, 0.5), ci.Lo-e.Uncertainty, ci.Hi+e.Uncertainty
	e.AboveIdle = e.Lo > 0
	if math.IsNaN(ci.Lo) {
		e.AboveIdle = perToken[0]-e.Uncertainty > 0
	}
	return e
}

// qualityWords says where energy came from: one source, or how many
// trials each.
func qualityWords(counts map[string]int) string {
	if len(counts) == 1 {
		for q := range counts {
			return q
		}
	}
	var parts []string
	for q, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, q))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// Measured reports whether every counted trial has an energy figure.
func (e EnergyFigure) Measured() bool { return e.N > 0 && e.N == e.Trials }

// Idle reports whether the arm's energy per token is not distinguishable
// from idle (AboveIdle).
func (e EnergyFigure) Idle() bool { return !e.AboveIdle }

// Cell is the figure for a table: the median J/token, or "≈ idle" where
// it is not distinguishable from idle, "—" where not measured.
func (e EnergyFigure) Cell() string {
	switch {
	case e.N == 0:
		return "—"
	case e.Idle():
		return "≈ idle"
	}
	return FormatValue(e.JPerToken)
}

// PowerCell is the median average power for a table, "—" where unknown.
func (e EnergyFigure) PowerCell() string {
	if e.N == 0 || math.IsNaN(e.AvgPowerW) {
		return "—"
	}
	return fmt.Sprintf("%.0f", e.AvgPowerW)
}

// Words say the figure with its interval and what it carries, or that it
// is not distinguishable from idle.
func (e EnergyFigure) Words() string {
	if e.N == 0 {
		if e.UpdateMs > 0 && e.UpdateMs > e.TrialMs/2 {
			return fmt.Sprintf("energy per token: not measured: the trials (median %s ms) are shorter than two of the power readings' updates (every %s ms); a load run measures energy over its steady windows instead",
				FormatValue(e.TrialMs), FormatValue(e.UpdateMs))
		}
		return "energy per token: not measured: no trial had readings inside it"
	}
	var parts []string
	if e.DriftKnown {
		parts = append(parts, "the idle baseline's drift")
	}
	if e.ResolutionKnown {
		parts = append(parts, "the readings' resolution")
	}
	carries := fmt.Sprintf("±%s J/token for %s", FormatValue(e.Uncertainty), strings.Join(parts, " and "))
	if len(parts) == 0 {
		carries = "neither the idle baseline's drift nor the readings' resolution, which this session did not record"
	}
	margin := fmt.Sprintf("its uncertainty (%s)", carries)
	interval := fmt.Sprintf("[%s, %s]", FormatValue(e.Lo), FormatValue(e.Hi))
	var words string
	switch {
	case math.IsNaN(e.Lo) && e.Idle():
		words = fmt.Sprintf("energy per token not distinguishable from idle: %d trials, too few for an interval, and not every one lies above zero by more than %s; %s, average power %s W",
			e.N, margin, e.Quality, e.PowerCell())
	case math.IsNaN(e.Lo):
		words = fmt.Sprintf("energy per token %s J (median of %d trials, too few for an interval; every one lies above zero by more than %s; %s), average power %s W",
			FormatValue(e.JPerToken), e.N, margin, e.Quality, e.PowerCell())
	case e.Idle():
		words = fmt.Sprintf("energy per token not distinguishable from idle: its interval %s J holds zero (median of %d trials, %s; the interval carries %s), average power %s W",
			interval, e.N, e.Quality, carries, e.PowerCell())
	default:
		words = fmt.Sprintf("energy per token %s J %s (median of %d trials, %s; the interval carries %s), average power %s W",
			FormatValue(e.JPerToken), interval, e.N, e.Quality, carries, e.PowerCell())
	}
	switch {
	case len(parts) == 0:
	case !e.DriftKnown:
		words += "; the idle baseline was measured before the run only, so its drift is not in the interval"
	case !e.ResolutionKnown:
		words += "; the trials did not record their readings' resolution (a session from before they did), so it is not in the interval"
	}
	if e.UpdateMs > e.TrialMs/2 {
		words += fmt.Sprintf("; the power readings update only every %s ms, coarser than these trials (median %s ms): a load run measures energy over its steady windows instead",
			FormatValue(e.UpdateMs), FormatValue(e.TrialMs))
	}
	if e.N < e.Trials {
		why := "the others had no readings inside them"
		if e.UpdateMs > 0 {
			why = fmt.Sprintf("the others were shorter than two of the power readings' updates, every %s ms: a load run measures energy over its steady windows instead", FormatValue(e.UpdateMs))
		}
		words += fmt.Sprintf("; %d of the %d trials have an energy figure (%s)", e.N, e.Trials, why)
	}
	return words
}

// TrialJPerToken is one trial's J/token for a live line: the figure and
// unit, or "≈ idle" where its net energy is within its readings'
// resolution of zero (the idle baseline's drift is not known until the
// run ends), so that no negative J/token is ever printed as a figure.
func TrialJPerToken(r *Record, unit string) string {
	if math.IsNaN(r.JPerToken) {
		return "—"
	}
	resolution := r.EnergyErrJ
	if math.IsNaN(resolution) {
		resolution = 0
	}
	if r.EnergyJ <= resolution {
		return "≈ idle"
	}
	return FormatValue(r.JPerToken) + " " + unit
}
