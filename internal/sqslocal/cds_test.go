package sqslocal

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestClassArchive: the first ElasticMQ of a machine dumps its classes when it stops, the
// next one maps them and still answers; "off", or options with their own sharing, run
// without.
func TestClassArchive(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvCDSDir, dir)
	install, err := InstallDir(ElasticMQ)
	if err != nil {
		t.Fatal(err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal(err)
	}
	first := elasticMQArchive(java, DefaultJavaOpts, install)
	if first.dump == "" || !slices.Contains(first.args(), "-XX:ArchiveClassesAtExit="+first.dump) {
		t.Fatalf("with no archive yet: %+v, args %v, want a dump", first, first.args())
	}
	os.Remove(first.dump)

	for i, want := range []string{"-XX:ArchiveClassesAtExit=", "-XX:SharedArchiveFile="} {
		start := time.Now()
		s, err := StartKind(t.Context(), ElasticMQ)
		if err != nil {
			t.Fatal(err)
		}
		answered := time.Since(start)
		if !slices.ContainsFunc(s.proc.Args(), func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("server %d: java %v, want %s", i+1, s.proc.Args(), want)
		}
		if _, err := s.Client().ListQueues(t.Context(), &sqs.ListQueuesInput{}); err != nil {
			t.Errorf("server %d: ListQueues: %v", i+1, err)
		}
		s.Stop()
		t.Logf("server %d (%s): answered ListQueues %v after it was started", i+1, want, answered.Round(10*time.Millisecond))
		archives, _ := filepath.Glob(filepath.Join(dir, "elasticmq-*.jsa"))
		if len(archives) != 1 || archives[0] != first.path {
			t.Fatalf("after server %d stopped: archives %v, want %s", i+1, archives, first.path)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*.dumping")); len(left) > 0 {
			t.Errorf("after server %d stopped: dumps left %v", i+1, left)
		}
	}

	for _, tc := range []struct{ env, opts string }{{"off", DefaultJavaOpts}, {dir, DefaultJavaOpts + " -Xshare:off"}} {
		t.Setenv(EnvCDSDir, tc.env)
		if a := elasticMQArchive(java, tc.opts, install); a.args() != nil {
			t.Errorf("%s=%s, options %q: args %v, want none", EnvCDSDir, tc.env, tc.opts, a.args())
		}
	}
}

// TestClassArchiveKeepsOnlyACleanDump: a JVM killed mid-dump (SIGKILL: exit 137) leaves a
// partial file, which is removed, never renamed to the archive the next JVM maps.
func TestClassArchiveKeepsOnlyACleanDump(t *testing.T) {
	dir := t.TempDir()
	killed := exec.Command("sh", "-c", "kill -KILL $$")
	waitErr := killed.Run()
	var exit *exec.ExitError
	if !errors.As(waitErr, &exit) {
		t.Fatalf("sh killed itself: %v", waitErr)
	}
	for _, tc := range []struct {
		name    string
		waitErr error
		kept    bool
	}{{"SIGTERM", exec.Command("sh", "-c", "exit 143").Run(), true}, {"SIGKILL", waitErr, false}} {
		a := classArchive{path: filepath.Join(dir, tc.name+".jsa"), dump: filepath.Join(dir, tc.name+".jsa.dumping")}
		if err := os.WriteFile(a.dump, []byte("classes"), 0o644); err != nil {
			t.Fatal(err)
		}
		a.stopped(tc.waitErr)
		_, err := os.Stat(a.path)
		if kept := err == nil; kept != tc.kept {
			t.Errorf("%s (%v): archive kept %v, want %v", tc.name, tc.waitErr, kept, tc.kept)
		}
		if _, err := os.Stat(a.dump); err == nil {
			t.Errorf("%s: the dump %s is left", tc.name, a.dump)
		}
	}
}
