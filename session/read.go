package session

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// Session is a session read back from disk.
type Session struct {
	Path     string
	Manifest *Manifest
	Records  []Record
	// Warnings are problems that did not stop the read, e.g. a final CSV
	// line cut by a kill, or a corrupt row skipped.
	Warnings []string
}

// Load reads a manifest and the trials CSV it names.
func Load(manifestPath string) (*Session, error) {
	m, err := ReadManifest(manifestPath)
	if err != nil {
		return nil, err
	}
	s := &Session{Path: manifestPath, Manifest: m}
	trialsPath := filepath.Join(filepath.Dir(manifestPath), filepath.Base(m.TrialsFile))
	data, err := os.ReadFile(trialsPath)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", manifestPath, err)
	}
	s.Records, s.Warnings, err = ParseTrials(trialsPath, data)
	if err != nil {
		return nil, err
	}
	s.Warnings = append(s.Warnings, inferArms(m, s.Records)...)
	// A manifest still "running" is not a read problem: SessionCaveats and
	// the comparison's caveats say it, once.
	return s, nil
}

// loadArmName is a load arm's name: its base arm, then a rate (with the
// repeat of an SLO search's run again) or a number of streams.
var loadArmName = regexp.MustCompile(`^(.+)@(?:r([0-9.]+(?:e[+-]?[0-9]+)?)(?:-([0-9]+))?|c([0-9]+))$`)

// inferArms adds to m the arms that have rows in the trials CSV but not in
// the manifest: a run killed before it saved an arm it made as it went
// (an SLO search's rate) leaves it there. A load arm's level is read from
// its name; each arm added is said in a warning.
func inferArms(m *Manifest, records []Record) []string {
	var warnings []string
	for _, r := range records {
		if slices.ContainsFunc(m.Arms, func(a ArmInfo) bool { return a.Name == r.Arm }) {
			continue
		}
		a := ArmInfo{Name: r.Arm}
		if parts := loadArmName.FindStringSubmatch(r.Arm); parts != nil {
			a.Base = parts[1]
			if parts[4] != "" {
				a.Concurrency, _ = strconv.Atoi(parts[4])
			} else {
				a.Rate, _ = strconv.ParseFloat(parts[2], 64)
				a.Searched = parts[3] != "" || m.Profile.Load == nil || !slices.Contains(m.Profile.Load.Rates, a.Rate)
				if m.Profile.Load != nil {
					a.Concurrency = m.Profile.Load.MaxConcurrency
				}
			}
		}
		m.Arms = append(m.Arms, a)
		warnings = append(warnings, fmt.Sprintf("arm %s has rows in the trials CSV but is not in the manifest (the run was killed before it saved it): read from its rows, its level from its name", r.Arm))
	}
	return warnings
}

