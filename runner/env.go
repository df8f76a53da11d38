package runner

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"

	"github.com/tokentop/tokentop/session"
)

// Environment describes this machine on any OS; fields it cannot read
// stay empty.
func Environment() session.Environment {
	env := session.Environment{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	env.Hostname, _ = os.Hostname()
	env.Kernel, _ = host.KernelVersion()
	if cpus, err := cpu.Info(); err == nil && len(cpus) > 0 {
		env.CPUModel = strings.TrimSpace(cpus[0].ModelName)
	}
	env.VCSRevision = VCSRevision()
	if vm, err := mem.VirtualMemory(); err == nil {
		env.MemoryMB = int64(vm.Total >> 20)
	}
	return env
}

// VCSRevision is the commit tokentop was built from, "+dirty" when the
// tree had uncommitted changes; empty when the build says none.
func VCSRevision() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return vcsRevision(info.Settings)
	}
	return ""
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
