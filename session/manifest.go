package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics/telemetry"
)

// Schema is the manifest format version. Schema 2 lists [[targets]] and
// names each arm's; schema 1 had one [backend] table for every arm, and
// is still read (ReadManifest moves it into Targets).
const Schema = 2

// Session statuses.
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusPartial  = "partial"
	StatusFailed   = "failed"
)

// Manifest is the <stem>.toml file. It never holds a secret.
type Manifest struct {
	Schema      int        `toml:"schema"`
	ID          string     `toml:"id"`
	ToolVersion string     `toml:"tool_version"`
	Status      string     `toml:"status"`
	CreatedAt   time.Time  `toml:"created_at"`
	FinishedAt  *time.Time `toml:"finished_at,omitempty"`
	ConfigHash  string     `toml:"config_hash"`
	TrialsFile  string     `toml:"trials_file"`
	TokensFile  string     `toml:"tokens_file"`
	// StopNote says why a run ended early (interrupted, all arms stopped).
	StopNote string `toml:"stop_note,omitempty"`
	// StoppedBy says what ended the timed trials of a study that ran its
	// plan: every arm within the stop rule's target, or the cap first.
	StoppedBy string      `toml:"stopped_by,omitempty"`
	Profile   ProfileInfo `toml:"profile"`
	// Backend is schema 1's one target; ReadManifest moves it into
	// Targets, so it is nil in every manifest read or written.
	Backend     *TargetInfo  `toml:"backend,omitempty"`
	Targets     []TargetInfo `toml:"targets"`
	Environment Environment  `toml:"environment"`
	Power       *PowerInfo   `toml:"power,omitempty"`
	// ServerMetrics is what the servers' own Prometheus metrics gave;
	// nil where no target is a server or scraping was off.
	ServerMetrics *ServerMetricsInfo    `toml:"server_metrics,omitempty"`
	Arms          []ArmInfo             `toml:"arms"`
	Summary       map[string]ArmSummary `toml:"summary,omitempty"`
	// Shard is this session's share of a run that several load
	// generators ran together (--shard), or when it was told to start
	// (--start-at); nil for neither. Shards are a merged session's
	// shards, one each (tokentop merge), and MergedFrom their manifests.
	Shard      *ShardInfo  `toml:"shard,omitempty"`
	Shards     []ShardInfo `toml:"shards,omitempty"`
	MergedFrom []string    `toml:"merged_from,omitempty" untrusted:"text"`
}

// ShardInfo is where and when one load generator ran its share: its
// index of Count (0: not sharded), its host, the instant every shard was
// told to begin its first timed block and how late this one did, and
// what its kernel said of its clock. A merged session's shards add the
// manifest each came from and its status.
type ShardInfo struct {
	Index       int        `toml:"index"`
	Count       int        `toml:"count"`
	Host        string     `toml:"host" untrusted:"text"`
	StartAt     *time.Time `toml:"start_at,omitempty"`
	StartLateMs float64    `toml:"start_late_ms"`
	Clock       ClockInfo  `toml:"clock"`
	Manifest    string     `toml:"manifest,omitempty" untrusted:"text"`
	Status      string     `toml:"status,omitempty"`
}

// ClockInfo is the kernel's account of a machine's clock (Linux's
// adjtimex): whether it is known at all, whether NTP, chrony or PTP keeps
// it synchronized, and its maximum and estimated error.
type ClockInfo struct {
	Known      bool    `toml:"known"`
	Synced     bool    `toml:"synced"`
	MaxErrorMs float64 `toml:"max_error_ms"`
	EstErrorMs float64 `toml:"est_error_ms"`
}

// ProfileInfo is the resolved plan as it ran (after CLI overrides).
type ProfileInfo struct {
	Name        string   `toml:"name"`
	Source      string   `toml:"source"`
	Description string   `toml:"description,omitempty"`
	MaxTokens   int      `toml:"max_tokens"`
	Warmup      int      `toml:"warmup"`
	Trials      int      `toml:"trials"`
	Timeout     string   `toml:"timeout"`
	Order       string   `toml:"order"`
	Seed        int64    `toml:"seed"`
	USDPerHour  float64  `toml:"usd_per_hour,omitzero"`
	Prompts     []string `toml:"prompts" untrusted:"text"`
	// PromptsFile is the file the prompts were drawn from, in place of
	// Prompts.
	PromptsFile *PromptsFileInfo `toml:"prompts_file,omitempty"`
	// ThinkTime is a multi-turn run's pause before each turn after the
	// first, outside every measurement.
	ThinkTime string `toml:"think_time,omitempty"`
	// Lengths are the lengths in tokens asked (input_tokens,
	// output_tokens); nil where none was.
	Lengths *LengthsInfo `toml:"lengths,omitempty"`
	// Stop is the early-stopping rule, when one was on.
	Stop *StopInfo `toml:"stop,omitempty"`
	// PromptCache is whether servers were allowed to reuse cached
	// prompts; FixedLength whether trials ignored the end of sequence.
	PromptCache bool `toml:"prompt_cache"`
	FixedLength bool `toml:"fixed_length"`
	// Load is how a load run ran its requests; nil for one trial at a time.
	Load *LoadInfo `toml:"load,omitempty"`
}

