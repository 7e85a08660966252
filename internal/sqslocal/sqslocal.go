// Package sqslocal starts an SQS-compatible server for tests, on a free loopback port, so that
// code which talks to SQS is tested against a real implementation of visibility timeouts,
// redrive to a dead-letter queue and FIFO message groups instead of a mock.
//
// Start it once per test package, from TestMain:
//
//	var srv *sqslocal.Server
//
//	func TestMain(m *testing.M) { os.Exit(testmain.With(m, sqslocal.Start, &srv)) }
//
//	func TestX(t *testing.T) {
//		ctx := t.Context()
//		url, arn, err := srv.CreateQueue(ctx, "q", nil)
//		if err != nil { t.Fatal(err) }
//		client := srv.Client(func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
//		...
//	}
//
// Three servers are supported (Kind); Default is the one test/sqsfidelity measured as the
// most faithful to SQS (see test/sqsfidelity/README.md), and $SQSLOCAL_KIND picks another.
// Each is installed by `make tools` under .cache in the module root, or where its environment
// variable says (ELASTICMQ_DIR, MOTO_VENV, FAUXQS_DIR). A missing install, Java or Node is an
// error that fails the test run: a skipped integration suite would pass CI while testing
// nothing.
package sqslocal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/internal/jvmcds"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
)

// Kind names an SQS-compatible server.
type Kind string

// The supported servers.
const (
	// ElasticMQ is the Scala SQS server (Maven Central org.elasticmq:elasticmq-server_2.13),
	// run on the JVM from the jars in $ELASTICMQ_DIR (.cache/elasticmq).
	ElasticMQ Kind = "elasticmq"
	// Moto is moto's standalone server (PyPI moto[server]), run from the virtualenv in
	// $MOTO_VENV (.cache/moto-venv).
	Moto Kind = "moto"
	// Fauxqs is the Node SNS/SQS/S3 emulator (npm fauxqs), run from $FAUXQS_DIR
	// (.cache/fauxqs) with a Node >= 22.5.
	Fauxqs Kind = "fauxqs"
)

// Kinds lists every supported server, Default first.
var Kinds = []Kind{ElasticMQ, Moto, Fauxqs}

// Default is the server Start runs when $SQSLOCAL_KIND is unset. ElasticMQ passes the most
// test/sqsfidelity checks, and is the only one that, like SQS, returns several messages of
// one FIFO group in one ReceiveMessage and counts a receive of each: what decides whether
// the messages behind a failing one in its group are dead-lettered with it (see
// test/sqsfidelity/README.md).
const Default = ElasticMQ

// Environment variables that configure the servers.
const (
	EnvKind         = "SQSLOCAL_KIND" // overrides Default
	EnvElasticMQDir = "ELASTICMQ_DIR" // directory of the ElasticMQ jars
	EnvMotoVenv     = "MOTO_VENV"     // virtualenv holding bin/moto_server
	EnvFauxqsDir    = "FAUXQS_DIR"    // npm prefix holding node_modules/fauxqs
	EnvNode         = "SQSLOCAL_NODE" // the node binary for fauxqs (else node_modules/.bin/node, else PATH)
	EnvJavaOpts     = "SQSLOCAL_JAVA_OPTS"
)

// Region and AccountID are what queue URLs and ARNs carry where the server lets them be set
// (ElasticMQ); moto and fauxqs use their own account ids (123456789012, 000000000000). Read a
// queue's ARN with GetQueueAttributes (or CreateQueue here) rather than building it.
const (
	Region    = "us-east-1"
	AccountID = "123456789012"
)

// StartTimeout bounds how long Start waits for the server to answer ListQueues. fauxqs
// answers in under 1 s, ElasticMQ in 2-5 s on the shared 2-core machine, and several times
// that when the machine runs five times more work than it has cores; Start returns as soon as
// the server answers, so the bound is a hang guard, not a speed.
const StartTimeout = 3 * time.Minute

// DefaultJavaOpts suit a test server that lives for seconds on a small machine (as
// dynamolocal's): C1 only, the serial collector, a small heap.
const DefaultJavaOpts = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss1m -Xmx256m"

// Server is a running SQS-compatible server. Its methods are safe for concurrent use.
type Server struct {
	kind      Kind
	endpoint  string
	proc      *localproc.Process
	tmp       string // removed on Stop
	stopped   func(waitErr error)
	stopGrace time.Duration // between SIGTERM and SIGKILL; 0 for localproc's
	dumps     bool          // writes ElasticMQ's class-data archive when it stops
	stopOnce  sync.Once
	conns     *http.Transport // one connection pool for every Client
}

