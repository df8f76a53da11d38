package builtin

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// EngineVersion changes when the engine's arithmetic or sampling changes,
// so sessions from different engines are told apart.
const EngineVersion = "tokentop-builtin 4"

// Kind registers the engine as a backend.
var Kind = backends.Kind{
	Name:          "builtin",
	Description:   "tokentop's own pure-Go llama engine, in process (no server)",
	InProcess:     true,
	ModelOptional: true,
	FixedLength:   true,
	DTypes:        DTypes,
	New: func(c backends.Config) (backends.Backend, error) {
		if len(c.Options) > 0 {
			return nil, errors.New("the builtin engine takes no options; tune it with dtype and threads")
		}
		return &Backend{cfg: c}, nil
	},
	ReasoningRule: "none: the engine's models do not reason, every token is output",
}

// Think cannot be honoured: the engine's models do not reason.
func (b *Backend) Think(string) (string, error) {
	return "", errors.New("the built-in engine's models do not reason, so there is no thinking to turn on or off")
}

// Backend adapts an Engine to the backends interface. The model is loaded
// by Probe, before any trial, so load time never lands in a measurement.
type Backend struct {
	cfg    backends.Config
	engine *Engine
}

// Probe loads model (the default when empty) and reports what it is.
func (b *Backend) Probe(ctx context.Context, model string) (backends.Info, error) {
	if model == "" {
		model = DefaultModel
	}
	if b.engine == nil || b.engine.Model.Name != model && b.engine.Model.Source != model {
		m, err := Load(model, b.cfg.DType)
		if err != nil {
			return backends.Info{Kind: Kind.Name}, err
		}
		threads := b.cfg.Threads
		if threads <= 0 {
			threads = runtime.NumCPU()
		}
		b.Close()
		b.engine = NewEngine(m, threads)
	}
	m := b.engine.Model
	weights := m.Source
	if m.Synthetic {
		weights += ": synthetic weights, meaningless text"
	}
	info := backends.Info{Kind: Kind.Name, ServerVersion: EngineVersion, PromptCacheSwitch: true, Model: m.Name, Digest: m.SHA256,
		Quantization: m.Weights.Format(), Models: ModelNames(), ContextTokens: m.Weights.Shape.SeqLen,
		Details: map[string]string{
			"shape":     m.Weights.Shape.String(),
			"weights":   weights,
			"threads":   strconv.Itoa(b.engine.Threads()),
			"load_ms":   strconv.FormatFloat(float64(m.LoadTime)/float64(time.Millisecond), 'f', 1, 64),
			"weight_mb": strconv.FormatFloat(float64(m.Weights.WeightBytes())/(1<<20), 'f', 1, 64), // MiB in memory
			// 10⁶ bytes read per decoded token: the phase split's axis.
			"decode_read_mb": strconv.FormatFloat(float64(m.Weights.BytesPerToken())/1e6, 'f', 3, 64),
			"kernels":        KernelName,
			"kv_cache":       cacheFormat(m.Weights),
		}}
	if k := F32PromptKernel(); k != "" && slices.ContainsFunc(m.Weights.matrices(), func(w **Matrix) bool { return !(*w).Quantized() }) {
		info.Details["f32_prompt_kernel"] = k
	}
	if k := BF16PromptKernel(); k != "" && slices.ContainsFunc(m.Weights.matrices(), func(w **Matrix) bool { return (*w).half == bfloat16 }) {
		info.Details["bf16_prompt_kernel"] = k
	}
	for _, p := range []struct {
		format format
		key    string
		kernel func() string
	}{{formatQ4_0, "q4_0_prompt_kernel", Q4_0PromptKernel}, {formatIQ4_NL, "iq4_nl_prompt_kernel", IQ4_NLPromptKernel}} {
		if k := p.kernel(); k != "" && slices.ContainsFunc(m.Weights.matrices(), func(w **Matrix) bool { return (*w).format == p.format }) {
			info.Details[p.key] = k
		}
	}
	if arch := m.Weights.Arch.Name; arch != "" {
		info.Details["architecture"] = arch
	}
	if trained := m.Weights.FileContext; trained > 0 {
		info.Details["context"] = fmt.Sprintf("%d tokens allocated of the %d the file was trained for", m.Weights.Shape.SeqLen, trained)
	}
	if len(m.KeptAsIs) > 0 {
		info.Details["kept_as_is"] = fmt.Sprintf("%d matrices stay as stored, their rows not a whole number of %d-weight blocks: %s",
			len(m.KeptAsIs), GroupSize, strings.Join(m.KeptAsIs, ", "))
	}
	return info, nil
}

