// Package arrival is the open loop's schedule: when each request of a
// rate is due, fixed before the first is sent, and a dispatcher that sends
// each at its time whatever happened before.
//
// A closed loop (a stream sends its next request when the last ends) lets
// a slow server slow the arrivals down, and hides the wait a user arriving
// on time would have had (coordinated omission). Here the schedule comes
// first: a request late to leave is recorded with its lateness, and every
// latency can be read from its intended time.
package arrival

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Processes are the arrival processes by name.
const (
	Poisson  = "poisson"  // exponential gaps: independent arrivals, as users make them
	Constant = "constant" // equal gaps of 1/rate
	Gamma    = "gamma"    // gamma gaps of shape Burstiness: below 1 burstier than Poisson, above it more regular
)

// Processes lists the arrival processes.
var Processes = []string{Poisson, Constant, Gamma}

// Process is how requests arrive at a rate: its gaps' distribution,
// seeded, so a seed gives the same schedule on every run.
type Process struct {
	Kind string
	// Rate is requests per second, over 0.
	Rate float64
	// Burstiness is gamma's shape (1 is Poisson); only for Gamma.
	Burstiness float64
	Seed       uint64
}

// Check says what is wrong with p, in a flag's or profile key's words.
func (p Process) Check() error {
	switch {
	case !slices.Contains(Processes, p.Kind):
		return fmt.Errorf("arrival %q is not an arrival process; use one of %s", p.Kind, strings.Join(Processes, ", "))
	case !(p.Rate > 0) || math.IsInf(p.Rate, 0):
		return fmt.Errorf("rate %v is not a rate; use requests per second over 0, e.g. 2 or 0.5", p.Rate)
	case p.Kind == Gamma && (!(p.Burstiness > 0) || math.IsInf(p.Burstiness, 0)):
		return fmt.Errorf("burstiness %v is not a gamma shape; use a number over 0 (1 is Poisson, below 1 burstier)", p.Burstiness)
	}
	return nil
}

// Schedule is when each of n requests is due, from the start: the first
// one gap in (a Poisson process's first arrival is as random as the rest),
// each later one a gap after the one before. It is pure: the same process
// gives the same schedule.
func (p Process) Schedule(n int) []time.Duration {
	rng := rand.New(rand.NewPCG(p.Seed, 0x6172726976616c73))
	out := make([]time.Duration, n)
	mean := 1 / p.Rate
	at := 0.0
	for k := range out {
		switch p.Kind {
		case Constant:
			at = float64(k+1) * mean // no sum of rounded gaps: no drift
		case Gamma:
			at += gammaVariate(rng, p.Burstiness) * mean / p.Burstiness
		default:
			at += rng.ExpFloat64() * mean
		}
		out[k] = time.Duration(at * float64(time.Second))
	}
	return out
}

// gammaVariate draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// (2000), with the boost shape+1 and U^(1/shape) below a shape of 1.
func gammaVariate(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gammaVariate(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