// ParseTrials reads a trials CSV. name is used in messages. tokentop ends
// every row with a newline, so a final line without one was cut by a kill
// mid-write: it is dropped with a warning even if what is left parses.
// Any other bad line (a disk error, a hand edit) is skipped with a warning
// naming its line, so one bad row does not cost the session's others; a
// file with no good row is an error naming the first bad one.
func ParseTrials(name string, data []byte) ([]Record, []string, error) {
	var records []Record
	// A trial is one row: a copy of it (a hand-made or damaged file)
	// would be counted twice.
	type key struct {
		arm   string
		trial int
	}
	seen := map[key]bool{}
	warnings, err := parseRows(name, data, csvKind{"trials", Header, baseColumns, "this trial is left out"}, func(field func(int) string) error {
		rec, err := parseRecord(field)
		if err != nil {
			return err
		}
		k := key{rec.Arm, rec.Trial}
		if seen[k] {
			return fmt.Errorf("trial %d of arm %s appears on an earlier line too", rec.Trial, untrusted.Line(rec.Arm))
		}
		seen[k] = true
		records = append(records, rec)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return records, warnings, nil
}

// csvKind describes one of the session's CSV files for parseRows.
type csvKind struct {
	name     string   // "trials", "tokens"
	header   []string // the columns tokentop writes
	required int      // the first required columns must be there; later ones may be missing (older files)
	leftOut  string   // what a skipped row costs, for its warning
}

// parseRows reads a CSV of kind row by row, its columns found by name
// (unknown ones, from newer files, are skipped), calling row with each
// line's fields. The rules are ParseTrials': a cut last line and bad rows
// are skipped with warnings, and no good row at all is an error.
func parseRows(name string, data []byte, kind csvKind, row func(field func(col int) string) error) ([]string, error) {
	var warnings []string
	// A file saved by a spreadsheet or an editor on Windows may start
	// with a byte order mark; it is no part of the first column's name.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if n := len(data); n > 0 && data[n-1] != '\n' {
		cut := bytes.LastIndexByte(data, '\n')
		if cut < 0 {
			return nil, fmt.Errorf("%s:1: the header line is incomplete; this file holds no %s", name, kind.name)
		}
		data = data[:cut+1]
		warnings = append(warnings, fmt.Sprintf("%s:%d: last line is incomplete (the run was killed while writing it); ignored",
			name, bytes.Count(data, []byte("\n"))+1))
	}
	newReader := func(data []byte) *csv.Reader {
		cr := csv.NewReader(bytes.NewReader(data))
		cr.FieldsPerRecord = -1
		cr.ReuseRecord = true
		return cr
	}
	cr := newReader(data)
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file; expected the %s header", name, kind.name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cols, err := readHeader(header, kind)
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w", name, err)
	}
	width := len(header)
	good := 0
	var bad []error
	linesBefore := 0 // lines of data before cr's first: cr starts again after a line it cannot read
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			break
		}
		if perr := parseError(err); perr != nil {
			// A stray or unclosed quote would swallow every line after it
			// into one field: this line is bad, and reading goes on at the
			// next one.
			start := linesBefore + perr.StartLine
			bad = append(bad, fmt.Errorf("%s:%d: %s", name, start, quoteWords(perr)))
			next := lineStart(data, start+1)
			if next >= len(data) {
				break
			}
			cr, linesBefore = newReader(data[next:]), start
			continue
		}
		if err == nil && len(fields) != width {
			err = fmt.Errorf("%d fields, expected %d", len(fields), width)
		}
		if err == nil {
			err = row(func(col int) string {
				if cols[col] < 0 {
					return ""
				}
				// Every field is shown or printed somewhere.
				return untrusted.Line(fields[cols[col]])
			})
		}
		if err == nil {
			good++
			continue
		}
		line, _ := cr.FieldPos(0)
		bad = append(bad, fmt.Errorf("%s:%d: %w", name, linesBefore+line, err))
	}
	if len(bad) > 0 && good == 0 {
		return warnings, bad[0]
	}
	const listed = 3
	for i, err := range bad[:min(len(bad), listed)] {
		more := ""
		if i == listed-1 && len(bad) > listed {
			more = fmt.Sprintf(" (and %d more bad lines)", len(bad)-listed)
		}
		warnings = append(warnings, fmt.Sprintf("%v; %s%s", err, kind.leftOut, more))
	}
	return warnings, nil
}

// parseError is err as the CSV reader's own error, or nil; apart from
// the loop, so that a row read cleanly costs no allocation for it.
func parseError(err error) *csv.ParseError {
	if err == nil {
		return nil
	}
	var perr *csv.ParseError
	if !errors.As(err, &perr) {
		return nil
	}
	return perr
}

// quoteWords says what is wrong with a line the CSV reader could not
// read, in words.
func quoteWords(perr *csv.ParseError) string {
	switch {
	case errors.Is(perr.Err, csv.ErrQuote) && perr.Line > perr.StartLine:
		return "a quoted field opens on this line and is never closed (the lines after it are read on their own)"
	case errors.Is(perr.Err, csv.ErrQuote), errors.Is(perr.Err, csv.ErrBareQuote):
		return fmt.Sprintf("a stray quote at column %d", perr.Column)
	}
	return perr.Err.Error()
}

// lineStart is the offset in data of line n (from 1), or len(data) when
// data has fewer lines.
func lineStart(data []byte, n int) int {
	at := 0
	for line := 1; line < n; line++ {
		i := bytes.IndexByte(data[at:], '\n')
		if i < 0 {
			return len(data)
		}
		at += i + 1
	}
	return at
}

