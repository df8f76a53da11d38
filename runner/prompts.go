package runner

import (
	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// chosenPrompt is what a trial asks: its prompt, and for a run whose
// lengths are set in tokens the lengths asked and whether the server is
// told to generate the whole output length.
type chosenPrompt struct {
	profiles.Prompt
	RequestedTokens, RequestedOutput int
	ForceLength                      bool
}

// promptOf is arm's prompt on trial and its place: the profile's prompts
// in turn, or its prompts file's in the seeded order every arm shares
// (its place in the file), or the length bank's entry (made with the
// arm's target's tokenizer). A file's prompt's own output length is kept
// to max_tokens; output_tokens set the length itself.
func (r *run) promptOf(arm, trial int) (chosenPrompt, int) {
	p := &r.plan.Profile
	var c chosenPrompt
	var id int
	if p.Dataset == nil {
		id = (trial - 1) % max(1, len(p.Prompts))
		if len(p.Prompts) > 0 {
			c.Text = p.Prompts[id]
		}
	} else {
		id = r.promptOrder[(trial-1)%len(r.promptOrder)]
		c.Prompt = p.Dataset.Prompts[id]
		c.MaxTokens = min(c.MaxTokens, p.MaxTokens)
	}
	b := r.bank
	if b == nil {
		return c, id
	}
	k, target := b.entry(trial), r.plan.ArmTarget[arm]
	if b.texts != nil {
		c.Prompt, id = profiles.Prompt{Text: b.texts[target][k]}, k
		c.RequestedTokens = b.inputs[k]
	}
	if b.turns > 1 {
		// Turn u of its conversation carries the turns before it and
		// their made replies; its length is the history's and its own.
		first := k / b.turns * b.turns
		for j := first; j < k; j++ {
			c.Messages = append(c.Messages, backends.Message{Role: "user", Content: b.texts[target][j]},
				backends.Message{Role: "assistant", Content: b.replies[target][j]})
		}
		c.Messages = append(c.Messages, backends.Message{Role: "user", Content: b.texts[target][k]})
		c.Text, c.Turn = profiles.JoinMessages(c.Messages), k-first+1
		if k > first {
			c.RequestedTokens = 0
		}
	}
	if b.outputs[k] > 0 {
		c.MaxTokens, c.RequestedOutput = b.outputs[k], b.outputs[k]
		c.ForceLength = r.plan.TargetOf(arm).Kind.FixedLength
	}
	if b.prefixes != nil {
		// The shared prefix is the conversation's system prompt; its
		// seam with the prompt makes the whole a token or two off any
		// length asked, so none is claimed.
		prefix := b.prefixes[r.plan.ArmTarget[arm]][b.groups[k]]
		messages := c.Messages
		if messages == nil {
			messages = []backends.Message{{Role: "user", Content: c.Text}}
		}
		c.Messages = append([]backends.Message{{Role: "system", Content: prefix}}, messages...)
		c.Text, c.RequestedTokens = profiles.JoinMessages(c.Messages), 0
	}
	return c, id
}

// promptsFileInfo is the manifest's account of the prompts file; nil
// where the profile lists its prompts.
func (p *Plan) promptsFileInfo() *session.PromptsFileInfo {
	d := p.Profile.Dataset
	if d == nil {
		return nil
	}
	info := &session.PromptsFileInfo{File: untrusted.Line(d.Path), SHA256: d.SHA256, Format: d.Format, Prompts: len(d.Prompts), Sampling: d.Sampling(p.Profile.Seed), LeftOut: d.Skipped}
	if p.Profile.MultiTurn {
		for k, pr := range d.Prompts {
			if k == 0 || pr.ConversationID != d.Prompts[k-1].ConversationID {
				info.Conversations++
			}
		}
	}
	return info
}
