package ollamashow

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends/internal/stream"
)

// A server's /api/show is read to a bound (an endless answer is not the
// JSON expected, and is given up at the bound), and the capabilities it
// names reach a message only cleaned of escapes and control characters.
func TestShowIsBoundedAndItsWordsCleaned(t *testing.T) {
	var sent atomic.Int64
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"capabilities": ["`))
		chunk := []byte(strings.Repeat("a", 1<<16))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Show(ctx, stream.NewConn("", ""), endless.URL, "m"); !errors.Is(err, ErrBadAnswer) {
		t.Errorf("an endless answer: %v", err)
	}
	endless.Close() // waits for the handler, which stops once the client has gone
	if sent.Load() > 4*stream.MaxJSONBody {
		t.Errorf("%d MB of an endless answer read; the bound is %d MB", sent.Load()>>20, stream.MaxJSONBody>>20)
	}
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"capabilities": ["completion\u001b]0;owned\u0007", "vision"]}`))
	}))
	defer hostile.Close()
	m, err := Show(ctx, stream.NewConn("", ""), hostile.URL, "m")
	if err != nil {
		t.Fatal(err)
	}
	refusal := m.CheckThink("true")
	if refusal == nil || strings.ContainsAny(refusal.Error(), "\x1b\x07") || !strings.Contains(refusal.Error(), "vision") {
		t.Errorf("refusal %q", refusal)
	}
	if err := m.CheckThink("false"); err != nil {
		t.Errorf("think = false is always honoured: %v", err)
	}
}
