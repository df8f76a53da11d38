package backends

import (
	"context"
	"errors"
	"io"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// Open makes a backend of this kind for cfg, guarded so that every text
// it hands on is safe to show and store (package untrusted): each
// string a probe reports, each error and each stop reason, cleaned of
// escapes and control characters, bounded, and with cfg.APIKey
// redacted (servers echo a rejected key in their 401). Every front end
// makes its backends here, so no server's words reach a terminal or a
// file any other way.
func (k Kind) Open(cfg Config) (Backend, error) {
	b, err := k.New(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Replicas) > 0 {
		f := &fleet{members: []Backend{b}, urls: []string{cfg.URL}}
		for _, u := range cfg.Replicas {
			one := cfg
			one.URL, one.Replicas = u, nil
			member, err := k.New(one)
			if err != nil {
				return nil, err
			}
			f.members, f.urls = append(f.members, member), append(f.urls, u)
		}
		b = f
	}
	return &guarded{inner: b, secret: cfg.APIKey}, nil
}

// guarded is a Backend whose outside text is cleaned. It is an
// io.Closer whatever its inner backend is: Close stops an in-process
// engine's workers and does nothing for a server.
type guarded struct {
	inner  Backend
	secret string
}

func (g *guarded) Probe(ctx context.Context, model string) (Info, error) {
	info, err := g.inner.Probe(ctx, model)
	line := func(s string) string { return untrusted.Line(s, g.secret) }
	info.Kind, info.URL, info.ServerVersion = line(info.Kind), line(info.URL), line(info.ServerVersion)
	info.Model, info.Digest, info.Quantization = line(info.Model), line(info.Digest), line(info.Quantization)
	if info.Models != nil {
		models := make([]string, len(info.Models))
		for i, m := range info.Models {
			models[i] = line(m)
		}
		info.Models = models
	}
	for k, u := range info.Replicas {
		info.Replicas[k] = line(u)
	}
	if info.Details != nil {
		details := make(map[string]string, len(info.Details))
		for key, v := range info.Details {
			details[line(key)] = line(v)
		}
		info.Details = details
	}
	return info, g.clean(err)
}

func (g *guarded) Generate(ctx context.Context, req Request, onChunk OnChunk) (Result, error) {
	res, err := g.inner.Generate(ctx, req, onChunk)
	res.StopReason = untrusted.Line(res.StopReason, g.secret)
	return res, g.clean(err)
}

func (g *guarded) Think(think string) (string, error) {
	sent, err := ThinkSent(g.inner, think)
	return sent, g.clean(err)
}

// Tokenize asks the inner backend's tokenizer, where it has one.
func (g *guarded) Tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	tok, ok := g.inner.(Tokenizer)
	if !ok {
		return nil, ErrNoTokenizer
	}
	tokens, err := tok.Tokenize(ctx, text, special)
	return tokens, g.clean(err)
}

// Detokenize asks the inner backend's tokenizer, where it has one. Its
// text goes only back to the server, as a prompt.
func (g *guarded) Detokenize(ctx context.Context, tokens []int) (string, error) {
	tok, ok := g.inner.(Tokenizer)
	if !ok {
		return "", ErrNoTokenizer
	}
	text, err := tok.Detokenize(ctx, tokens)
	return text, g.clean(err)
}

// ErrNoTokenizer is the answer of a backend whose tokenizer tokentop
// cannot ask.
var ErrNoTokenizer = errors.New("this backend has no tokenizer tokentop can ask")

// CloseIdleConnections closes the inner backend's idle connections, where
// it keeps any.
func (g *guarded) CloseIdleConnections() {
	if ic, ok := g.inner.(IdleCloser); ok {
		ic.CloseIdleConnections()
	}
}

func (g *guarded) Close() error {
	if closer, ok := g.inner.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}

// clean gives err a safe text; errors.Is and errors.As still see
// everything err wraps (its kind, a retry hint, a context error).
func (g *guarded) clean(err error) error {
	if err == nil {
		return nil
	}
	text := untrusted.Line(err.Error(), g.secret)
	if text == err.Error() {
		return err
	}
	return &cleanError{text: text, err: err}
}

type cleanError struct {
	text string
	err  error
}

func (e *cleanError) Error() string { return e.text }
func (e *cleanError) Unwrap() error { return e.err }
