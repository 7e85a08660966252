// Package runtimefit fits the Go runtime to the size of the Lambda function it runs in: the
// scheduler to the function's CPU share, the garbage collector to its memory.
//
// Lambda allocates CPU in proportion to memory: 1,769 MB is one vCPU, so a 256 MB function
// gets about 0.145 of one. The execution environment shows its process more logical CPUs
// than that, and the Go runtime's default GOMAXPROCS is their number (a cgroup limit below two
// CPUs is rounded up to two). With two Ps and a fraction of one CPU, the scheduler spends the
// function's share waking idle threads, spinning for work and stealing it between the Ps,
// while every record it works on waits on the network anyway.
//
// The garbage collector's default (GOGC=100, no memory limit) keeps the heap near twice what
// is live. An SQS consumer keeps little alive (a few MB) and allocates a lot per record (the
// SDK's requests and responses), so it collects every few dozen records and spends a sizeable
// part of its CPU share doing so, while the memory it pays for sits unused. Fitted, the heap
// may grow to five times what is live (GOGC=400) within a soft limit of half the function's
// memory: a function whose live heap is large, or that shares its memory with a Lambda
// extension, collects more often as its heap nears the limit instead of growing toward the
// function's memory size. The price: a live heap between a quarter and half of the memory
// gets less headroom than Go's default would give it, so it collects more often; such a
// function sets GOMEMLIMIT itself (about 90% of its memory when no extension shares it).
//
// Together, at 256 MB, the consumer spends about a quarter less CPU per record
// (docs/profiles/README.md): billed duration, and records/s per execution environment. A
// setting the function's environment makes itself (GOMAXPROCS, GOGC, GOMEMLIMIT) wins over the
// fitted one.
//
// The consume and dispatch packages call Apply when they start a Lambda function; a main of
// your own that does not go through them can call it first thing.
package runtimefit

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
)

// MBPerVCPU is the memory size at which a Lambda function gets one full vCPU
// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
const MBPerVCPU = 1769

// GOGC is the garbage collector's target percentage Apply sets: the heap may grow to five
// times what is live before a collection, within MemoryLimit.
const GOGC = 400

// Procs returns the GOMAXPROCS for a function of memoryMB on a machine with ncpu logical
// CPUs: the vCPUs its share amounts to, rounded up, at least 1 and at most ncpu. Any input
// gives a usable value: 1 for a memoryMB or ncpu below 1, and no overflow near math.MaxInt.
func Procs(memoryMB, ncpu int) int {
	procs := memoryMB / MBPerVCPU // rounded up below, without memoryMB + MBPerVCPU - 1 overflowing
	if memoryMB%MBPerVCPU > 0 {
		procs++
	}
	return max(1, min(procs, ncpu))
}

// MemoryLimit returns the soft memory limit for a function of memoryMB, in bytes: half its
// memory (Lambda's MB are MiB). The other half is for what the Go runtime's limit does not
// count (the binary, thread stacks, the kernel's buffers) and for a Lambda extension. Any
// input gives a usable limit: math.MaxInt64 (no limit) for a memoryMB below 1 or one whose
// half does not fit in an int64 (1<<44 MB, 16 EiB, and up), never 0 or a negative value
// (debug.SetMemoryLimit(0) would make the collector run without pause, and a negative value
// would leave the limit unchanged).
func MemoryLimit(memoryMB int) int64 {
	const halfMiB = 1 << 19
	if memoryMB < 1 || int64(memoryMB) > math.MaxInt64/halfMiB {
		return math.MaxInt64
	}
	return int64(memoryMB) * halfMiB
}

// Fit is what Apply did. A setting Apply left alone keeps the runtime's value, and Skipped
// says why.
type Fit struct {
	// MemoryMB is the function's memory size; 0 outside Lambda.
	MemoryMB int
	// Procs is GOMAXPROCS after Apply.
	Procs int
	// GOGC is the collector's target percentage after Apply; -1 means off.
	GOGC int
	// MemoryLimit is the soft memory limit after Apply, in bytes; math.MaxInt64 means none.
	MemoryLimit int64
	// Skipped names each setting Apply did not make, with the reason.
	Skipped []string
}

// Apply fits the runtime to AWS_LAMBDA_FUNCTION_MEMORY_SIZE, read through lookup
// (os.LookupEnv in a function): GOMAXPROCS to Procs(memory, runtime.NumCPU()), the collector
// to GOGC within MemoryLimit(memory). A setting the environment makes itself (GOMAXPROCS,
// GOGC, GOMEMLIMIT) is left alone, and so is everything outside Lambda, where the memory size
// is not set, or when it is not a positive number; Fit.Skipped says which and why.
func Apply(lookup func(string) (string, bool)) Fit {
	v, ok := lookup("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
	mb, err := strconv.Atoi(v)
	var why string
	switch {
	case !ok || v == "":
		why = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not set (not in Lambda)"
	case err != nil || mb <= 0:
		why = fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%q is not a memory size in MB", v)
	}
	fit := Fit{}
	if why != "" {
		fit.Skipped = []string{"all: " + why}
		return fit.current()
	}
	fit.MemoryMB = mb
	explicit := func(name string) bool {
		if v, ok := lookup(name); ok && v != "" {
			fit.Skipped = append(fit.Skipped, name+": set in the environment")
			return true
		}
		return false
	}
	if !explicit("GOMAXPROCS") {
		runtime.GOMAXPROCS(Procs(mb, runtime.NumCPU()))
	}
	if !explicit("GOMEMLIMIT") {
		debug.SetMemoryLimit(MemoryLimit(mb))
	}
	if !explicit("GOGC") {
		debug.SetGCPercent(GOGC)
	}
	return fit.current()
}

// current fills in the runtime's values in effect.
func (f Fit) current() Fit {
	f.Procs = runtime.GOMAXPROCS(0)
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	f.GOGC = int(int64(s[0].Value.Uint64())) // GOGC=off is -1, stored as a uint64
	f.MemoryLimit = int64(s[1].Value.Uint64())
	return f
}
