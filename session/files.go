package session

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
)

// Writer writes one session's files as the run goes. Every file is
// made through root, the sessions folder: no name can lead out of it.
type Writer struct {
	manifest     *Manifest
	manifestPath string
	dir          string // the sessions folder, for errors
	root         *os.Root
	trials       *os.File
	tokens       *os.File
	row          bytes.Buffer
}

// maxStemPart bounds each part of a stem, so that a long profile name
// leaves room for the rest on every file system.
const maxStemPart = 64

// Stem names a session's files: UTC start time, profile and backend. It
// is the one place file names are made of outside text, so each part is
// reduced to what a file name can hold anywhere (FileName).
func Stem(created time.Time, profile, backend string) string {
	return fmt.Sprintf("%s-%s-%s", created.UTC().Format("20060102T150405Z"), FileName(profile), FileName(backend))
}

// FileName makes s safe as (a part of) a file name in the sessions
// folder: letters, digits, '.', '_', '+' and '-' stay, anything else
// (a separator, "..", a control character, a quote) becomes '-', no
// leading '.' or '-', at most maxStemPart bytes; "x" when nothing is
// left.
func FileName(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '+' || c == '-') {
			out[i] = '-'
		}
	}
	name := strings.TrimLeft(string(out), ".-")
	if len(name) > maxStemPart {
		name = name[:maxStemPart]
	}
	if name == "" {
		return "x"
	}
	return name
}

