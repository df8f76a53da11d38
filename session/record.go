// Package session owns a session's files: the trials and tokens CSVs, the
// TOML manifest, reading them back (including runs killed mid-write), the
// per-arm summary and the comparison of sessions.
//
// Decisions where DESIGN.md is silent:
//   - Trials are numbered per arm in one sequence across phases (warmup
//     1..W, timed W+1..), so (arm, trial) names one trial in every file.
//   - The tokens CSV has one row per chunk arrival; index is the number of
//     tokens received so far, so a multi-token chunk shows as a jump.
//   - CSV rows go straight to the file and are fsynced per trial: a kill,
//     or a power cut, loses at most the trial in flight.
package session

import (
	"math"
	"strconv"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
)

// Phases and statuses of a trial.
const (
	PhaseWarmup = "warmup"
	PhaseTimed  = "timed"

	StatusOK       = "ok"
	StatusError    = "error"
	StatusTimeout  = "timeout"
	StatusCanceled = "canceled"
)

// StopTruncated is the stop reason of a generation cut at the context
// window, as backends.StopTruncated writes it into the files.
const StopTruncated = "truncated"

// EnergyUnavailable is the energy quality of a trial on a machine with no
// power source; telemetry.Quality names the others.
const EnergyUnavailable = string(telemetry.QualityUnavailable)

// Record is one trial: one row of the trials CSV. Unknown counts are -1 and
// unknown measurements NaN; both are written as empty fields.
type Record struct {
	SessionID    string
	Arm          string
	Trial        int
	Phase        string
	Status       string
	Error        string
	StartedAt    time.Time
	PromptID     int
	PromptTokens int
	OutputTokens int
	StopReason   string
	metrics.Timings
	ServerLoadMs    float64
	ServerPrefillMs float64
	ServerDecodeMs  float64
	EnergyJ         float64
	EnergyQuality   string
	AvgPowerW       float64
	JPerToken       float64
	PeakRSSMB       float64
	// Round is the round of the run the trial ran in and Position its
	// place in that round's order, both from 1; 0 in sessions written
	// before these columns.
	Round, Position int
	// CachedTokens is how many prompt tokens the server took from its
	// prompt cache instead of evaluating them; -1 when it did not say.
	CachedTokens int
	// Concurrency is how many streams its block kept in flight, Stream
	// which of them ran it (from 1) and InFlight how many requests were
	// in flight when it started, itself included; 0 in sessions written
	// before these columns. Window places a load run's request in its
	// block: WindowRamp (a stream's first), WindowDrain (it ended after a
	// stream of its block had finished, so under less than the block's
	// load) or WindowSteady; empty for one-at-a-time trials.
	Concurrency, Stream, InFlight int
	Window                        string
	// Connection is how the request reached its server: a new or a
	// reused connection, resent (its kept-alive connection was closed
	// before any answer, so it went again on a new one), or none (no
	// connection could be made: the server never saw it); empty for the
	// in-process engine and in sessions written before this column.
	Connection string
	// ReasoningTokens is how many of the output tokens were a reasoning
	// model's thinking: the server's count where it gave one, else the
	// tokens that arrived as reasoning; -1 when unknown (sessions before
	// this column). Timings.TTFOMs is when the first output token came.
	ReasoningTokens int
	// Chunks is how many chunks the tokens came in; -1 when unknown.
	Chunks int
	// ITLPer says what the ITL columns' gaps are between: ITLPerToken,
	// or ITLPerChunk where chunks carried several tokens whose counts the
	// server did not give; empty when unknown.
	ITLPer string
	// Delivery is DeliveryBurst when the tokens arrived far tighter than
	// the server generated them (metrics.Burst: the gaps measure delivery,
	// not generation), DeliveryStream when they did not, and empty where
	// the server gave no decode time to compare with.
	Delivery string
	// ScheduledMs is when an open loop's request was due, in ms from its
	// block's start, and QueueMs how late it left (its send minus its due
	// time: a wait for a free slot under a cap, or the client's own
	// lateness); NaN for a closed loop's and one-at-a-time trials. A user
	// arriving on time waited QueueMs + TTFTMs for a first token.
	ScheduledMs, QueueMs float64
	// RequestedPromptTokens and RequestedOutputTokens are the lengths a
	// run set in tokens asked for (input_tokens, output_tokens), beside
	// the server's own counts in PromptTokens and OutputTokens; 0 where
	// none was set.
	RequestedPromptTokens, RequestedOutputTokens int
	// Turn is a multi-turn conversation's user turn the trial sent (from
	// 1), its prompt carrying the turns before; 0 for other trials.
	Turn int
	// EnergyErrJ bounds how far EnergyJ may be off for the power
	// readings' own resolution (the energy counter's step at each end,
	// or a sample interval's energy); the idle baseline's drift over the
	// run adds to it (PowerInfo.DriftW). NaN where unknown.
	EnergyErrJ float64
	// Shard is the index of the load generator that sent the request in
	// a run several ran together (--shard), and Host its host; both ""
	// for a run of one.
	Shard, Host string
	// Replica is the index of the fleet's replica the request went to
	// (its target's replicas, TargetInfo.Replicas); "" for one server.
	Replica string
}

