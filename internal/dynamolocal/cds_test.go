package dynamolocal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/internal/jvmcds"
)

// TestClassArchive: the first DynamoDB Local of a machine dumps its classes when it stops and
// the next one maps them (the archive is in the JVM's memory map, so the JVM did not refuse
// it), on a class path of its own jar copied without the manifest's Class-Path and the other
// jars; both serve a table. "off" runs as before, on dir/*.
func TestClassArchive(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(jvmcds.EnvDir, dir)
	for i, want := range []string{"-XX:ArchiveClassesAtExit=", "-XX:SharedArchiveFile="} {
		start := time.Now()
		s, err := Start()
		if err != nil {
			t.Fatal(err)
		}
		answered := time.Since(start)
		cpu := cpuSeconds(t, s.proc.PID())
		args := s.proc.Args()
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("server %d: java %v, want %s", i+1, args, want)
		}
		cp := args[slices.Index(args, "-cp")+1]
		if first := strings.Split(cp, string(filepath.ListSeparator))[0]; filepath.Dir(first) != dir || !strings.HasPrefix(filepath.Base(first), "DynamoDBLocal") {
			t.Errorf("server %d: class path %s, want the copy of DynamoDB Local's jar in %s first", i+1, cp, dir)
		}
		if i == 1 {
			if maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", s.proc.PID())); err != nil || !strings.Contains(string(maps), s.archive.Path()) {
				t.Errorf("server 2: %s is not in the JVM's memory map (%v): the JVM refused the archive", s.archive.Path(), err)
			}
		}
		useTable(t, s)
		if got, dumps := s.DumpsClassArchive(), i == 0; got != dumps {
			t.Errorf("server %d: DumpsClassArchive() = %v, want %v", i+1, got, dumps)
		}
		stop := time.Now()
		s.Stop()
		t.Logf("server %d (%s): answered ListTables %v after it was started, with %.2f CPU s; stopped in %v",
			i+1, want, answered.Round(10*time.Millisecond), cpu, time.Since(stop).Round(10*time.Millisecond))
		if archives, _ := filepath.Glob(filepath.Join(dir, "dynamodb-local-*.jsa")); len(archives) != 1 {
			t.Fatalf("after server %d stopped: archives %v, want one", i+1, archives)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*.jsa.*")); len(left) > 0 {
			t.Errorf("after server %d stopped: dumps or locks left %v", i+1, left)
		}
	}
	// Off: the class path and options as before the archive, checked without a JVM (one
	// started so is how every DynamoDB Local ran before).
	t.Setenv(jvmcds.EnvDir, "off")
	jars, err := jarDir()
	if err != nil {
		t.Fatal(err)
	}
	if cp, a, err := classPath("java", DefaultJavaOpts, jars); cp != filepath.Join(jars, "*") || a.Args() != nil || err != nil {
		t.Errorf("%s=off: class path %s, archive options %v (%v), want dir/* and none", jvmcds.EnvDir, cp, a.Args(), err)
	}
}

func useTable(t *testing.T, s *Server) {
	t.Helper()
	ctx := t.Context()
	if err := s.CreateTable(ctx, "cds", "id", ""); err != nil {
		t.Fatal(err)
	}
	c := s.Client()
	item := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "a"}}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("cds"), Item: item, ConditionExpression: aws.String("attribute_not_exists(id)")}); err != nil {
		t.Fatal(err)
	}
	if out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("cds"), Key: item, ConsistentRead: aws.Bool(true)}); err != nil || out.Item == nil {
		t.Fatalf("GetItem: %v %v", out, err)
	}
}

// cpuSeconds is the user and system CPU the process has used, from /proc/<pid>/stat.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return float64(utime+stime) / 100 // USER_HZ
}

// TestClassArchiveAWSLayout: with the jars laid out as AWS's download has them (DynamoDB
// Local's jar on its own, the others and the native libraries in DynamoDBLocal_lib/), the
// class path for the archive names the library's jars too, and the server serves a table.
func TestClassArchiveAWSLayout(t *testing.T) {
	from, err := jarDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "DynamoDBLocal_lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		to := filepath.Join(dir, "DynamoDBLocal_lib", f.Name())
		if strings.HasPrefix(f.Name(), "DynamoDBLocal") {
			to = filepath.Join(dir, f.Name())
		}
		if err := os.Symlink(filepath.Join(from, f.Name()), to); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvDir, dir)
	t.Setenv(jvmcds.EnvDir, t.TempDir())
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	args := s.proc.Args()
	if cp := args[slices.Index(args, "-cp")+1]; !strings.Contains(cp, filepath.Join(dir, "DynamoDBLocal_lib")+"/") {
		t.Errorf("class path %s, want the jars of DynamoDBLocal_lib on it", cp)
	}
	useTable(t, s)
	// Killed, so that it writes no archive: TestClassArchive tests that part, and the dump is
	// most of this JVM's CPU.
	if err := syscall.Kill(-s.proc.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.Stop()
}
