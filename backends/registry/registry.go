// Package registry lists the backends tokentop knows. Adding a backend is
// one line in Kinds.
package registry

import (
	"fmt"
	"strings"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/builtin"
	"github.com/tokentop/tokentop/backends/llamacpp"
	"github.com/tokentop/tokentop/backends/ollama"
	"github.com/tokentop/tokentop/backends/openai"
)

// Default is the backend used when none is chosen: it needs no server.
const Default = "builtin"

// Kinds are the known backends, in the order they are listed to users.
var Kinds = []backends.Kind{builtin.Kind, ollama.Kind, llamacpp.Kind, openai.Kind}

// Names returns the backend names.
func Names() []string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	return names
}

// Lookup finds a backend kind by name.
func Lookup(name string) (backends.Kind, error) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, nil
		}
	}
	return backends.Kind{}, fmt.Errorf("unknown backend %q; use one of %s", name, strings.Join(Names(), ", "))
}