// KindFromEnv is $SQSLOCAL_KIND, or Default when it is unset or empty.
func KindFromEnv() (Kind, error) {
	v := os.Getenv(EnvKind)
	if v == "" {
		return Default, nil
	}
	for _, k := range Kinds {
		if string(k) == v {
			return k, nil
		}
	}
	return "", fmt.Errorf("sqslocal: %s=%q: want one of %v", EnvKind, v, Kinds)
}

// Start launches the server of KindFromEnv on a free 127.0.0.1 port and returns once it
// answers ListQueues, or fails after StartTimeout. The error names what is missing and how to
// get it.
func Start() (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	return StartContext(ctx)
}

// StartContext is Start with the caller's bound on the wait.
func StartContext(ctx context.Context) (*Server, error) {
	kind, err := KindFromEnv()
	if err != nil {
		return nil, err
	}
	return StartKind(ctx, kind)
}

// StartKind starts a server of the given kind, bounded by ctx.
func StartKind(ctx context.Context, kind Kind) (*Server, error) {
	prepare, ok := launchers[kind]
	if !ok {
		return nil, fmt.Errorf("sqslocal: unknown kind %q: want one of %v", kind, Kinds)
	}
	// The free port is found by binding and releasing it, so another process can take it
	// before the server binds it; a server that exits early is retried on a fresh port.
	var lastErr error
	for range 3 {
		port, err := localproc.FreePort()
		if err != nil {
			return nil, fmt.Errorf("sqslocal: find a free port: %w", err)
		}
		spec, err := prepare(port)
		if err != nil {
			return nil, err
		}
		s, err := launch(ctx, kind, spec, port)
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

// spec is how to run one server on one port.
type spec struct {
	path string   // executable
	args []string // arguments
	env  []string // added to the environment
	dir  string   // working directory
	tmp  string   // a temporary directory to remove on Stop, or ""
	// stopped, when set, is called by Stop with the process's exit (cmd.Wait's error).
	stopped func(waitErr error)
	// stopGrace, when set, replaces localproc.StopGrace between Stop's SIGTERM and SIGKILL.
	stopGrace time.Duration
	dumps     bool // the JVM writes the class-data archive on its way out
}

var launchers = map[Kind]func(port int) (spec, error){
	ElasticMQ: elasticMQ,
	Moto:      moto,
	Fauxqs:    fauxqs,
}

// elasticMQConfig binds the REST SQS API to the loopback port, turns the statistics port off,
// makes queue URLs http://127.0.0.1:<port>/<account>/<name> and ARNs
// arn:aws:sqs:<region>:<account>:<name>.
//
// It also lifts Pekko HTTP's cap of 1,024 open connections (and its listen backlog of 100).
// At the cap the server stops accepting: a new connection waits in the kernel's queue until
// an idle one reaches its 60 s idle timeout, and its call goes unanswered for seconds (13.8 s
// measured, 20 s and more in CI). SQS has no such cap for a client, and code that makes an
// SDK client per call (each with its own connection pool, kept alive) reaches it within a
// minute. MaxConnections is the new cap; TestManyConnections checks it.
const elasticMQConfig = `include classpath("application.conf")
node-address { protocol = http, host = "127.0.0.1", port = %[1]d, context-path = "" }
rest-sqs { enabled = true, bind-port = %[1]d, bind-hostname = "127.0.0.1", sqs-limits = strict }
rest-stats { enabled = false }
generate-node-address = false
aws { region = %[2]s, accountId = "%[3]s" }
pekko.http.server { max-connections = %[4]d, backlog = 1024 }
`

// MaxConnections is how many connections ElasticMQ keeps open at once (Pekko HTTP's
// max-connections; its default is 1,024). The process's open-file limit bounds it too.
const MaxConnections = 16384

func elasticMQ(port int) (spec, error) {
	dir, err := InstallDir(ElasticMQ)
	if err != nil {
		return spec{}, err
	}
	if jars, _ := filepath.Glob(filepath.Join(dir, "elasticmq-server_*.jar")); len(jars) == 0 {
		return spec{}, fmt.Errorf("sqslocal: no elasticmq-server_*.jar in %s (set %s, or run `make tools` to download ElasticMQ)", dir, EnvElasticMQDir)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return spec{}, fmt.Errorf("sqslocal: java not found on PATH (ElasticMQ needs Java 17+): install a JDK, then run `make tools`: %w", err)
	}
	tmp, err := os.MkdirTemp("", "sqslocal-elasticmq-")
	if err != nil {
		return spec{}, fmt.Errorf("sqslocal: %w", err)
	}
	conf := filepath.Join(tmp, "elasticmq.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, elasticMQConfig, port, Region, AccountID, MaxConnections), 0o600); err != nil {
		os.RemoveAll(tmp)
		return spec{}, fmt.Errorf("sqslocal: write ElasticMQ config: %w", err)
	}
	opts := DefaultJavaOpts
	if v, ok := os.LookupEnv(EnvJavaOpts); ok {
		opts = v
	}
	archive, err := elasticMQArchive(java, opts, dir)
	if err != nil {
		os.RemoveAll(tmp)
		return spec{}, err
	}
	args := append(strings.Fields(opts), archive.Args()...)
	args = append(args, "-Dconfig.file="+conf, "-cp", filepath.Join(dir, "*"), "org.elasticmq.server.Main")
	return spec{path: java, args: args, dir: tmp, tmp: tmp, stopped: archive.Stopped, stopGrace: archive.Grace(), dumps: archive.Dumps()}, nil
}

var elasticMQServer = jvmcds.Server{File: "elasticmq", Name: "ElasticMQ"}

// elasticMQArchive is ElasticMQ's class-data archive for java with opts over the jars in dir
// (package jvmcds): the zero Archive when archives are off.
func elasticMQArchive(java, opts, dir string) (jvmcds.Archive, error) {
	base, ok, err := jvmcds.Dir(elasticMQServer, opts)
	if err != nil || !ok {
		return jvmcds.Archive{}, prefixed(err)
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "*.jar"))
	a, err := jvmcds.For(base, elasticMQServer, java, opts, jars)
	return a, prefixed(err)
}

func prefixed(err error) error {
	if err != nil {
		return fmt.Errorf("sqslocal: %w", err)
	}
	return nil
}

func moto(port int) (spec, error) {
	venv, err := InstallDir(Moto)
	if err != nil {
		return spec{}, err
	}
	bin := filepath.Join(venv, "bin", "moto_server")
	if _, err := os.Stat(bin); err != nil {
		return spec{}, fmt.Errorf("sqslocal: no moto_server in %s (set %s, or run `make tools` to install moto[server]): %w", venv, EnvMotoVenv, err)
	}
	return spec{path: bin, args: []string{"-H", "127.0.0.1", "-p", strconv.Itoa(port)}, dir: venv}, nil
}

func fauxqs(port int) (spec, error) {
	dir, err := InstallDir(Fauxqs)
	if err != nil {
		return spec{}, err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "fauxqs", "package.json")); err != nil {
		return spec{}, fmt.Errorf("sqslocal: no fauxqs in %s (set %s, or run `make tools` to install it): %w", dir, EnvFauxqsDir, err)
	}
	node, err := nodeBinary()
	if err != nil {
		return spec{}, err
	}
	// fauxqs's own CLI (startFauxqs) listens on every interface; its buildApp lets this
	// script bind the loopback address only, in memory, without request logs.
	script := fmt.Sprintf(`import { buildApp } from "fauxqs";
const app = buildApp({ logger: false, defaultRegion: %q });
await app.listen({ port: %d, host: "127.0.0.1" });
`, Region, port)
	return spec{path: node, args: []string{"--no-warnings", "--input-type=module", "-e", script}, dir: dir}, nil
}

