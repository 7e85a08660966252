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
	first, err := elasticMQArchive(java, DefaultJavaOpts, install)
	if err != nil {
		t.Fatal(err)
	}
	if first.dump == "" || !slices.Contains(first.args(), "-XX:ArchiveClassesAtExit="+first.dump) {
		t.Fatalf("with no archive yet: %+v, args %v, want a dump", first, first.args())
	}
	// A second start while the first holds the lock runs as before: no archive, no dump.
	if second, err := elasticMQArchive(java, DefaultJavaOpts, install); err != nil || second.args() != nil {
		t.Errorf("while %s is held: args %v (%v), want none", first.lock, second.args(), err)
	}
	first.stopped(errors.New("not started")) // gives the lock up
	if _, err := os.Stat(first.lock); !os.IsNotExist(err) {
		t.Fatalf("the lock %s after stopped: %v, want it removed", first.lock, err)
	}
	// A lock left by a killed process is taken over once it is older than any dump.
	if err := os.WriteFile(first.lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-staleLock - time.Minute)
	if err := os.Chtimes(first.lock, old, old); err != nil {
		t.Fatal(err)
	}
	if stale, _ := elasticMQArchive(java, DefaultJavaOpts, install); stale.dump == "" {
		t.Errorf("with a lock from %v: %+v, want the lock taken over and a dump", old, stale)
	} else {
		stale.stopped(errors.New("not started"))
	}

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
		if got, dumps := s.DumpsClassArchive(), i == 0; got != dumps {
			t.Errorf("server %d: DumpsClassArchive() = %v, want %v (the kit says so before a stop that writes it)", i+1, got, dumps)
		}
		stop := time.Now()
		s.Stop()
		t.Logf("server %d (%s): answered ListQueues %v after it was started, stopped in %v (DumpGrace %v)",
			i+1, want, answered.Round(10*time.Millisecond), time.Since(stop).Round(10*time.Millisecond), DumpGrace)
		archives, _ := filepath.Glob(filepath.Join(dir, "elasticmq-*.jsa"))
		if len(archives) != 1 || archives[0] != first.path {
			t.Fatalf("after server %d stopped: archives %v, want %s", i+1, archives, first.path)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*.jsa.*")); len(left) > 0 {
			t.Errorf("after server %d stopped: dumps or locks left %v", i+1, left)
		}
	}

	for _, tc := range []struct{ env, opts string }{{"off", DefaultJavaOpts}, {dir, DefaultJavaOpts + " -Xshare:off"}} {
		t.Setenv(EnvCDSDir, tc.env)
		if a, err := elasticMQArchive(java, tc.opts, install); err != nil || a.args() != nil {
			t.Errorf("%s=%s, options %q: args %v (%v), want none", EnvCDSDir, tc.env, tc.opts, a.args(), err)
		}
	}
}

// TestClassArchiveKeepsOnlyACleanDump: a JVM killed mid-dump (SIGKILL: exit 137) leaves a
// partial file, which is removed, never renamed to the archive the next JVM maps; the lock
// goes either way.
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
		a := classArchive{path: filepath.Join(dir, tc.name+".jsa"), dump: filepath.Join(dir, tc.name+".jsa.dumping"), lock: filepath.Join(dir, tc.name+".jsa.lock")}
		for _, f := range []string{a.dump, a.lock} {
			if err := os.WriteFile(f, []byte("classes"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a.stopped(tc.waitErr)
		_, err := os.Stat(a.path)
		if kept := err == nil; kept != tc.kept {
			t.Errorf("%s (%v): archive kept %v, want %v", tc.name, tc.waitErr, kept, tc.kept)
		}
		for _, f := range []string{a.dump, a.lock} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%s: %s is left", tc.name, f)
			}
		}
	}
}

// TestClassArchiveDirMustBeWritable: a $SQSLOCAL_CDS_DIR that cannot hold the archive (here
// under a plain file) fails the start, naming the variable and the ways out.
func TestClassArchiveDirMustBeWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvCDSDir, filepath.Join(file, "cds"))
	_, err := StartKind(t.Context(), ElasticMQ)
	want := `sqslocal: SQSLOCAL_CDS_DIR="` + filepath.Join(file, "cds") + `": `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), `: name a directory this user can write, or "off" to run ElasticMQ without a class-data archive`) {
		t.Fatalf("StartKind with %s under a file: %v, want %s...: name a directory this user can write, or \"off\"...", EnvCDSDir, err, want)
	}
}
