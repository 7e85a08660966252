package outside

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/local"
)

// BenchmarkKitWarmStart is local.Start on the corpus (testdata/corpus: 16 stacks and a
// nested one, as `cdk synth` of its Go app wrote them) once its functions are built and the
// backends are installed: what a user waits for at each `local up` after the first. The
// first start, before the timer, builds each function into the user cache. Each start is
// split where the kit says it starts its servers: before it (read, resolve, plan and the
// builds: the assembly's own work) and from it (DynamoDB Local, ElasticMQ, the queues and
// tables, the functions' processes). The app is in a directory under .cache, not the
// temporary directory, as a user's checkout is.
//
//	go test ./test/outside -run '^$' -bench KitWarmStart -benchtime 3x
func BenchmarkKitWarmStart(b *testing.B) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	// Outside the temporary directory, as a user's checkout is: the kit keeps the builds of
	// a module there (buildcache.go), and a warm start finds them.
	parent, err := os.MkdirTemp(filepath.Join(root, ".cache"), "bench-corpus-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(parent) })
	dir := newModule(b, "corpus", parent, root, "")
	buildPrebuilt(b, dir)
	synth(b, dir, root)
	var assembly, servers time.Duration
	start := func() {
		p := &stamped{mark: "starting DynamoDB Local"}
		began := time.Now()
		kit, err := local.Start(b.Context(), local.Options{Assembly: filepath.Join(dir, "cdk.out"), Progress: p})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.StopTimer()
		if err := kit.Close(); err != nil {
			b.Fatal(err)
		}
		at := p.at()
		if at.IsZero() {
			b.Fatalf("the kit never said %q:\n%s", p.mark, p.String())
		}
		assembly += at.Sub(began)
		servers += took - at.Sub(began)
		b.StartTimer()
	}
	start()
	assembly, servers = 0, 0
	b.ResetTimer()
	for range b.N {
		start()
	}
	b.ReportMetric(float64(assembly.Milliseconds())/float64(b.N), "ms-assembly/op")
	b.ReportMetric(float64(servers.Milliseconds())/float64(b.N), "ms-servers/op")
}

// stamped is a Progress that notes when a line holding mark was written.
type stamped struct {
	mark string
	mu   sync.Mutex
	buf  bytes.Buffer
	when time.Time
}

func (s *stamped) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.when.IsZero() && strings.Contains(string(p), s.mark) {
		s.when = time.Now()
	}
	return s.buf.Write(p)
}

func (s *stamped) at() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.when
}

func (s *stamped) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
