package sqslocal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/jvmcds"
)

// TestClassArchive: the first ElasticMQ of a machine dumps its classes when it stops, the
// next one maps them and still answers (package jvmcds); "off" runs without.
func TestClassArchive(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(jvmcds.EnvDir, dir)
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
		if archives, _ := filepath.Glob(filepath.Join(dir, "elasticmq-*.jsa")); i == 1 && len(archives) == 1 {
			if maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", s.PID())); err != nil || !strings.Contains(string(maps), archives[0]) {
				t.Errorf("server 2: %s is not in the JVM's memory map (%v): the JVM refused the archive", archives[0], err)
			}
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
			i+1, want, answered.Round(10*time.Millisecond), time.Since(stop).Round(10*time.Millisecond), jvmcds.DumpGrace)
		if archives, _ := filepath.Glob(filepath.Join(dir, "elasticmq-*.jsa")); len(archives) != 1 {
			t.Fatalf("after server %d stopped: archives %v, want one", i+1, archives)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*.jsa.*")); len(left) > 0 {
			t.Errorf("after server %d stopped: dumps or locks left %v", i+1, left)
		}
	}
	// Off: no archive options, checked without a JVM (one without them is how every
	// ElasticMQ ran before the archive).
	t.Setenv(jvmcds.EnvDir, "off")
	install, err := InstallDir(ElasticMQ)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := elasticMQArchive("java", DefaultJavaOpts, install); a.Args() != nil || err != nil {
		t.Errorf("%s=off: archive options %v (%v), want none", jvmcds.EnvDir, a.Args(), err)
	}
}

// TestClassArchiveDirMustBeWritable: a $LOCAL_JVM_CDS_DIR that cannot hold the archive (here
// under a plain file) fails the start, naming the package, the variable and the ways out.
func TestClassArchiveDirMustBeWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(jvmcds.EnvDir, filepath.Join(file, "cds"))
	_, err := StartKind(t.Context(), ElasticMQ)
	want := `sqslocal: LOCAL_JVM_CDS_DIR="` + filepath.Join(file, "cds") + `": `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), `: name a directory this user can write, or "off" to run ElasticMQ without a class-data archive`) {
		t.Fatalf("StartKind with %s under a file: %v, want %s...: name a directory this user can write, or \"off\"...", jvmcds.EnvDir, err, want)
	}
}