// LoadInfo describes a load run: the concurrency levels (a sweep when
// several), the together group, the SLO, and what per-request figures
// mean when requests overlap.
type LoadInfo struct {
	Levels []int `toml:"levels,omitempty"`
	// Rates are an open loop's request rates per arm (requests per
	// second), Arrival its process, Burstiness gamma's shape and
	// MaxConcurrency the cap on requests in flight (0: none); each block's
	// schedule is seeded by its arm's seed and its round.
	Rates            []float64 `toml:"rates,omitempty"`
	Arrival          string    `toml:"arrival,omitempty"`
	Burstiness       float64   `toml:"burstiness,omitzero"`
	MaxConcurrency   int       `toml:"max_concurrency,omitzero"`
	RequestsPerBlock string    `toml:"requests_per_block,omitempty"`
	// Trace is the trace every arm replayed; nil for a rate or a
	// closed loop.
	Trace             *TraceInfo `toml:"trace,omitempty"`
	Together          []string   `toml:"together,omitempty"`
	RequestsPerStream int        `toml:"requests_per_stream,omitempty"`
	// Duration is the steady time each arm ran for, in place of the
	// profile's trial count; empty when the count ended them.
	Duration string   `toml:"duration,omitempty"`
	SLO      *SLOInfo `toml:"slo,omitempty"`
	// Energy says how energy and memory were measured.
	Energy string `toml:"energy"`
}

// TraceInfo is a replayed trace: its file and digest, its requests, the
// speed it was replayed at, and how its prompts were made.
type TraceInfo struct {
	File     string  `toml:"file"`
	SHA256   string  `toml:"sha256"`
	Requests int     `toml:"requests"`
	Speed    float64 `toml:"speed"`
	Prompts  string  `toml:"prompts"`
}

// PromptsFileInfo is a prompts file as a run drew from it: its path and
// digest, its format and count, and how trials drew its prompts.
type PromptsFileInfo struct {
	File     string `toml:"file"`
	SHA256   string `toml:"sha256"`
	Format   string `toml:"format"`
	Prompts  int    `toml:"prompts"`
	Sampling string `toml:"sampling"`
	// Conversations counts a multi-turn run's conversations, whose turns
	// Prompts counts.
	Conversations int `toml:"conversations,omitzero"`
	// LeftOut counts a ShareGPT file's conversations with no human turn,
	// which give no prompt.
	LeftOut int `toml:"left_out,omitzero"`
}

// ServerMetricsInfo is the scraping of the servers' own metrics: the
// CSV (empty where no server answered), its cadence and clock, and each
// server's address and what came of it.
type ServerMetricsInfo struct {
	File       string                `toml:"file,omitempty"`
	IntervalMs float64               `toml:"interval_ms"`
	StartedAt  *time.Time            `toml:"started_at,omitempty"` // t_ms = 0 in the CSV
	Servers    []ServerMetricsSource `toml:"servers"`
}

// ServerMetricsSource is one server scraped: the targets it serves, where
// its metrics were asked for, and "scraped" or why it gave none.
type ServerMetricsSource struct {
	Targets []string `toml:"targets"`
	URL     string   `toml:"url"`
	Status  string   `toml:"status"`
	// Over the run, from the first scrape to the last, where the server
	// says: the tokens it generated (summed across its restarts) and
	// their rate over that span, the share of prompt tokens its prefix
	// cache served, and the most requests it ran and queued and the most
	// of its KV cache in use (a share). Restarts counts the times its
	// counters went back to zero, FailedReads the reads that failed after
	// its first good one, LastReadFailed whether the run's last did: with
	// any, the totals are lower bounds (LowerBound).
	TokensGenerated float64 `toml:"tokens_generated,omitzero"`
	TokensPerSecond float64 `toml:"tokens_per_second,omitzero"`
	Restarts        int     `toml:"restarts,omitzero"`
	FailedReads     int     `toml:"failed_reads,omitzero"`
	LastReadFailed  bool    `toml:"last_read_failed,omitempty"`
	PrefixHitRate   float64 `toml:"prefix_hit_rate,omitzero"`
	PeakRunning     float64 `toml:"peak_running,omitzero"`
	PeakWaiting     float64 `toml:"peak_waiting,omitzero"`
	PeakKVCache     float64 `toml:"peak_kv_cache,omitzero"`
}

