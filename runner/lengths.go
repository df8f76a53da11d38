package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// maxLengthBank bounds the prompts made for a run whose lengths are set
// in tokens: trials past it reuse them in turn. Each costs the server a
// few tokenizer calls before the first trial.
const maxLengthBank = 256

// lengthBank holds a run's prompts made to lengths in tokens, entry k for
// trials k+1, k+1+n, …: the lengths asked, the same for every arm, and
// per target the prompt made with that target's tokenizer.
type lengthBank struct {
	inputs, outputs []int      // 0 where input_tokens or output_tokens is not set
	texts           [][]string // per target; nil without input_tokens
	how             []string   // per target: how its prompts were made
	// shortest is, per target, the fewest tokens its server's tokenizer
	// makes a prompt of (its BOS and one more); 0 where the prompts were
	// not made with the server's own tokenizer.
	shortest []int
	// groups is each entry's shared prefix, and prefixes per target the
	// prefixes' texts; nil without prefix_tokens.
	groups   []int
	prefixes [][]string
	// turns is a synthetic conversation's user turns (0: none): entry k
	// is turn k%turns+1 of conversation k/turns, and replies per target
	// the history's reply after each entry's turn.
	turns   int
	replies [][]string
}

// makeLengthBank draws the lengths and makes each target's prompts with
// its server's tokenizer where it has one, else of words estimated at
// profiles.WordsPerToken a token (and says why).
func makeLengthBank(ctx context.Context, plan *Plan, bs []backends.Backend) *lengthBank {
	p := &plan.Profile
	if !p.InputTokens.Set() && !p.OutputTokens.Set() && p.PrefixTokens == 0 {
		return nil
	}
	n := maxLengthBank
	if c, ok := plan.Stop.(TrialCap); ok {
		n = min(n, max(1, c.N+p.Warmup))
	}
	if p.Turns > 1 { // whole conversations
		n = max(p.Turns, n/p.Turns*p.Turns)
	}
	b := &lengthBank{inputs: make([]int, n), outputs: make([]int, n), turns: p.Turns}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x6c656e67746873))
	for k := range n {
		if p.InputTokens.Set() {
			b.inputs[k] = p.InputTokens.Draw(rng)
		}
		if p.OutputTokens.Set() {
			b.outputs[k] = p.OutputTokens.Draw(rng)
		}
	}
	if p.PrefixTokens > 0 {
		b.groups = make([]int, n)
		for k := range b.groups {
			b.groups[k] = rng.IntN(p.PrefixGroups)
		}
	}
	for t := range plan.Targets {
		if p.InputTokens.Set() {
			texts, how, shortest := makePrompts(ctx, plan, bs[t], b.inputs, uint64(p.Seed))
			b.texts, b.how, b.shortest = append(b.texts, texts), append(b.how, how), append(b.shortest, shortest)
		}
		if p.Turns > 1 {
			lengths := make([]int, n)
			for k := range lengths {
				lengths[k] = cmp.Or(b.outputs[k], p.MaxTokens)
			}
			replies, _, _ := makePrompts(ctx, plan, bs[t], lengths, uint64(p.Seed)^0x7265706c79)
			b.replies = append(b.replies, replies)
		}
		if p.PrefixTokens > 0 {
			lengths := slices.Repeat([]int{p.PrefixTokens}, p.PrefixGroups)
			prefixes, how, _ := makePrompts(ctx, plan, bs[t], lengths, uint64(p.Seed)^0x707265666978)
			b.prefixes = append(b.prefixes, prefixes)
			if !p.InputTokens.Set() {
				b.how = append(b.how, how)
			}
		}
	}
	return b
}

