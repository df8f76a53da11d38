package runner

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tokentop/tokentop/session"
)

// sloSearchSteps is how many rates the SLO search adds between those a
// sweep ran, per arm: each halves (geometrically) the bracket around the
// highest rate that meets the SLO.
const sloSearchSteps = 3

// searchSLO refines, for each profile arm of an open-loop sweep under an
// SLO, the highest rate whose goodput met the target: between the highest
// rate run that met it and the lowest above it that did not, it runs the
// geometric middle as a level of its own, sloSearchSteps times or until
// the bracket is within 5%. The rate table then holds every rate run, and
// its words the bracket the answer lies in. It returns as rounds does.
func (r *run) searchSLO(ctx context.Context) (string, error) {
	p := &r.plan.Profile
	if r.plan.Trace != nil || !p.OpenLoop() || !p.SLO.Enabled() {
		return "", nil
	}
	slo := &session.SLOInfo{TTFTMs: p.SLO.TTFTMs, ITLMs: p.SLO.ITLMs, E2EMs: p.SLO.E2EMs, Goodput: p.SLO.Goodput}
	for range sloSearchSteps {
		var level []int
		for _, base := range r.baseArms() {
			pass, fail, ok := r.bracket(base, slo)
			if !ok {
				continue
			}
			mid := roundRate(math.Sqrt(pass * fail))
			if mid <= pass || mid >= fail || fail/pass < 1.05 {
				continue
			}
			level = append(level, r.addRateArm(base, mid, fmt.Sprintf("%s: %g req/s met the SLO, %g did not; trying %g", base, pass, fail, mid)))
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

// bracket is the highest rate of base's arms whose goodput met the SLO,
// and the lowest above it that did not; ok only when both exist.
func (r *run) bracket(base string, slo *session.SLOInfo) (pass, fail float64, ok bool) {
	load := &session.LoadInfo{SLO: slo}
	type level struct{ rate, goodput float64 }
	var levels []level
	for i, l := range r.plan.Load {
		if l.Base != base || !l.open() {
			continue
		}
		met, judged := 0, 0
		name := r.plan.Profile.Arms[i].Name
		for k := range r.records {
			rec := &r.records[k]
			if rec.Arm == name && rec.JudgedBySLO() {
				judged++
				if rec.Status == session.StatusOK && session.MeetsSLO(rec, load) {
					met++
				}
			}
		}
		if judged > 0 {
			levels = append(levels, level{l.Rate, float64(met) / float64(judged)})
		}
	}
	slices.SortFunc(levels, func(a, b level) int { return cmp.Compare(a.rate, b.rate) })
	pass = math.NaN()
	for _, lv := range levels {
		switch {
		case lv.goodput >= slo.Goodput:
			pass = lv.rate
		case !math.IsNaN(pass):
			return pass, lv.rate, true
		}
	}
	return 0, 0, false
}

// addRateArm adds base's arm at rate to the run, the plan and the
// manifest, and returns its index.
func (r *run) addRateArm(base string, rate float64, why string) int {
	p := &r.plan.Profile
	from := slices.IndexFunc(r.plan.Load, func(l ArmLoad) bool { return l.Base == base })
	a := p.Arms[from]
	a.Name = rateArmName(base, rate)
	i := len(p.Arms)
	p.Arms = append(p.Arms, a)
	t := r.plan.ArmTarget[from]
	r.plan.ArmTarget = append(r.plan.ArmTarget, t)
	r.plan.Targets[t].Arms = append(r.plan.Targets[t].Arms, a.Name)
	r.plan.Load = append(r.plan.Load, ArmLoad{Base: base, Concurrency: p.MaxConcurrency, Rate: rate})
	r.arms = append(r.arms, armState{}) // the server is warm: no warmup
	info := session.ArmInfo{Name: a.Name, Strategy: a.Strategy(), Temperature: a.Temperature, TopK: a.TopK, TopP: a.TopP, MinP: a.MinP,
		Seed: armSeed(p.Seed, a.Seed), Target: r.plan.Targets[t].Name, Base: base, Concurrency: p.MaxConcurrency, Rate: rate, Searched: true,
		Think: string(p.ThinkOf(a))}
	if from < len(r.manifestArms) {
		prev := r.manifestArms[from]
		info.PromptCache, info.ThinkSent = prev.PromptCache, prev.ThinkSent
	}
	r.writer.AddArm(info)
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
