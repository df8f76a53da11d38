// Package ollamashow reads what Ollama's /api/show says of a model, for
// both of tokentop's ways to Ollama: its native API and its /v1.
package ollamashow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// KeepAliveNotSent is what a session records of Ollama's keep-alive:
// tokentop sends none, so the server unloads an idle model after its own
// (OLLAMA_KEEP_ALIVE), or sooner when another model needs the memory; a
// trial that loads it again is flagged (session.ModelLoadMs).
const KeepAliveNotSent = "not sent: the server's own (OLLAMA_KEEP_ALIVE, 5m unless set)"

// ErrBadAnswer is an /api/show answer not in the shape expected.
var ErrBadAnswer = errors.New("response is not the JSON expected")

// Model is what /api/show says of one model.
type Model struct {
	Quantization string
	// Capabilities are what the model can do ("completion", "thinking",
	// ...); nil where the server did not say.
	Capabilities []string
}

// Show asks the Ollama server at root (no /v1) about model.
func Show(ctx context.Context, conn *stream.Conn, root, model string) (Model, error) {
	resp, err := conn.PostJSON(ctx, root+"/api/show", map[string]string{"model": model})
	if err != nil {
		return Model{}, err
	}
	defer resp.Body.Close()
	var show struct {
		Details struct {
			QuantizationLevel string `json:"quantization_level"`
		} `json:"details"`
		Capabilities []string `json:"capabilities"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, stream.MaxJSONBody)).Decode(&show); err != nil {
		return Model{}, fmt.Errorf("%s/api/show: %w: %v", untrusted.URL(root), ErrBadAnswer, err)
	}
	return Model{Quantization: show.Details.QuantizationLevel, Capabilities: show.Capabilities}, nil
}

// CheckThink refuses think (other than "false") for a model whose
// capabilities lack "thinking", as Ollama would refuse every request
// (HTTP 400 "does not support thinking"); nil where the capabilities are
// not known.
func (m Model) CheckThink(think string) error {
	if think == "false" || m.Capabilities == nil || slices.Contains(m.Capabilities, "thinking") {
		return nil
	}
	return fmt.Errorf("the model cannot think (Ollama lists its capabilities as %s), so think = %s cannot be honoured: leave think out or pick a thinking model",
		untrusted.Line(strings.Join(m.Capabilities, ", ")), think)
}
