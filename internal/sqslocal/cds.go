package sqslocal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvCDSDir names the environment variable holding the directory of ElasticMQ's class-data
// sharing archive; "off" runs every JVM without one.
const EnvCDSDir = "SQSLOCAL_CDS_DIR"

// classArchive is the JVM's class-data sharing for ElasticMQ, which halves its start: it
// loads some 9,000 classes (Scala, Pekko, its own), about 2 of the 4 CPU seconds the JVM
// spends before it answers on a 2-core machine. The first server of a machine dumps the
// classes it loaded into an archive when it stops (-XX:ArchiveClassesAtExit); every later
// one maps that archive (-XX:SharedArchiveFile). The JVM checks an archive against its own
// build and the class path, and runs without it, as before, when they differ.
//
// DynamoDB Local cannot have one: its jar's manifest puts its own directory on the class
// path, and the JVM archives no class path that holds a directory.
type classArchive struct {
	path string // the archive, complete: mapped when it exists
	dump string // where a JVM that found no archive dumps one; renamed to path when it stops cleanly
}

// elasticMQArchive is the archive for java with opts over the jars in dir, in $SQSLOCAL_CDS_DIR
// or the user cache. The zero classArchive (no archive, no dump) when it is turned off, when
// opts choose their own sharing, or when there is nowhere to keep it.
func elasticMQArchive(java, opts, dir string) classArchive {
	base := os.Getenv(EnvCDSDir)
	if base == "off" || strings.Contains(opts, "Xshare") || strings.Contains(opts, "Archive") {
		return classArchive{}
	}
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return classArchive{}
		}
		base = filepath.Join(cache, "idempotent-sqs-pipeline", "jvm-cds")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return classArchive{}
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
		return classArchive{path: path}
	}
	f, err := os.CreateTemp(base, "elasticmq-*.jsa.dumping")
	if err != nil {
		return classArchive{}
	}
	f.Close()
	os.Remove(f.Name()) // the JVM creates it; the name is only reserved against other dumps
	return classArchive{path: path, dump: f.Name()}
}

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

// stopped keeps the dump of a JVM that stopped as Stop asks, with SIGTERM (the JVM dumps on
// its way out, then exits 143), and removes any other: a JVM killed mid-dump leaves a partial
// file. Two servers that both dumped race to the same name with complete archives.
func (a classArchive) stopped(waitErr error) {
	if a.dump == "" {
		return
	}
	var exit *exec.ExitError
	clean := waitErr == nil || errors.As(waitErr, &exit) && exit.ExitCode() == 143
	if fi, err := os.Stat(a.dump); clean && err == nil && fi.Size() > 0 {
		if os.Rename(a.dump, a.path) == nil {
			return
		}
	}
	os.Remove(a.dump)
}