// columns maps each known column of a kind's header to its index in a
// file's header, or -1 when the file does not have it.
type columns []int

// readHeader finds the columns by name. Every one of the kind's required
// columns must be there; the later ones may be missing (older files), and
// unknown columns (newer files) are skipped.
func readHeader(header []string, kind csvKind) (columns, error) {
	at := map[string]int{}
	for i, name := range header {
		if _, dup := at[name]; dup {
			return nil, fmt.Errorf("header column %d, %q, appears twice", i+1, name)
		}
		at[name] = i
	}
	cols := make(columns, len(kind.header))
	for i, name := range kind.header {
		j, ok := at[name]
		if !ok && i < kind.required {
			return nil, fmt.Errorf("header has no %q column; this is not a tokentop %s CSV (or it is from another version)", name, kind.name)
		}
		if !ok {
			j = -1
		}
		cols[i] = j
	}
	return cols, nil
}

func parseRecord(field func(col int) string) (Record, error) {
	r := Record{SessionID: field(0), Arm: field(1), Phase: field(3), Status: field(4), Error: field(5), StopReason: field(10), EnergyQuality: field(26)}
	var err error
	fail := func(col int, e error) (Record, error) {
		return Record{}, fmt.Errorf("column %s: %q: %w", Header[col], field(col), e)
	}
	if r.Trial, err = strconv.Atoi(field(2)); err != nil {
		return fail(2, err)
	}
	if r.Trial < 1 {
		return fail(2, errors.New("trials are numbered from 1"))
	}
	if r.Phase != PhaseWarmup && r.Phase != PhaseTimed {
		return fail(3, errors.New("phase must be warmup or timed"))
	}
	switch r.Status {
	case StatusOK, StatusError, StatusTimeout, StatusCanceled:
	default:
		return fail(4, errors.New("status must be ok, error, timeout or canceled"))
	}
	if r.StartedAt, err = time.Parse(time.RFC3339Nano, field(6)); err != nil {
		return fail(6, err)
	}
	if r.PromptID, err = strconv.Atoi(field(7)); err != nil {
		return fail(7, err)
	}
	for i, dst := range []*int{&r.PromptTokens, &r.OutputTokens} {
		if *dst, err = parseCount(field(8 + i)); err != nil {
			return fail(8+i, err)
		}
	}
	for i, dst := range r.floatFields() {
		if *dst, err = parseMeasure(field(11+i), Header[11+i]); err != nil {
			return fail(11+i, err)
		}
	}
	for i, dst := range r.tailFloatFields() {
		if *dst, err = parseMeasure(field(27+i), Header[27+i]); err != nil {
			return fail(27+i, err)
		}
	}
	for i, dst := range []*int{&r.Round, &r.Position, &r.CachedTokens, &r.Concurrency, &r.Stream, &r.InFlight} {
		if *dst, err = parseCount(field(baseColumns + i)); err != nil {
			return fail(baseColumns+i, err)
		}
	}
	r.Round, r.Position = max(r.Round, 0), max(r.Position, 0)
	r.Concurrency, r.Stream, r.InFlight = max(r.Concurrency, 0), max(r.Stream, 0), max(r.InFlight, 0)
	windowCol := baseColumns + 6
	switch r.Window = field(windowCol); r.Window {
	case "", WindowRamp, WindowSteady, WindowDrain:
	default:
		return fail(windowCol, errors.New("window must be ramp, steady, drain or empty"))
	}
	switch r.Connection = field(windowCol + 1); r.Connection {
	case "", backends.ConnectionNew, backends.ConnectionReused, backends.ConnectionResent, backends.ConnectionNone:
	default:
		return fail(windowCol+1, errors.New("connection must be new, reused, resent, none or empty"))
	}
	ttfoCol := windowCol + 2
	if r.TTFOMs, err = parseMeasure(field(ttfoCol), Header[ttfoCol]); err != nil {
		return fail(ttfoCol, err)
	}
	for i, dst := range []*int{&r.ReasoningTokens, &r.Chunks} {
		if *dst, err = parseCount(field(ttfoCol + 1 + i)); err != nil {
			return fail(ttfoCol+1+i, err)
		}
	}
	switch r.ITLPer = field(ttfoCol + 3); r.ITLPer {
	case "", ITLPerToken, ITLPerChunk:
	default:
		return fail(ttfoCol+3, errors.New("itl_per must be token, chunk or empty"))
	}
	switch r.Delivery = field(ttfoCol + 4); r.Delivery {
	case "", DeliveryStream, DeliveryBurst:
	default:
		return fail(ttfoCol+4, errors.New("delivery must be stream, burst or empty"))
	}
	scheduledCol := ttfoCol + 5
	for i, dst := range []*float64{&r.ScheduledMs, &r.QueueMs} {
		if *dst, err = parseMeasure(field(scheduledCol+i), Header[scheduledCol+i]); err != nil {
			return fail(scheduledCol+i, err)
		}
	}
	requestedCol := scheduledCol + 2
	for i, dst := range []*int{&r.RequestedPromptTokens, &r.RequestedOutputTokens, &r.Turn} {
		if *dst, err = parseCount(field(requestedCol + i)); err != nil {
			return fail(requestedCol+i, err)
		}
		*dst = max(*dst, 0)
	}
	errCol := requestedCol + 3
	if r.EnergyErrJ, err = parseMeasure(field(errCol), Header[errCol]); err != nil {
		return fail(errCol, err)
	}
	shardCol := errCol + 1
	if r.Shard = field(shardCol); r.Shard != "" {
		if n, err := strconv.Atoi(r.Shard); err != nil || n < 0 || n >= MaxShards {
			return fail(shardCol, fmt.Errorf("not a shard index: use a whole number from 0 to %d, or leave it empty", MaxShards-1))
		}
	}
	if r.Host = field(shardCol + 1); len(r.Host) > maxHostName {
		return fail(shardCol+1, fmt.Errorf("a host name of %d bytes; at most %d", len(r.Host), maxHostName))
	}
	if r.Replica = field(shardCol + 2); r.Replica != "" {
		if n, err := strconv.Atoi(r.Replica); err != nil || n < 0 || n >= MaxReplicas {
			return fail(shardCol+2, fmt.Errorf("not a replica index: use a whole number from 0 to %d, or leave it empty", MaxReplicas-1))
		}
	}
	return r, nil
}