// Create makes the sessions folder if needed, writes the manifest with
// status running and the two CSV files with their headers. m.ID becomes
// the file stem (as FileName makes it), with a suffix if a session of
// that stem exists.
func Create(dir string, m *Manifest) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, WriteError(dir, "", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, WriteError(dir, "", err)
	}
	m.Schema = Schema
	m.Status = StatusRunning
	w := &Writer{manifest: m, root: root, dir: dir}
	// Two runs started within the same second get -2, -3, … rather than
	// failing; O_EXCL on the trials file makes the claim race-free.
	base := FileName(m.ID)
	stem := base
	for n := 2; ; n++ {
		w.trials, err = createCSV(root, stem+".trials.csv", Header)
		if err == nil || !errors.Is(err, fs.ErrExist) || n > 100 {
			break
		}
		stem = fmt.Sprintf("%s-%d", base, n)
	}
	if err != nil {
		root.Close()
		return nil, WriteError(dir, stem+".trials.csv", err)
	}
	m.ID = stem
	m.TrialsFile = stem + ".trials.csv"
	m.TokensFile = stem + ".tokens.csv"
	w.manifestPath = filepath.Join(dir, stem+".toml")
	if w.tokens, err = createCSV(root, m.TokensFile, TokensHeader); err != nil {
		w.trials.Close()
		root.Close()
		return nil, WriteError(dir, m.TokensFile, err)
	}
	if err := w.writeManifest(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func createCSV(root *os.Root, name string, header []string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write(header)
	cw.Flush()
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteBeside writes data to a new file beside the manifest at path, its
// stem with suffix (".crash.txt"), made in the manifest's folder and
// nowhere else, never over a file that is there; it returns its path.
func WriteBeside(manifest, suffix string, data []byte) (string, error) {
	root, err := os.OpenRoot(filepath.Dir(manifest))
	if err != nil {
		return "", err
	}
	defer root.Close()
	name := FileStem(manifest) + suffix
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	return filepath.Join(filepath.Dir(manifest), name), errors.Join(err, f.Sync(), f.Close())
}

// ManifestPath is where the manifest lives.
func (w *Writer) ManifestPath() string { return w.manifestPath }

// Append writes one trial's row and its chunk arrivals and syncs both
// files, so the trial survives a kill before the next one starts. Each
// file gets one write, so a kill can cut at most its final line.
func (w *Writer) Append(r Record, arrivals []metrics.Arrival) error {
	w.row.Reset()
	cw := csv.NewWriter(&w.row)
	cw.Write(r.Fields())
	cw.Flush()
	if _, err := w.trials.Write(w.row.Bytes()); err != nil {
		return WriteError(w.dir, w.manifest.TrialsFile, err)
	}
	w.row.Reset()
	tokens := 0
	prefix := []byte(csvField(r.Arm) + "," + strconv.Itoa(r.Trial) + ",")
	for _, a := range arrivals {
		tokens += a.Tokens
		w.row.Write(prefix)
		w.row.WriteString(strconv.Itoa(tokens))
		w.row.WriteByte(',')
		w.row.WriteString(strconv.FormatFloat(float64(a.At)/float64(time.Millisecond), 'f', 3, 64))
		w.row.WriteByte(',')
		if a.Reasoning {
			w.row.WriteString(KindReasoning)
		} else {
			w.row.WriteString(KindOutput)
		}
		w.row.WriteByte(',')
		for k, id := range a.IDs {
			if k > 0 {
				w.row.WriteByte(' ')
			}
			w.row.WriteString(strconv.Itoa(id))
		}
		w.row.WriteByte('\n')
	}
	if _, err := w.tokens.Write(w.row.Bytes()); err != nil {
		return WriteError(w.dir, w.manifest.TokensFile, err)
	}
	if err := w.trials.Sync(); err != nil {
		return WriteError(w.dir, w.manifest.TrialsFile, err)
	}
	if err := w.tokens.Sync(); err != nil {
		return WriteError(w.dir, w.manifest.TokensFile, err)
	}
	return nil
}

// WriteError names the file (its full path; the folder where name is
// "") a write failed on, the cause without the repeated name, and what
// to do: the folder is read-only, the disk full, or not the user's.
func WriteError(dir, name string, err error) error {
	path := filepath.Join(dir, name)
	cause := err
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		cause = pathErr.Err
	}
	todo := "choose another folder with --out"
	switch {
	case errors.Is(err, syscall.ENOSPC):
		todo = "the disk is full: free some space, or " + todo
	case errors.Is(err, syscall.EROFS):
		todo = "the folder is read-only: " + todo
	case errors.Is(err, fs.ErrPermission):
		todo = "you may not write there: " + todo
	}
	return fmt.Errorf("%s: %w; %s", path, cause, todo)
}

// csvField quotes s when CSV needs it. Arm names are restricted by the
// profile schema, so this is a guard, not a common path.
func csvField(s string) string {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write([]string{s})
	cw.Flush()
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

// Finish rewrites the manifest with its final status and summary.
func (w *Writer) Finish(status, note, stoppedBy string, summary map[string]ArmSummary) error {
	now := time.Now().UTC()
	w.manifest.Status = status
	w.manifest.StopNote = note
	w.manifest.StoppedBy = stoppedBy
	w.manifest.FinishedAt = &now
	w.manifest.Summary = summary
	return w.writeManifest()
}

func (w *Writer) writeManifest() error {
	data, err := w.manifest.encode()
	if err != nil {
		return err
	}
	if err := writeAtomicIn(w.root, filepath.Base(w.manifestPath), data); err != nil {
		return WriteError(w.dir, filepath.Base(w.manifestPath), err)
	}
	return nil
}

// AddArm adds an arm the run made as it went (the SLO search's) to the
// manifest, and writes the manifest again at once: a run killed after it
// keeps the arm, still "running".
func (w *Writer) AddArm(a ArmInfo) error {
	w.manifest.Arms = append(w.manifest.Arms, a)
	return w.writeManifest()
}

// Close closes the CSV files and the folder.
func (w *Writer) Close() error {
	return errors.Join(w.trials.Close(), w.tokens.Close(), w.root.Close())
}

// ServerHeader is the server metrics CSV's header: when (ms on the
// scraper's clock), which server (its index in the manifest's
// [[server_metrics.servers]]), and one series: its metric, labels and
// value. tokentop's own common series (telemetry.Common*) are rows too.
var ServerHeader = []string{"t_ms", "server", "metric", "labels", "value"}

// ServerWriter appends scrapes to <stem>.server.csv, from the scraper's
// goroutine.
type ServerWriter struct {
	mu   sync.Mutex
	file *os.File
	row  bytes.Buffer
}

// CreateServerMetrics creates the session's server metrics CSV, names it
// in info and puts a copy of info in the manifest.
func (w *Writer) CreateServerMetrics(info *ServerMetricsInfo) (*ServerWriter, error) {
	info.File = w.manifest.ID + ".server.csv"
	f, err := createCSV(w.root, info.File, ServerHeader)
	if err != nil {
		return nil, WriteError(w.dir, info.File, err)
	}
	inManifest := *info
	inManifest.Servers = slices.Clone(info.Servers) // info's change as the run goes
	w.manifest.ServerMetrics = &inManifest
	if err := w.writeManifest(); err != nil {
		f.Close()
		return nil, err
	}
	return &ServerWriter{file: f}, nil
}

// NoteMemory adds to target's rss_process (and the run's, for one
// target) what became of the process whose memory was measured: a
// restart, or the trials from which it was not measured.
func (w *Writer) NoteMemory(target int, history string) {
	if target >= len(w.manifest.Targets) || history == "" {
		return
	}
	t := &w.manifest.Targets[target]
	t.RSSProcess += "; " + history
	if len(w.manifest.Targets) == 1 && w.manifest.Power != nil {
		w.manifest.Power.RSSProcess = t.RSSProcess
	}
}

// SetStartLate records how late after --start-at the first timed block
// began (ShardInfo.StartLateMs).
func (w *Writer) SetStartLate(ms float64) {
	if w.manifest.Shard != nil {
		w.manifest.Shard.StartLateMs = ms
	}
}

// SetServerMetrics records how the scraping went, for the final
// manifest.
func (w *Writer) SetServerMetrics(info *ServerMetricsInfo) { w.manifest.ServerMetrics = info }

// Append writes one scrape's series. A server's names and labels are its
// own text: bounded and cleaned.
func (s *ServerWriter) Append(server int, at time.Duration, series []telemetry.ServerSeries) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.row.Reset()
	cw := csv.NewWriter(&s.row)
	t := strconv.FormatFloat(float64(at)/float64(time.Millisecond), 'f', 3, 64)
	for _, x := range series {
		cw.Write([]string{t, strconv.Itoa(server), untrusted.Line(x.Metric), untrusted.Line(x.Labels), strconv.FormatFloat(x.Value, 'g', -1, 64)})
	}
	cw.Flush()
	_, err := s.file.Write(s.row.Bytes())
	return err
}

// Close syncs and closes the server metrics CSV.
func (s *ServerWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.file.Sync()
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// PowerHeader is the power CSV's header: DESIGN.md's columns, then the
// boundary fields read at trial starts and ends, then the instantaneous
// power where the device reads it apart from power_w.
var PowerHeader = []string{"t_ms", "power_w", "energy_mj", "gpu_util_pct", "temp_c", "device",
	"sm_clock_mhz", "mem_used_mb", "throttle_reasons", "event", "power_instant_w"}

// PowerWriter appends telemetry samples to <stem>.power.csv. The sampler
// writes from its own goroutine, so it has its own file and buffer.
type PowerWriter struct {
	mu   sync.Mutex
	file *os.File
	row  bytes.Buffer
	ids  []string // device IDs by index
}

// CreatePower creates the session's power CSV and names it in the
// manifest's [power] table; deviceIDs name the samples' devices by index.
func (w *Writer) CreatePower(deviceIDs []string) (*PowerWriter, error) {
	if w.manifest.Power == nil {
		w.manifest.Power = &PowerInfo{}
	}
	name := w.manifest.ID + ".power.csv"
	f, err := createCSV(w.root, name, PowerHeader)
	if err != nil {
		return nil, WriteError(w.dir, name, err)
	}
	w.manifest.Power.PowerFile = name
	if err := w.writeManifest(); err != nil {
		f.Close()
		return nil, err
	}
	return &PowerWriter{file: f, ids: deviceIDs}, nil
}

// Append writes one sample. It is not synced: a sample is worth less
// than the cost of an fsync 20 times a second, and a killed process still
// leaves what it wrote in the page cache.
func (p *PowerWriter) Append(s telemetry.Sample) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.row.Reset()
	cw := csv.NewWriter(&p.row)
	cw.Write([]string{strconv.FormatFloat(float64(s.At)/float64(time.Millisecond), 'f', 3, 64),
		formatFloat(s.PowerW, 3), formatFloat(s.EnergyMJ, 3), formatFloat(s.UtilPct, 3), formatFloat(s.TempC, 3), p.ids[s.Device],
		formatFloat(s.SMClockMHz, 3), formatFloat(s.MemUsedMB, 3), s.Throttle, s.Event, formatFloat(s.PowerInstantW, 3)})
	cw.Flush()
	_, err := p.file.Write(p.row.Bytes())
	return err
}

// Close syncs and closes the power CSV.
func (p *PowerWriter) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.file.Sync()
	if cerr := p.file.Close(); err == nil {
		err = cerr
	}
	return err
}
