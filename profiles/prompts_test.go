package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/backends"
)

const shareGPTSample = `[
  {"id": "a", "conversations": [
    {"from": "human", "value": "Tell me a story about a cat"},
    {"from": "gpt", "value": "Once upon a time there was a cat who sat"}]},
  {"id": "b", "conversations": [{"from": "gpt", "value": "no question here"}]},
  {"id": "c", "conversations": [
    {"from": "system", "value": "be brief"},
    {"from": "human", "value": "Why is the sky blue?"}]}
]`

// Each format gives its prompts in file order, with the line each starts
// on: text by line, JSONL by its prompt, text or messages (a
// conversation's text its turns joined), ShareGPT by each conversation's
// first human turn with its reply's length, skipping one with none.
func TestPromptsFilesOfEachFormat(t *testing.T) {
	text, err := ParsePrompts("p.txt", []byte("first\n\n  second  \n"))
	if err != nil || text.Format != FormatText || len(text.Prompts) != 2 || text.Prompts[1].Text != "second" || text.Prompts[1].Line != 3 {
		t.Fatalf("text: %+v %v", text, err)
	}
	jsonl, err := ParsePrompts("p.jsonl", []byte(`{"prompt": "a"}
{"text": "b", "max_tokens": 7}

{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
`))
	if err != nil || jsonl.Format != FormatJSONL || len(jsonl.Prompts) != 3 {
		t.Fatalf("jsonl: %+v %v", jsonl, err)
	}
	want := []Prompt{{Text: "a", Line: 1}, {Text: "b", MaxTokens: 7, Line: 2},
		{Text: "be brief\n\nhi", Messages: []backends.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, Line: 4}}
	for k, p := range jsonl.Prompts {
		if p.Text != want[k].Text || p.MaxTokens != want[k].MaxTokens || p.Line != want[k].Line || !slices.Equal(p.Messages, want[k].Messages) {
			t.Errorf("jsonl prompt %d: %+v, want %+v", k, p, want[k])
		}
	}
	share, err := ParsePrompts("sg.json", []byte(shareGPTSample))
	if err != nil || share.Format != FormatShareGPT || len(share.Prompts) != 2 || share.Skipped != 1 {
		t.Fatalf("sharegpt: %+v %v", share, err)
	}
	// 10 words of reply at 0.75 words a token: 14 tokens.
	if p := share.Prompts[0]; p.Text != "Tell me a story about a cat" || p.MaxTokens != 14 || p.Line != 2 {
		t.Errorf("sharegpt first: %+v", p)
	}
	if p := share.Prompts[1]; p.Text != "Why is the sky blue?" || p.MaxTokens != 0 || p.Line != 6 {
		t.Errorf("sharegpt last (no reply): %+v", p)
	}
	if s := share.Sampling(3); !strings.Contains(s, "no human turn, left out: 1") || !strings.Contains(s, "seed 3") {
		t.Errorf("sampling words: %s", s)
	}
}

// A file with no telling name is known by its contents.
func TestPromptsFormatFromContents(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"\n  [ ]", FormatShareGPT},
		{`{"prompt": "x"}`, FormatJSONL},
		{"just words", FormatText},
	} {
		if got := promptsFormat("prompts", []byte(c.data)); got != c.want {
			t.Errorf("%q: %s, want %s", c.data, got, c.want)
		}
	}
}

// Bad input names the file and line, and what to do.
func TestPromptsFileErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"p.jsonl", "{\"prompt\": \"a\"}\n\n{\"prompt\": 3}\n", "p.jsonl:3: prompt is a number where text belongs"},
		{"p.jsonl", "{\"messages\": \"hi\"}", "p.jsonl:1: messages is a string where a list belongs"},
		{"p.jsonl", "{\"prompt\": ", "p.jsonl:1: not JSON: unexpected end"},
		{"p.jsonl", "[1]", "p.jsonl:1: the line is an array where an object belongs"},
		{"p.jsonl", `{"prompt": "a", "text": "b"}`, "p.jsonl:1: give exactly one of prompt, text or messages"},
		{"p.jsonl", `{"other": "a"}`, "p.jsonl:1: give exactly one of prompt, text or messages"},
		{"p.jsonl", `{"messages": [{"role": "user"}]}`, "p.jsonl:1: messages[0] needs a role and a content"},
		{"p.jsonl", `{"prompt": "  "}`, "p.jsonl:1: the prompt is empty"},
		{"p.jsonl", `{"prompt": "a", "max_tokens": -1}`, "p.jsonl:1: max_tokens -1 is negative"},
		{"sg.json", `{"conversations": []}`, "sg.json:1: not a JSON list"},
		{"sg.json", "[\n{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]},\n{\"conversations\": 5}\n]", "sg.json:3: conversation 2: conversations is a number where a list belongs"},
		{"sg.json", "[\n{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]}", "sg.json:2: the list does not end"},
		{"sg.json", `[{"conversations": [{"from": "gpt", "value": "a"}]}]`, "sg.json holds no prompts"},
		{"p.txt", "\n \n", "p.txt holds no prompts (plain text: one prompt per line)"},
		{"p.txt", strings.Repeat("x", maxPrompt+1), "p.txt:1: a line over"},
	} {
		_, err := ParsePrompts(c.name, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %.40q: %v, want %q", c.name, c.data, err, c.want)
		}
	}
}

