package runner

import (
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// promptOf is trial's prompt and its place: the profile's prompts in
// turn, or its prompts file's in the seeded order every arm shares (its
// place in the file). A prompt's own output length is kept to
// max_tokens.
func (r *run) promptOf(trial int) (profiles.Prompt, int) {
	p := &r.plan.Profile
	if p.Dataset == nil {
		id := (trial - 1) % len(p.Prompts)
		return profiles.Prompt{Text: p.Prompts[id]}, id
	}
	id := r.promptOrder[(trial-1)%len(r.promptOrder)]
	prompt := p.Dataset.Prompts[id]
	prompt.MaxTokens = min(prompt.MaxTokens, p.MaxTokens)
	return prompt, id
}

// promptsFileInfo is the manifest's account of the prompts file; nil
// where the profile lists its prompts.
func (p *Plan) promptsFileInfo() *session.PromptsFileInfo {
	d := p.Profile.Dataset
	if d == nil {
		return nil
	}
	return &session.PromptsFileInfo{File: d.Path, SHA256: d.SHA256, Format: d.Format, Prompts: len(d.Prompts), Sampling: d.Sampling(p.Profile.Seed)}
}
