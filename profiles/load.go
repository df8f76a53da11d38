package profiles

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// Levels are the concurrency levels of a profile: `concurrency = 4` is one
// level, `concurrency = [1, 2, 4, 8]` a sweep. Empty means one request at a
// time, the classic interleaved trials.
type Levels []int

// UnmarshalTOML takes an integer or an array of integers.
func (l *Levels) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		*l = Levels{int(v)}
		return nil
	case []any:
		out := make(Levels, 0, len(v))
		for _, x := range v {
			n, ok := x.(int64)
			if !ok {
				return fmt.Errorf("concurrency: %v is not a whole number; write concurrency = 4 or concurrency = [1, 2, 4, 8]", x)
			}
			out = append(out, int(n))
		}
		*l = out
		return nil
	}
	return fmt.Errorf("concurrency: %v is not a whole number or a list of them; write concurrency = 4 or concurrency = [1, 2, 4, 8]", v)
}

// ParseLevels reads --concurrency: "4" or "1,2,4,8".
func ParseLevels(flag string) (Levels, error) {
	var out Levels
	for _, f := range strings.Split(flag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--concurrency %q: %q is not a whole number; write --concurrency 4 or --concurrency 1,2,4,8", flag, f)
		}
		out = append(out, n)
	}
	if err := out.check(); err != nil {
		return nil, fmt.Errorf("--concurrency %q: %v", flag, err)
	}
	return out, nil
}

// check wants levels from 1 to backends.MaxConcurrency, rising.
func (l Levels) check() error {
	for i, n := range l {
		if n < 1 || n > backends.MaxConcurrency {
			return fmt.Errorf("%d is out of range; use 1 to %d streams", n, backends.MaxConcurrency)
		}
		if i > 0 && n <= l[i-1] {
			return fmt.Errorf("levels must rise (%d after %d); a sweep runs them in order", n, l[i-1])
		}
	}
	return nil
}

// SLO is a service-level objective for each request of a load run; a
// request meets it when every set latency is at or under its bound.
type SLO struct {
	TTFTMs float64 `toml:"ttft_ms,omitzero"`
	ITLMs  float64 `toml:"itl_ms,omitzero"` // the request's p99 inter-token latency
	E2EMs  float64 `toml:"e2e_ms,omitzero"`
	// Goodput is the share of requests that must meet the SLO for a level
	// to pass (default 0.9).
	Goodput float64 `toml:"goodput,omitzero"`
}

// Enabled reports whether any bound is set.
func (s SLO) Enabled() bool { return s.TTFTMs > 0 || s.ITLMs > 0 || s.E2EMs > 0 }

// DefaultGoodput is the share of requests a level must keep within the SLO.
const DefaultGoodput = 0.9

func (s *SLO) check(bad func(key, msg string)) {
	for _, b := range []struct {
		key string
		v   float64
	}{{"ttft_ms", s.TTFTMs}, {"itl_ms", s.ITLMs}, {"e2e_ms", s.E2EMs}} {
		if b.v < 0 {
			bad(b.key, fmt.Sprintf("%g is negative; give a bound in milliseconds", b.v))
		}
	}
	if s.Goodput == 0 {
		s.Goodput = DefaultGoodput
	}
	if s.Goodput <= 0 || s.Goodput > 1 {
		bad("goodput", fmt.Sprintf("%g is out of range; use the share of requests that must meet the SLO, in (0, 1]", s.Goodput))
	}
}

// RunsLoad reports whether the profile runs concurrent requests (a level
// above one, a sweep, an arm's own concurrency or a together group) rather
// than one trial at a time.
func (p *Profile) RunsLoad() bool {
	if len(p.Together) > 0 || p.OpenLoop() {
		return true
	}
	return slices.ContainsFunc(p.Arms, func(a Arm) bool { return !slices.Equal(p.ArmLevels(a), []int{1}) })
}

// ArmLevels are the concurrency levels arm a runs at: its own, else the
// profile's, else one request at a time.
func (p *Profile) ArmLevels(a Arm) []int {
	switch {
	case a.Concurrency > 0:
		return []int{a.Concurrency}
	case len(p.Concurrency) > 0:
		return p.Concurrency
	}
	return []int{1}
}

