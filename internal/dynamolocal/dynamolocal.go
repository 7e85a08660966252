// Package dynamolocal starts DynamoDB Local for tests, on a free port, so that code
// which talks to DynamoDB is tested against a real implementation of its conditions, return
// values and TTL attributes instead of a mock.
//
// Start it once per test package, from TestMain:
//
//	var srv *dynamolocal.Server
//
//	func TestMain(m *testing.M) { os.Exit(testmain.With(m, dynamolocal.Start, &srv)) }
//
//	func TestX(t *testing.T) {
//		ctx := t.Context()
//		if err := srv.CreateTable(ctx, "t", "id", ""); err != nil { t.Fatal(err) }
//		client := srv.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
//		...
//	}
//
// The jars come from $DYNAMODB_LOCAL_DIR or, when that is unset, from .cache/dynamodb-local
// in the module root (`make tools` puts them there). A missing jar or Java is an error that
// fails the test run: a skipped integration suite would pass CI while testing nothing.
package dynamolocal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/internal/jvmcds"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
)

// EnvDir names the environment variable holding the directory of the DynamoDB Local jars.
const EnvDir = "DYNAMODB_LOCAL_DIR"

// StartTimeout bounds how long Start waits for the server to answer. The JVM takes about 6 s
// to answer on the shared 2-core build machine, and several times that when the machine runs
// five times more work than it has cores (with the e2e suite's ElasticMQ starting beside
// it); Start returns as soon as it answers, so the bound is a hang guard, not a speed.
const StartTimeout = 3 * time.Minute

// EnvJavaOpts names the environment variable that replaces DefaultJavaOpts (space-separated).
const EnvJavaOpts = "DYNAMODB_LOCAL_JAVA_OPTS"

// DefaultJavaOpts suit a test server that lives for seconds on a small machine: C1 only
// (TieredStopAtLevel=1) warms up faster and leaves the CPU to the tests instead of C2's
// compiler threads, and the serial collector needs no GC threads.
const DefaultJavaOpts = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss1m"

func javaOpts() []string {
	if v, ok := os.LookupEnv(EnvJavaOpts); ok {
		return strings.Fields(v)
	}
	return strings.Fields(DefaultJavaOpts)
}

// mainClass is the entry point of DynamoDB Local 2.x and 3.x (software.amazon.dynamodb).
const mainClass = "software.amazon.dynamodb.services.local.main.ServerRunner"

// Server is a running DynamoDB Local process. Its methods are safe for concurrent use.
type Server struct {
	endpoint string
	proc     *localproc.Process
	archive  jvmcds.Archive
	stopOnce sync.Once
	conns    *http.Transport // one connection pool for every Client
}

// Start launches DynamoDB Local in memory on a free port (it listens on every interface: it has
// no bind-address flag) and returns, with a client for 127.0.0.1, once it answers
// ListTables, or fails after StartTimeout. The error names what is missing (jars, java) and
// how to get it.
func Start() (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	return StartContext(ctx)
}

// StartContext is Start with the caller's bound on the wait.
func StartContext(ctx context.Context) (*Server, error) {
	dir, err := jarDir()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("dynamolocal: java not found on PATH (DynamoDB Local needs Java 17+): install a JDK, then run `make tools`: %w", err)
	}
	// The free port is found by binding and releasing it, so another process can take it
	// before the JVM binds it; a JVM that exits early is retried on a fresh port.
	var lastErr error
	for range 3 {
		port, err := localproc.FreePort()
		if err != nil {
			return nil, fmt.Errorf("dynamolocal: find a free port: %w", err)
		}
		s, err := launch(ctx, java, dir, port)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil || !errors.Is(err, localproc.ErrExited) {
			break
		}
	}
	return nil, lastErr
}

func launch(ctx context.Context, java, dir string, port int) (*Server, error) {
	opts := javaOpts()
	cp, archive, err := classPath(java, strings.Join(opts, " "), dir)
	if err != nil {
		return nil, err
	}
	args := append(opts, archive.Args()...)
	// -sharedDb: one database for every access key and region, as one account's region is for
	// its callers; otherwise a Lambda binary under test (its own dummy credentials) would not
	// see the tables the test created.
	args = append(args,
		"-Djava.library.path="+dir,
		"-cp", cp,
		mainClass, "-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port))
	cmd := exec.Command(java, args...)
	cmd.Dir = dir
	proc, err := localproc.Start(cmd)
	if err != nil {
		archive.Stopped(err)
		return nil, fmt.Errorf("dynamolocal: start %s: %w (run `make tools`)", java, err)
	}
	s := &Server{
		archive: archive,
		// DynamoDB Local has no bind-address flag (it listens on every interface); clients
		// use the loopback address only.
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		proc:     proc,
		conns:    newTransport(),
	}
	if err := s.waitReady(ctx, dir); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady waits until the server answers ListTables; dir is the jars' directory, for the
// message when java exits first.
func (s *Server) waitReady(ctx context.Context, dir string) error {
	client := s.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	return s.proc.WaitAnswering(ctx, localproc.Server{Pkg: "dynamolocal", Name: "DynamoDB Local (java)", Call: "ListTables", Endpoint: s.endpoint, Dir: dir},
		func(ctx context.Context) error {
			_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
			return err
		})
}

// Stop ends the JVM and its whole process group (SIGTERM, then SIGKILL after 5 s, or
// jvmcds.DumpGrace for the JVM that writes the class-data archive) and waits for it to exit.
// It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if g := s.archive.Grace(); g > 0 {
			s.proc.StopWithin(g)
		} else {
			s.proc.Stop()
		}
		s.archive.Stopped(s.proc.WaitErr())
		s.conns.CloseIdleConnections()
	})
}

