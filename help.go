package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is a subcommand's flags and the help they print: its synopsis
// in the docs' syntax, then each flag, then examples.
type command struct {
	*flag.FlagSet
	name, synopsis string
	examples       []string
	stdout, stderr io.Writer
}

func newCommand(name, synopsis string, examples []string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet("tokentop "+name, flag.ContinueOnError)
	fs.SetOutput(stderr) // the flag package's one line on a bad flag
	fs.Usage = func() {} // parse prints the help, or a hint: not the whole usage for a typo
	return &command{FlagSet: fs, name: name, synopsis: synopsis, examples: examples, stdout: stdout, stderr: stderr}
}

// parse parses flags that may come before, between or after the
// positional arguments, and returns the positional ones. With -h it
// prints the help and ok is false with code 0; with a bad flag, the flag
// package's line and a hint, and code exitUsage.
func (c *command) parse(args []string) (positional []string, code int, ok bool) {
	for {
		if err := c.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.help(c.stdout)
				return nil, exitOK, false
			}
			fmt.Fprintf(c.stderr, "run 'tokentop %s -h' for its flags and examples\n", c.name)
			return nil, exitUsage, false
		}
		args = c.Args()
		if len(args) == 0 {
			return positional, exitOK, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// help prints the synopsis, the flags with their defaults where a
// default is a value (a flag that overrides the profile has none of its
// own: the flag package would print its sentinel), and the examples.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", c.synopsis)
	flags := 0
	c.VisitAll(func(*flag.Flag) { flags++ })
	if flags > 0 {
		fmt.Fprint(w, "\nFlags:\n")
	}
	c.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if meaningfulDefault(f.DefValue) {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range c.examples {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

// meaningfulDefault reports whether a flag's default says something: not
// the zero value, nor runner.NoOverride's -1 (the profile decides).
func meaningfulDefault(v string) bool {
	switch v {
	case "", "0", "-1", "false", "0s", "0%":
		return false
	}
	return true
}
