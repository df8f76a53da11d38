package profiles

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/backends"
)

// TokenLength is a length in tokens (input_tokens, output_tokens): fixed,
// or drawn per prompt from a normal distribution of Mean and StdDev kept
// to [Min, Max], or uniformly from [Min, Max] where no mean is given.
type TokenLength struct {
	Fixed    int
	Mean     float64
	StdDev   float64
	Min, Max int
}

// MaxPrefixGroups bounds prefix_groups: each is made before the run;
// MaxTurns bounds turns.
const (
	MaxPrefixGroups = 256
	MaxTurns        = 64
)

// MaxInputTokens bounds input_tokens: past any model's context today;
// MaxOutputTokens bounds output_tokens as max_tokens is bounded.
const (
	MaxInputTokens  = 1 << 20
	MaxOutputTokens = maxMaxTokens
)

// tokenLengthRule says how a length is written, for errors.
const tokenLengthRule = "write a number of tokens (512), {mean = 512, stddev = 128, min = 64, max = 1024}, or {min = 64, max = 1024} for uniform"

// Set reports whether a length was given.
func (l TokenLength) Set() bool { return l != TokenLength{} }

// UnmarshalTOML takes a whole number or a table of mean, stddev, min and
// max.
func (l *TokenLength) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		*l = TokenLength{Fixed: int(v)}
		return nil
	case map[string]any:
		out := TokenLength{}
		for k, x := range v {
			f, ok := x.(float64)
			if n, isInt := x.(int64); isInt {
				f, ok = float64(n), true
			}
			if !ok {
				return fmt.Errorf("%s = %v is not a number; %s", k, x, tokenLengthRule)
			}
			switch k {
			case "mean":
				out.Mean = f
			case "stddev":
				out.StdDev = f
			case "min":
				out.Min = int(f)
			case "max":
				out.Max = int(f)
			default:
				return fmt.Errorf("unknown key %q; %s", k, tokenLengthRule)
			}
		}
		*l = out
		return nil
	}
	return fmt.Errorf("%v is not a length; %s", v, tokenLengthRule)
}

// ParseTokenLength reads a length from a flag or a grid axis: "512",
// "64-1024" (uniform) or "mean=512,stddev=128,min=64,max=1024".
func ParseTokenLength(s string) (TokenLength, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return TokenLength{Fixed: n}, nil
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok && !strings.Contains(s, "=") {
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b, errB := strconv.Atoi(strings.TrimSpace(hi))
		if errA == nil && errB == nil {
			return TokenLength{Min: a, Max: b}, nil
		}
	}
	table := map[string]any{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil {
			return TokenLength{}, fmt.Errorf("%q is not a length; write 512, 64-1024 (uniform) or mean=512,stddev=128,min=64,max=1024", s)
		}
		table[strings.TrimSpace(k)] = f
	}
	var l TokenLength
	err := l.UnmarshalTOML(table)
	return l, err
}

// Problem says what is wrong with the length, at most most tokens; ""
// when nothing is.
func (l TokenLength) Problem(most int) string {
	switch {
	case !l.Set():
		return ""
	case l.Fixed != 0 && (l.Fixed < 0 || l.Fixed > most):
		return fmt.Sprintf("%d is out of range; use 1 to %d", l.Fixed, most)
	case l.Fixed != 0:
		return ""
	case l.Max == 0:
		return "a distribution needs max; " + tokenLengthRule
	case l.Min < 1 || l.Max > most || l.Min > l.Max:
		return fmt.Sprintf("min %d and max %d: use 1 ≤ min ≤ max ≤ %d", l.Min, l.Max, most)
	case l.Mean != 0 && (l.Mean < float64(l.Min) || l.Mean > float64(l.Max)):
		return fmt.Sprintf("mean %g is outside [min %d, max %d]", l.Mean, l.Min, l.Max)
	case l.StdDev < 0 || l.StdDev > 0 && l.Mean == 0:
		return fmt.Sprintf("stddev %g: give a mean with a stddev of 0 or more", l.StdDev)
	}
	return ""
}

// Draw is one length from the distribution.
func (l TokenLength) Draw(rng *rand.Rand) int {
	switch {
	case l.Fixed > 0:
		return l.Fixed
	case l.Mean == 0:
		return l.Min + rng.IntN(l.Max-l.Min+1)
	}
	n := int(math.Round(l.Mean + l.StdDev*rng.NormFloat64()))
	return min(l.Max, max(l.Min, n))
}