// nodeBinary is $SQSLOCAL_NODE, else node_modules/.bin/node in the module root (the pinned
// Node 22), else node on PATH; fauxqs needs node:sqlite, so Node >= 22.5.
func nodeBinary() (string, error) {
	node := os.Getenv(EnvNode)
	if node == "" {
		if root, err := moduleRoot(); err == nil {
			if p := filepath.Join(root, "node_modules", ".bin", "node"); fileExists(p) {
				node = p
			}
		}
	}
	if node == "" {
		p, err := exec.LookPath("node")
		if err != nil {
			return "", fmt.Errorf("sqslocal: no node (fauxqs needs Node >= 22.5): set %s, or run `make tools`: %w", EnvNode, err)
		}
		node = p
	}
	v, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("sqslocal: %s --version: %w", node, err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(v)), "v%d.%d", &major, &minor); err != nil || major < 22 || major == 22 && minor < 5 {
		return "", fmt.Errorf("sqslocal: %s is Node %s; fauxqs needs >= 22.5 (set %s, or run `make tools` for node_modules/.bin/node)", node, strings.TrimSpace(string(v)), EnvNode)
	}
	return node, nil
}

func launch(ctx context.Context, kind Kind, sp spec, port int) (*Server, error) {
	cmd := exec.Command(sp.path, sp.args...)
	cmd.Dir = sp.dir
	cmd.Env = append(os.Environ(), sp.env...)
	proc, err := localproc.Start(cmd)
	if err != nil {
		if sp.tmp != "" {
			os.RemoveAll(sp.tmp)
		}
		if sp.stopped != nil {
			sp.stopped(err)
		}
		return nil, fmt.Errorf("sqslocal: start %s: %w (run `make tools`)", sp.path, err)
	}
	s := &Server{
		kind:      kind,
		endpoint:  "http://127.0.0.1:" + strconv.Itoa(port),
		proc:      proc,
		tmp:       sp.tmp,
		stopped:   sp.stopped,
		stopGrace: sp.stopGrace,
		dumps:     sp.dumps,
		conns:     newTransport(),
	}
	if err := s.waitReady(ctx, sp.dir); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady waits until the server answers ListQueues; dir is its working directory, for the
// message when it exits first.
func (s *Server) waitReady(ctx context.Context, dir string) error {
	client := s.Client(func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	return s.proc.WaitAnswering(ctx, localproc.Server{Pkg: "sqslocal", Name: string(s.kind), Call: "ListQueues", Endpoint: s.endpoint, Dir: dir},
		func(ctx context.Context) error {
			_, err := client.ListQueues(ctx, &sqs.ListQueuesInput{})
			return err
		})
}

// Stop ends the server and its whole process group (SIGTERM, then SIGKILL after 5 s), waits
// for it to exit and removes its temporary files. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.stopGrace > 0 {
			s.proc.StopWithin(s.stopGrace)
		} else {
			s.proc.Stop()
		}
		if s.stopped != nil {
			s.stopped(s.proc.WaitErr())
		}
		if s.tmp != "" {
			os.RemoveAll(s.tmp)
		}
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

// DumpsClassArchive says whether Stop waits for the server to write ElasticMQ's class-data
// archive (the first ElasticMQ of a machine does, once; up to jvmcds.DumpGrace), so that a
// caller can say why its stop takes longer.
func (s *Server) DumpsClassArchive() bool { return s.dumps }

// Close is Stop, for an io.Closer.
func (s *Server) Close() error {
	s.Stop()
	return nil
}

// Kind is the server's kind.
func (s *Server) Kind() Kind { return s.kind }

// Endpoint is the server's base URL, http://127.0.0.1:<port>.
func (s *Server) Endpoint() string { return s.endpoint }

// PID is the server process's id, which is also its process group's id.
func (s *Server) PID() int { return s.proc.PID() }

// Output is what the server printed so far (the last 64 KiB), for failure messages.
func (s *Server) Output() string { return s.proc.Output() }

// Client returns an SQS client for the server: static dummy credentials, Region, BaseEndpoint
// set. SDK retries keep the SDK's default unless optFns change them. Every client of a Server
// shares one connection pool, so a caller may make one per call: an SDK client made without
// an HTTP client gets a pool of its own, and its connection stays open, idle, until the
// server's idle timeout (60 s).
func (s *Server) Client(optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.endpoint),
		HTTPClient:   sdkhttp.Wrap(&http.Client{Transport: s.conns}),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "sqslocal"}, nil
		}),
	}, optFns...)
}

