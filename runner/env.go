package runner

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/session"
)

// Environment describes this machine from /proc where Linux offers it;
// fields it cannot read stay empty.
func Environment() session.Environment {
	env := session.Environment{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	env.Hostname, _ = os.Hostname()
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env.Kernel = strings.TrimSpace(string(data))
	}
	env.CPUModel = procField("/proc/cpuinfo", "model name")
	if info, ok := debug.ReadBuildInfo(); ok {
		env.VCSRevision = vcsRevision(info.Settings)
	}
	if kb, err := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		env.MemoryMB = kb / 1024
	}
	return env
}

// vcsRevision is the commit the binary was built from, "+dirty" when the
// tree had uncommitted changes; empty for builds without VCS stamps
// (go test, go run outside a checkout).
func vcsRevision(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+dirty"
	}
	return rev
}

// procField returns the value of the first "key: value" line of file.
func procField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
