package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/test/bench/peers/rawwrite"
)

// result is what one contender reports for one run.
type result struct {
	Records  int     `json:"records"`  // timed records
	Failures int     `json:"failures"` // batch item failures, warm-up included (must be 0)
	Effects  int     `json:"effects"`  // runs of the business effect, warm-up included
	Seconds  float64 `json:"seconds"`  // timed part only
	Runtime  string  `json:"runtime"`
	// CPU time of the timed part: the contender's process (self-reported by the scripts) and
	// DynamoDB Local's JVM (sampled by the orchestrator).
	ClientCPU float64 `json:"cpu_seconds"`
	ServerCPU float64 `json:"-"`
}

func (r result) perSecond() float64 { return float64(r.Records) / r.Seconds }

// runSpec is one run: an event set against one fresh table through one endpoint.
type runSpec struct {
	set        *eventSet
	eventsFile string
	endpoint   string
	table      string
	timeout    time.Duration // the simulated function timeout (lock expiry source)
	workDir    string
	meter      cpuMeter
	// group, when set, is the CPU-quota cgroup the contender's process joins after the
	// warm-up, for the timed part (Lambda-shaped runs); nil runs unconfined.
	group *cgroup
}

// memoryMB is the memory size the function's process is told (AWS_LAMBDA_FUNCTION_MEMORY_SIZE),
// to which ours and the raw loop fit the Go runtime (package runtimefit): the cgroup's size in
// a Lambda-shaped run; otherwise an environment as large as this machine, whose CPUs an
// unconfined run may all use.
func (s runSpec) memoryMB() int {
	if s.group != nil {
		return s.group.mb
	}
	return runtime.NumCPU() * runtimefit.MBPerVCPU
}

type contender struct {
	id, name    string
	concurrency func(batch int) string
	guarantees  string
	run         func(ctx context.Context, s runSpec) (result, error)
}

// paths are the installed tools the contenders need.
type paths struct {
	root, node, tsModules, python string
	// Built when their contender runs: test/bench/peers/oursfn, functions/consumer,
	// test/bench/peers/rawfn.
	oursBinary, binBinary, rawfnBinary string
	candidate                          string // optional: another build of the consumer, run as "cand"
}

// The consumer's concurrency and guarantees, the same in both of its builds.
var (
	oursConcurrency = func(b int) string { return "BATCH_CONCURRENCY=" + strconv.Itoa(b) + " (all records of a batch)" }
	oursGuarantees  = "acquire = 1 conditional write that returns the old item (no read); fencing token on complete/release; " +
		"lock expiry from the invocation deadline (cap IDEMPOTENCY_LOCK_CAP); payload hash validated (typed error); " +
		"live lock elsewhere -> batch item failure; release on effect failure; transient errors retried with jittered backoff; " +
		"expired record treated as absent; one structured log line per record + EMF metrics"
)

