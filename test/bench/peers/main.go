// Command peers compares our consumer with Powertools for AWS Lambda (TypeScript and Python)
// and with the raw-write limit on the same work, against one DynamoDB Local, and prints the
// figures as markdown:
//
//	go run ./test/bench/peers -records 2000 -rounds 3 -out /tmp/peers.md
//	go run ./test/bench/peers -records 200 -rounds 1      # smoke: proves it runs
//
// For each batch size the same events (a fraction of them duplicates of keys completed in an
// earlier batch) go to every contender, each on its own fresh table:
//   - ours: the consumer as a user's main builds it (consume.Start, test/bench/peers/oursfn)
//     with the effect every peer runs (parse the body as JSON), built like the Lambda bundling
//     (lambdart.Build) and invoked through a local Lambda Runtime API (internal/lambdart);
//   - bin: the deployed functions/consumer binary the same way, whose default effect also
//     writes a log line per run;
//   - ts: @aws-lambda-powertools/batch + idempotency (test/bench/peers/ts, Node 22);
//   - py: aws-lambda-powertools BatchProcessor + idempotent_function (test/bench/peers/py);
//   - raw: a Go loop issuing only the two writes per record (one per duplicate), a process of
//     its own reading the events from a file (package rawwrite);
//   - rawfn: the same writes as a Lambda function (test/bench/peers/rawfn), invoked like ours,
//     so that the limit pays what every Go Lambda function pays: aws-lambda-go, the event's
//     JSON and a Runtime API round trip per invocation.
//
// First an untimed pass sends every contender through a counting reverse proxy (DynamoDB
// calls per new and per duplicate record, by operation); then the timed rounds go straight to
// DynamoDB Local, contenders alternating, the first one rotating per round (ours, bin, ts,
// py, raw, rawfn; bin, ts, py, raw, rawfn, ours; ...). Every run must
// process every record without a batch item failure and run the effect exactly once per key,
// or the command fails.
//
// Needs what `make bench` installs: DynamoDB Local, Node 22 in node_modules/.bin,
// .cache/bench-ts (npm ci of test/bench/peers/ts) and .cache/bench-py-venv (a virtualenv with
// test/bench/peers/py/requirements.txt); it fails naming `make bench` when one is missing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// Where `make bench` installs the Powertools contenders, relative to the module root:
// `npm ci` of test/bench/peers/ts/package*.json and a virtualenv with
// test/bench/peers/py/requirements.txt.
const (
	defaultTSModules = ".cache/bench-ts/node_modules"
	defaultPython    = ".cache/bench-py-venv/bin/python"
)

type options struct {
	records, rounds, warmup, dupEvery  int
	batches                            []int
	memory                             []int // Lambda-shaped runs: memory sizes in MB (none: unconfined runs)
	timeout, latency                   time.Duration
	count                              bool
	only                               []string
	out                                string
	jsonOut                            string // -json: the Lambda-shaped figures as JSON
	seed                               uint64
	node, tsModules, python, candidate string
}