// newTransport is a connection pool with room for as many idle connections to the one server
// as a test package's parallel callers use (Go keeps 2 per host by default: a caller beyond
// them opens a connection per call and closes it).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 64, 64
	return t
}

// DumpsClassArchive says whether Stop waits for the server to write DynamoDB Local's
// class-data archive (the first one of a machine does, once; up to jvmcds.DumpGrace), so that
// a caller can say why its stop takes longer.
func (s *Server) DumpsClassArchive() bool { return s.archive.Dumps() }

var archiveServer = jvmcds.Server{File: "dynamodb-local", Name: "DynamoDB Local"}

// classPath is the JVM's class path for the jars in dir, and the class-data archive to map or
// dump with it (package jvmcds). With archives on: DynamoDB Local's own jar as a copy in the
// archives' directory without its manifest's Class-Path (which puts "." on the class path, and
// the JVM archives no class path that holds a directory), then dir's other jars in name
// order, then those in dir/DynamoDBLocal_lib (where AWS's download keeps the jars that
// Class-Path names; make tools puts them in dir). With archives off: dir/*, every jar of dir,
// and the manifest's Class-Path.
func classPath(java, opts, dir string) (string, jvmcds.Archive, error) {
	all := filepath.Join(dir, "*")
	base, ok, err := jvmcds.Dir(archiveServer, opts)
	if err != nil {
		return "", jvmcds.Archive{}, fmt.Errorf("dynamolocal: %w", err)
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "*.jar")) // sorted
	own := slices.IndexFunc(jars, func(j string) bool { return strings.HasPrefix(filepath.Base(j), "DynamoDBLocal") })
	if !ok || own < 0 {
		return all, jvmcds.Archive{}, nil
	}
	copied, err := jvmcds.JarWithoutClassPath(base, jars[own])
	if err != nil { // the archive is a saving, not a need: run as before
		return all, jvmcds.Archive{}, nil
	}
	lib, _ := filepath.Glob(filepath.Join(dir, "DynamoDBLocal_lib", "*.jar"))
	cp := append(append([]string{copied}, slices.Delete(jars, own, own+1)...), lib...)
	a, err := jvmcds.For(base, archiveServer, java, opts, cp)
	if err != nil {
		return "", jvmcds.Archive{}, fmt.Errorf("dynamolocal: %w", err)
	}
	return strings.Join(cp, string(filepath.ListSeparator)), a, nil
}

// Endpoint is the server's base URL, http://127.0.0.1:<port>.
func (s *Server) Endpoint() string { return s.endpoint }

// Output is what the JVM printed so far (the last 64 KiB), for failure messages.
func (s *Server) Output() string { return s.proc.Output() }

// Client returns a DynamoDB client for the server: static dummy credentials, region
// us-east-1, BaseEndpoint set. SDK retries keep the SDK's default unless optFns change them.
// Every client of a Server shares one connection pool, so a caller may make one per call (an
// SDK client made without an HTTP client gets a pool of its own, whose connection stays open).
func (s *Server) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.endpoint),
		HTTPClient:   sdkhttp.Wrap(&http.Client{Transport: s.conns}),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "dynamolocal"}, nil
		}),
	}, optFns...)
}

// CreateTable creates an on-demand table with a string partition key and, when sortKey is not
// empty, a string sort key, waits until it is active and enables TTL on "expiration" (the
// attribute the idempotency records use).
func (s *Server) CreateTable(ctx context.Context, name, partitionKey, sortKey string) error {
	c := s.Client()
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(partitionKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(partitionKey), KeyType: types.KeyTypeHash},
		},
	}
	if sortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(sortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema,
			types.KeySchemaElement{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange})
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("dynamolocal: create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	// DynamoDB Local makes a table active at once; the bound is a hang guard for a loaded
	// machine, and costs nothing when the table is there.
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return fmt.Errorf("dynamolocal: wait for table %s: %w", name, err)
	}
	if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String("expiration"),
			Enabled:       aws.Bool(true),
		},
	}); err != nil {
		return fmt.Errorf("dynamolocal: enable TTL on %s: %w", name, err)
	}
	return nil
}

// jarDir finds the DynamoDB Local jars: $DYNAMODB_LOCAL_DIR, else .cache/dynamodb-local in the
// nearest directory above the working directory that holds go.mod.
func jarDir() (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".cache", "dynamodb-local")
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "DynamoDBLocal*.jar"))
	if len(jars) == 0 {
		return "", fmt.Errorf("dynamolocal: no DynamoDBLocal*.jar in %s (set %s, or run `make tools` to download DynamoDB Local)", dir, EnvDir)
	}
	return dir, nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("dynamolocal: working directory: %w", err)
	}
	root, ok := localproc.ModuleRoot(wd)
	if !ok {
		return "", fmt.Errorf("dynamolocal: %s unset and no go.mod above %s to find .cache/dynamodb-local: set %s, or run `make tools` from the module", EnvDir, wd, EnvDir)
	}
	return root, nil
}
