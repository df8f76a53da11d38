package profiles

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/tokentop/tokentop/backends"
)

// Prompt is one prompt of a prompts file: a text, or a conversation
// (Messages, sent as they are to chat endpoints; Text is their contents
// joined, for endpoints that take text), and the output length its source
// asks for (0: the profile's max_tokens). Line is where it starts in its
// file.
type Prompt struct {
	Text      string
	Messages  []backends.Message
	MaxTokens int
	Line      int
	// Conversation is the whole conversation the prompt comes from, for
	// multi_turn (nil for a plain prompt); Turn is the prompt's user turn
	// in it (from 1) and ConversationID its conversation's place in the
	// file, once Turns expanded it.
	Conversation   []backends.Message
	Turn           int
	ConversationID int
}

// Prompts-file formats.
const (
	FormatText     = "text"     // one prompt per line
	FormatJSONL    = "jsonl"    // {"prompt"|"text"|"messages": …} per line
	FormatShareGPT = "sharegpt" // [{"conversations": [{"from", "value"}, …]}, …]
)

// PromptsFile is a file of prompts as read: its path, digest and format,
// and its prompts in file order. Only the digest and format go into the
// configuration hash: the same file elsewhere is the same experiment.
type PromptsFile struct {
	Path    string   `json:"-"`
	SHA256  string   `json:"sha256"`
	Format  string   `json:"format"`
	Prompts []Prompt `json:"-"`
	// Skipped counts a ShareGPT file's conversations with no human turn.
	Skipped int `json:"-"`
}

// WordsPerToken is how many words a token of English text makes: for a
// length in tokens where no tokenizer is at hand, an estimate that is
// always said to be one.
const WordsPerToken = 0.75

// maxPromptsFile bounds a prompts file, which is read whole.
const maxPromptsFile = 1 << 30

// maxPrompt bounds one prompt's text.
const maxPrompt = 1 << 20

// ReadPromptsFile reads a prompts file: JSONL (by its .jsonl name or a
// first line that is a JSON object), ShareGPT JSON (by its .json name or
// a file that opens with '['), else plain text. Errors name the file and,
// where there is one, the line.
func ReadPromptsFile(path string) (*PromptsFile, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > maxPromptsFile {
		return nil, fmt.Errorf("%s: %d bytes; a prompts file is read whole, at most %d", path, info.Size(), maxPromptsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParsePrompts(path, data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	f.SHA256 = hex.EncodeToString(sum[:])
	return f, nil
}

// ParsePrompts parses a prompts file's contents; name is the file, for
// errors and for its format.
func ParsePrompts(name string, data []byte) (*PromptsFile, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte-order mark some editors write first; no prompt's text
	f := &PromptsFile{Path: name, Format: promptsFormat(name, data)}
	var err error
	switch f.Format {
	case FormatJSONL:
		f.Prompts, err = parseJSONL(name, data)
	case FormatShareGPT:
		f.Prompts, f.Skipped, err = parseShareGPT(name, data)
	default:
		f.Prompts, err = parseTextPrompts(name, data)
	}
	if err != nil {
		return nil, err
	}
	if len(f.Prompts) == 0 {
		return nil, fmt.Errorf("%s holds no prompts (%s)", name, formatRule[f.Format])
	}
	return f, nil
}

// formatRule says what a file of each format holds, for errors.
var formatRule = map[string]string{
	FormatText:     "plain text: one prompt per line",
	FormatJSONL:    `JSONL: one {"prompt": …}, {"text": …} or {"messages": [{"role", "content"}, …]} per line`,
	FormatShareGPT: `ShareGPT JSON: a list of {"conversations": [{"from": "human"|"gpt", "value": …}, …]}`,
}

func promptsFormat(name string, data []byte) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl":
		return FormatJSONL
	case ".json":
		return FormatShareGPT
	case ".txt":
		return FormatText
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		return FormatShareGPT
	case bytes.HasPrefix(trimmed, []byte("{")):
		return FormatJSONL
	}
	return FormatText
}

// lines calls each with every line of data and its number, up to the
// first error.
func lines(name string, data []byte, each func(line []byte, n int) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxPrompt+1)
	n := 0
	for sc.Scan() {
		n++
		if err := each(sc.Bytes(), n); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: a line over %d bytes; split it or shorten it", name, n+1, maxPrompt)
	}
	return sc.Err()
}

