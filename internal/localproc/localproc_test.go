package localproc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "mod")
	deep := filepath.Join(root, "internal", "pkg")
	nested := filepath.Join(root, "tools")
	for _, d := range []string{deep, nested} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(root, "go.mod"), filepath.Join(nested, "go.mod")} {
		if err := os.WriteFile(f, []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, dir, want string
		ok              bool
	}{
		{"the root itself", root, root, true},
		{"below the root", deep, root, true},
		{"nearest go.mod wins", nested, nested, true},
		{"no go.mod up to /", tmp, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ModuleRoot(tc.dir)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ModuleRoot(%q) = %q, %v; want %q, %v", tc.dir, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestModuleRootOfThisPackage(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, ok := ModuleRoot(wd)
	if !ok || filepath.Join(root, "internal", "localproc") != wd {
		t.Errorf("ModuleRoot(%q) = %q, %v; want two levels up", wd, root, ok)
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := &tailBuffer{max: 4}
	fmt.Fprint(b, "abc")
	if got := b.String(); got != "abc" {
		t.Errorf("under max: String() = %q, want abc", got)
	}
	fmt.Fprint(b, "defg")
	if got := b.String(); got != "defg" {
		t.Errorf("String() = %q, want defg", got)
	}
	n, err := fmt.Fprint(b, "0123456789")
	if n != 10 || err != nil {
		t.Errorf("Write of more than max = %d, %v; want all of it taken", n, err)
	}
	if got := b.String(); got != "6789" {
		t.Errorf("after a write longer than max: String() = %q, want 6789", got)
	}
}

func TestTailBufferConcurrentWrites(t *testing.T) {
	// stdout and stderr are copied by two goroutines; the buffer must keep whole writes.
	b := &tailBuffer{max: 1 << 20}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for range 1000 {
				fmt.Fprintf(b, "%d\n", w)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	if len(lines) != 2000 || count["0"] != 1000 || count["1"] != 1000 {
		t.Errorf("%d lines, counts %v; want 1000 of each writer", len(lines), count)
	}
}

func TestFreePortCanBeBound(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("FreePort() = %d", port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("FreePort() = %d, but it cannot be bound: %v", port, err)
	}
	l.Close()
}
