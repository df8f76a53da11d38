package session

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/tokentop/tokentop/metrics"
)

// ExportHeader is the per-request export's columns: every column of the
// trials CSV, then the arm's target (its name, backend kind, address,
// the model it served and the quantization it reported).
var ExportHeader = append(slices.Clone(Header), "target", "backend", "url", "model", "quantization")

// exportText are ExportHeader's columns that hold words; every other one
// holds a number, or nothing when it is not known.
var exportText = map[string]bool{"session_id": true, "arm": true, "phase": true, "status": true, "error": true, "started_at": true,
	"stop_reason": true, "energy_quality": true, "window": true, "connection": true, "itl_per": true, "delivery": true,
	"target": true, "backend": true, "url": true, "model": true, "quantization": true}

// exportFields are a record's export row as the trials CSV writes it.
func exportFields(m *Manifest, r *Record) []string {
	t := m.TargetOf(r.Arm)
	return append(r.Fields(), t.Name, t.Kind, t.URL, t.Model(), t.Quantization)
}

// ExportFormats are what WriteExport writes.
var ExportFormats = []string{"jsonl", "csv"}

// WriteExport writes every request of the sessions, one record each, in
// the order they ran: JSON Lines (numbers as numbers, unknowns as null)
// or CSV (ExportHeader, once).
func WriteExport(w io.Writer, sessions []*Session, format string) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(ExportHeader)
		for _, s := range sessions {
			for i := range s.Records {
				cw.Write(exportFields(s.Manifest, &s.Records[i]))
			}
		}
		cw.Flush()
		return cw.Error()
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, s := range sessions {
			for i := range s.Records {
				row := map[string]any{}
				for k, v := range exportFields(s.Manifest, &s.Records[i]) {
					row[ExportHeader[k]] = exportValue(ExportHeader[k], v)
				}
				if err := enc.Encode(row); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("--format %q: use jsonl or csv", format)
}

// exportValue is a trials CSV field as JSON: words as strings, numbers
// as numbers, an empty field as null.
func exportValue(column, field string) any {
	switch {
	case exportText[column]:
		return field
	case field == "":
		return nil
	}
	if v, err := strconv.ParseFloat(field, 64); err == nil {
		return JSONNumber(v)
	}
	return field
}

// ExportPercentiles are the percentiles WriteExportSummary gives of every
// metric (AIPerf's profile export gives the same set).
var ExportPercentiles = []float64{1, 5, 10, 25, 50, 75, 90, 95, 99}

// WriteExportSummary writes one JSON document: per session, per arm, its
// target, its counted requests and, of every metric over them, n, mean,
// std, min, the ExportPercentiles and max (null where unknown).
func WriteExportSummary(w io.Writer, sessions []*Session) error {
	type arm struct {
		Arm     string                    `json:"arm"`
		Target  map[string]string         `json:"target"`
		N       int                       `json:"n"`
		Metrics map[string]map[string]any `json:"metrics"`
	}
	type doc struct {
		Session string `json:"session"`
		Status  string `json:"status"`
		Arms    []arm  `json:"arms"`
	}
	var out struct {
		Percentiles []float64 `json:"percentiles"`
		Sessions    []doc     `json:"sessions"`
	}
	out.Percentiles = ExportPercentiles
	for _, s := range sessions {
		d := doc{Session: FileStem(s.Path), Status: s.Manifest.Status}
		groups := ByArm(s.Records)
		for _, name := range armOrder(s) {
			counted := Counted(groups[name])
			t := s.Manifest.TargetOf(name)
			a := arm{Arm: name, N: len(counted), Metrics: map[string]map[string]any{},
				Target: map[string]string{"name": t.Name, "backend": t.Kind, "url": t.URL, "model": t.Model(), "quantization": t.Quantization}}
			for _, m := range Metrics {
				values := Values(counted, m)
				st := metrics.Describe(values)
				figures := map[string]any{"n": st.N, "mean": JSONNumber(st.Mean), "std": JSONNumber(st.Std), "min": JSONNumber(st.Min), "max": JSONNumber(st.Max)}
				slices.Sort(values)
				for _, p := range ExportPercentiles {
					figures["p"+strconv.FormatFloat(p, 'f', -1, 64)] = JSONNumber(metrics.PercentileSorted(values, p/100))
				}
				a.Metrics[m.Name] = figures
			}
			d.Arms = append(d.Arms, a)
		}
		out.Sessions = append(out.Sessions, d)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