func parseTextPrompts(name string, data []byte) ([]Prompt, error) {
	var out []Prompt
	err := lines(name, data, func(line []byte, n int) error {
		if text := strings.TrimSpace(string(line)); text != "" {
			out = append(out, Prompt{Text: text, Line: n})
		}
		return nil
	})
	return out, err
}

// jsonlPrompt is one line of a JSONL prompts file.
type jsonlPrompt struct {
	Prompt    *string            `json:"prompt"`
	Text      *string            `json:"text"`
	Messages  []backends.Message `json:"messages"`
	MaxTokens int                `json:"max_tokens"`
}

func parseJSONL(name string, data []byte) ([]Prompt, error) {
	var out []Prompt
	err := lines(name, data, func(line []byte, n int) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var row jsonlPrompt
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("%s:%d: %s; %s", name, n, jsonProblem(err), formatRule[FormatJSONL])
		}
		p := Prompt{Line: n, MaxTokens: row.MaxTokens}
		set := 0
		for _, s := range []*string{row.Prompt, row.Text} {
			if s != nil {
				p.Text, set = *s, set+1
			}
		}
		if row.Messages != nil {
			set++
			for k, m := range row.Messages {
				if m.Role == "" || m.Content == "" {
					return fmt.Errorf("%s:%d: messages[%d] needs a role and a content", name, n, k)
				}
			}
			p.Messages, p.Text, p.Conversation = row.Messages, JoinMessages(row.Messages), row.Messages
		}
		switch {
		case set != 1:
			return fmt.Errorf("%s:%d: give exactly one of prompt, text or messages", name, n)
		case strings.TrimSpace(p.Text) == "":
			return fmt.Errorf("%s:%d: the prompt is empty", name, n)
		case len(p.Text) > maxPrompt:
			return fmt.Errorf("%s:%d: a prompt of %d bytes; at most %d", name, n, len(p.Text), maxPrompt)
		case row.MaxTokens < 0:
			return fmt.Errorf("%s:%d: max_tokens %d is negative; leave it out for the profile's", name, n, row.MaxTokens)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// jsonProblem says what is wrong with a JSON value in a file's words, not
// the decoder's Go types.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return "not JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	want := "text"
	switch typeErr.Type.Kind() {
	case reflect.Slice:
		want = "a list"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Int:
		want = "a whole number"
	}
	where := "the line"
	if typeErr.Field != "" {
		where = typeErr.Field
	}
	return fmt.Sprintf("%s is %s where %s belongs", where, article(typeErr.Value), want)
}

// article puts "a" or "an" before a JSON kind.
func article(kind string) string {
	if kind == "" {
		return "a value"
	}
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// JoinMessages is a conversation as one text, for endpoints that take
// text: its contents, a blank line between turns.
func JoinMessages(messages []backends.Message) string {
	parts := make([]string, len(messages))
	for k, m := range messages {
		parts[k] = m.Content
	}
	return strings.Join(parts, "\n\n")
}

// shareGPTConversation is one entry of a ShareGPT file.
type shareGPTConversation struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// parseShareGPT takes each conversation's first human turn as its prompt
// and the reply after it, where there is one, for its output length (in
// tokens estimated from its words), as vLLM's and GuideLLM's ShareGPT
// readers do. Conversations with no human turn are counted, not kept.
func parseShareGPT(name string, data []byte) ([]Prompt, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// lineAt is the line the decoder's next value starts on, past the
	// comma and spaces before it.
	lineAt := func() int {
		at := min(int(dec.InputOffset()), len(data))
		for at < len(data) && strings.IndexByte(" \t\r\n,", data[at]) >= 0 {
			at++
		}
		return 1 + bytes.Count(data[:at], []byte("\n"))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, 0, fmt.Errorf("%s:%d: not a JSON list; %s", name, lineAt(), formatRule[FormatShareGPT])
	}
	var out []Prompt
	skipped := 0
	for k := 0; dec.More(); k++ {
		line := lineAt()
		var c shareGPTConversation
		if err := dec.Decode(&c); err != nil {
			return nil, 0, fmt.Errorf("%s:%d: conversation %d: %s; %s", name, line, k+1, jsonProblem(err), formatRule[FormatShareGPT])
		}
		human := -1
		for t, turn := range c.Conversations {
			if turn.From == "human" || turn.From == "user" {
				human = t
				break
			}
		}
		if human < 0 || strings.TrimSpace(c.Conversations[human].Value) == "" {
			skipped++
			continue
		}
		p := Prompt{Text: c.Conversations[human].Value, Line: line}
		if len(p.Text) > maxPrompt {
			return nil, 0, fmt.Errorf("%s:%d: conversation %d's prompt is %d bytes; at most %d", name, line, k+1, len(p.Text), maxPrompt)
		}
		if next := human + 1; next < len(c.Conversations) {
			p.MaxTokens = TokensOfWords(len(strings.Fields(c.Conversations[next].Value)))
		}
		for _, turn := range c.Conversations {
			if role, ok := shareGPTRoles[turn.From]; ok && strings.TrimSpace(turn.Value) != "" {
				p.Conversation = append(p.Conversation, backends.Message{Role: role, Content: turn.Value})
			}
		}
		out = append(out, p)
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, fmt.Errorf("%s:%d: the list does not end: %v", name, lineAt(), err)
	}
	return out, skipped, nil
}

// shareGPTRoles are the chat roles of ShareGPT's speakers.
var shareGPTRoles = map[string]string{"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "system": "system"}

// Turns is the file with each conversation's user turns as prompts of
// their own, in order: turn u carries the conversation up to it (the
// file's own replies between its turns: the same history for every arm,
// not the model's answers), and for an output length the reply after it
// where there is one. A prompt with no conversation is one turn.
func (f *PromptsFile) Turns() *PromptsFile {
	out := *f
	out.Prompts = nil
	for id, p := range f.Prompts {
		if p.Conversation == nil {
			p.Turn, p.ConversationID = 1, id
			out.Prompts = append(out.Prompts, p)
			continue
		}
		turn := 0
		for k, m := range p.Conversation {
			if m.Role != "user" {
				continue
			}
			turn++
			history := p.Conversation[:k+1]
			q := Prompt{Text: JoinMessages(history), Messages: history, Line: p.Line, Conversation: p.Conversation, Turn: turn, ConversationID: id}
			if k+1 < len(p.Conversation) && p.Conversation[k+1].Role == "assistant" {
				q.MaxTokens = TokensOfWords(len(strings.Fields(p.Conversation[k+1].Content)))
			}
			out.Prompts = append(out.Prompts, q)
		}
	}
	return &out
}

// TokensOfWords is the tokens n words make, estimated at WordsPerToken;
// at least 1.
func TokensOfWords(n int) int { return max(1, int(math.Ceil(float64(n)/WordsPerToken))) }

// Order is the order a run draws the file's prompts in: shuffled by seed,
// the same for every arm, so that arms see the same prompts trial by
// trial and a long file is sampled, not read from its top.
func (f *PromptsFile) Order(seed int64) []int {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x70726f6d707473))
	if len(f.Prompts) == 0 || f.Prompts[0].Turn == 0 {
		return rng.Perm(len(f.Prompts))
	}
	// Conversations are shuffled; their turns keep their order.
	var starts []int
	for k, p := range f.Prompts {
		if k == 0 || p.ConversationID != f.Prompts[k-1].ConversationID {
			starts = append(starts, k)
		}
	}
	order := make([]int, 0, len(f.Prompts))
	for _, c := range rng.Perm(len(starts)) {
		for k := starts[c]; k < len(f.Prompts) && f.Prompts[k].ConversationID == f.Prompts[starts[c]].ConversationID; k++ {
			order = append(order, k)
		}
	}
	return order
}

// Sampling says how a run draws the file's prompts, for the manifest.
func (f *PromptsFile) Sampling(seed int64) string {
	s := fmt.Sprintf("trial t uses prompt order[(t-1) mod %d], the file's prompts shuffled by seed %d, the same for every arm", len(f.Prompts), seed)
	if len(f.Prompts) > 0 && f.Prompts[0].Turn > 0 {
		s = fmt.Sprintf("multi-turn: trial t sends turn order[(t-1) mod %d], the file's conversations shuffled by seed %d and each's user turns in order, "+
			"a turn carrying the conversation before it with the file's own replies (the same history for every arm, not the model's answers)", len(f.Prompts), seed)
	}
	if f.Format == FormatShareGPT {
		s += fmt.Sprintf("; each prompt is a conversation's first human turn, its output length the reply's words at %g a token (an estimate), at most max_tokens; conversations with no human turn, left out: %d",
			WordsPerToken, f.Skipped)
	}
	return s
}