// LowerBound says the server's totals may miss what it counted between a
// good read and a restart or its end: a restart was seen, or a read
// failed (a restart whose count overtook the old one by the next good
// read looks like none).
func (s ServerMetricsSource) LowerBound() bool { return s.Restarts > 0 || s.FailedReads > 0 }

// LengthsInfo is how a run set lengths in tokens: the input and output
// lengths asked (a number or a distribution), how many prompts were made
// (trials past them reuse them in turn), how each target's prompts were
// made, and the targets that could not be told to generate the whole
// output length (their output_tokens may fall short).
type LengthsInfo struct {
	InputTokens     string   `toml:"input_tokens,omitempty"`
	OutputTokens    string   `toml:"output_tokens,omitempty"`
	Prompts         int      `toml:"prompts"`
	Tokenizers      []string `toml:"tokenizers,omitempty"`
	OutputNotForced []string `toml:"output_not_forced,omitempty"`
	// PrefixTokens and PrefixGroups are a shared-prefix workload's: each
	// prompt opened with one of that many system prompts of that length.
	PrefixTokens int `toml:"prefix_tokens,omitzero"`
	PrefixGroups int `toml:"prefix_groups,omitzero"`
	// Turns is a synthetic conversation's user turns, each input_tokens
	// long, the replies in its history output_tokens (or max_tokens) long.
	Turns int `toml:"turns,omitzero"`
}

// SLOInfo bounds each request's latencies (0: not bounded); Goodput is the
// share of requests a level must keep within them.
type SLOInfo struct {
	TTFTMs  float64 `toml:"ttft_ms,omitzero"`
	ITLMs   float64 `toml:"itl_ms,omitzero"`
	E2EMs   float64 `toml:"e2e_ms,omitzero"`
	Goodput float64 `toml:"goodput"`
}

// StopInfo is the stop rule as it ran: stop an arm once the 95% confidence
// sequence of its e2e statistic is within ±UntilCI, from MinTrials on.
type StopInfo struct {
	UntilCI   float64 `toml:"until_ci"`
	Statistic string  `toml:"statistic"`
	MinTrials int     `toml:"min_trials"`
}

// TargetInfo is what was asked of one target (a backend, its address,
// model and tuning) and what it reported.
type TargetInfo struct {
	// Name is what the arms call the target: the backend kind, or the
	// kind and an arm's name where kinds repeat.
	Name string `toml:"name,omitempty"`
	Kind string `toml:"kind"`
	URL  string `toml:"url"`
	// Replicas are a fleet's addresses, URL first, as shown: the trials
	// CSV's replica column indexes them. Empty for one server.
	Replicas       []string `toml:"replicas,omitempty" untrusted:"text"`
	Endpoint       string   `toml:"endpoint,omitempty"`
	ModelRequested string   `toml:"model_requested"`
	ModelActual    string   `toml:"model_actual"`
	Digest         string   `toml:"digest"`
	Quantization   string   `toml:"quantization"`
	ServerVersion  string   `toml:"server_version"`
	// DType and Threads are what an in-process engine was asked for.
	DType   string `toml:"dtype,omitempty"`
	Threads int    `toml:"threads,omitempty"`
	// Options are what was sent to the server with every request.
	Options map[string]any `toml:"options,omitempty"`
	// PromptCache is schema 1's word on the prompt cache; ArmInfo's since.
	PromptCache string `toml:"prompt_cache,omitempty"`
	// RSSProcess says whose memory the peak_rss_mb of this target's arms
	// is (PowerInfo.RSSProcess for schema 1).
	RSSProcess string `toml:"rss_process,omitempty"`
	// Details holds backend-specific facts, e.g. the builtin engine's shape,
	// weight source, threads and load time.
	Details map[string]string `toml:"details,omitempty"`
	// Reasoning says how a reasoning model's thinking was told from its
	// output in this target's streams (backends.Kind.ReasoningRule).
	Reasoning string `toml:"reasoning,omitempty"`
}

