package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// fleet is one target served by several replicas of one server (vLLM,
// SGLang or TGI replicas, each at its own address): a request goes to the
// replica its Request.Replica names, and every replica must answer the
// probe with the model. Its first replica speaks for the fleet where one
// must (its tokenizer; the versions and model it reports).
type fleet struct {
	members []Backend
	urls    []string
}

func (f *fleet) Probe(ctx context.Context, model string) (Info, error) {
	var first Info
	for k, m := range f.members {
		info, err := m.Probe(ctx, model)
		if err != nil {
			return first, fmt.Errorf("replica %d of %d (%s): %w", k, len(f.members), untrusted.URL(f.urls[k]), err)
		}
		if k == 0 {
			first = info
			continue
		}
		if info.Model != first.Model {
			return first, fmt.Errorf("replica %d of %d (%s) serves %q where replica 0 serves %q: a fleet's replicas must serve one model", k, len(f.members), untrusted.URL(f.urls[k]), info.Model, first.Model)
		}
	}
	first.Replicas = make([]string, len(f.urls))
	for k, u := range f.urls {
		first.Replicas[k] = untrusted.URL(u)
	}
	return first, nil
}

func (f *fleet) Generate(ctx context.Context, req Request, onChunk OnChunk) (Result, error) {
	return f.members[req.Replica%len(f.members)].Generate(ctx, req, onChunk)
}

// Think is how every replica sends think: they are one server's replicas,
// so they must agree.
func (f *fleet) Think(think string) (string, error) {
	var sent []string
	for _, m := range f.members {
		s, err := ThinkSent(m, think)
		if err != nil {
			return "", err
		}
		if !slices.Contains(sent, s) {
			sent = append(sent, s)
		}
	}
	if len(sent) > 1 {
		return "", fmt.Errorf("the fleet's replicas would send think differently (%v): they are not replicas of one server", sent)
	}
	return sent[0], nil
}

func (f *fleet) Tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	if tok, ok := f.members[0].(Tokenizer); ok {
		return tok.Tokenize(ctx, text, special)
	}
	return nil, ErrNoTokenizer
}

func (f *fleet) Detokenize(ctx context.Context, tokens []int) (string, error) {
	if tok, ok := f.members[0].(Tokenizer); ok {
		return tok.Detokenize(ctx, tokens)
	}
	return "", ErrNoTokenizer
}

func (f *fleet) CloseIdleConnections() {
	for _, m := range f.members {
		if ic, ok := m.(IdleCloser); ok {
			ic.CloseIdleConnections()
		}
	}
}

func (f *fleet) Close() error {
	var errs []error
	for _, m := range f.members {
		if c, ok := m.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
