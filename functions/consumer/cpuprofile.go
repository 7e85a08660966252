//go:build cpuprofile

package main

import (
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

// Built only by test/bench/profile_binary.sh (go build -tags cpuprofile), never deployed: the
// binary writes a CPU profile of its first cpuProfileSeconds to cpuProfile, both set with
// -ldflags -X, since the benchmark's Runtime API gives the process no environment of its own.
var (
	cpuProfile        string
	cpuProfileSeconds = "30"
)

func init() {
	if cpuProfile == "" {
		return
	}
	secs, err := strconv.Atoi(cpuProfileSeconds)
	if err != nil {
		panic("cpuProfileSeconds: " + err.Error())
	}
	f, err := os.Create(cpuProfile)
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	go func() { // the benchmark ends the process with SIGKILL, as Lambda does: stop first
		time.Sleep(time.Duration(secs) * time.Second)
		pprof.StopCPUProfile()
		f.Close()
	}()
}