func contenders(p *paths) []contender {
	cs := []contender{
		{
			id: "ours", name: "ours (consume library, the peers' effect: test/bench/peers/oursfn)",
			concurrency: oursConcurrency,
			guarantees:  oursGuarantees,
			run: func(ctx context.Context, s runSpec) (result, error) {
				return runFunction(ctx, p.oursBinary, s, "peer-ours", processedEffects)
			},
		},
		{
			id: "bin", name: "ours, deployed default (functions/consumer binary: + one log line per effect)",
			concurrency: oursConcurrency,
			guarantees:  oursGuarantees + "; its default effect is LogEffect, a JSON log line per run",
			run: func(ctx context.Context, s runSpec) (result, error) {
				return runFunction(ctx, p.binBinary, s, "peer-bin", oursEffects)
			},
		},
		{
			id: "ts", name: "Powertools TypeScript 2.35.0",
			concurrency: func(b int) string {
				return fmt.Sprintf("processInParallel: all %d records at once (keep-alive agent with %d sockets; SDK default 50)", b, b)
			},
			guarantees: "PutItem acquire returns the old item (no read); lock expiry from the remaining time (registerLambdaContext); " +
				"payload hash validated (payloadValidationJmesPath: body, opt-in); live lock -> record failure; delete on handler failure; " +
				"complete is an unconditional UpdateItem: no fencing (an owner whose lock expired can overwrite the new owner); SDK retries (3 attempts)",
			run: func(ctx context.Context, s runSpec) (result, error) {
				return runScript(ctx, s, p.node, []string{filepath.Join(p.root, "test/bench/peers/ts/contender.mjs")},
					"BENCH_TS_MODULES="+p.tsModules)
			},
		},
		{
			id: "py", name: "Powertools Python 3.37.0",
			concurrency: func(int) string {
				return "1: BatchProcessor runs the records of a batch one after another (its design)"
			},
			guarantees: "same persistence protocol as TypeScript: PutItem acquire with ALL_OLD (no read), lock expiry from the remaining time, " +
				"payload hash validated (payload_validation_jmespath: body, opt-in), delete on failure, unconditional complete: no fencing; botocore retries",
			run: func(ctx context.Context, s runSpec) (result, error) {
				return runScript(ctx, s, p.python, []string{filepath.Join(p.root, "test/bench/peers/py/contender.py")})
			},
		},
		{
			id: "raw", name: "limit: raw writes (Go loop)",
			concurrency: func(b int) string { return strconv.Itoa(b) + " goroutines (all records of a batch)" },
			guarantees:  rawwrite.Guarantees,
			run:         runRaw,
		},
		{
			id: "rawfn", name: "limit: raw writes as a Lambda function (Go, Runtime API like ours)",
			concurrency: func(b int) string { return strconv.Itoa(b) + " goroutines (all records of a batch)" },
			guarantees:  rawwrite.Guarantees + "; run as ours is: aws-lambda-go, the event decoded from JSON, the Runtime API per invocation",
			run: func(ctx context.Context, s runSpec) (result, error) {
				return runFunction(ctx, p.rawfnBinary, s, "peer-rawfn", rawfnEffects)
			},
		},
	}
	if p.candidate != "" {
		cs = append(cs, contender{id: "cand", name: "candidate: consumer built as " + p.candidate, concurrency: oursConcurrency,
			guarantees: "as ours, deployed default (a candidate build of functions/consumer)",
			run: func(ctx context.Context, s runSpec) (result, error) {
				return runFunction(ctx, p.candidate, s, "peer-cand", oursEffects)
			}})
	}
	return cs
}

// oursEffects counts the deployed consumer's effect runs: the "effect applied" lines of the
// default LogEffect.
func oursEffects(line []byte) int {
	if bytes.Contains(line, []byte(`"message":"effect applied"`)) {
		return 1
	}
	return 0
}

// processedEffects counts oursfn's effect runs: its effect logs nothing, and each run that
// completed its record has a "record outcome" line with outcome "processed" (a run whose
// complete failed would not count, and fails the benchmark's check).
func processedEffects(line []byte) int {
	if bytes.Contains(line, []byte(`"outcome":"processed"`)) {
		return 1
	}
	return 0
}

// rawfnEffects counts rawfn's effect runs: its {"rawEffects":N} line per invocation.
func rawfnEffects(line []byte) int {
	var l struct {
		RawEffects *int `json:"rawEffects"`
	}
	if json.Unmarshal(line, &l) == nil && l.RawEffects != nil {
		return *l.RawEffects
	}
	return 0
}