// CreateQueue creates a queue with the given attributes (as SQS names them) and returns its
// URL and ARN, as the server reports them.
func (s *Server) CreateQueue(ctx context.Context, name string, attrs map[string]string) (url, arn string, err error) {
	c := s.Client()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("sqslocal: create queue %s: %w", name, err)
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("sqslocal: queue %s ARN: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), a.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}

// InstallDir is where the server of kind k is installed: its environment variable, else
// .cache/<name> in the module root.
func InstallDir(k Kind) (string, error) {
	switch k {
	case ElasticMQ:
		return installDir(EnvElasticMQDir, "elasticmq")
	case Moto:
		return installDir(EnvMotoVenv, "moto-venv")
	case Fauxqs:
		return installDir(EnvFauxqsDir, "fauxqs")
	}
	return "", fmt.Errorf("sqslocal: unknown kind %q: want one of %v", k, Kinds)
}

// installDir is $env, else .cache/<name> in the nearest directory above the working directory
// that holds go.mod.
func installDir(env, name string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("%w: set %s, or run `make tools` from the module", err, env)
	}
	return filepath.Join(root, ".cache", name), nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("sqslocal: working directory: %w", err)
	}
	root, ok := localproc.ModuleRoot(wd)
	if !ok {
		return "", fmt.Errorf("sqslocal: no go.mod above %s to find .cache", wd)
	}
	return root, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