// TTFTFromDueMs is the time from when the request was due to its first
// token: what a user arriving on schedule waited. NaN without a schedule.
func (r Record) TTFTFromDueMs() float64 { return r.QueueMs + r.TTFTMs }

// E2EFromDueMs is the time from when the request was due to its end.
func (r Record) E2EFromDueMs() float64 { return r.QueueMs + r.E2EMs }

// What a record's ITL gaps are between.
const (
	ITLPerToken = "token"
	ITLPerChunk = "chunk"
)

// How a record's tokens were delivered.
const (
	DeliveryStream = "stream"
	DeliveryBurst  = "burst"
)

// Windows of a load run's request.
const (
	WindowRamp   = "ramp"
	WindowSteady = "steady"
	WindowDrain  = "drain"
)

// Counted reports whether the record enters aggregates: timed, ok and,
// in a load run, in the steady window (ramp-up and drain run under
// another load than the block's).
func (r Record) Counted() bool {
	return r.Phase == PhaseTimed && r.Status == StatusOK && (r.Window == "" || r.Window == WindowSteady)
}

// Degraded reports whether a timed trial failed on the backend's side
// (error, timeout): a failure the server could have seen. A trial the
// user cut short by stopping the run is canceled, and one that never
// reached the server (Connection none) was refused before it: neither
// says anything about the server's serving, so neither is degraded.
func (r Record) Degraded() bool {
	return r.Phase == PhaseTimed && r.Status != StatusOK && r.Status != StatusCanceled && r.Connection != backends.ConnectionNone
}

// Header is the trials CSV header, in order.
var Header = []string{"session_id", "arm", "trial", "phase", "status", "error", "started_at", "prompt_id", "prompt_tokens", "output_tokens",
	"stop_reason", "ttft_ms", "e2e_ms", "decode_ms", "tpot_ms", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms",
	"itl_cv", "output_tps", "decode_tps", "server_load_ms", "server_prefill_ms", "server_decode_ms", "energy_j",
	"energy_quality", "avg_power_w", "j_per_token", "peak_rss_mb", "round", "position", "cached_tokens",
	"concurrency", "stream", "in_flight", "window", "connection", "ttfo_ms", "reasoning_tokens", "chunks", "itl_per", "delivery",
	"scheduled_ms", "queue_ms", "requested_prompt_tokens", "requested_output_tokens", "turn", "energy_err_j", "shard", "host", "replica"}

// baseColumns is how many of Header's columns every trials CSV has; the
// ones after them were appended later, and a reader takes a file without
// them (DESIGN.md: new columns are appended, never inserted).
const baseColumns = 30

