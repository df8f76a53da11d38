package session

import (
	"strings"
	"time"

	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tokentop/tokentop/metrics"
)

// TrialKey names one trial of a session.
type TrialKey struct {
	Arm   string
	Trial int
}

// Arrivals are one trial's chunk arrivals as the tokens CSV keeps them:
// the tokens seen so far and the milliseconds since the trial started.
type Arrivals struct {
	Tokens []int
	AtMs   []float64
	// Reasoning marks the arrivals that were a reasoning model's
	// thinking (kind reasoning); IDs are each arrival's token ids. Both
	// are nil where no arrival has one (a load run keeps every request's
	// arrivals: they would near triple it), else as long as Tokens.
	Reasoning []bool
	IDs       [][]int
}

// ArrivalsOf is arrivals as the tokens CSV keeps them.
func ArrivalsOf(arrivals []metrics.Arrival) Arrivals {
	a := Arrivals{Tokens: make([]int, len(arrivals)), AtMs: make([]float64, len(arrivals))}
	seen := 0
	for i, x := range arrivals {
		seen += x.Tokens
		a.Tokens[i], a.AtMs[i] = seen, float64(x.At)/float64(time.Millisecond)
		a.mark(i, x.Reasoning, x.IDs)
	}
	return a
}

// mark records arrival i's kind and ids, making room for them (as long as
// Tokens) only when it has either.
func (a *Arrivals) mark(i int, reasoning bool, ids []int) {
	if reasoning {
		if a.Reasoning == nil {
			a.Reasoning = make([]bool, len(a.Tokens))
		}
		a.Reasoning[i] = true
	}
	if ids != nil {
		if a.IDs == nil {
			a.IDs = make([][]int, len(a.Tokens))
		}
		a.IDs[i] = ids
	}
}

// Chunks are the arrivals again as the runner saw them (ArrivalsOf's
// inverse, to the tokens CSV's microsecond): for a file written anew.
func (a Arrivals) Chunks() []metrics.Arrival {
	out := make([]metrics.Arrival, len(a.Tokens))
	seen := 0
	for i, n := range a.Tokens {
		out[i] = metrics.Arrival{At: time.Duration(math.Round(a.AtMs[i] * float64(time.Millisecond))), Tokens: n - seen}
		out[i].Reasoning = i < len(a.Reasoning) && a.Reasoning[i]
		if i < len(a.IDs) {
			out[i].IDs = a.IDs[i]
		}
		seen = n
	}
	return out
}

// Gaps are the times between consecutive chunks, in ms, each at the count
// of tokens seen when it ended: the latency inside one generation.
func (a Arrivals) Gaps() (tokens []int, gapsMs []float64) {
	for i := 1; i < len(a.AtMs); i++ {
		tokens, gapsMs = append(tokens, a.Tokens[i]), append(gapsMs, a.AtMs[i]-a.AtMs[i-1])
	}
	return tokens, gapsMs
}

// ParseTokens reads a tokens CSV by ParseTrials' rules (columns by name,
// a cut last line and bad rows skipped with warnings). Rows of a trial
// must come in order of arrival, as tokentop writes them.
func ParseTokens(name string, data []byte) (map[TrialKey]Arrivals, []string, error) {
	trials := map[TrialKey]Arrivals{}
	warnings, err := parseRows(name, data, csvKind{"tokens", TokensHeader, 4, "this arrival is left out"}, func(field func(int) string) error {
		key := TrialKey{Arm: field(0)}
		var err error
		if key.Trial, err = strconv.Atoi(field(1)); err != nil || key.Trial < 1 {
			return fmt.Errorf("column trial: %q is not a trial number", field(1))
		}
		tokens, err := strconv.Atoi(field(2))
		if err != nil || tokens < 0 {
			return fmt.Errorf("column index: %q is not a token count", field(2))
		}
		at, err := parseMeasure(field(3), TokensHeader[3])
		if err != nil || math.IsNaN(at) {
			return fmt.Errorf("column t_ms: %q is not a time in ms, 0 to 1e9", field(3))
		}
		switch field(4) {
		case "", KindOutput, KindReasoning:
		default:
			return fmt.Errorf("column kind: %q is not output, reasoning or empty", field(4))
		}
		a := trials[key]
		if n := len(a.AtMs); n > 0 && (at < a.AtMs[n-1] || tokens < a.Tokens[n-1]) {
			return fmt.Errorf("arrival at %s ms (%d tokens) comes before the trial's previous one", field(3), tokens)
		}
		ids, err := parseIDs(field(5))
		if err != nil {
			return err
		}
		a.Tokens, a.AtMs = append(a.Tokens, tokens), append(a.AtMs, at)
		if a.Reasoning != nil {
			a.Reasoning = append(a.Reasoning, false)
		}
		if a.IDs != nil {
			a.IDs = append(a.IDs, nil)
		}
		a.mark(len(a.Tokens)-1, field(4) == KindReasoning, ids)
		trials[key] = a
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return trials, warnings, nil
}

// maxChunkIDs bounds a chunk's token ids in a tokens CSV (a server's
// chunk carries at most backends.MaxChunkTokens).
const maxChunkIDs = 4096

// parseIDs reads a chunk's space-separated token ids; nil for none.
func parseIDs(field string) ([]int, error) {
	words := strings.Fields(field)
	if len(words) > maxChunkIDs {
		return nil, fmt.Errorf("column id: %d token ids in one chunk; at most %d", len(words), maxChunkIDs)
	}
	var ids []int
	for _, w := range words {
		id, err := strconv.Atoi(w)
		if err != nil || id < 0 || id > math.MaxInt32 {
			return nil, fmt.Errorf("column id: %q is not a token id (a whole number from 0)", w)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// LoadTokens reads the tokens CSV a session's manifest names.
func LoadTokens(s *Session) (map[TrialKey]Arrivals, []string, error) {
	if s.Manifest.TokensFile == "" {
		return nil, nil, fmt.Errorf("session %s names no tokens file", s.Path)
	}
	path := filepath.Join(filepath.Dir(s.Path), filepath.Base(s.Manifest.TokensFile))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseTokens(path, data)
}