// String is the length in a few words.
func (l TokenLength) String() string {
	switch {
	case l.Fixed > 0:
		return strconv.Itoa(l.Fixed)
	case l.Mean == 0:
		return fmt.Sprintf("uniform in [%d, %d]", l.Min, l.Max)
	}
	return fmt.Sprintf("normal, mean %g, stddev %g, kept to [%d, %d]", l.Mean, l.StdDev, l.Min, l.Max)
}

// promptWords are the words synthetic prompts are made of: common English
// words, one token each in most tokenizers.
var promptWords = strings.Fields("the a of and to in is was he she it that on with as for his her they at by from this had not but are what all were when we there can an your which their said if do will each about how up out them then many some so these would other into has more two like him see time could no make than first been its who now people my made over did down only way find use may water long little very after words called just where most know")

// SeededWords are n words drawn by rng.
func SeededWords(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = promptWords[rng.IntN(len(promptWords))]
	}
	return out
}

// EstimatedPrompt is a prompt of about n tokens where no tokenizer is at
// hand: n·WordsPerToken seeded words.
func EstimatedPrompt(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0x657374))
	return strings.Join(SeededWords(rng, max(1, int(math.Round(float64(n)*WordsPerToken)))), " ")
}

// exactTries bounds the rounds of making a prompt exactly n tokens long:
// a cut between tokens can merge or split at the seam, a token or two.
const exactTries = 6

// ExactPrompt is a prompt of seeded words that tok counts as exactly n
// tokens, the special tokens a prompt gets (its BOS) included, as the
// server counts a prompt; and how many it counts, which differs from n
// only where no cut gave n.
func ExactPrompt(ctx context.Context, tok backends.Tokenizer, n int, seed uint64) (string, int, error) {
	specials, err := specialTokens(ctx, tok)
	if err != nil {
		return "", 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6578616374))
	want := max(1, n-specials)
	words := SeededWords(rng, want+8)
	ids, err := tok.Tokenize(ctx, strings.Join(words, " "), false)
	if err != nil {
		return "", 0, err
	}
	best, bestCount := "", -1
	for range exactTries {
		// Most words are a token or more, so a few more words make up a
		// short count; a tokenizer whose count does not grow with the
		// text is not one, and is not asked for ever.
		for grown := 0; len(ids) < want; grown++ {
			if grown == exactTries {
				return "", 0, fmt.Errorf("the tokenizer counted %d tokens in %d words: it does not count text as a tokenizer does", len(ids), len(words))
			}
			words = append(words, SeededWords(rng, want-len(ids)+8)...)
			if ids, err = tok.Tokenize(ctx, strings.Join(words, " "), false); err != nil {
				return "", 0, err
			}
		}
		text, err := tok.Detokenize(ctx, ids[:want])
		if err != nil {
			return "", 0, err
		}
		// A tokenizer that gives words their leading space (SentencePiece)
		// adds one of its own to a prompt: a second would be a token more.
		text = strings.TrimLeft(text, " ")
		counted, err := tok.Tokenize(ctx, text, true)
		if err != nil {
			return "", 0, err
		}
		if bestCount < 0 || abs(len(counted)-n) < abs(bestCount-n) {
			best, bestCount = text, len(counted)
		}
		if len(counted) == n {
			break
		}
		want = max(1, want+n-len(counted))
	}
	return best, bestCount, nil
}

// ShortestPrompt is the fewest tokens a prompt made with tok can be: the
// tokens it adds of its own (a BOS) and one of text. ExactPrompt makes
// this many for any length asked below it.
func ShortestPrompt(ctx context.Context, tok backends.Tokenizer) (int, error) {
	specials, err := specialTokens(ctx, tok)
	return specials + 1, err
}

// specialTokens is how many tokens tok adds to a prompt of its own (a
// BOS, say).
func specialTokens(ctx context.Context, tok backends.Tokenizer) (int, error) {
	with, err := tok.Tokenize(ctx, "the", true)
	if err != nil {
		return 0, err
	}
	without, err := tok.Tokenize(ctx, "the", false)
	if err != nil {
		return 0, err
	}
	return max(0, len(with)-len(without)), nil
}

func abs(n int) int { return max(n, -n) }

// Most is the longest the length can be.
func (l TokenLength) Most() int { return max(l.Fixed, l.Max) }

// MostTokens is the most tokens a request of the profile may generate:
// max_tokens, or output_tokens' longest where it is longer.
func (p *Profile) MostTokens() int { return max(p.MaxTokens, p.OutputTokens.Most()) }
