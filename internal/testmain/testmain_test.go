package testmain

import (
	"errors"
	"io"
	"os"
	"testing"
)

type server struct{ stopped bool }

func (s *server) Stop() { s.stopped = true }

func TestWithFailsWhenTheServerCannotStart(t *testing.T) {
	// The tests are never run (m is not touched) and the reason goes to stderr.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	var srv *server
	code := With(nil, func() (*server, error) { return nil, errors.New("no java") }, &srv)
	os.Stderr = stderr
	w.Close()
	out, _ := io.ReadAll(r)
	if code != 1 || srv != nil {
		t.Errorf("With = %d with srv %v; want 1 and no server", code, srv)
	}
	if string(out) != "FAIL: no java\n" {
		t.Errorf("stderr %q, want FAIL: no java", out)
	}
}
