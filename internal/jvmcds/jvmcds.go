// Package jvmcds keeps a class-data sharing archive for each Java server that the tests and
// the local kit start many times (ElasticMQ, DynamoDB Local), which halves the JVM's start: it
// maps the classes it would otherwise load and verify one by one (some 9,000 for ElasticMQ:
// Scala, Pekko and its own), about half of the CPU a JVM spends before it answers on a
// 2-core machine.
//
// The first server of a machine dumps the classes it loaded into an archive when it stops
// (-XX:ArchiveClassesAtExit; one at a time, the others start as before); every later one maps
// that archive (-XX:SharedArchiveFile). The JVM checks an archive against its own build and
// the class path, and runs without it, as before, when they differ. The archives live in
// $LOCAL_JVM_CDS_DIR or the user cache (idempotent-sqs-pipeline/jvm-cds/).
package jvmcds

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EnvDir names the environment variable holding the directory of the archives; "off" runs
// every JVM without one.
const EnvDir = "LOCAL_JVM_CDS_DIR"

// Server names a server's archive: File starts its file names ("elasticmq"), Name is what
// messages call it ("ElasticMQ").
type Server struct{ File, Name string }

// Archive is one server's archive, for one JVM, options and class path. The zero Archive
// maps and dumps nothing.
type Archive struct {
	path string // the archive, complete: mapped when it exists
	dump string // where a JVM that found no archive dumps one; renamed to path when it stops cleanly
	lock string // held while dump is written, removed when the JVM has stopped
}

// Dir is the archives' directory: $LOCAL_JVM_CDS_DIR or, unset, the user cache's; ok is false
// when archives are turned off ("off"), when opts choose their own sharing (-Xshare, an
// archive option), or when there is no user cache. A $LOCAL_JVM_CDS_DIR that cannot hold
// archives is an error naming the variable: it was set on purpose.
func Dir(srv Server, opts string) (dir string, ok bool, err error) {
	base := os.Getenv(EnvDir)
	if base == "off" || strings.Contains(opts, "Xshare") || strings.Contains(opts, "Archive") {
		return "", false, nil
	}
	explicit := base != ""
	if !explicit {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", false, nil
		}
		base = filepath.Join(cache, "idempotent-sqs-pipeline", "jvm-cds")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		if !explicit {
			return "", false, nil
		}
		return "", false, dirError(srv, base, err)
	}
	return base, true, nil
}

func dirError(srv Server, base string, err error) error {
	return fmt.Errorf("%s=%q: %w: name a directory this user can write, or \"off\" to run %s without a class-data archive", EnvDir, base, err, srv.Name)
}