// MaxReplicas bounds a fleet's replicas (an arm's url list).
const MaxReplicas = 256

// MaxShards bounds a run's load generators (--shard I/N: N at most this).
const MaxShards = 4096

// maxHostName is the longest host name DNS allows.
const maxHostName = 253

// maxCount bounds a count of tokens or chunks in a session file: more
// than any context window holds (a hand-made 2e9 once made tok/s 1e10).
const maxCount = 100_000_000

func parseCount(s string) (int, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err == nil && (n < 0 || n > maxCount) {
		err = fmt.Errorf("not a count of tokens: use a whole number from 0 to %d", maxCount)
	}
	return n, err
}

// measureRange is what a measurement column may hold: a time or a count
// is never negative, and none is beyond what any trial could take (over
// 11 days, a terawatt). A value outside it is a damaged or hand-made
// file, and would move every statistic of its arm (one e2e of 1e160
// made the CV infinite).
func measureRange(column string) (lo, hi float64, what string) {
	switch {
	case strings.HasSuffix(column, "_ms"):
		return 0, 1e9, "a time in ms, 0 to 1e9 (11 days)"
	case column == "energy_mj": // a counter since the driver loaded: months of a GPU's energy
		return 0, 1e18, "millijoules, 0 to 1e18"
	case column == "energy_j", column == "j_per_token":
		// Energy above the idle baseline is negative when a trial drew
		// less than idle.
		return -1e12, 1e12, "joules, within ±1e12"
	}
	return 0, 1e12, "a number from 0 to 1e12"
}

// parseMeasure reads column's measurement; empty is unknown (NaN).
func parseMeasure(s, column string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if lo, hi, what := measureRange(column); !(v >= lo && v <= hi) {
		return 0, fmt.Errorf("not %s", what)
	}
	return v, nil
}
