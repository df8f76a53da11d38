package runner

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/session"
)

// Merged is what Merge made: the merged session's manifest, its status,
// and why it is partial ("" when complete).
type Merged struct {
	Manifest string
	Status   string
	Note     string
	// Clocks says how far apart the shards' clocks may have been, and
	// how late after --start-at each began.
	Clocks string
}

// Merge joins the sessions of a sharded run (--shard) into one: the
// union of their per-request rows, each with its shard and host, and
// every summary computed again from those rows, never from the shards'
// percentiles or means. paths are shards' manifests or folders holding
// them. The shards must be one plan's (the same config hash and seed,
// the same count) with no index twice; a missing shard, or one that did
// not complete, makes the merged session partial, naming it.
func Merge(paths []string, outDir string) (*Merged, error) {
	shards, err := findShards(paths)
	if err != nil {
		return nil, err
	}
	first := shards[0].Manifest
	n := first.Shard.Count
	byIndex := map[int]string{}
	for _, s := range shards {
		m := s.Manifest
		switch {
		case m.ConfigHash != first.ConfigHash:
			return nil, &session.BadInputError{Err: fmt.Errorf("%s and %s are not shards of one plan (their config hashes differ): merge the shards of one run only", shards[0].Path, s.Path)}
		case m.Profile.Seed != first.Profile.Seed:
			return nil, &session.BadInputError{Err: fmt.Errorf("%s and %s ran with different seeds (%d, %d), so their schedules differ: merge the shards of one run only", shards[0].Path, s.Path, first.Profile.Seed, m.Profile.Seed)}
		case m.Shard.Count != n:
			return nil, &session.BadInputError{Err: fmt.Errorf("%s is shard %d of %d, %s of %d: merge the shards of one run only", s.Path, m.Shard.Index, m.Shard.Count, shards[0].Path, n)}
		}
		if other, twice := byIndex[m.Shard.Index]; twice {
			return nil, &session.BadInputError{Err: fmt.Errorf("shard %d of %d twice: %s and %s; name each shard's session once", m.Shard.Index, n, other, s.Path)}
		}
		byIndex[m.Shard.Index] = s.Path
	}

	created := time.Now()
	m := &session.Manifest{
		ID:          fmt.Sprintf("%s-merged-%dof%d", strings.TrimSuffix(first.ID, fmt.Sprintf("-shard%dof%d", first.Shard.Index, n)), len(shards), n),
		ToolVersion: ToolVersion(), CreatedAt: created.UTC(), ConfigHash: first.ConfigHash,
		Profile: first.Profile, Targets: first.Targets, Environment: first.Environment, Arms: first.Arms,
	}
	var problems []string
	for i := range n {
		if _, ok := byIndex[i]; !ok {
			problems = append(problems, fmt.Sprintf("shard %d of %d is missing", i, n))
		}
	}
	var records []session.Record
	tokens := map[session.TrialKey]session.Arrivals{}
	seen := map[session.TrialKey]string{}
	for _, s := range shards {
		info := *s.Manifest.Shard
		info.Manifest, info.Status = s.Path, s.Manifest.Status
		m.Shards = append(m.Shards, info)
		m.MergedFrom = append(m.MergedFrom, s.Path)
		if s.Manifest.Status != session.StatusComplete {
			problems = append(problems, fmt.Sprintf("shard %d of %d is %s (%s)", info.Index, n, s.Manifest.Status, cmp.Or(s.Manifest.StopNote, "no note")))
		}
		arrivals, _, err := session.LoadTokens(s)
		if err != nil {
			return nil, &session.BadInputError{Err: fmt.Errorf("%s: its tokens: %w", s.Path, err)}
		}
		for _, r := range s.Records {
			key := session.TrialKey{Arm: r.Arm, Trial: r.Trial}
			if other, twice := seen[key]; twice {
				return nil, &session.BadInputError{Err: fmt.Errorf("trial %d of arm %s is in %s and in %s: shards of one plan never send one request twice", r.Trial, untrusted.Line(r.Arm), other, s.Path)}
			}
			seen[key] = s.Path
			if r.Shard == "" { // written before the columns: the manifest knows
				r.Shard, r.Host = fmt.Sprint(info.Index), info.Host
			}
			records = append(records, r)
			if a, ok := arrivals[key]; ok {
				tokens[key] = a
			}
		}
	}
	slices.SortStableFunc(records, func(a, b session.Record) int { return a.StartedAt.Compare(b.StartedAt) })

	arms := make([]string, len(m.Arms))
	for i, a := range m.Arms {
		arms[i] = a.Name
	}
	groups := session.ByArm(records)
	throughput := session.LoadThroughput(records, tokens)
	m.Summary = map[string]session.ArmSummary{}
	for _, arm := range arms {
		s := session.SummarizeArm(groups[arm], uint64(m.Profile.Seed), first.Summary[arm].ConvergeTolerance, m.Profile.USDPerHour)
		if t, ok := throughput[arm]; ok {
			s.Load = &t
		}
		// Every shard planned the same blocks and stopped its arms alike;
		// the usable count is the merged rows'.
		if why := shardsStop(shards, arm); why != "" {
			s.StoppedBy = why + usableWords(s)
		}
		m.Summary[arm] = s
	}

	w, err := session.Create(outDir, m)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	for _, r := range records {
		r.SessionID = m.ID
		if err := w.Append(r, tokens[session.TrialKey{Arm: r.Arm, Trial: r.Trial}].Chunks()); err != nil {
			return nil, err
		}
	}
	status, note := session.StatusComplete, ""
	if len(problems) > 0 {
		status, note = session.StatusPartial, strings.Join(problems, "; ")
	}
	if err := w.Finish(status, note, studyStoppedBy("", arms, m.Summary), m.Summary); err != nil {
		return nil, err
	}
	return &Merged{Manifest: w.ManifestPath(), Status: status, Note: note, Clocks: clockWords(m.Shards)}, nil
}