// A file is read with its digest; a missing one says so, and a profile
// that names one draws from it, relative to the profile's folder.
func TestAProfileDrawsFromItsPromptsFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "sg.json"), []byte(shareGPTSample), 0o644)
	src := strings.Replace(validProfile, `prompts = ["hi"]`, `prompts_file = "sg.json"`, 1)
	path := filepath.Join(dir, "p.toml")
	os.WriteFile(path, []byte(src), 0o644)
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Dataset; d == nil || len(d.Prompts) != 2 || len(d.SHA256) != 64 || d.Path != filepath.Join(dir, "sg.json") {
		t.Fatalf("dataset %+v", d)
	}
	both := strings.Replace(validProfile, `prompts = ["hi"]`, `prompts = ["hi"]`+"\n"+`prompts_file = "sg.json"`, 1)
	os.WriteFile(path, []byte(both), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "set either prompts or prompts_file") {
		t.Errorf("both: %v", err)
	}
	os.WriteFile(path, []byte(strings.Replace(validProfile, `prompts = ["hi"]`, `prompts_file = "gone.jsonl"`, 1)), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "prompts_file") || !strings.Contains(err.Error(), "gone.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

// The order is a permutation fixed by the seed: the same seed, the same
// order; another seed, another.
func TestPromptsOrderIsSeeded(t *testing.T) {
	f := &PromptsFile{Prompts: make([]Prompt, 50)}
	a, b, c := f.Order(1), f.Order(1), f.Order(2)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("seed 1 twice %v %v, seed 2 %v", a, b, c)
	}
	sorted := slices.Sorted(slices.Values(a))
	for k, v := range sorted {
		if k != v {
			t.Fatalf("not a permutation: %v", a)
		}
	}
}

// Whatever the bytes, the parser answers with prompts that can be sent
// (bounded, not empty, placed on a line) or an error naming the file.
func FuzzParsePrompts(f *testing.F) {
	f.Add("p.jsonl", `{"prompt": "a"}`+"\n"+`{"messages": [{"role": "user", "content": "hi"}]}`)
	f.Add("sg.json", shareGPTSample)
	f.Add("p.txt", "one\ntwo\n")
	f.Add("p", "[{\"conversations\": [{\"from\": \"human\", \"value\": \"\\u001b[31m\"}]}]")
	f.Fuzz(func(t *testing.T, name, data string) {
		got, err := ParsePrompts(name, []byte(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file %q: %v", name, err)
			}
			return
		}
		for _, p := range got.Prompts {
			if strings.TrimSpace(p.Text) == "" || len(p.Text) > maxPrompt || p.Line < 1 || p.MaxTokens < 0 {
				t.Fatalf("prompt %+v", p)
			}
		}
		// Turn by turn, every turn ends with a user's message and the
		// order is a permutation that keeps each conversation's turns.
		turns := got.Turns()
		for _, p := range turns.Prompts {
			if p.Turn < 1 || p.Messages != nil && p.Messages[len(p.Messages)-1].Role != "user" {
				t.Fatalf("turn %+v", p)
			}
		}
		if order := turns.Order(1); len(order) != len(turns.Prompts) {
			t.Fatalf("order %v of %d turns", order, len(turns.Prompts))
		}
	})
}