// Generate runs one trial in process; each sampled token is reported the
// moment it is chosen.
func (b *Backend) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	res := backends.NewResult()
	if b.engine == nil {
		if _, err := b.Probe(ctx, req.Model); err != nil {
			return res, err
		}
	}
	prompt := b.engine.Model.Tokenizer.Encode(req.Prompt, true)
	g, err := b.engine.Generate(ctx, prompt, req.MaxTokens,
		Sampling{Temperature: req.Temperature, TopK: req.TopK, TopP: req.TopP, MinP: req.MinP, Seed: req.Seed, IgnoreEOS: req.IgnoreEOS},
		func(int) { onChunk(1, backends.Answer) })
	res.ChunkCounts = true
	res.PromptTokens = g.PromptTokens
	res.OutputTokens, res.TokenIDs = len(g.Tokens), g.Tokens
	res.StopReason = g.StopReason
	// The engine keeps no prompt cache: every trial evaluates its prompt.
	res.CachedTokens = 0
	res.ServerPrefillMs = float64(g.Prefill) / float64(time.Millisecond)
	res.ServerDecodeMs = float64(g.Decode) / float64(time.Millisecond)
	return res, err
}

// Close stops the engine's workers and closes the weights file it reads
// its embedding through; the model it loaded is garbage then.
func (b *Backend) Close() error {
	if b.engine != nil {
		b.engine.Close()
		b.engine.Model.Weights.dropHugePages()
		b.engine.Model.Weights.embedRows.close()
		b.engine = nil
	}
	return nil
}

// Tokenize counts text in the model's tokens; special adds the BOS a
// prompt gets.
func (b *Backend) Tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	if b.engine == nil {
		return nil, errors.New("the engine is not loaded yet: probe it first")
	}
	return textTokenizer{b.engine.Model.Tokenizer}.Tokenize(ctx, text, special)
}

// Detokenize is the text of tokens, as the engine prints them.
func (b *Backend) Detokenize(ctx context.Context, tokens []int) (string, error) {
	if b.engine == nil {
		return "", errors.New("the engine is not loaded yet: probe it first")
	}
	return textTokenizer{b.engine.Model.Tokenizer}.Detokenize(ctx, tokens)
}

// textTokenizer is a Tokenizer as a backends.Tokenizer.
type textTokenizer struct{ tok *Tokenizer }

func (t textTokenizer) Tokenize(_ context.Context, text string, special bool) ([]int, error) {
	return t.tok.Encode(text, special), nil
}

func (t textTokenizer) Detokenize(_ context.Context, tokens []int) (string, error) {
	var out strings.Builder
	prev := -1
	for _, id := range tokens {
		out.WriteString(t.tok.Decode(prev, id))
		prev = id
	}
	return out.String(), nil
}

// GGUFTokenizer is the tokenizer a GGUF file holds, to count and make
// prompts for a server that has none tokentop can ask (--tokenizer). The
// file is mapped, and its weights never read.
func GGUFTokenizer(path string) (backends.Tokenizer, error) {
	data, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	g, err := ParseGGUF(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tok, err := ggufTokenizer(g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return textTokenizer{tok}, nil
}