// Model is the model the target served, or the one asked for when it did
// not say.
func (t TargetInfo) Model() string {
	if t.ModelActual != "" {
		return t.ModelActual
	}
	return t.ModelRequested
}

// Environment describes the machine tokentop ran on.
type Environment struct {
	OS        string `toml:"os"`
	Arch      string `toml:"arch"`
	Kernel    string `toml:"kernel"`
	CPUModel  string `toml:"cpu_model"`
	Cores     int    `toml:"cores"`
	MemoryMB  int64  `toml:"memory_mb"`
	GoVersion string `toml:"go_version"`
	Hostname  string `toml:"hostname"`
	// VCSRevision is the commit tokentop was built from, with "+dirty"
	// when the tree had changes.
	VCSRevision string              `toml:"vcs_revision,omitempty"`
	GPUs        []telemetry.GPUInfo `toml:"gpus,omitempty"`
	Driver      string              `toml:"nvidia_driver,omitempty"`
	CUDADriver  string              `toml:"cuda_driver,omitempty"`
}

// PowerInfo is the [power] table: what telemetry could see and the idle
// baseline each device's energy is measured above.
type PowerInfo struct {
	GPU string `toml:"gpu"` // "1 NVIDIA GPU through NVML", or why none
	CPU string `toml:"cpu"` // "CPU package energy through powercap (…)", or why none
	// EnergySource is the kind of device the trials' energy columns sum:
	// the NVIDIA GPUs where there are any, else a whole Apple chip
	// (powermetrics), else the CPU packages.
	EnergySource string             `toml:"energy_source,omitempty"`
	IntervalMs   float64            `toml:"interval_ms,omitzero"`
	PowerFile    string             `toml:"power_file,omitempty"`
	SamplerStart *time.Time         `toml:"sampler_started_at,omitempty"` // t_ms = 0 in the power CSV
	Devices      []telemetry.Device `toml:"devices,omitempty"`
	Baseline     []DeviceBaseline   `toml:"baseline,omitempty"`
	// BaselineAfter is each device's idle power measured again after the
	// last trial, and DriftW how far the energy devices' idle moved
	// between the two, summed: a trial's net energy may be off by DriftW
	// times its length (the idle baseline it subtracts is the one before
	// the run). NaN (absent in older files) where it was not measured.
	BaselineAfter []DeviceBaseline `toml:"baseline_after,omitempty"`
	DriftW        float64          `toml:"baseline_drift_w,omitempty"`
	// RSSProcess says whose memory peak_rss_mb is.
	RSSProcess string `toml:"rss_process"`
	// RSSAtStartMB is that process's resident memory before the first
	// trial, after the probe: for the built-in engine, the loaded model.
	RSSAtStartMB float64 `toml:"rss_at_start_mb,omitempty"`
}

// DeviceBaseline is one device's idle power before the first trial.
type DeviceBaseline struct {
	ID string `toml:"id"`
	telemetry.Baseline
}

// ArmInfo is one arm's sampling settings and the target it ran on.
type ArmInfo struct {
	Name        string  `toml:"name"`
	Strategy    string  `toml:"strategy"`
	Temperature float64 `toml:"temperature"`
	TopK        int     `toml:"top_k"`
	TopP        float64 `toml:"top_p"`
	MinP        float64 `toml:"min_p"`
	Seed        int64   `toml:"seed"`
	// Target names one of the manifest's [[targets]].
	Target string `toml:"target"`
	// PromptCache says what became of the server's prompt cache for the
	// arm's requests.
	PromptCache string `toml:"prompt_cache,omitempty"`
	// Base is the profile arm a load run's arm derives from, Concurrency
	// its level (an open loop's cap in flight), Rate an open loop's
	// requests per second and Mode, in a together group, "alone" or
	// "together".
	Base        string  `toml:"base,omitempty"`
	Concurrency int     `toml:"concurrency,omitempty"`
	Rate        float64 `toml:"rate,omitzero"`
	Mode        string  `toml:"mode,omitempty"`
	// Searched marks an arm the SLO search added at a rate between two
	// it had run.
	Searched bool `toml:"searched,omitempty"`
	// Think is the arm's thinking switch ("true", "false" or an effort;
	// empty: the server's default) and ThinkSent how its server was told.
	Think     string `toml:"think,omitempty"`
	ThinkSent string `toml:"think_sent,omitempty"`
}