// runFunction runs a function binary (ours, bin, cand or rawfn, each built like the Lambda
// bundling) in one lambdart execution environment, one invocation after another as on one
// warm Lambda environment: first the warm-up events (the first invocation is the cold start),
// then the timed ones. effectsIn counts the effect runs an output line reports.
//
// The figure is the wall time from handing out the first timed event to the last response,
// measured around the Invoke calls (payloads marshalled beforehand), as the Powertools
// scripts time their loop over the events: it includes each invocation's Runtime API round
// trip (the runtime's /next, the event, the response), which Lambda has too and which bounds
// a warm environment's throughput; the sum of Result.Duration would leave out the runtime's
// /next between invocations and flatter ours against contenders timed over a loop.
func runFunction(ctx context.Context, binary string, s runSpec, name string, effectsIn func([]byte) int) (result, error) {
	var effects atomic.Int64
	env, err := lambdart.New(lambdart.Config{
		Binary:       binary,
		FunctionName: name,
		Timeout:      s.timeout,
		MemoryMB:     s.memoryMB(),
		Env: map[string]string{
			"AWS_ENDPOINT_URL_DYNAMODB": s.endpoint,
			"IDEMPOTENCY_TABLE_NAME":    s.table,
			"IDEMPOTENCY_LOCK_CAP":      s.timeout.String(),
			"BATCH_CONCURRENCY":         strconv.Itoa(s.set.Batch),
		},
		Output: func(line []byte) { effects.Add(int64(effectsIn(line))) },
	})
	if err != nil {
		return result{}, err
	}
	defer env.Close()
	marshal := func(evs []events.SQSEvent) ([][]byte, error) {
		out := make([][]byte, len(evs))
		for i, ev := range evs {
			var err error
			if out[i], err = json.Marshal(ev); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	warmup, err := marshal(s.set.Warmup)
	if err != nil {
		return result{}, err
	}
	timed, err := marshal(s.set.Timed)
	if err != nil {
		return result{}, err
	}
	failures := 0
	invoke := func(i int, payload []byte, records int, timedPart bool) error {
		res, err := env.Invoke(ctx, payload)
		if err != nil {
			return fmt.Errorf("invocation %d: %w", i, err)
		}
		if res.FunctionError != nil {
			failures += records
			return fmt.Errorf("invocation %d: function error: %w", i, res.FunctionError)
		}
		if timedPart && res.ColdStart {
			return fmt.Errorf("invocation %d: a cold start in the timed part (the process was replaced)", i)
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res.Payload, &resp); err != nil {
			return fmt.Errorf("invocation %d: response %q: %w", i, res.Payload, err)
		}
		failures += len(resp.BatchItemFailures)
		return nil
	}
	for i, p := range warmup {
		if err := invoke(i, p, len(s.set.Warmup[i].Records), false); err != nil {
			return result{Failures: failures}, err
		}
	}
	pid := env.PID()
	if pid == 0 {
		return result{Failures: failures}, fmt.Errorf("no running process after %d warm-up invocations", len(warmup))
	}
	if s.group != nil {
		if err := s.group.join(pid); err != nil {
			return result{Failures: failures}, err
		}
	}
	client0, _ := procCPU(pid)
	server0 := s.meter.server()
	start := time.Now()
	for i, p := range timed {
		if err := invoke(len(warmup)+i, p, len(s.set.Timed[i].Records), true); err != nil {
			return result{Failures: failures}, err
		}
	}
	elapsed := time.Since(start)
	client1, _ := procCPU(pid)
	server1 := s.meter.server()
	env.Close() // waits for the process and the last output lines
	return result{Records: s.set.TimedCount, Failures: failures, Effects: int(effects.Load()), Seconds: elapsed.Seconds(),
		Runtime: "Go binary", ClientCPU: (client1 - client0).Seconds(), ServerCPU: (server1 - server0).Seconds()}, nil
}

// runScript runs a Powertools contender (node or python), which prints one JSON result line.
func runScript(ctx context.Context, s runSpec, interp string, args []string, extraEnv ...string) (result, error) {
	cmd := exec.CommandContext(ctx, interp, args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_REGION=us-east-1",
		"PEER_ENDPOINT=" + s.endpoint,
		"PEER_TABLE=" + s.table,
		"PEER_EVENTS=" + s.eventsFile,
		"PEER_TIMEOUT_MS=" + strconv.FormatInt(s.timeout.Milliseconds(), 10),
		"PEER_CONCURRENCY=" + strconv.Itoa(s.set.Batch),
	}, extraEnv...)
	if s.group != nil {
		cmd.Env = append(cmd.Env, "PEER_CGROUP_PROCS="+s.group.Procs())
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	// The script prints {"phase":"timed"} when its timed part starts and the result line when
	// it ends: DynamoDB Local's CPU is sampled at both.
	var res result
	var server0, server1 time.Duration
	var lines []string
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		switch {
		case line == `{"phase":"timed"}`:
			server0 = s.meter.server()
		case strings.HasPrefix(line, `{"records":`):
			server1 = s.meter.server()
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				return result{}, fmt.Errorf("%s: result line %q: %w", interp, line, err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("%s: %w; stdout: %s; stderr: %s", interp, err, tail(strings.Join(lines, "\n"), 2000), tail(stderr.String(), 4000))
	}
	if res.Records == 0 {
		return result{}, fmt.Errorf("%s: no result line; stdout: %s; stderr: %s", interp, tail(strings.Join(lines, "\n"), 2000), tail(stderr.String(), 2000))
	}
	res.ServerCPU = (server1 - server0).Seconds()
	return res, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// runRaw is the limit: per record, parse the body for the key, one conditional UpdateItem
// (acquire; a failed condition means duplicate and ends the record), the effect (parse the
// body), one UpdateItem (complete). It runs as a process of its own (this command, re-run
// with envRawChild set), like the other contenders, so that it can be put under a CPU quota
// and its CPU is its own.
func runRaw(ctx context.Context, s runSpec) (result, error) {
	self, err := os.Executable()
	if err != nil {
		return result{}, fmt.Errorf("raw contender: %w", err)
	}
	return runScript(ctx, s, self, nil, envRawChild+"=1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(s.memoryMB()),
		envRawProfile+"="+os.Getenv(envRawProfile))
}

// envRawChild makes this command the raw-write contender's process (see rawChild).
const envRawChild = "PEERS_RAW_CHILD"

// envRawProfile, a file, makes the raw-write contender write a CPU profile of its timed part
// there (test/bench/profile_binary.sh profiles it beside ours).
const envRawProfile = "PEERS_RAW_CPUPROFILE"

// rawChild is the raw-write contender's process: it reads the PEER_* variables the Powertools
// scripts read, runs the warm-up and then the timed events, and prints the same phase and
// result lines. Records of a batch run concurrently, batches one after another, on one
// client whose connection pool holds a connection per concurrent record. The Go runtime is
// fitted to the memory size as in ours (runtimefit.Apply), so that the limit has every runtime
// setting ours has.
func rawChild(ctx context.Context) error {
	runtimefit.Apply(os.LookupEnv)
	b, err := os.ReadFile(os.Getenv("PEER_EVENTS"))
	if err != nil {
		return err
	}
	var evs fileBody
	if err := json.Unmarshal(b, &evs); err != nil {
		return fmt.Errorf("%s: %w", os.Getenv("PEER_EVENTS"), err)
	}
	conc, err := strconv.Atoi(os.Getenv("PEER_CONCURRENCY"))
	if err != nil || conc < 1 {
		return fmt.Errorf("PEER_CONCURRENCY %q: want a count >= 1", os.Getenv("PEER_CONCURRENCY"))
	}
	w := rawwrite.New(os.Getenv("PEER_ENDPOINT"), os.Getenv("PEER_TABLE"), conc)
	var effects, failures atomic.Int64
	var firstErr error
	var errOnce sync.Once
	record := func(ctx context.Context, body string) {
		effect, err := w.Record(ctx, body)
		if effect {
			effects.Add(1)
		}
		if err != nil {
			failures.Add(1)
			errOnce.Do(func() { firstErr = err })
		}
	}
	run := func(evs []eventsBatch) float64 {
		start := time.Now()
		for _, ev := range evs {
			var wg sync.WaitGroup
			for _, body := range ev {
				wg.Add(1)
				go func() { defer wg.Done(); record(ctx, body) }()
			}
			wg.Wait()
		}
		return time.Since(start).Seconds()
	}
	run(bodies(evs.Warmup))
	if procs := os.Getenv("PEER_CGROUP_PROCS"); procs != "" {
		if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return err
		}
	}
	fmt.Println(`{"phase":"timed"}`)
	if path := os.Getenv(envRawProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cpu0 := selfCPU()
	secs := run(bodies(evs.Timed))
	cpu1 := selfCPU()
	if firstErr != nil {
		return firstErr
	}
	res := result{Records: countRecords(evs.Timed), Failures: int(failures.Load()), Effects: int(effects.Load()), Seconds: secs,
		Runtime: "Go process", ClientCPU: (cpu1 - cpu0).Seconds()}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
