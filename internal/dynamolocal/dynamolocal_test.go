package dynamolocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

var srv *Server

// TestMain also checks Stop: after the tests, the JVM's process group must be gone.
func TestMain(m *testing.M) {
	code := testmain.With(m, Start, &srv)
	if srv != nil {
		if err := syscall.Kill(-srv.proc.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(os.Stderr, "FAIL: process group %d still exists after Stop (kill 0: %v)\n", srv.proc.PID(), err)
			code = 1
		}
	}
	os.Exit(code)
}

var tableSeq atomic.Int64

// tableName is a name no earlier test of this server used, so -count=N runs each time on a
// fresh table.
func tableName(base string) string { return fmt.Sprintf("%s-%d", base, tableSeq.Add(1)) }

func TestCreateTableEnablesTTL(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct{ name, pk, sk string }{
		{"simple", "id", ""},
		{"composite", "id", "sk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tableName(tc.name)
			if err := srv.CreateTable(ctx, name, tc.pk, tc.sk); err != nil {
				t.Fatal(err)
			}
			c := srv.Client()
			d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(d.Table.KeySchema); got != map[bool]int{false: 1, true: 2}[tc.sk != ""] {
				t.Errorf("key schema has %d elements", got)
			}
			if d.Table.BillingModeSummary == nil || d.Table.BillingModeSummary.BillingMode != "PAY_PER_REQUEST" {
				t.Errorf("billing mode %+v, want PAY_PER_REQUEST", d.Table.BillingModeSummary)
			}
			ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != "expiration" {
				t.Errorf("TTL attribute %q, want expiration", got)
			}
		})
	}
}

func TestCreateTableTwiceFails(t *testing.T) {
	ctx := t.Context()
	name := tableName("twice")
	if err := srv.CreateTable(ctx, name, "id", ""); err != nil {
		t.Fatal(err)
	}
	err := srv.CreateTable(ctx, name, "id", "")
	if err == nil || !strings.Contains(err.Error(), "create table "+name) {
		t.Fatalf("second CreateTable: %v, want an error naming the table", err)
	}
}

func TestEndpointIsLoopback(t *testing.T) {
	if !strings.HasPrefix(srv.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("Endpoint() = %q", srv.Endpoint())
	}
	if !strings.Contains(srv.Output(), "DynamoDB Local") {
		t.Errorf("Output() does not hold the JVM's banner: %q", srv.Output())
	}
}

func TestStartErrorsSayWhatIsMissing(t *testing.T) {
	t.Run("no jars", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv(EnvDir, dir)
		_, err := Start()
		if err == nil {
			t.Fatal("Start succeeded without jars")
		}
		for _, want := range []string{"no DynamoDBLocal*.jar in " + dir, "run `make tools`"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("no java", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/DynamoDBLocal.jar", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvDir, dir)
		t.Setenv("PATH", t.TempDir())
		_, err := Start()
		if err == nil {
			t.Fatal("Start succeeded without java")
		}
		for _, want := range []string{"java not found on PATH", "run `make tools`"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("java fails", func(t *testing.T) {
		// An empty jar: java starts, cannot load the main class and exits; the error carries
		// its output.
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/DynamoDBLocal.jar", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvDir, dir)
		_, err := Start()
		if err == nil {
			t.Fatal("Start succeeded with an empty jar")
		}
		for _, want := range []string{"DynamoDB Local (java) exited before it answered", mainClass, "run `make tools`"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("gives up with the context", func(t *testing.T) {
		// A context that has already ended: java starts, and is stopped after the first
		// probe; the error says how long Start waited.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := StartContext(ctx)
		want := regexp.MustCompile(`^dynamolocal: DynamoDB Local \(java\) did not answer ListTables at http://127\.0\.0\.1:\d+ within \d+(\.\d+)?m?s: context canceled \(last error: `)
		if err == nil || !want.MatchString(err.Error()) {
			t.Fatalf("StartContext with an ended context: %v, want %s", err, want)
		}
	})
	t.Run("no go.mod", func(t *testing.T) {
		t.Setenv(EnvDir, "")
		t.Chdir(t.TempDir())
		_, err := Start()
		if err == nil || !strings.Contains(err.Error(), "no go.mod above") {
			t.Fatalf("Start: %v, want the missing go.mod named", err)
		}
	})
	t.Run("module root", func(t *testing.T) {
		t.Setenv(EnvDir, "")
		dir, err := jarDir()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(dir, "/.cache/dynamodb-local") {
			t.Errorf("jarDir() = %q", dir)
		}
	})
}

func TestJavaOpts(t *testing.T) {
	t.Setenv(EnvJavaOpts, " -Xmx1g  -XX:+UseG1GC ")
	if got := strings.Join(javaOpts(), "|"); got != "-Xmx1g|-XX:+UseG1GC" {
		t.Errorf("javaOpts() = %q", got)
	}
	t.Setenv(EnvJavaOpts, "")
	if got := javaOpts(); len(got) != 0 {
		t.Errorf("an empty %s must mean no options, got %q", EnvJavaOpts, got)
	}
	os.Unsetenv(EnvJavaOpts)
	if got := strings.Join(javaOpts(), " "); got != DefaultJavaOpts {
		t.Errorf("javaOpts() = %q, want the defaults", got)
	}
}