// TokensHeader is the tokens CSV header. kind, appended later, is
// "reasoning" for a reasoning model's thinking and "output" for the rest;
// id, appended later still, the chunk's token ids (space-separated) where
// the backend knows them.
var TokensHeader = []string{"arm", "trial", "index", "t_ms", "kind", "id"}

// Kinds of arrival in the tokens CSV.
const (
	KindOutput    = "output"
	KindReasoning = "reasoning"
)

// floatFields lists, in Header order from ttft_ms on, the measurement
// columns; reading and writing share it so the two cannot drift apart.
func (r *Record) floatFields() []*float64 {
	return []*float64{&r.TTFTMs, &r.E2EMs, &r.DecodeMs, &r.TPOTMs, &r.ITLMeanMs, &r.ITLP50Ms, &r.ITLP99Ms, &r.ITLMaxMs,
		&r.ITLCV, &r.OutputTPS, &r.DecodeTPS, &r.ServerLoadMs, &r.ServerPrefillMs, &r.ServerDecodeMs, &r.EnergyJ}
}

// tailFloatFields are the measurement columns after energy_quality.
func (r *Record) tailFloatFields() []*float64 {
	return []*float64{&r.AvgPowerW, &r.JPerToken, &r.PeakRSSMB}
}

// formatFloat writes milliseconds and rates with microsecond (3 decimal)
// precision, ratios and joules with 6; NaN is an empty field.
// formatFloat writes v with at least decimals decimals, and more where v
// is small, to keep three significant digits down to the sixth decimal
// (a nanosecond, in ms): the built-in engine's ITL of 36 µs written to
// the microsecond kept 3% of it, and made intervals of zero width.
func formatFloat(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', max(decimals, ThreeFigures(v)), 64)
}

// maxDecimals bounds ThreeFigures: a nanosecond in ms, a microjoule in J.
const maxDecimals = 6

// ThreeFigures is how many decimals keep three significant digits of v
// below 1 (to the sixth decimal at most); 0 for v of 1 or more, or 0.
func ThreeFigures(v float64) int {
	if a := math.Abs(v); a > 0 && a < 1 {
		return min(maxDecimals, 2-int(math.Floor(math.Log10(a))))
	}
	return 0
}

func formatCount(n int) string {
	if n < 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Fields renders the record as CSV fields in Header order.
func (r Record) Fields() []string {
	out := make([]string, 0, len(Header))
	out = append(out, r.SessionID, r.Arm, strconv.Itoa(r.Trial), r.Phase, r.Status, r.Error,
		r.StartedAt.UTC().Format(time.RFC3339Nano), strconv.Itoa(r.PromptID), formatCount(r.PromptTokens),
		formatCount(r.OutputTokens), r.StopReason)
	for _, f := range r.floatFields() {
		decimals := 3
		if f == &r.ITLCV || f == &r.EnergyJ {
			decimals = 6 // a small model's trial can be a few millijoules
		}
		out = append(out, formatFloat(*f, decimals))
	}
	out = append(out, r.EnergyQuality)
	for _, f := range r.tailFloatFields() {
		decimals := 3
		if f == &r.JPerToken {
			decimals = 6
		}
		out = append(out, formatFloat(*f, decimals))
	}
	return append(out, formatCount(r.Round), formatCount(r.Position), formatCount(r.CachedTokens),
		formatCount(r.Concurrency), formatCount(r.Stream), formatCount(r.InFlight), r.Window, r.Connection,
		formatFloat(r.TTFOMs, 3), formatCount(r.ReasoningTokens), formatCount(r.Chunks), r.ITLPer, r.Delivery,
		formatFloat(r.ScheduledMs, 3), formatFloat(r.QueueMs, 3), formatRequested(r.RequestedPromptTokens), formatRequested(r.RequestedOutputTokens), formatRequested(r.Turn),
		formatFloat(r.EnergyErrJ, 6), r.Shard, r.Host, r.Replica)
}

// formatRequested writes a requested length or a turn, empty where none
// was.
func formatRequested(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}