// TargetOf is the target arm ran on; the zero TargetInfo when the manifest
// does not say (an arm missing from it).
func (m *Manifest) TargetOf(arm string) TargetInfo {
	for _, a := range m.Arms {
		if a.Name != arm {
			continue
		}
		for _, t := range m.Targets {
			if t.Name == a.Target {
				return t
			}
		}
	}
	return TargetInfo{}
}

// Concurrency is how many requests arm ran at once: its level in a load
// run, else 1.
func (m *Manifest) Concurrency(arm string) int {
	a, _ := m.Arm(arm)
	return max(1, a.Concurrency)
}

// Arm is the named arm's settings, and whether the manifest has it.
func (m *Manifest) Arm(name string) (ArmInfo, bool) {
	for _, a := range m.Arms {
		if a.Name == name {
			return a, true
		}
	}
	return ArmInfo{}, false
}

// Kinds lists the backend kinds of the targets, each once, in order.
func (m *Manifest) Kinds() []string {
	var kinds []string
	for _, t := range m.Targets {
		if !slices.Contains(kinds, t.Kind) {
			kinds = append(kinds, t.Kind)
		}
	}
	return kinds
}

// upgrade moves a schema 1 manifest's one [backend] into Targets.
func (m *Manifest) upgrade() {
	if m.Backend == nil {
		return
	}
	t := *m.Backend
	t.Name = t.Kind
	if m.Power != nil {
		t.RSSProcess = m.Power.RSSProcess
	}
	m.Targets, m.Backend = []TargetInfo{t}, nil
	for i := range m.Arms {
		m.Arms[i].Target, m.Arms[i].PromptCache = t.Name, t.PromptCache
	}
}

// WriteAtomic writes data to path through a temp file, fsync and rename,
// then fsyncs the folder, so a reader sees the old or the new file whole.
func WriteAtomic(path string, data []byte) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	return writeAtomicIn(root, filepath.Base(path), data)
}

// writeAtomicIn is WriteAtomic for the file name in root's folder.
func writeAtomicIn(root *os.Root, name string, data []byte) error {
	var tmp *os.File
	var tmpName string
	for {
		var err error
		tmpName = fmt.Sprintf(".%s.%d.tmp", name, rand.Uint32())
		// 0644: a file meant for sharing must not be kept from its readers.
		if tmp, err = root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			break
		} else if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	defer root.Remove(tmpName)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := replaceFile(root, tmpName, name); err != nil {
		return err
	}
	if d, err := root.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func (m *Manifest) encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(m); err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadManifest reads and checks a manifest file.
func ReadManifest(path string) (*Manifest, error) {
	m, err := readManifest(path)
	if err != nil {
		return nil, &BadInputError{err}
	}
	return m, nil
}

// BadInputError is an error in what the user named: a manifest that is
// not there, or not a session's. Commands exit 2 on it (bad input), as
// on a bad flag, and 1 on a failure met reading a session that is one.
type BadInputError struct{ Err error }

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

func readManifest(path string) (*Manifest, error) {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		stem := strings.TrimSuffix(path, filepath.Ext(path))
		for _, kind := range []string{".trials", ".tokens", ".power"} {
			stem = strings.TrimSuffix(stem, kind)
		}
		return nil, fmt.Errorf("%s is one of a session's CSV files; name its manifest, %s.toml, which lists them", path, stem)
	}
	var m Manifest
	md, err := toml.DecodeFile(path, &m)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
		}
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) { // its own words name the path again
			err = pathErr.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !md.IsDefined("schema") {
		return nil, fmt.Errorf("%s: no schema key: this TOML file is not a tokentop session manifest (a session is the .toml that `tokentop run` saved)", path)
	}
	if m.Schema < 1 || m.Schema > Schema {
		return nil, fmt.Errorf("%s: schema %d is not one this tokentop reads (it reads schemas 1 to %d); a newer tokentop wrote it", path, m.Schema, Schema)
	}
	m.upgrade()
	// Everything in it is shown and printed: a hand-made or hostile
	// manifest's escapes go no further than here.
	untrusted.CleanAll(&m)
	if m.TrialsFile == "" {
		return nil, fmt.Errorf("%s: no trials_file; is this a tokentop session manifest?", path)
	}
	return &m, nil
}
