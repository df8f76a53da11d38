package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README is the front page and docs/ the manual. This test holds them
// to the program: every link between the pages reaches a file and a
// heading that exist, every page is reachable from the README, and every
// command and flag a page shows is one that `tokentop COMMAND -h` lists.
// A renamed flag or a moved heading fails here until the docs follow.
func TestDocsLinksAndFlagsExist(t *testing.T) {
	pages := docPages(t)
	headings := map[string][]string{}
	for path, text := range pages {
		headings[path] = anchors(text)
	}
	flags := commandFlags(t)
	allFlags := map[string]bool{}
	for _, set := range flags {
		for f := range set {
			allFlags[f] = true
		}
	}
	linkedFromReadme := map[string]bool{}
	for path, text := range pages {
		for _, target := range links(text) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := path
			if file != "" {
				resolved = filepath.Clean(filepath.Join(filepath.Dir(path), file))
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: link %q: %s does not exist", path, target, resolved)
					continue
				}
			}
			if path == "README.md" {
				linkedFromReadme[resolved] = true
			}
			if anchor != "" {
				if _, isPage := pages[resolved]; !isPage {
					t.Errorf("%s: link %q: an anchor into a file that is not a page", path, target)
				} else if !slices.Contains(headings[resolved], anchor) {
					t.Errorf("%s: link %q: %s has no heading #%s (it has %v)", path, target, resolved, anchor, headings[resolved])
				}
			}
		}
		for _, shown := range commandLines(text) {
			checkCommandLine(t, path, shown, flags)
		}
		for _, flag := range flagMentions(text) {
			if !allFlags[flag] && !otherToolsFlags[flag] && !intendedTypos[flag] {
				t.Errorf("%s: %s is no tokentop command's flag (nor a listed flag of another tool)", path, flag)
			}
		}
	}
	for path := range pages {
		if path != "README.md" && !linkedFromReadme[path] {
			t.Errorf("%s is not linked from the README's index", path)
		}
	}
}

// otherToolsFlags are flags of other programs the docs show beside
// tokentop's, by the program that takes them.
var otherToolsFlags = map[string]bool{
	"--clean": true, "--snapshot": true, // goreleaser build
	"--metrics": true, "--reasoning-format": true, // llama-server
	"--save-result": true,                    // vLLM's benchmark
	"--samplers":    true,                    // powermetrics
	"--flag":        true,                    // "a mistyped --flag", in words
	"--for":         true, "--timeout": true, // kubectl wait
}

// intendedTypos are the mistakes the docs show on purpose, with the one
// line tokentop answers them with.
var intendedTypos = map[string]bool{"runn": true, "--trails": true}

// docPages are README.md and docs/*.md, by path from the repository root.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, path := range append(paths, "README.md") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pages[path] = string(data)
	}
	if len(pages) < 10 {
		t.Fatalf("only %d pages: docs/ is missing", len(pages))
	}
	return pages
}

var (
	linkPattern   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fencePattern  = regexp.MustCompile("(?m)^```")
	inlinePattern = regexp.MustCompile("`([^`\n]+)`")
	flagPattern   = regexp.MustCompile(`(?:^|[^\w-])(--[a-z][a-z0-9-]*)`)
)

// links are the targets of text's Markdown links and images, outside
// code.
func links(text string) []string {
	var out []string
	for _, m := range linkPattern.FindAllStringSubmatch(prose(text), -1) {
		out = append(out, m[1])
	}
	return out
}

// prose is text without its fenced code blocks.
func prose(text string) string {
	parts := fencePattern.Split(text, -1)
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// anchors are the ids GitHub gives the headings of text: lower case,
// punctuation dropped, spaces as hyphens, a repeat numbered.
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	for _, line := range strings.Split(prose(text), "\n") {
		trimmed := strings.TrimLeft(line, "#")
		if trimmed == line || !strings.HasPrefix(trimmed, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(trimmed)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			seen[id]++
			id += "-" + strconv.Itoa(n)
		} else {
			seen[id] = 1
		}
		out = append(out, id)
	}
	return out
}

// commandLines are the tokentop command lines text shows: lines of code
// blocks and inline code that begin with "tokentop" (after a "$ " prompt).
func commandLines(text string) []string {
	var out []string
	consider := func(line string) {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
		if strings.HasPrefix(line, "tokentop ") || line == "tokentop" {
			out = append(out, line)
		}
	}
	for i, block := range fencePattern.Split(text, -1) {
		if i%2 == 1 {
			for _, line := range strings.Split(block, "\n") {
				consider(line)
			}
		}
	}
	// Indented code blocks, and inline code.
	for _, line := range strings.Split(prose(text), "\n") {
		if strings.HasPrefix(line, "    ") {
			consider(line)
		}
	}
	for _, m := range inlinePattern.FindAllStringSubmatch(prose(text), -1) {
		consider(m[1])
	}
	return out
}

// flagMentions are the --flags text names anywhere.
func flagMentions(text string) []string {
	var out []string
	for _, m := range flagPattern.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkCommandLine holds one shown command line to the program: its
// command exists, and each flag before a comment is one of its own.
func checkCommandLine(t *testing.T, page, line string, flags map[string]map[string]bool) {
	t.Helper()
	if strings.Contains(line, " · ") { // a screen's header line, not a command
		return
	}
	line, _, _ = strings.Cut(line, "#")
	line, _, _ = strings.Cut(line, "   ")            // a listing's description column
	if i := strings.IndexAny(line, ">|;&"); i >= 0 { // a shell redirect or pipe ends tokentop's words
		line = line[:i]
	}
	words := strings.Fields(line)
	command := ""
	rest := words[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && rest[0] != strings.ToUpper(rest[0]) {
		command = rest[0]
		rest = rest[1:]
		if _, known := flags[command]; !known && command != "help" && !intendedTypos[command] {
			t.Errorf("%s: %q: %q is not a tokentop command", page, line, command)
			return
		}
	}
	for _, w := range rest {
		if !strings.HasPrefix(w, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimRight(w, ",:;)"), "=")
		if intendedTypos[name] || command == "help" {
			continue
		}
		if !flags[command][name] {
			t.Errorf("%s: %q: tokentop %s has no flag %s", page, line, command, name)
		}
	}
}

// commandFlags are each command's flags as its -h lists them; "" is the
// command line without a command.
func commandFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{"": {"--version": true, "--help": true}}
	listed := regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`)
	for name := range commands {
		code, help, stderr := runCLI(name, "-h")
		if code != exitOK {
			t.Fatalf("tokentop %s -h: exit %d, %s", name, code, stderr)
		}
		out[name] = map[string]bool{"--help": true}
		for _, m := range listed.FindAllStringSubmatch(help, -1) {
			out[name][m[1]] = true
		}
	}
	return out
}
