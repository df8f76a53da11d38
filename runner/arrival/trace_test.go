package arrival

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Both forms read: Mooncake's lengths and hash ids, and a plain prompt;
// times keep their gaps from the first request, and a speed divides them.
func TestTracesOfBothFormsRead(t *testing.T) {
	data := `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}

{"timestamp": 27482, "input_length": 512, "output_length": 8, "hash_ids": [46]}
{"timestamp": 30000.5, "input_length": 100, "output_length": 16}
`
	tr, err := ParseTrace("m.jsonl", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 3 || tr.Requests[0].At != 0 || tr.Requests[2].At != 2518500*time.Microsecond ||
		tr.Requests[2].Line != 4 || !slices.Equal(tr.Requests[0].HashIDs, []int64{46, 47, 48}) || tr.Requests[0].InputTokens != 6955 || tr.Requests[1].OutputTokens != 8 {
		t.Errorf("mooncake trace %+v", tr.Requests)
	}
	if got := tr.Schedule(2); got[2] != 1259250*time.Microsecond {
		t.Errorf("at speed 2: %v", got)
	}
	plain, err := ParseTrace("p.jsonl", []byte(`{"timestamp": 0, "prompt": "Once upon a time", "max_tokens": 32}`+"\n"+`{"timestamp": 250, "prompt": "The end"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := plain.Requests; len(r) != 2 || r[0].Prompt != "Once upon a time" || r[0].OutputTokens != 32 || r[1].OutputTokens != 0 || r[1].At != 250*time.Millisecond {
		t.Errorf("plain trace %+v", r)
	}
}

func TestABadTraceNamesItsLineAndField(t *testing.T) {
	good := `{"timestamp": 0, "prompt": "hi"}` + "\n"
	for _, c := range []struct{ data, want string }{
		{"", "t.jsonl: no requests"},
		{good + `{"timestamp": 5, "prompt": "hi", "input_length": 3}`, "t.jsonl:2: mixes the two forms"},
		{good + `{"prompt": "hi"}`, "t.jsonl:2: timestamp: missing"},
		{good + `{"timestamp": -1, "prompt": "hi"}`, "t.jsonl:2: timestamp: -1 is not a time in milliseconds"},
		{`{"timestamp": 10, "prompt": "a"}` + "\n" + `{"timestamp": 5, "prompt": "b"}`, "t.jsonl:2: timestamp: 5 comes before the line above's"},
		{good + `{"timestamp": 5, "input_length": 3}`, "t.jsonl:2: input_length and output_length: give both"},
		{good + `{"timestamp": 5, "input_length": 0, "output_length": 3}`, "t.jsonl:2: input_length: 0 is out of range"},
		{good + `{"timestamp": 5, "input_length": 3, "output_length": -2}`, "t.jsonl:2: output length -2 is out of range"},
		{good + `{"timestamp": 5, "prompt": "  "}`, "t.jsonl:2: prompt: missing or empty"},
		{good + `{"timestamp": "soon", "prompt": "hi"}`, `t.jsonl:2: timestamp: string where a time in milliseconds, from 0 to 1e12 belongs`},
		{good + `{"timestamp": 5, "prompt": "hi", "model": "x"}`, `t.jsonl:2: unknown field "model"`},
		{good + `{"timestamp": 5, "input_length": 5.5, "output_length": 3}`, `t.jsonl:2: input_length: number 5.5 where a whole number of tokens, from 1 to 1,048,576 belongs`},
		{good + `{"timestamp": 5, "prompt": "hi"} {"timestamp": 6}`, "t.jsonl:2: more than one JSON object"},
		{good + `{"timestamp": 5,`, "t.jsonl:2: "},
		{good + `{"timestamp": 5}`, "t.jsonl:2: neither form"},
		{good + `{"timestamp": 5, "prompt": "` + strings.Repeat("x", maxTraceLine) + `"}`, "t.jsonl:2: the line is"},
	} {
		if _, err := ParseTrace("t.jsonl", []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: %v; want %q", c.data, err, c.want)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]}` + "\n" + `{"timestamp": 30000, "input_length": 10, "output_length": 1}`))
	f.Add([]byte(`{"timestamp": 0, "prompt": "Once", "max_tokens": 8}`))
	f.Add([]byte("{\"timestamp\": 1e12, \"prompt\": \"\\u001b[2J\"}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrace("fuzz.jsonl", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		schedule := tr.Schedule(1)
		if !slices.IsSorted(schedule) || schedule[0] != 0 {
			t.Fatalf("schedule %v", schedule)
		}
		for _, r := range tr.Requests {
			if r.Prompt == "" && (r.InputTokens < 1 || r.OutputTokens < 1) || r.OutputTokens < 0 || r.OutputTokens > maxTraceTokens {
				t.Fatalf("request %+v", r)
			}
		}
	})
}

// A byte-order mark that an editor wrote first is read past, as the
// session CSVs and text prompts are: it made "invalid character 'ï'".
func TestATraceReadsPastAByteOrderMark(t *testing.T) {
	tr, err := ParseTrace("t.jsonl", []byte("\ufeff{\"timestamp\": 0, \"prompt\": \"hi\"}\n"))
	if err != nil || len(tr.Requests) != 1 {
		t.Fatalf("%v", err)
	}
}
