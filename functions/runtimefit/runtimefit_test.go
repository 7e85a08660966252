package runtimefit

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
)

func TestProcs(t *testing.T) {
	for _, c := range []struct{ mb, ncpu, want int }{
		{128, 2, 1},
		{256, 2, 1},
		{1024, 2, 1},
		{1769, 2, 1},  // exactly one vCPU
		{1770, 2, 2},  // a little more: the second P has work to do
		{3538, 2, 2},  // two vCPUs
		{3539, 2, 2},  // never more than the machine has
		{10240, 6, 6}, // Lambda's largest size: 5.8 vCPUs
		{10240, 8, 6},
		{1, 2, 1},
		{4096, 1, 1},
		// Any input gives a usable value (the function is exported and documented as such).
		{0, 2, 1},
		{-1, 2, 1},
		{math.MinInt, 2, 1},
		{math.MaxInt, 4, 4}, // overflowed to 1 when rounding up added MBPerVCPU - 1
		{math.MaxInt - 1, 4, 4},
		{math.MaxInt, math.MaxInt, math.MaxInt/MBPerVCPU + 1},
		{1769, 0, 1},
		{1769, -3, 1},
		// Around the overflow of memoryMB + MBPerVCPU - 1: the last size that did not wrap,
		// and the first that did (it gave 1).
		{math.MaxInt - (MBPerVCPU - 1), 4, 4},
		{math.MaxInt - (MBPerVCPU - 2), 4, 4},
		// Rounding at the top of the range: a whole number of vCPUs is not rounded up, one MB
		// more is.
		{math.MaxInt / MBPerVCPU * MBPerVCPU, math.MaxInt, math.MaxInt / MBPerVCPU},
		{math.MaxInt/MBPerVCPU*MBPerVCPU + 1, math.MaxInt, math.MaxInt/MBPerVCPU + 1},
		{MBPerVCPU + 1, 1, 1}, // more CPU share than the machine has: its CPUs
		{math.MinInt, math.MinInt, 1},
	} {
		if got := Procs(c.mb, c.ncpu); got != c.want {
			t.Errorf("Procs(%d MB, %d CPUs) = %d, want %d", c.mb, c.ncpu, got, c.want)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	// int64 inputs, so that the cases beyond a 32-bit int still compile there (and are
	// skipped: MemoryLimit cannot be given them).
	for _, c := range []struct{ mb, want int64 }{
		{128, 64 << 20}, {256, 128 << 20}, {10240, 5120 << 20}, // Lambda's smallest and largest sizes
		{1, 1 << 19},
		// Never 0 or negative, which debug.SetMemoryLimit would take as "collect all the time"
		// or ignore: no limit for a size that is not positive or too large to halve in bytes.
		{0, math.MaxInt64}, {-1, math.MaxInt64}, {math.MinInt, math.MaxInt64},
		{math.MaxInt32, math.MaxInt32 << 19}, // the largest size a 32-bit int holds
		// The old memoryMB << 20 / 2 went negative (ignored by SetMemoryLimit) from 1<<43 MB and
		// wrapped to 0 at 1<<44 MB; the halves still fit an int64 up to 1<<44 - 1.
		{1<<43 - 1, (1<<43 - 1) << 19},
		{1 << 43, 1 << 62},
		{3 << 42, 3 << 61},
		{1<<44 - 1, (1<<44 - 1) << 19}, // the largest whose half fits: MaxInt64 rounded down to 512 KiB
		{1 << 44, math.MaxInt64},       // wrapped to 0 with << 20
		{1<<44 + 1, math.MaxInt64},     // wrapped to 512 KiB: a collection every few allocations
		{math.MaxInt64, math.MaxInt64},
	} {
		if c.mb < math.MinInt || c.mb > math.MaxInt {
			continue // not an int on this platform
		}
		if got := MemoryLimit(int(c.mb)); got != c.want {
			t.Errorf("MemoryLimit(%d) = %d, want %d", c.mb, got, c.want)
		}
	}
}

// env is a lookup over name, value pairs.
func env(kv ...string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

// reset puts the runtime's defaults back (as on a machine with ncpu CPUs), before each case
// and after the test.
func reset(t *testing.T) (ncpu int) {
	t.Helper()
	procs, gogc, limit := runtime.GOMAXPROCS(0), debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs); debug.SetGCPercent(gogc); debug.SetMemoryLimit(limit) })
	runtime.GOMAXPROCS(runtime.NumCPU())
	return runtime.NumCPU()
}

