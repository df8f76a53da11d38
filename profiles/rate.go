package profiles

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/backends"
)

// MaxRate is the most requests per second an open loop offers per arm.
const MaxRate = 10000

// Rates are an open loop's request rates, in requests per second per arm:
// `rate = 2` is one level, `rate = [1, 2, 4, 8]` a sweep. Requests arrive
// on a schedule fixed before each level starts, whatever the server does.
type Rates []float64

// UnmarshalTOML takes a number or an array of numbers.
func (r *Rates) UnmarshalTOML(v any) error {
	number := func(x any) (float64, bool) {
		switch x := x.(type) {
		case int64:
			return float64(x), true
		case float64:
			return x, true
		}
		return 0, false
	}
	if n, ok := number(v); ok {
		*r = Rates{n}
		return nil
	}
	if list, ok := v.([]any); ok {
		out := make(Rates, 0, len(list))
		for _, x := range list {
			n, ok := number(x)
			if !ok {
				return fmt.Errorf("rate: %v is not a number; write rate = 2 or rate = [1, 2, 4, 8] (requests per second)", x)
			}
			out = append(out, n)
		}
		*r = out
		return nil
	}
	return fmt.Errorf("rate: %v is not a number or a list of them; write rate = 2 or rate = [1, 2, 4, 8] (requests per second)", v)
}

// ParseRates reads --rate: "2" or "1,2,4,8".
func ParseRates(flag string) (Rates, error) {
	var out Rates
	for _, f := range strings.Split(flag, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("--rate %q: %q is not a number; write --rate 2 or --rate 1,2,4,8 (requests per second)", flag, f)
		}
		out = append(out, n)
	}
	if err := out.check(); err != nil {
		return nil, fmt.Errorf("--rate %q: %v", flag, err)
	}
	return out, nil
}

// check wants rates over 0 and up to MaxRate, rising.
func (r Rates) check() error {
	for i, n := range r {
		if !(n > 0 && n <= MaxRate) {
			return fmt.Errorf("%v is out of range; use over 0 and up to %d requests per second", n, MaxRate)
		}
		if i > 0 && n <= r[i-1] {
			return fmt.Errorf("rates must rise (%v after %v); a sweep runs them in order", n, r[i-1])
		}
	}
	return nil
}

// ArmRates are the rates arm a runs at in an open loop: its own, else the
// profile's; none for a closed loop or one trial at a time.
func (p *Profile) ArmRates(a Arm) []float64 {
	if a.Rate > 0 {
		return []float64{a.Rate}
	}
	return p.Rate
}

// OpenLoop reports whether any arm runs at a request rate.
func (p *Profile) OpenLoop() bool {
	for _, a := range p.Arms {
		if len(p.ArmRates(a)) > 0 {
			return true
		}
	}
	return false
}

// ArrivalKinds are the arrival processes a profile may name; the runner's
// scheduler (runner/arrival) draws each.
var ArrivalKinds = []string{"poisson", "constant", "gamma"}

// arrivalGamma is the one process with a shape: burstiness.
const arrivalGamma = "gamma"

// checkRates validates rate, arrival, burstiness and max_concurrency,
// filling in the defaults (Poisson arrivals; a burstiness of 1).
func (p *Profile) checkRates(bad func(key, msg string), badArm func(arm int, key, msg string)) {
	if err := p.Rate.check(); err != nil {
		bad("rate", err.Error())
	}
	for i, a := range p.Arms {
		if a.Rate < 0 || a.Rate > MaxRate || math.IsNaN(a.Rate) {
			badArm(i, "rate", fmt.Sprintf("%v is out of range; use over 0 and up to %d requests per second", a.Rate, MaxRate))
		}
	}
	if p.Arrival == "" {
		p.Arrival = ArrivalKinds[0]
	}
	if p.Burstiness == 0 {
		p.Burstiness = 1
	}
	switch {
	case !slices.Contains(ArrivalKinds, p.Arrival):
		bad("arrival", fmt.Sprintf("%q is not an arrival process; use one of %s", p.Arrival, strings.Join(ArrivalKinds, ", ")))
	case !(p.Burstiness > 0) || math.IsInf(p.Burstiness, 0):
		bad("burstiness", fmt.Sprintf("%v is not a gamma shape; use a number over 0 (1 is Poisson, below 1 burstier)", p.Burstiness))
	case p.Arrival != arrivalGamma && p.Burstiness != 1:
		bad("burstiness", fmt.Sprintf("only a gamma arrival has a burstiness; set arrival = %q, or remove burstiness", arrivalGamma))
	}
	if p.MaxConcurrency < 0 || p.MaxConcurrency > backends.MaxConcurrency {
		bad("max_concurrency", fmt.Sprintf("%d is out of range; use 1 to %d requests in flight, or leave it out for no cap", p.MaxConcurrency, backends.MaxConcurrency))
	}
	if msg := p.LoopProblem(); msg != "" {
		bad("rate", msg)
	}
	if p.MaxConcurrency > 0 && !p.OpenLoop() {
		bad("max_concurrency", "it caps an open loop's requests in flight; set rate too (a closed loop's concurrency is its own cap)")
	}
}

// RateProblems are checkRates' findings as one error, each as "key:
// what is wrong", for settings that came from flags after the profile was
// read; nil when there are none.
func (p *Profile) RateProblems() error {
	var errs []error
	p.checkRates(func(key, msg string) { errs = append(errs, fmt.Errorf("%s: %s", key, msg)) },
		func(arm int, key, msg string) { errs = append(errs, fmt.Errorf("arms[%d].%s: %s", arm, key, msg)) })
	return errors.Join(errs...)
}

// LoopProblem says why the profile's open loop (rate) cannot run as set;
// empty when it can or there is none.
func (p *Profile) LoopProblem() string {
	if !p.OpenLoop() {
		return ""
	}
	closed := len(p.Concurrency) > 0
	for _, a := range p.Arms {
		closed = closed || a.Concurrency > 0
	}
	switch {
	case closed:
		return "an open loop (rate) and a closed loop (concurrency) are two ways to load a server; keep one (max_concurrency caps an open loop's requests in flight)"
	case len(p.Together) > 0:
		return "a together group runs its arms as one stream each, alone and at once; remove rate"
	}
	return ""
}