// makePrompts are prompts of the lengths as backend's tokenizer makes them,
// else (it has none, or it fails) as the plan's --tokenizer file's does,
// else of estimated words; how they were made; and, made with the
// server's own tokenizer, the fewest tokens a prompt of it can be (0
// otherwise).
func makePrompts(ctx context.Context, plan *Plan, backend backends.Backend, lengths []int, seed uint64) ([]string, string, int) {
	texts, counted := make([]string, len(lengths)), make([]int, len(lengths))
	build := func(tok backends.Tokenizer) error {
		for k, n := range lengths {
			// A server that hangs on its tokenizer holds the run's start
			// no longer than a trial's timeout a prompt.
			promptCtx, cancel := context.WithTimeout(ctx, plan.Profile.TrialTimeout)
			var err error
			texts[k], counted[k], err = profiles.ExactPrompt(promptCtx, tok, n, seed<<16^uint64(k))
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
	why := backends.ErrNoTokenizer.Error()
	if tok, ok := backend.(backends.Tokenizer); ok {
		err := build(tok)
		var shortest int
		if err == nil {
			shortest, err = profiles.ShortestPrompt(ctx, tok)
		}
		switch {
		case err == nil:
			return texts, madeWords(lengths, counted, shortest, "the server's own tokenizer"), shortest
		case errors.Is(err, backends.ErrNoTokenizer):
			why = untrusted.Line(err.Error())
		default:
			why = "its tokenizer failed: " + untrusted.Line(err.Error())
		}
	}
	if plan.Tokenizer != nil {
		if err := build(plan.Tokenizer); err == nil {
			return texts, madeWords(lengths, counted, 0, "the tokenizer of "+plan.TokenizerFile) +
				" (not the server's: " + why + "; its own counts are each trial's prompt_tokens)", 0
		}
	}
	for k, n := range lengths {
		texts[k] = profiles.EstimatedPrompt(n, seed<<16^uint64(k))
	}
	return texts, fmt.Sprintf("estimated from words at %g a token (%s): the server's prompt_tokens are the real lengths", profiles.WordsPerToken, why), 0
}

// madeWords says how prompts made with a tokenizer came out: each
// exactly its length, or how many missed it and by how much (a cut
// between tokens that merges or splits at every try), and how many asked
// fewer tokens than the shortest prompt (shortest, where known: the
// tokenizer's BOS and one token), which are that long.
func madeWords(lengths, counted []int, shortest int, tokenizer string) string {
	missed, most, short := 0, 0, 0
	for k, n := range lengths {
		switch d := counted[k] - n; {
		case n < shortest:
			short++
		case d != 0:
			missed, most = missed+1, max(most, d, -d)
		}
	}
	words := "made to length with " + tokenizer
	if missed > 0 {
		words = fmt.Sprintf("made with %s, but %d of %d prompts missed their length by up to %d tokens", tokenizer, missed, len(lengths), most)
	}
	if short > 0 {
		words += fmt.Sprintf("; %d of %d asked fewer than %d tokens, the shortest prompt it makes (its own start tokens and one of text), and are %d", short, len(lengths), shortest, shortest)
	}
	return words
}

// shortestOf is target's shortest prompt (lengthBank.shortest); 0 where
// not known.
func (b *lengthBank) shortestOf(target int) int {
	if b == nil || target >= len(b.shortest) {
		return 0
	}
	return b.shortest[target]
}

// entry is the bank's entry for trial.
func (b *lengthBank) entry(trial int) int { return (trial - 1) % len(b.inputs) }

// lengthsInfo is the manifest's account of the lengths: as asked, and per
// target how its prompts were made.
func (p *Plan) lengthsInfo(b *lengthBank) *session.LengthsInfo {
	if b == nil {
		return nil
	}
	info := &session.LengthsInfo{Prompts: len(b.inputs), PrefixTokens: p.Profile.PrefixTokens, PrefixGroups: p.Profile.PrefixGroups, Turns: b.turns}
	if l := p.Profile.InputTokens; l.Set() {
		info.InputTokens = l.String()
	}
	if l := p.Profile.OutputTokens; l.Set() {
		info.OutputTokens = l.String()
	}
	for t, how := range b.how {
		info.Tokenizers = append(info.Tokenizers, p.Targets[t].Name+": "+how)
	}
	for _, t := range p.Targets {
		if p.Profile.OutputTokens.Set() && !t.Kind.FixedLength {
			info.OutputNotForced = append(info.OutputNotForced, t.Name)
		}
	}
	return info
}

// lengthTolerance is how far a trial's lengths may miss those asked
// before the run says so.
const lengthTolerance = 0.01

// lengthMismatch says where an ok trial's lengths, as its server counted
// them, missed those asked by more than lengthTolerance; "" where they
// did not, or none was asked. forced is whether the server could be told
// to generate the whole output length; shortest the fewest tokens its
// tokenizer makes a prompt of (0: not known).
func lengthMismatch(rec session.Record, forced bool, shortest int) string {
	if rec.Status != session.StatusOK {
		return ""
	}
	off := func(got, asked int) bool {
		return asked > 0 && got >= 0 && math.Abs(float64(got-asked)) > lengthTolerance*float64(asked)
	}
	switch {
	case off(rec.PromptTokens, rec.RequestedPromptTokens) && rec.RequestedPromptTokens < shortest && rec.PromptTokens == shortest:
		return fmt.Sprintf("%s trial %d: %d prompt tokens of the %d asked: the shortest prompt the server's tokenizer makes is %d (its own start tokens and one of text); the trials CSV keeps both counts",
			rec.Arm, rec.Trial, rec.PromptTokens, rec.RequestedPromptTokens, shortest)
	case off(rec.PromptTokens, rec.RequestedPromptTokens):
		return fmt.Sprintf("%s trial %d: the server counted %d prompt tokens of the %d asked (%+.1f%%): it tokenizes otherwise than the prompt was made (a chat template, another tokenizer, or words estimated); the trials CSV keeps both counts",
			rec.Arm, rec.Trial, rec.PromptTokens, rec.RequestedPromptTokens, 100*float64(rec.PromptTokens-rec.RequestedPromptTokens)/float64(rec.RequestedPromptTokens))
	case off(rec.OutputTokens, rec.RequestedOutputTokens):
		why := "the server did not generate the whole length though told to ignore the end of sequence"
		if !forced {
			why = "this backend cannot be told to ignore the end of sequence, so the model may stop early"
		}
		return fmt.Sprintf("%s trial %d: %d output tokens of the %d asked (%+.1f%%): %s; the trials CSV keeps both counts",
			rec.Arm, rec.Trial, rec.OutputTokens, rec.RequestedOutputTokens, 100*float64(rec.OutputTokens-rec.RequestedOutputTokens)/float64(rec.RequestedOutputTokens), why)
	}
	return ""
}
