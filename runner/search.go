package runner

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
)

// sloSearchSteps is how many rates the SLO search adds between those a
// sweep ran, per arm: each halves (geometrically) the bracket around the
// highest rate that meets the SLO. sloSearchRepeats is how many more
// times it runs a bracket's end whose goodput's interval holds the
// target, its requests pooled with the earlier runs'.
const (
	sloSearchSteps   = 3
	sloSearchRepeats = 2
)

// searches reports whether the run looks for the highest rate that meets
// its SLO once its levels are done. A shard sees its share of each rate's
// goodput: the merged session judges the rates, and the search is not run.
func (r *run) searches() bool {
	p := &r.plan.Profile
	return r.plan.Trace == nil && p.OpenLoop() && p.SLO.Enabled() && r.plan.Shard.Count == 0
}

// searchSLO refines, for each profile arm of an open-loop sweep under an
// SLO, the highest rate whose goodput met the target: between the highest
// rate run that met it and the lowest above it that did not, it runs the
// geometric middle as a level of its own, sloSearchSteps times or until
// the bracket is within 5%; then it runs each end of the bracket whose
// goodput's 95% interval holds the target again, up to sloSearchRepeats
// times. The rate table then holds every rate run, and its words the
// bracket the answer lies in. It returns as rounds does.
func (r *run) searchSLO(ctx context.Context) (string, error) {
	p := &r.plan.Profile
	if !r.searches() {
		return "", nil
	}
	slo := &session.SLOInfo{TTFTMs: p.SLO.TTFTMs, ITLMs: p.SLO.ITLMs, E2EMs: p.SLO.E2EMs, Goodput: p.SLO.Goodput}
	bisect := func(base string, pass, fail rateGoodput) []int {
		mid := roundRate(math.Sqrt(pass.rate * fail.rate))
		if mid <= pass.rate || mid >= fail.rate || fail.rate/pass.rate < 1.05 {
			return nil
		}
		return []int{r.addRateArm(base, mid, fmt.Sprintf("%s: %g req/s met the SLO, %g did not; trying %g", base, pass.rate, fail.rate, mid))}
	}
	repeat := func(base string, pass, fail rateGoodput) []int {
		var again []int
		for _, end := range []rateGoodput{pass, fail} {
			switch {
			case math.IsNaN(end.ci.Lo):
				again = append(again, r.addRateArm(base, end.rate, fmt.Sprintf("%s: %g req/s kept %.0f%% of requests within the SLO in one block, too few for an interval; running it again with a fresh schedule",
					base, end.rate, 100*end.goodput)))
			case end.ci.Lo < slo.Goodput && end.ci.Hi >= slo.Goodput:
				again = append(again, r.addRateArm(base, end.rate, fmt.Sprintf("%s: %g req/s kept %.0f%% [%.0f%%, %.0f%%] of requests within the SLO over %d blocks, an interval that holds %.0f%%; running it again with a fresh schedule",
					base, end.rate, 100*end.goodput, 100*end.ci.Lo, 100*end.ci.Hi, end.blocks, 100*slo.Goodput)))
			}
		}
		return again
	}
	if note, err := r.searchLevels(ctx, slo, sloSearchSteps, bisect); note != "" || err != nil || ctx.Err() != nil {
		return note, err
	}
	return r.searchLevels(ctx, slo, sloSearchRepeats, repeat)
}

// searchLevels runs, up to times, one level of the arms next adds for
// each base arm from its bracket, and stops early when it adds none. It
// returns as rounds does.
func (r *run) searchLevels(ctx context.Context, slo *session.SLOInfo, times int, next func(base string, pass, fail rateGoodput) []int) (string, error) {
	for range times {
		var level []int
		for _, base := range r.baseArms() {
			if pass, fail, ok := r.bracket(base, slo); ok {
				level = append(level, next(base, pass, fail)...)
			}
		}
		if len(level) == 0 {
			return "", nil
		}
		if note, err := r.rounds(ctx, level, r.block); note != "" || err != nil || ctx.Err() != nil {
			return note, err
		}
	}
	return "", nil
}

// rateGoodput is a rate's goodput over every run of it, with its 95%
// interval over its blocks (NaN from one block).
type rateGoodput struct {
	rate, goodput float64
	ci            metrics.CI
	blocks        int
}

