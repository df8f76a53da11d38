package profiles

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed builtin/*.toml
var builtinFS embed.FS

// DefaultName is the profile used when none is asked for.
const DefaultName = "greedy-vs-sampling"

// Builtins returns the profiles shipped inside the binary, sorted by name.
// They are validated by tests, so a failure here is a build defect.
func Builtins() []*Profile {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		panic(err)
	}
	var out []*Profile
	for _, e := range entries {
		data, err := builtinFS.ReadFile("builtin/" + e.Name())
		if err != nil {
			panic(err)
		}
		p, err := Parse(e.Name(), data)
		if err != nil {
			panic(fmt.Sprintf("built-in profile %s: %v", e.Name(), err))
		}
		p.Source = "builtin"
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UserDir is where user profiles live: <user config dir>/tokentop/profiles.
func UserDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "tokentop", "profiles"), nil
}

// LoadDir loads every *.toml profile in dir. A missing folder is not an
// error; a broken file is reported without hiding the good ones.
func LoadDir(dir string) ([]*Profile, []error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	sort.Strings(paths)
	var out []*Profile
	var errs []error
	for _, path := range paths {
		p, err := Load(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errs
}

// All returns built-in profiles followed by the user's, and the problems
// found in user files.
func All() ([]*Profile, []error) {
	all := Builtins()
	dir, err := UserDir()
	if err != nil {
		return all, nil
	}
	user, errs := LoadDir(dir)
	return append(all, user...), errs
}

// IsProfilePath reports whether arg names a profile file rather than a
// profile by name.
func IsProfilePath(arg string) bool {
	return strings.HasSuffix(arg, ".toml") || strings.ContainsRune(arg, os.PathSeparator)
}

// Find resolves a profile argument: a path to a .toml file, or the name of
// a user profile (which shadows a built-in one of the same name) or a
// built-in profile.
func Find(arg string) (*Profile, error) {
	if IsProfilePath(arg) {
		return Load(arg)
	}
	all, _ := All()
	var names []string
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Name == arg {
			return all[i], nil
		}
	}
	for _, p := range all {
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("no profile named %q; known profiles: %s (or give a path to a .toml file)", arg, strings.Join(names, ", "))
}