func TestApplyFitsTheRuntimeToTheMemorySize(t *testing.T) {
	ncpu := reset(t)
	for _, c := range []struct {
		mb    int
		procs int
	}{{256, 1}, {1769, 1}, {3538, min(2, ncpu)}} {
		reset(t)
		fit := Apply(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", strconv.Itoa(c.mb)))
		want := Fit{MemoryMB: c.mb, Procs: c.procs, GOGC: GOGC, MemoryLimit: MemoryLimit(c.mb)}
		if !equal(fit, want) {
			t.Errorf("%d MB: Apply = %+v, want %+v", c.mb, fit, want)
		}
		if runtime.GOMAXPROCS(0) != c.procs || debug.SetGCPercent(GOGC) != GOGC || debug.SetMemoryLimit(-1) != MemoryLimit(c.mb) {
			t.Errorf("%d MB: the runtime is not what Apply reported", c.mb)
		}
	}
}

func TestApplyLeavesExplicitSettingsAlone(t *testing.T) {
	ncpu := reset(t)
	fit := Apply(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256", "GOMAXPROCS", "2", "GOGC", "50", "GOMEMLIMIT", "100MiB"))
	// The variables are the runtime's to read at start; this test only set them in the
	// lookup, so the runtime keeps the defaults reset gave it.
	want := Fit{MemoryMB: 256, Procs: ncpu, GOGC: 100, MemoryLimit: math.MaxInt64,
		Skipped: []string{"GOMAXPROCS: set in the environment", "GOMEMLIMIT: set in the environment", "GOGC: set in the environment"}}
	if !equal(fit, want) {
		t.Errorf("Apply = %+v, want %+v", fit, want)
	}

	reset(t)
	fit = Apply(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256", "GOGC", "off"))
	want = Fit{MemoryMB: 256, Procs: 1, GOGC: 100, MemoryLimit: MemoryLimit(256), Skipped: []string{"GOGC: set in the environment"}}
	if !equal(fit, want) {
		t.Errorf("GOGC set: Apply = %+v, want %+v", fit, want)
	}
}

func TestApplyOutsideLambdaChangesNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    func(string) (string, bool)
		reason string
	}{
		{"outside Lambda", env(), "all: AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not set (not in Lambda)"},
		{"empty", env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", ""), "all: AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not set (not in Lambda)"},
		{"not a number", env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256MB"), `all: AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256MB" is not a memory size in MB`},
		{"zero", env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "0"), `all: AWS_LAMBDA_FUNCTION_MEMORY_SIZE="0" is not a memory size in MB`},
	} {
		ncpu := reset(t)
		fit := Apply(c.env)
		want := Fit{Procs: ncpu, GOGC: 100, MemoryLimit: math.MaxInt64, Skipped: []string{c.reason}}
		if !equal(fit, want) {
			t.Errorf("%s: Apply = %+v, want %+v", c.name, fit, want)
		}
	}
}

func TestCurrentReadsGOGCOff(t *testing.T) {
	reset(t)
	debug.SetGCPercent(-1)
	if got := (Fit{}).current().GOGC; got != -1 {
		t.Errorf("GOGC off reads as %d, want -1", got)
	}
}

func equal(a, b Fit) bool {
	return a.MemoryMB == b.MemoryMB && a.Procs == b.Procs && a.GOGC == b.GOGC && a.MemoryLimit == b.MemoryLimit && slices.Equal(a.Skipped, b.Skipped)
}
