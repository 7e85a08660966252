package jvmcds

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var testServer = Server{File: "server", Name: "the server"}

// TestArchiveLock: with no archive yet, the first caller dumps one and holds the lock, a
// second runs without; a lock left by a killed process is taken over once it is older than
// any dump; an archive that exists is mapped.
func TestArchiveLock(t *testing.T) {
	dir := t.TempDir()
	cp := []string{filepath.Join(dir, "a.jar")}
	first, err := For(dir, testServer, "java", "-Xss1m", cp)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Dumps() || !slices.Contains(first.Args(), "-XX:ArchiveClassesAtExit="+first.dump) || first.Grace() != DumpGrace {
		t.Fatalf("with no archive yet: %+v, args %v, grace %v, want a dump", first, first.Args(), first.Grace())
	}
	if second, err := For(dir, testServer, "java", "-Xss1m", cp); err != nil || second.Args() != nil || second.Dumps() {
		t.Errorf("while %s is held: args %v (%v), want none", first.lock, second.Args(), err)
	}
	first.Stopped(errors.New("not started")) // gives the lock up
	if _, err := os.Stat(first.lock); !os.IsNotExist(err) {
		t.Fatalf("the lock %s after Stopped: %v, want it removed", first.lock, err)
	}
	if err := os.WriteFile(first.lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-staleLock - time.Minute)
	if err := os.Chtimes(first.lock, old, old); err != nil {
		t.Fatal(err)
	}
	stale, _ := For(dir, testServer, "java", "-Xss1m", cp)
	if !stale.Dumps() {
		t.Fatalf("with a lock from %v: %+v, want the lock taken over and a dump", old, stale)
	}
	if err := os.WriteFile(stale.dump, []byte("classes"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale.Stopped(nil)
	mapped, _ := For(dir, testServer, "java", "-Xss1m", cp)
	if mapped.Dumps() || !slices.Contains(mapped.Args(), "-XX:SharedArchiveFile="+first.path) {
		t.Errorf("with the archive written: args %v, want it mapped", mapped.Args())
	}
	// Other options are another archive.
	if other, _ := For(dir, testServer, "java", "-Xss2m", cp); other.path == first.path {
		t.Errorf("other options share the archive %s", other.path)
	}
}

// TestStoppedKeepsOnlyACleanDump: a JVM killed mid-dump (SIGKILL: exit 137) leaves a partial
// file, which is removed, never renamed to the archive the next JVM maps; the lock goes
// either way.
func TestStoppedKeepsOnlyACleanDump(t *testing.T) {
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
		a := Archive{path: filepath.Join(dir, tc.name+".jsa"), dump: filepath.Join(dir, tc.name+".jsa.dumping"), lock: filepath.Join(dir, tc.name+".jsa.lock")}
		for _, f := range []string{a.dump, a.lock} {
			if err := os.WriteFile(f, []byte("classes"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a.Stopped(tc.waitErr)
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

// TestDir: "off", or options with their own sharing, turn archives off; a $LOCAL_JVM_CDS_DIR
// that cannot hold them (here under a plain file) is an error naming the variable and the
// ways out.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ env, opts string }{{"off", "-Xss1m"}, {dir, "-Xss1m -Xshare:off"}, {dir, "-XX:SharedArchiveFile=x.jsa"}} {
		t.Setenv(EnvDir, tc.env)
		if got, ok, err := Dir(testServer, tc.opts); ok || err != nil {
			t.Errorf("%s=%s, options %q: %q %v %v, want off", EnvDir, tc.env, tc.opts, got, ok, err)
		}
	}
	t.Setenv(EnvDir, dir)
	if got, ok, err := Dir(testServer, "-Xss1m"); got != dir || !ok || err != nil {
		t.Errorf("%s=%s: %q %v %v, want it", EnvDir, dir, got, ok, err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, filepath.Join(file, "cds"))
	_, _, err := Dir(testServer, "-Xss1m")
	want := `LOCAL_JVM_CDS_DIR="` + filepath.Join(file, "cds") + `": `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), `: name a directory this user can write, or "off" to run the server without a class-data archive`) {
		t.Fatalf("Dir with %s under a file: %v, want %s...: name a directory this user can write, or \"off\"...", EnvDir, err, want)
	}
}

// TestJarWithoutClassPath: the copy's manifest has every attribute but Class-Path (its
// continuation lines too), every other entry is as it was, and a second call returns the
// same copy without writing it again.
func TestJarWithoutClassPath(t *testing.T) {
	dir := t.TempDir()
	jar := filepath.Join(dir, "server.jar")
	manifest := "Manifest-Version: 1.0\r\nMain-Class: a.Main\r\nClass-Path: . lib/a.jar lib/b\r\n .jar lib/c.jar\r\nBundle-Description: a server and\r\n  more\r\n\r\n"
	entries := map[string]string{"META-INF/MANIFEST.MF": manifest, "a/Main.class": strings.Repeat("cafebabe", 100), "a/x.txt": "x"}
	f, err := os.Create(jar)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, name := range []string{"META-INF/MANIFEST.MF", "a/Main.class", "a/x.txt"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, entries[name])
	}
	if err := errors.Join(zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	out, err := JarWithoutClassPath(dir, jar)
	if err != nil {
		t.Fatal(err)
	}
	entries["META-INF/MANIFEST.MF"] = "Manifest-Version: 1.0\r\nMain-Class: a.Main\r\nBundle-Description: a server and\r\n  more\r\n\r\n"
	r, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if !bytes.Equal(b, []byte(entries[f.Name])) {
			t.Errorf("%s in the copy: %q, want %q", f.Name, b, entries[f.Name])
		}
	}
	if want := []string{"META-INF/MANIFEST.MF", "a/Main.class", "a/x.txt"}; !slices.Equal(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
	before, _ := os.Stat(out)
	again, err := JarWithoutClassPath(dir, jar)
	after, _ := os.Stat(out)
	if err != nil || again != out || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("second call: %s %v (modified %v -> %v), want %s unchanged", again, err, before.ModTime(), after.ModTime(), out)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