// findShards reads the shards' manifests: each path a manifest, or a
// folder whose manifests of sharded runs are taken. They come back in
// shard order.
func findShards(paths []string) ([]*session.Session, error) {
	var manifests []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, &session.BadInputError{Err: err}
		}
		if !info.IsDir() {
			manifests = append(manifests, p)
			continue
		}
		found, err := filepath.Glob(filepath.Join(p, "*.toml"))
		if err != nil {
			return nil, err
		}
		n := 0
		for _, f := range found {
			if m, err := session.ReadManifest(f); err == nil && m.Shard != nil && m.Shard.Count > 0 && len(m.Shards) == 0 {
				manifests, n = append(manifests, f), n+1
			}
		}
		if n == 0 {
			return nil, &session.BadInputError{Err: fmt.Errorf("%s holds no session of a sharded run (tokentop run --shard I/N writes them)", p)}
		}
	}
	if len(manifests) == 0 {
		return nil, &session.BadInputError{Err: errors.New("name the shards' sessions or the folders that hold them")}
	}
	var shards []*session.Session
	for _, f := range manifests {
		s, err := session.Load(f)
		if err != nil {
			return nil, err
		}
		if s.Manifest.Shard == nil || s.Manifest.Shard.Count == 0 {
			return nil, &session.BadInputError{Err: fmt.Errorf("%s is not a shard's session (it ran without --shard)", f)}
		}
		shards = append(shards, s)
	}
	slices.SortFunc(shards, func(a, b *session.Session) int { return a.Manifest.Shard.Index - b.Manifest.Shard.Index })
	return shards, nil
}

// shardsStop is what stopped arm in the shards, without each one's own
// usable count (usableWords, which the run appended): the same in every
// shard that stopped it ("" where none did, or they differ).
func shardsStop(shards []*session.Session, arm string) string {
	why := ""
	for _, s := range shards {
		sum := s.Manifest.Summary[arm]
		switch this := strings.TrimSuffix(sum.StoppedBy, usableWords(sum)); {
		case this == "":
			continue
		case why != "" && this != why:
			return ""
		default:
			why = this
		}
	}
	return why
}

// clockWords say how far apart the shards' clocks may have been, from
// what their kernels gave (the two largest maximum errors, added: two
// clocks each within its error of the truth), and how late after
// --start-at each began its timed blocks. Shards on one host share its
// one clock.
func clockWords(shards []session.ShardInfo) string {
	hosts := map[string]bool{}
	var errs, late []float64
	known := true
	for _, s := range shards {
		hosts[s.Host] = true
		known = known && s.Clock.Known && s.Clock.Synced
		errs = append(errs, s.Clock.MaxErrorMs)
		if s.StartAt != nil {
			late = append(late, s.StartLateMs)
		}
	}
	slices.Sort(errs)
	var words string
	switch {
	case len(hosts) == 1:
		words = "clocks: every shard ran on one host, on its one clock"
	case !known:
		words = "clocks: some shard's kernel gave no synchronized clock (adjtimex), so how far apart the shards' clocks were is not known"
	default:
		words = fmt.Sprintf("clocks: the shards' clocks were within %s ms of each other, by their kernels' maximum errors", session.FormatValue(errs[len(errs)-1]+errs[len(errs)-2]))
	}
	if len(late) > 0 {
		words += fmt.Sprintf("; their first timed blocks began %s to %s ms after --start-at", session.FormatValue(slices.Min(late)), session.FormatValue(slices.Max(late)))
	}
	return words
}
