package session

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/metrics"
)

func TestTokensAreReadByNameAndBadRowsAreNamed(t *testing.T) {
	data := "t_ms,arm,trial,index,extra\n" + // reordered, a column from a newer version
		"0.40,greedy,1,1,x\n0.45,greedy,1,2,x\n0.61,greedy,1,4,x\n" +
		"0.30,temp,1,1,x\nbad,temp,1,2,x\n0.20,temp,1,3,x\n" + // line 6 unreadable, line 7 goes back in time
		"0.9,temp,1"
	trials, warnings, err := ParseTokens("t.csv", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	g := trials[TrialKey{"greedy", 1}]
	if !slices.Equal(g.Tokens, []int{1, 2, 4}) || !slices.Equal(g.AtMs, []float64{0.40, 0.45, 0.61}) {
		t.Errorf("greedy arrivals %+v", g)
	}
	tokens, gaps := g.Gaps()
	if !slices.Equal(tokens, []int{2, 4}) || len(gaps) != 2 || gaps[1] < 0.159 || gaps[1] > 0.161 {
		t.Errorf("gaps %v at %v", gaps, tokens)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"t.csv:8: last line is incomplete", "t.csv:6: column t_ms", "t.csv:7: arrival at 0.20 ms"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if _, _, err := ParseTokens("t.csv", []byte("arm,trial\n")); err == nil || !strings.Contains(err.Error(), `t.csv:1: header has no "index" column; this is not a tokentop tokens CSV`) {
		t.Errorf("a trials-like header: %v", err)
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte("arm,trial,index,t_ms\ngreedy,1,1,0.398\ngreedy,1,2,0.441\n"))
	f.Add([]byte("arm,trial,index,t_ms\ngreedy,1,1,NaN\n"))
	f.Add([]byte("arm,trial,index,t_ms\n\"g\nx\",1,1,1\n"))
	f.Add([]byte("arm,trial,index,t_ms,kind,id\ngreedy,1,1,0.398,output,42\ngreedy,1,3,0.441,output,7 31999\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		trials, _, err := ParseTokens("f.csv", data)
		if err != nil {
			return
		}
		for key, a := range trials {
			if len(a.Tokens) != len(a.AtMs) || key.Trial < 1 {
				t.Fatalf("%v: %d tokens for %d times", key, len(a.Tokens), len(a.AtMs))
			}
			if _, gaps := a.Gaps(); slices.ContainsFunc(gaps, func(g float64) bool { return g < 0 }) {
				t.Fatalf("%v: a negative gap in %v", key, gaps)
			}
		}
	})
}

// Kinds and ids take room only where an arrival has one, and come back
// where they were, read or made.
func TestArrivalsKeepKindsAndIDsOnlyWhereGiven(t *testing.T) {
	plain := ArrivalsOf([]metrics.Arrival{{At: time.Millisecond, Tokens: 1}, {At: 2 * time.Millisecond, Tokens: 2}})
	if plain.Reasoning != nil || plain.IDs != nil {
		t.Errorf("room made for nothing: %+v", plain)
	}
	data := []byte("arm,trial,index,t_ms,kind,id\na,1,1,1.000,output,\na,1,2,2.000,reasoning,\na,1,3,3.000,output,7\n")
	trials, _, err := ParseTokens("x.csv", data)
	a := trials[TrialKey{"a", 1}]
	chunks := a.Chunks()
	if err != nil || len(a.Reasoning) != 3 || len(a.IDs) != 3 || chunks[0].Reasoning || !chunks[1].Reasoning || chunks[1].IDs != nil || !slices.Equal(chunks[2].IDs, []int{7}) {
		t.Errorf("%+v %v", a, err)
	}
}

// BenchmarkArrivalsOf is what a load run keeps of each request's 64
// arrivals: 1,024 B, as before the kinds and ids were kept (they are
// made only where an arrival has one; always made, 2,880 B).
func BenchmarkArrivalsOf(b *testing.B) {
	arrivals := make([]metrics.Arrival, 64)
	for i := range arrivals {
		arrivals[i] = metrics.Arrival{At: time.Duration(i) * time.Millisecond, Tokens: 1}
	}
	b.ReportAllocs()
	for range b.N {
		_ = ArrivalsOf(arrivals)
	}
}