// Turns makes each user turn of a conversation a prompt carrying the
// conversation before it, with the reply after it for its length; the
// seeded order shuffles conversations and keeps their turns in order.
func TestConversationsTurnByTurn(t *testing.T) {
	jsonl := `{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there friend"}, {"role": "user", "content": "how are you"}]}
{"prompt": "a plain one"}
`
	f, err := ParsePrompts("c.jsonl", []byte(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	turns := f.Turns()
	if len(turns.Prompts) != 3 {
		t.Fatalf("%d turns: %+v", len(turns.Prompts), turns.Prompts)
	}
	first, second, plain := turns.Prompts[0], turns.Prompts[1], turns.Prompts[2]
	if first.Turn != 1 || len(first.Messages) != 2 || first.MaxTokens != 4 || second.Turn != 2 || len(second.Messages) != 4 ||
		second.Messages[2].Content != "hello there friend" || second.MaxTokens != 0 || plain.Turn != 1 || plain.ConversationID != 1 || plain.Text != "a plain one" {
		t.Errorf("turns %+v", turns.Prompts)
	}
	share, err := ParsePrompts("sg.json", []byte(`[{"conversations": [{"from": "human", "value": "q1"}, {"from": "gpt", "value": "a1"}, {"from": "human", "value": "q2"}, {"from": "gpt", "value": "a2 a2"}]},
{"conversations": [{"from": "human", "value": "r1"}]}, {"conversations": [{"from": "human", "value": "s1"}, {"from": "gpt", "value": "b"}, {"from": "human", "value": "s2"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	st := share.Turns()
	if len(st.Prompts) != 5 || st.Prompts[1].Messages[1].Role != "assistant" || st.Prompts[1].MaxTokens != 3 || st.Prompts[1].Text != "q1\n\na1\n\nq2" {
		t.Fatalf("sharegpt turns %+v", st.Prompts)
	}
	for seed := range int64(20) {
		order := st.Order(seed)
		if len(order) != 5 {
			t.Fatalf("order %v", order)
		}
		for k := 1; k < len(order); k++ {
			a, b := st.Prompts[order[k-1]], st.Prompts[order[k]]
			if a.ConversationID == b.ConversationID && b.Turn != a.Turn+1 || a.ConversationID != b.ConversationID && b.Turn != 1 {
				t.Fatalf("seed %d: order %v breaks a conversation's turns", seed, order)
			}
		}
	}
}

// A profile reads only files beside it or below: a shared profile's
// prompts_file once sent a credentials file's lines to its server as
// prompts. An absolute path, "..", and a link that leads out are refused,
// naming the flag that reads such a file on the user's own word.
func TestAProfileReadsOnlyFilesBesideIt(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "credentials")
	os.WriteFile(secret, []byte("aws_secret_access_key = s3cr3t\n"), 0o600)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prompts.txt"), []byte("Once upon a time\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "more.txt"), []byte("A second prompt\n"), 0o644)
	if err := os.Symlink(secret, filepath.Join(dir, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	profile := func(key, value string) (*Profile, error) {
		path := filepath.Join(dir, "shared.toml")
		src := fmt.Sprintf("name = \"shared\"\nmax_tokens = 8\ntrials = 1\n%s = %q\n[[arms]]\nname = \"a\"\n", key, value)
		os.WriteFile(path, []byte(src), 0o644)
		return Load(path)
	}
	for _, name := range []string{secret, "../" + filepath.Base(outside) + "/credentials", "innocent.txt"} {
		_, err := profile("prompts_file", name)
		if err == nil || !strings.Contains(err.Error(), "is outside the folder of shared.toml") || !strings.Contains(err.Error(), "--prompts-file") {
			t.Errorf("prompts_file %q: %v", name, err)
		}
	}
	for _, name := range []string{"prompts.txt", "data/more.txt", filepath.Join(dir, "prompts.txt")} {
		if p, err := profile("prompts_file", name); err != nil || len(p.Dataset.Prompts) != 1 {
			t.Errorf("prompts_file %q beside it: %v", name, err)
		}
	}
	path := filepath.Join(dir, "engine.toml")
	os.WriteFile(path, []byte("name = \"engine\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\nmodel_path = \"../model.gguf\"\n"), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "engine.toml:7: arms[0].model_path") || !strings.Contains(err.Error(), "--model-path") {
		t.Errorf("model_path outside: %v", err)
	}
}

// A JSONL prompts file that begins with a byte-order mark reads as the
// text ones do.
func TestAJSONLPromptsFileReadsPastAByteOrderMark(t *testing.T) {
	f, err := ParsePrompts("p.jsonl", []byte("\ufeff{\"prompt\": \"Once upon a time\"}\n"))
	if err != nil || len(f.Prompts) != 1 || f.Prompts[0].Text != "Once upon a time" {
		t.Fatalf("%+v %v", f, err)
	}
}
