// Package metrics is pure computation: per-trial timings from chunk
// arrivals, streaming per-arm series, descriptive statistics, bootstrap
// confidence intervals and convergence, exactly as DESIGN.md defines them.
// It does no I/O and imports nothing else of tokentop.
//
// Unknown values are NaN here; writers turn them into empty fields.
//
// Decision: inter-token latency is computed per token from chunk arrivals.
// The gap before a chunk that carries k tokens is split into k gaps of
// gap/k, so batching servers produce neither fake zero gaps nor inflated
// ones. Extra tokens in the very first chunk have no measurable gap and
// add none. Where a protocol does not say how many tokens a chunk holds
// (OpenAI-style SSE), each chunk counts as one token; the runner flags
// trials whose chunk-token total disagrees with the server's count.
package metrics