func main() {
	if os.Getenv(envRawChild) != "" {
		if err := rawChild(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "peers raw contender:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	var batches, only, memory string
	flag.IntVar(&o.records, "records", 2000, "timed records per contender and batch size")
	flag.IntVar(&o.rounds, "rounds", 3, "timed rounds; each runs every contender once per batch size, alternating")
	flag.IntVar(&o.warmup, "warmup", 200, "untimed warm-up records (new keys) before the timed ones in every run")
	flag.IntVar(&o.dupEvery, "dup-every", 10, "every n-th timed record repeats an earlier key (10 = 10% duplicates)")
	flag.StringVar(&batches, "batches", "10,100", "SQS batch sizes, comma-separated")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "simulated function timeout (source of every contender's lock expiry)")
	flag.DurationVar(&o.latency, "latency", 0, "if > 0, timed rounds go through a proxy that delays every DynamoDB call by this much (a model of the network round trip)")
	flag.BoolVar(&o.count, "count", true, "run the untimed counting pass through the proxy first")
	flag.StringVar(&only, "contenders", "ours,bin,ts,py,raw,rawfn", "contenders to run, comma-separated (cand: see -candidate)")
	flag.StringVar(&o.candidate, "candidate", "", "another build of functions/consumer (a bootstrap binary, counted by its \"effect applied\" lines) to run as contender cand beside bin, to measure a change")
	flag.StringVar(&memory, "memory", "", "Lambda-shaped runs: comma-separated memory sizes in MB (e.g. 128,256,1024,1769); each contender's timed part runs under the CPU quota of each size (cgroup v1, root); empty: unconfined")
	flag.StringVar(&o.out, "out", "", "also write the markdown report to this file")
	flag.StringVar(&o.jsonOut, "json", "", "Lambda-shaped runs: also write their figures as JSON to this file (test/bench/cost -lambda reads it)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed choosing which earlier key each duplicate repeats")
	flag.StringVar(&o.node, "node", "node_modules/.bin/node", "Node 22 binary (relative to the module root)")
	flag.StringVar(&o.tsModules, "ts-modules", defaultTSModules, "node_modules of test/bench/peers/ts (relative to the module root)")
	flag.StringVar(&o.python, "python", defaultPython, "Python of the virtualenv of test/bench/peers/py (relative to the module root)")
	flag.Parse()
	for _, s := range strings.Split(batches, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || b < 1 || b > 10000 {
			return fmt.Errorf("-batches %q: want sizes from 1 to 10000", batches)
		}
		o.batches = append(o.batches, b)
	}
	o.only = strings.Split(only, ",")
	if memory != "" {
		for _, s := range strings.Split(memory, ",") {
			mb, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || mb < 128 || mb > 10240 {
				return fmt.Errorf("-memory %q: want sizes from 128 to 10240 MB (Lambda's range)", memory)
			}
			o.memory = append(o.memory, mb)
		}
	}
	if o.records < 1 || o.rounds < 1 || o.warmup < 0 || o.dupEvery < 2 {
		return errors.New("-records and -rounds must be >= 1, -warmup >= 0, -dup-every >= 2")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := moduleRoot()
	if err != nil {
		return err
	}
	p := paths{root: root, node: abs(root, o.node), tsModules: abs(root, o.tsModules), python: abs(root, o.python)}
	if o.candidate != "" {
		p.candidate = abs(root, o.candidate)
		o.only = append(o.only, "cand")
	}
	var cs []contender
	// The contenders read p when they run: the binaries below are built after this.
	for _, c := range contenders(&p) {
		if slices.Contains(o.only, c.id) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return fmt.Errorf("-contenders %q: none of ours, bin, ts, py, raw, rawfn, cand", only)
	}
	if err := checkTools(p, cs); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, fn := range []struct {
		id, pkg string
		path    *string
	}{{"ours", oursfnPkg, &p.oursBinary}, {"bin", consumerPkg, &p.binBinary}, {"rawfn", rawfnPkg, &p.rawfnBinary}} {
		if slices.ContainsFunc(cs, func(c contender) bool { return c.id == fn.id }) {
			*fn.path = filepath.Join(work, fn.id, "bootstrap")
			if err := lambdart.Build(ctx, fn.pkg, *fn.path); err != nil {
				return err
			}
		}
	}

	sets := map[int]*eventSet{}
	files := map[int]string{}
	for _, b := range o.batches {
		set, err := newEventSet(b, max(o.warmup, b), o.records, o.dupEvery, o.seed)
		if err != nil {
			return err
		}
		files[b] = filepath.Join(work, fmt.Sprintf("events-b%d.json", b))
		if err := set.write(files[b]); err != nil {
			return err
		}
		sets[b] = set
	}

	loadBefore := loadAvg()
	srv, err := dynamolocal.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(os.Stderr, "DynamoDB Local at %s\n", srv.Endpoint())
	var meter cpuMeter
	if u, err := url.Parse(srv.Endpoint()); err == nil {
		if meter.jvm, err = findJVM(u.Port()); err != nil {
			fmt.Fprintln(os.Stderr, "DynamoDB Local CPU not measured:", err)
		}
	}

	tables := 0
	runOne := func(c contender, b int, round, endpoint string, group *cgroup) (result, error) {
		tables++
		table := fmt.Sprintf("peer-%s-b%d-%s-%d", c.id, b, round, tables)
		if err := srv.CreateTable(ctx, table, "id", ""); err != nil {
			return result{}, err
		}
		res, err := c.run(ctx, runSpec{set: sets[b], eventsFile: files[b], endpoint: endpoint, table: table, timeout: o.timeout, workDir: work, meter: meter, group: group})
		if err != nil {
			return res, fmt.Errorf("%s, batch %d, %s: %w", c.id, b, round, err)
		}
		if err := check(res, sets[b]); err != nil {
			return res, fmt.Errorf("%s, batch %d, %s: %w", c.id, b, round, err)
		}
		fmt.Fprintf(os.Stderr, "%-5s batch %3d %-12s %8.0f records/s  CPU µs/record: contender %5.0f, DynamoDB Local %5.0f\n",
			c.id, b, round, res.perSecond(), res.ClientCPU/float64(res.Records)*1e6, res.ServerCPU/float64(res.Records)*1e6)
		return res, nil
	}

	rep := &report{opts: o, contenders: cs, sets: sets, results: map[key][]result{}, calls: map[key]callCounts{}, quota: map[qkey][]result{}}
	if o.count {
		for _, b := range o.batches {
			for _, c := range cs {
				proxy, err := startProxy(srv.Endpoint(), 0)
				if err != nil {
					return err
				}
				_, err = runOne(c, b, "count", proxy.URL, nil)
				proxy.Close()
				if err != nil {
					return err
				}
				rep.calls[key{c.id, b}] = proxy.split(sets[b])
			}
		}
	}
	if len(o.memory) > 0 {
		if err := runQuota(ctx, o, cs, rep, srv.Endpoint(), runOne); err != nil {
			return err
		}
	}
	for r := 1; r <= o.rounds && len(o.memory) == 0; r++ {
		for _, b := range o.batches {
			// Each round starts with the next contender, so that no contender always runs first
			// (on the freshest DynamoDB Local) or last.
			for i := range cs {
				c := cs[(i+r-1)%len(cs)]
				endpoint := srv.Endpoint()
				var proxy *countingProxy
				if o.latency > 0 {
					if proxy, err = startProxy(endpoint, o.latency); err != nil {
						return err
					}
					endpoint = proxy.URL
				}
				res, err := runOne(c, b, "r"+strconv.Itoa(r), endpoint, nil)
				if proxy != nil {
					proxy.Close()
				}
				if err != nil {
					return err
				}
				rep.results[key{c.id, b}] = append(rep.results[key{c.id, b}], res)
			}
		}
	}
	rep.machine = machine(p, rep, loadBefore, loadAvg(), srv)
	var sb strings.Builder
	rep.write(&sb)
	fmt.Print(sb.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(sb.String()), 0o644); err != nil {
			return err
		}
	}
	if o.jsonOut != "" {
		if len(o.memory) == 0 {
			return errors.New("-json writes the Lambda-shaped figures: give -memory too")
		}
		return rep.writeQuotaJSON(o.jsonOut)
	}
	return nil
}

// runQuota runs the Lambda-shaped rounds: per round, memory size and batch size, every
// contender once, alternating as in the unconfined rounds, its timed part under the CPU quota
// of the memory size, every DynamoDB call delayed by -latency.
func runQuota(ctx context.Context, o options, cs []contender, rep *report, target string,
	runOne func(contender, int, string, string, *cgroup) (result, error)) error {
	q := newQuotaSet(o.memory)
	defer q.close()
	rep.fallback = q.fallback
	for r := 1; r <= o.rounds; r++ {
		for _, mb := range o.memory {
			for _, b := range o.batches {
				for i := range cs {
					c := cs[(i+r-1)%len(cs)]
					endpoint := target
					var proxy *countingProxy
					if o.latency > 0 {
						var err error
						if proxy, err = startProxy(endpoint, o.latency); err != nil {
							return err
						}
						endpoint = proxy.URL
					}
					res, err := runOne(c, b, fmt.Sprintf("r%d-%dMB", r, mb), endpoint, q.groups[mb])
					if proxy != nil {
						proxy.Close()
					}
					if err != nil {
						return err
					}
					k := qkey{c.id, b, mb}
					rep.quota[k] = append(rep.quota[k], res)
				}
			}
		}
	}
	return nil
}

// check holds every run to the same correctness bar before its figure counts.
func check(res result, set *eventSet) error {
	switch {
	case res.Records != set.TimedCount:
		return fmt.Errorf("processed %d timed records, want %d", res.Records, set.TimedCount)
	case res.Failures != 0:
		return fmt.Errorf("%d batch item failures, want 0", res.Failures)
	case res.Effects != set.UniqueKeys:
		return fmt.Errorf("the effect ran %d times, want %d (once per key)", res.Effects, set.UniqueKeys)
	case res.Seconds <= 0:
		return fmt.Errorf("elapsed %v s", res.Seconds)
	}
	return nil
}

// The function contenders' packages, built with lambdart.Build like bundling builds the
// consumer, but for this machine.
const (
	oursfnPkg   = "github.com/idempotent-sqs/pipeline/test/bench/peers/oursfn"
	consumerPkg = "github.com/idempotent-sqs/pipeline/functions/consumer"
	rawfnPkg    = "github.com/idempotent-sqs/pipeline/test/bench/peers/rawfn"
)

// checkTools fails before any work when a contender's installation is missing; `make bench`
// installs every one of them at the default paths.
func checkTools(p paths, cs []contender) error {
	need := map[string][]string{
		"ts": {p.node, filepath.Join(p.tsModules, "@aws-lambda-powertools", "idempotency")},
		"py": {p.python},
	}
	for _, c := range cs {
		for _, path := range need[c.id] {
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("%s contender: %s is missing: run `make bench` (it installs Node 22, %s and %s), or point -node, -ts-modules, -python elsewhere",
					c.id, path, filepath.Dir(defaultTSModules), filepath.Dir(filepath.Dir(defaultPython)))
			}
		}
	}
	return nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, ok := localproc.ModuleRoot(wd)
	if !ok {
		return "", fmt.Errorf("no go.mod above %s: run from the module", wd)
	}
	return root, nil
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func commandOutput(name string, args ...string) string {
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func machine(p paths, rep *report, before, after string, srv *dynamolocal.Server) []string {
	jars, _ := filepath.Glob(filepath.Join(os.Getenv(dynamolocal.EnvDir), "DynamoDBLocal*.jar"))
	if len(jars) == 0 {
		jars, _ = filepath.Glob(filepath.Join(p.root, ".cache/dynamodb-local/DynamoDBLocal*.jar"))
	}
	jar := "?"
	if len(jars) > 0 {
		jar = filepath.Base(jars[0])
	}
	javaOpts := dynamolocal.DefaultJavaOpts
	if v, ok := os.LookupEnv(dynamolocal.EnvJavaOpts); ok {
		javaOpts = v
	}
	runtimes := map[string]bool{}
	for _, rs := range rep.results {
		for _, r := range rs {
			runtimes[r.Runtime] = true
		}
	}
	var rts []string
	for r := range runtimes {
		rts = append(rts, r)
	}
	slices.Sort(rts)
	return []string{
		fmt.Sprintf("nproc %d; CPU %s; %s", runtime.NumCPU(), cpuModel(), commandOutput("go", "version")),
		fmt.Sprintf("contender runtimes: %s", strings.Join(rts, ", ")),
		fmt.Sprintf("DynamoDB Local %s in memory, java %q, JVM options %q", jar, firstLine(commandOutput("java", "-version")), javaOpts),
		fmt.Sprintf("load average (1/5/15 min) before: %s, after: %s (2 cores shared with other work: expect noise)", before, after),
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