// checkLoad validates concurrency, together and [slo] against the arms.
// DurationProblem says why a load duration does not fit the profile;
// empty when it does (or there is none).
func (p *Profile) DurationProblem() string {
	switch {
	case p.LoadDuration <= 0:
		return ""
	case len(p.Together) > 0:
		return "a together group runs whole rounds, counted by trials; remove duration"
	case !p.RunsLoad():
		return "it ends a load run's arms by their steady time; set concurrency or rate too (one trial at a time is counted by trials)"
	case p.Stop.Enabled():
		return "it replaces the trial count as the end of each arm, and [stop] would end them by their interval; keep one of the two"
	}
	return ""
}

func (p *Profile) checkLoad(bad func(key, msg string), badArm func(arm int, key, msg string)) {
	if err := p.Concurrency.check(); err != nil {
		bad("concurrency", err.Error())
	}
	for i, a := range p.Arms {
		if a.Concurrency < 0 || a.Concurrency > backends.MaxConcurrency {
			badArm(i, "concurrency", fmt.Sprintf("%d is out of range; use 1 to %d streams", a.Concurrency, backends.MaxConcurrency))
		}
	}
	p.checkRates(bad, badArm)
	p.SLO.check(func(key, msg string) { bad("slo."+key, msg) })
	if p.Duration != "" {
		d, err := time.ParseDuration(p.Duration)
		switch {
		case err != nil:
			bad("duration", fmt.Sprintf("%q is not a duration; write it like \"60s\" or \"5m\"", p.Duration))
		case d <= 0:
			bad("duration", fmt.Sprintf("%q must be positive", p.Duration))
		default:
			p.LoadDuration = d
			if msg := p.DurationProblem(); msg != "" {
				bad("duration", msg)
			}
		}
	}
	if len(p.Together) == 0 {
		return
	}
	switch {
	case len(p.Together) < 2:
		bad("together", "a group runs two or more arms at once; name them, e.g. together = [\"agent-a\", \"agent-b\"]")
	case len(p.Concurrency) > 0 || slices.ContainsFunc(p.Arms, func(a Arm) bool { return a.Concurrency > 0 }):
		bad("together", "a together group runs each of its arms as one stream, alone and at once; remove concurrency")
	case p.Stop.Enabled():
		bad("together", "a together group runs whole rounds, so each alone pass has its together pass; remove [stop]")
	}
	for _, name := range p.Together {
		if !slices.Contains(p.ArmNames(), name) {
			bad("together", fmt.Sprintf("%q is not an arm of this profile; name arms from %s", name, strings.Join(p.ArmNames(), ", ")))
		}
	}
	for _, a := range p.Arms {
		if !slices.Contains(p.Together, a.Name) {
			bad("together", fmt.Sprintf("arm %q is not in the group; a together profile runs every arm in it", a.Name))
		}
	}
}

// ParseSLO reads --slo: bounds in milliseconds by key, as [slo] has them,
// e.g. "ttft_ms=500,itl_ms=50". Its goodput is DefaultGoodput until
// --goodput sets it.
func ParseSLO(flag string) (SLO, error) {
	slo := SLO{Goodput: DefaultGoodput}
	for _, pair := range strings.Split(flag, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if !ok || err != nil || !(v > 0) || v > 1e9 {
			return SLO{}, fmt.Errorf("--slo %q: %q is not a bound; write key=milliseconds, e.g. --slo ttft_ms=500,itl_ms=50", flag, pair)
		}
		switch strings.TrimSpace(key) {
		case "ttft_ms":
			slo.TTFTMs = v
		case "itl_ms":
			slo.ITLMs = v
		case "e2e_ms":
			slo.E2EMs = v
		default:
			return SLO{}, fmt.Errorf("--slo %q: %q is not a bound; use ttft_ms, itl_ms or e2e_ms", flag, key)
		}
	}
	return slo, nil
}

// ParseGoodput reads --goodput: the share of requests that must meet the
// SLO, "90%" or 0.9, in (0, 1].
func ParseGoodput(flag string) (float64, error) {
	number, percent := strings.CutSuffix(strings.TrimSpace(flag), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(number), 64)
	if percent {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 1) {
		return 0, fmt.Errorf("--goodput %q: use the share of requests that must meet the SLO, from over 0%% to 100%%, e.g. 90%%", flag)
	}
	return v, nil
}