// baseArms are the profile arms the load's arms derive from, in order.
func (r *run) baseArms() []string {
	var out []string
	for _, l := range r.plan.Load {
		if !slices.Contains(out, l.Base) {
			out = append(out, l.Base)
		}
	}
	return out
}

// bracket is the highest rate of base's whose goodput met the SLO, and
// the lowest above it that did not, each over every run of it; ok only
// when both exist.
func (r *run) bracket(base string, slo *session.SLOInfo) (pass, fail rateGoodput, ok bool) {
	load := &session.LoadInfo{SLO: slo}
	arms := map[string]float64{} // arm name → its rate
	for i, l := range r.plan.Load {
		if l.Base == base && l.open() {
			arms[r.plan.Profile.Arms[i].Name] = l.Rate
		}
	}
	byRate := map[float64][]*session.Record{}
	for k := range r.records {
		rec := &r.records[k]
		if rate, mine := arms[rec.Arm]; mine && rec.JudgedBySLO() {
			byRate[rate] = append(byRate[rate], rec)
		}
	}
	var levels []rateGoodput
	for rate, recs := range byRate {
		g, ci, blocks := session.GoodputOf(recs, load)
		levels = append(levels, rateGoodput{rate: rate, goodput: g, ci: ci, blocks: blocks})
	}
	slices.SortFunc(levels, func(a, b rateGoodput) int { return cmp.Compare(a.rate, b.rate) })
	found := false
	for _, lv := range levels {
		switch {
		case lv.goodput >= slo.Goodput:
			pass, found = lv, true
		case found:
			return pass, lv, true
		}
	}
	return pass, fail, false
}

// addRateArm adds base's arm at rate to the run, the plan and the
// manifest, and returns its index.
func (r *run) addRateArm(base string, rate float64, why string) int {
	p := &r.plan.Profile
	from := slices.IndexFunc(r.plan.Load, func(l ArmLoad) bool { return l.Base == base })
	a := p.Arms[from]
	a.Name = rateArmName(base, rate)
	// A rate run again is an arm of its own: "greedy@r80-2".
	runs := 1 + len(slices.DeleteFunc(slices.Clone(r.plan.Load), func(l ArmLoad) bool { return l.Base != base || l.Rate != rate }))
	if runs > 1 {
		a.Name += fmt.Sprintf("-%d", runs)
	}
	i := len(p.Arms)
	p.Arms = append(p.Arms, a)
	t := r.plan.ArmTarget[from]
	r.plan.ArmTarget = append(r.plan.ArmTarget, t)
	r.plan.Targets[t].Arms = append(r.plan.Targets[t].Arms, a.Name)
	r.plan.Load = append(r.plan.Load, ArmLoad{Base: base, Concurrency: p.MaxConcurrency, Rate: rate, Repeat: runs - 1})
	r.arms = append(r.arms, armState{}) // the server is warm: no warmup
	info := session.ArmInfo{Name: a.Name, Strategy: a.Strategy(), Temperature: a.Temperature, TopK: a.TopK, TopP: a.TopP, MinP: a.MinP,
		Seed: armSeed(p.Seed, a.Seed), Target: r.plan.Targets[t].Name, Base: base, Concurrency: p.MaxConcurrency, Rate: rate, Searched: true,
		Think: string(p.ThinkOf(a))}
	if from < len(r.manifestArms) {
		prev := r.manifestArms[from]
		info.PromptCache, info.ThinkSent = prev.PromptCache, prev.ThinkSent
	}
	if err := r.writer.AddArm(info); err != nil {
		// The arm runs and its rows are saved; a manifest written at the
		// end, or read back from its rows' names, still has it.
		r.events <- Warning{Text: fmt.Sprintf("the manifest could not be written again with the arm %s (%v): a run killed now would leave it out of the manifest, not out of the trials CSV", a.Name, err)}
	}
	r.manifestArms = append(r.manifestArms, info)
	r.events <- ArmAdded{Arm: a.Name, Rate: rate, Why: why}
	return i
}

// roundRate keeps three significant figures of a rate, so its arm's name
// reads as a rate.
func roundRate(rate float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(rate, 'g', 3, 64), 64)
	return v
}
