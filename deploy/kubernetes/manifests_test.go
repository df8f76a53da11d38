// Package kubernetes holds the manifests that run tokentop's shards as a
// Kubernetes Indexed Job; its test decodes them strictly into the
// Kubernetes API's own types, so that a misspelt or misplaced field fails
// here rather than on a cluster.
package kubernetes

import (
	"os"
	"regexp"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tokentop/tokentop/runner"
)

func decode(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// The shards' Job is an Indexed Job whose N pods each run one shard of N
// (--shard auto/N, N = completions = parallelism), all told one start,
// writing to the ReadWriteMany claim the merge Job reads.
func TestTheJobRunsEveryShardOnce(t *testing.T) {
	var job batchv1.Job
	decode(t, "job.yaml", &job)
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion || spec.Completions == nil || spec.Parallelism == nil ||
		*spec.Completions != *spec.Parallelism || spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("spec %+v", spec)
	}
	c := spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	shard := regexp.MustCompile(`--shard=(\S+)`).FindStringSubmatch(args)
	if shard == nil {
		t.Fatalf("no --shard in %q", args)
	}
	s, err := runner.ParseShard(shard[1], func(string) string { return "0" })
	if err != nil || s.Count != int(*spec.Completions) || !strings.HasPrefix(shard[1], "auto/") {
		t.Errorf("--shard=%s on a Job of %d completions: %+v %v", shard[1], *spec.Completions, s, err)
	}
	if at := regexp.MustCompile(`--start-at=(\S+)`).FindStringSubmatch(args); at == nil {
		t.Errorf("no --start-at in %q", args)
	} else if _, err := runner.ParseStartAt(at[1]); err != nil {
		t.Error(err)
	}
	out := regexp.MustCompile(`--out=(\S+)`).FindStringSubmatch(args)
	if c.Args[0] != "run" || out == nil || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != out[1] {
		t.Errorf("args %q, mounts %+v", c.Args, c.VolumeMounts)
	}
	claim := spec.Template.Spec.Volumes[0].PersistentVolumeClaim

	var pvc corev1.PersistentVolumeClaim
	decode(t, "pvc.yaml", &pvc)
	if claim == nil || claim.ClaimName != pvc.Name || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("claim %+v of %+v", claim, pvc.Spec)
	}

	var merge batchv1.Job
	decode(t, "merge.yaml", &merge)
	mc := merge.Spec.Template.Spec.Containers[0]
	if mc.Args[0] != "merge" || mc.Args[1] != out[1] || merge.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("merge args %q", mc.Args)
	}
}

// The image builds with the Go the module asks for, without cgo.
func TestTheImageBuildsWithTheModulesGo(t *testing.T) {
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(mod))
	from := regexp.MustCompile(`(?m)^FROM golang:(\d+)\.(\d+)`).FindStringSubmatch(string(dockerfile))
	if goLine == nil || from == nil || goLine[1] != from[1] || goLine[2] != from[2] {
		t.Errorf("go.mod's go %v, the Dockerfile's golang %v", goLine, from)
	}
	if !strings.Contains(string(dockerfile), "CGO_ENABLED=0") {
		t.Error("the image's binary is built with cgo")
	}
}
