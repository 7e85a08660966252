package local

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
)

// The Maven projects that fetch the two servers' pinned jars (Maven checks each jar's
// checksum from Maven Central; -C fails on a mismatch).
var (
	//go:embed backends/dynamodb-local.pom.xml
	dynamoPOM []byte
	//go:embed backends/elasticmq.pom.xml
	elasticPOM []byte
)

// backend is one server the kit runs from jars: where its jars are looked for and how they
// are fetched.
type backend struct {
	name    string // directory name under the cache, with the pinned version
	env     string // the environment variable that names its directory
	repo    string // its directory under .cache in this repository (make tools)
	jar     string // a glob that matches when it is installed
	pom     []byte
	mvnArgs []string
}

var backends = []backend{
	{name: "dynamodb-local-3.1.0", env: dynamolocal.EnvDir, repo: "dynamodb-local", jar: "DynamoDBLocal*.jar", pom: dynamoPOM},
	{name: "elasticmq-1.7.1", env: sqslocal.EnvElasticMQDir, repo: "elasticmq", jar: "elasticmq-server_*.jar", pom: elasticPOM,
		mvnArgs: []string{"-DincludeScope=runtime"}},
}

// CacheDir is where Install puts the servers' jars: idempotent-sqs-pipeline under the user's
// cache directory (os.UserCacheDir: ~/.cache on Linux, ~/Library/Caches on macOS), one
// directory per server and version, shared by every project of the user.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("local: no user cache directory (%w): set %s and %s to directories of the jars", err, dynamolocal.EnvDir, sqslocal.EnvElasticMQDir)
	}
	return filepath.Join(base, "idempotent-sqs-pipeline"), nil
}

// dir is where b's jars are: $env when set, else .cache/<repo> of this repository when a
// checkout has them (make tools), else the user cache. installed says whether the jars are
// there.
func (b backend) dir() (dir string, installed bool, err error) {
	has := func(d string) bool { m, _ := filepath.Glob(filepath.Join(d, b.jar)); return len(m) > 0 }
	if d := os.Getenv(b.env); d != "" {
		return d, has(d), nil
	}
	if wd, err := os.Getwd(); err == nil {
		if root, ok := localproc.ModuleRoot(wd); ok && has(filepath.Join(root, ".cache", b.repo)) {
			return filepath.Join(root, ".cache", b.repo), true, nil
		}
	}
	cache, err := CacheDir()
	if err != nil {
		return "", false, err
	}
	d := filepath.Join(cache, b.name)
	return d, has(d), nil
}

// Install fetches DynamoDB Local and ElasticMQ, at their pinned versions, from Maven Central
// into CacheDir, unless they are already where the kit looks for them (see Start). It needs
// Maven (mvn) and writes its progress to w. Two installs at once (two test packages of a
// module, each starting a kit) take turns: the second waits on a lock file in CacheDir
// (Maven's local repository is not safe for two runs at once) and then finds the jars.
func Install(ctx context.Context, w io.Writer) error {
	var unlock func()
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	for _, b := range backends {
		dir, ok, err := b.dir()
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if os.Getenv(b.env) != "" {
			return fmt.Errorf("local: %s=%s holds no %s: unset it to let the kit install %s in %s, or put the jars there", b.env, dir, b.jar, b.name, filepath.Dir(dir))
		}
		if unlock == nil {
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				return fmt.Errorf("local: %w", err)
			}
			if unlock, err = lockFile(ctx, filepath.Join(filepath.Dir(dir), "install.lock")); err != nil {
				return fmt.Errorf("local: waiting for another install: %w", err)
			}
			if _, ok, _ := b.dir(); ok { // installed while this one waited
				continue
			}
		}
		if err := b.install(ctx, dir, w); err != nil {
			return err
		}
	}
	return nil
}

func (b backend) install(ctx context.Context, dir string, w io.Writer) error {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return fmt.Errorf("local: %s is not installed and Maven (mvn) is not on PATH to fetch it: install Maven 3.6+ (apt install maven, brew install maven), "+
			"or put the jars of %s in a directory and set %s to it", b.name, b.name, b.env)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+b.name+"-")
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	defer os.RemoveAll(tmp)
	pom := filepath.Join(tmp, "pom.xml")
	if err := os.WriteFile(pom, b.pom, 0o644); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	jars := filepath.Join(tmp, "jars")
	fmt.Fprintf(w, "local: fetching %s from Maven Central into %s (once; about a minute)\n", b.name, dir)
	args := append([]string{"-q", "-B", "-C", "-f", pom, "dependency:copy-dependencies", "-DoutputDirectory=" + jars}, b.mvnArgs...)
	cmd := exec.CommandContext(ctx, mvn, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("local: fetching %s: mvn %v: %w\n%s", b.name, args, err, tail(out.Bytes(), 4000))
	}
	if m, _ := filepath.Glob(filepath.Join(jars, b.jar)); len(m) == 0 {
		return fmt.Errorf("local: fetching %s: Maven finished without %s in %s", b.name, b.jar, jars)
	}
	if err := os.Rename(jars, dir); err != nil {
		if _, ok, _ := b.dir(); ok { // another install finished first
			return nil
		}
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// MinJava is the oldest Java the servers run on (ElasticMQ 1.7 and DynamoDB Local 3 need 17).
const MinJava = 17

var javaVersion = regexp.MustCompile(`version "(\d+)(?:\.(\d+))?`)

// checkJava returns a clear error when java is missing or older than MinJava.
func checkJava(ctx context.Context) error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("local: java is not on PATH: DynamoDB Local and ElasticMQ run on the JVM; install a JDK %d or newer (apt install openjdk-%d-jre-headless, brew install openjdk@%d)", MinJava, MinJava, MinJava)
	}
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("local: %s -version: %w\n%s", java, err, out)
	}
	m := javaVersion.FindSubmatch(out)
	if m == nil {
		return nil // an unknown format: let the servers say what they miss
	}
	major, _ := strconv.Atoi(string(m[1]))
	if major == 1 && len(m[2]) > 0 { // "1.8.0_392" is Java 8
		major, _ = strconv.Atoi(string(m[2]))
	}
	if major < MinJava {
		return fmt.Errorf("local: %s is Java %d; DynamoDB Local and ElasticMQ need Java %d or newer: install a newer JDK and put it first on PATH", java, major, MinJava)
	}
	return nil
}

// useBackends makes sure both servers' jars are there (Install when they are not) and points
// the server starters at them through their environment variables. Start has checked Java.
func useBackends(ctx context.Context, w io.Writer) error {
	if err := Install(ctx, w); err != nil {
		return err
	}
	for _, b := range backends {
		dir, _, err := b.dir()
		if err != nil {
			return err
		}
		if err := os.Setenv(b.env, dir); err != nil {
			return fmt.Errorf("local: %w", err)
		}
	}
	return nil
}
