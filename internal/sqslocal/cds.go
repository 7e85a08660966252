package sqslocal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EnvCDSDir names the environment variable holding the directory of ElasticMQ's class-data
// sharing archive; "off" runs every JVM without one.
const EnvCDSDir = "SQSLOCAL_CDS_DIR"

// classArchive is the JVM's class-data sharing for ElasticMQ, which halves its start: it
// loads some 9,000 classes (Scala, Pekko, its own), about 2 of the 4 CPU seconds the JVM
// spends before it answers on a 2-core machine. The first server of a machine dumps the
// classes it loaded into an archive when it stops (-XX:ArchiveClassesAtExit; one at a time,
// the others start as before); every later one maps that archive (-XX:SharedArchiveFile).
// The JVM checks an archive against its own build and the class path, and runs without it,
// as before, when they differ.
//
// DynamoDB Local cannot have one: its jar's manifest puts its own directory on the class
// path, and the JVM archives no class path that holds a directory.
type classArchive struct {
	path string // the archive, complete: mapped when it exists
	dump string // where a JVM that found no archive dumps one; renamed to path when it stops cleanly
	lock string // held while dump is written, removed when the JVM has stopped
}

// elasticMQArchive is the archive for java with opts over the jars in dir, in $SQSLOCAL_CDS_DIR
// or the user cache. The zero classArchive (no archive, no dump) when it is turned off, when
// opts choose their own sharing, or when the user cache cannot hold it. A $SQSLOCAL_CDS_DIR
// that cannot hold it is an error naming the variable: it was set on purpose.
func elasticMQArchive(java, opts, dir string) (classArchive, error) {
	base := os.Getenv(EnvCDSDir)
	if base == "off" || strings.Contains(opts, "Xshare") || strings.Contains(opts, "Archive") {
		return classArchive{}, nil
	}
	explicit := base != ""
	fail := func(err error) (classArchive, error) {
		if !explicit {
			return classArchive{}, nil
		}
		return classArchive{}, fmt.Errorf("sqslocal: %s=%q: %w: name a directory this user can write, or \"off\" to run ElasticMQ without a class-data archive", EnvCDSDir, base, err)
	}
	if !explicit {
		cache, err := os.UserCacheDir()
		if err != nil {
			return classArchive{}, nil
		}
		base = filepath.Join(cache, "idempotent-sqs-pipeline", "jvm-cds")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fail(err)
	}
	// One archive per JVM, options and installation: a JDK upgrade or another ElasticMQ gets
	// its own instead of failing the JVM's check on every start.
	if real, err := filepath.EvalSymlinks(java); err == nil {
		java = real
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "*.jar"))
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", java, opts, strings.Join(jars, "\n"))
	for _, jar := range jars {
		if fi, err := os.Stat(jar); err == nil {
			fmt.Fprintf(h, "%d %d\n", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	path := filepath.Join(base, "elasticmq-"+hex.EncodeToString(h.Sum(nil))[:16]+".jsa")
	if _, err := os.Stat(path); err == nil {
		return classArchive{path: path}, nil
	}
	// One JVM dumps at a time, the one holding the lock; the others run without an archive.
	// A lock older than a dump can take was left by a process that was killed: taken over.
	lock := path + ".lock"
	for range 2 {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return classArchive{path: path, dump: path + ".dumping", lock: lock}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fail(err)
		}
		fi, err := os.Stat(lock)
		if err != nil || time.Since(fi.ModTime()) < staleLock {
			return classArchive{}, nil
		}
		os.Remove(lock)
	}
	return classArchive{}, nil
}

// staleLock is the age after which a dump's lock is taken to be left by a killed process:
// well over DumpGrace and a JVM's life in a test.
const staleLock = 30 * time.Minute

// args are the JVM options that use or dump the archive.
func (a classArchive) args() []string {
	switch {
	case a.dump != "":
		return []string{"-XX:ArchiveClassesAtExit=" + a.dump, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}
	case a.path != "":
		return []string{"-XX:SharedArchiveFile=" + a.path, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}
	}
	return nil
}

// DumpGrace is how long Stop lets a JVM that dumps the archive finish before it kills it.
// The dump takes 2-4 CPU seconds once per machine: under a second to stop on an idle machine,
// 22 s measured on a 2-core one at load 10. A JVM killed mid-dump leaves no archive; a later
// one dumps again.
const DumpGrace = 2 * time.Minute

// grace is the time Stop gives the JVM to exit: DumpGrace when it dumps, else the default.
func (a classArchive) grace() time.Duration {
	if a.dump != "" {
		return DumpGrace
	}
	return 0
}

// stopped keeps the dump of a JVM that stopped as Stop asks, with SIGTERM (the JVM dumps on
// its way out, then exits 143), and removes any other: a JVM killed mid-dump leaves a partial
// file. The lock goes either way.
func (a classArchive) stopped(waitErr error) {
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
