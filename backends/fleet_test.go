package backends_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/openai"
	"github.com/tokentop/tokentop/backends/replay"
)

// A fleet's probe asks every replica, within the probe's bound, and one
// that is down or serves another model fails it, naming which; a request
// goes to the replica it names.
func TestAFleetsProbeNamesTheReplicaThatFails(t *testing.T) {
	up := func(models string) string {
		return replay.NewServer(t, replay.Route{
			"GET /v1/models":       replay.Serve(replay.Load(t, models)),
			"POST /v1/completions": replay.Serve(replay.Load(t, "ollama/v1_completions_stream_usage")),
		}).URL + "/v1"
	}
	down := httptest.NewServer(nil)
	down.Close()
	hung := replay.NewServer(t, replay.Route{"GET /v1/models": func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }})
	for _, c := range []struct {
		name, second, want string
	}{
		{"down", down.URL + "/v1", "replica 1 of 2 (" + down.URL + "/v1)"},
		{"another model", up("ollama/v1_models_stories260k"), `: model "tiny15m" is not served at`},
		{"hung", hung.URL + "/v1", "replica 1 of 2 (" + hung.URL + "/v1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := openai.Kind.Open(backends.Config{URL: up("ollama/v1_models"), Replicas: []string{c.second}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, err := b.Probe(ctx, "tiny15m"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("probe: %v, want %q", err, c.want)
			}
		})
	}
}