// For is srv's archive in dir for java with opts over the class path cp (its jars, in the
// order the JVM reads them). One archive per JVM, options and jars: a JDK upgrade or another
// version of the server gets its own instead of failing the JVM's check on every start. With
// no archive yet, the caller that takes the lock dumps one; the others get the zero Archive.
func For(dir string, srv Server, java, opts string, cp []string) (Archive, error) {
	if real, err := filepath.EvalSymlinks(java); err == nil {
		java = real
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", java, opts, strings.Join(cp, "\n"))
	for _, jar := range cp {
		if fi, err := os.Stat(jar); err == nil {
			fmt.Fprintf(h, "%d %d\n", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	path := filepath.Join(dir, srv.File+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".jsa")
	if _, err := os.Stat(path); err == nil {
		return Archive{path: path}, nil
	}
	// One JVM dumps at a time, the one holding the lock; the others run without an archive.
	// A lock older than a dump can take was left by a process that was killed: taken over.
	lock := path + ".lock"
	for range 2 {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return Archive{path: path, dump: path + ".dumping", lock: lock}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			if os.Getenv(EnvDir) != "" {
				return Archive{}, dirError(srv, dir, err)
			}
			return Archive{}, nil
		}
		fi, err := os.Stat(lock)
		if err != nil || time.Since(fi.ModTime()) < staleLock {
			return Archive{}, nil
		}
		os.Remove(lock)
	}
	return Archive{}, nil
}

// staleLock is the age after which a dump's lock is taken to be left by a killed process:
// well over DumpGrace and a JVM's life in a test.
const staleLock = 30 * time.Minute

// Args are the JVM options that map or dump the archive; none for the zero Archive.
func (a Archive) Args() []string {
	switch {
	case a.dump != "":
		return []string{"-XX:ArchiveClassesAtExit=" + a.dump, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}
	case a.path != "":
		return []string{"-XX:SharedArchiveFile=" + a.path, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}
	}
	return nil
}

// Path is the archive's file, mapped by the JVM when it exists ("" for the zero Archive).
func (a Archive) Path() string { return a.path }

// Dumps says whether the JVM writes the archive as it stops.
func (a Archive) Dumps() bool { return a.dump != "" }

// DumpGrace is how long a stop lets a JVM that dumps the archive finish before it kills it.
// The dump takes 2-4 CPU seconds once per machine: under a second to stop on an idle machine,
// 22 s measured on a 2-core one at load 10. A JVM killed mid-dump leaves no archive; a later
// one dumps again.
const DumpGrace = 2 * time.Minute

// Grace is the time a stop gives the JVM to exit: DumpGrace when it dumps, else 0 (the
// caller's default).
func (a Archive) Grace() time.Duration {
	if a.dump != "" {
		return DumpGrace
	}
	return 0
}

// Stopped keeps the dump of a JVM that stopped as asked, with SIGTERM (the JVM dumps on its
// way out, then exits 143), and removes any other: a JVM killed mid-dump leaves a partial
// file. The lock goes either way. waitErr is the JVM's exit (exec.Cmd.Wait's error).
func (a Archive) Stopped(waitErr error) {
	if a.dump == "" {
		return
	}
	defer os.Remove(a.lock)
	var exit *exec.ExitError
	clean := waitErr == nil || errors.As(waitErr, &exit) && exit.ExitCode() == 143
	if fi, err := os.Stat(a.dump); clean && err == nil && fi.Size() > 0 {
		if os.Rename(a.dump, a.path) == nil {
			return
		}
	}
	os.Remove(a.dump)
}

// JarWithoutClassPath is a copy of jar in dir whose manifest has no Class-Path attribute,
// made once (the same jar, by name, size and time, gets the same copy). A manifest's
// Class-Path that names a directory ("." is common) puts that directory on the class path,
// and the JVM archives no class path that holds a directory; the caller names the jars the
// attribute would have added on its own class path instead.
func JarWithoutClassPath(dir, jar string) (string, error) {
	fi, err := os.Stat(jar)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\n%d %d\n", jar, fi.Size(), fi.ModTime().UnixNano()))
	name := strings.TrimSuffix(filepath.Base(jar), ".jar")
	out := filepath.Join(dir, name+"-"+hex.EncodeToString(h[:])[:16]+".jar")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp, err := os.CreateTemp(dir, name+"-*.jar.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // after the rename, removes nothing
	if err := copyJar(tmp, jar); err != nil {
		tmp.Close()
		return "", fmt.Errorf("copy %s without its manifest's Class-Path: %w", jar, err)
	}
	if err := errors.Join(tmp.Chmod(0o644), tmp.Close()); err != nil {
		return "", err
	}
	// Renamed into place complete: a copy that exists is whole, and two processes that make
	// it at once each rename a whole one.
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}

func copyJar(w io.Writer, jar string) error {
	r, err := zip.OpenReader(jar)
	if err != nil {
		return err
	}
	defer r.Close()
	zw := zip.NewWriter(w)
	for _, f := range r.File {
		if f.Name != "META-INF/MANIFEST.MF" {
			if err := zw.Copy(f); err != nil { // as stored: no recompression
				return err
			}
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		mf, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		hdr := f.FileHeader
		fw, err := zw.CreateHeader(&hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(withoutClassPath(mf)); err != nil {
			return err
		}
	}
	return zw.Close()
}

// withoutClassPath is manifest mf without its Class-Path attribute: the line that starts it
// and the continuation lines (a leading space) after it.
func withoutClassPath(mf []byte) []byte {
	var out bytes.Buffer
	skip := false
	for line := range bytes.Lines(mf) {
		switch {
		case bytes.HasPrefix(line, []byte(" ")):
			// a continuation of the attribute before it
		case bytes.HasPrefix(bytes.ToLower(line), []byte("class-path:")):
			skip = true
			continue
		default:
			skip = false
		}
		if !skip {
			out.Write(line)
		}
	}
	return out.Bytes()
}
