package gofn_test

import (
	"bufio"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/internal/gofn"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The Makefile's GO_LAMBDA_FLAGS build the binaries that are measured and tested locally;
// they must be the flags bundling deploys with.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	_, root, err := gofn.DefaultPaths("consumer")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^GO_LAMBDA_FLAGS\s*:?=\s*(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			if got, want := strings.TrimSpace(m[1]), strings.Join(gofn.BuildFlags, " "); got != want {
				t.Fatalf("Makefile GO_LAMBDA_FLAGS = %q, bundling uses %q", got, want)
			}
			return
		}
	}
	t.Fatal("GO_LAMBDA_FLAGS not found in the Makefile")
}

func TestDefaultPathsPointAtTheMains(t *testing.T) {
	for _, main := range []string{"consumer", "dispatcher"} {
		entry, root, err := gofn.DefaultPaths(main)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(entry, "main.go")); err != nil {
			t.Errorf("%s: %v", main, err)
		}
		if entry != filepath.Join(root, "functions", main) {
			t.Errorf("%s: entry %s is not under %s", main, entry, root)
		}
	}
}

func TestValidate(t *testing.T) {
	valid := func() gofn.Props {
		return gofn.Props{Main: "consumer", Timeout: 30 * time.Second, MemorySize: 256}
	}
	tests := []struct {
		name   string
		mutate func(*gofn.Props)
		want   []string
	}{
		{"timeout too long", func(p *gofn.Props) { p.Timeout = 16 * time.Minute }, []string{"Timeout: got 16m0s", "1s to 15m0s"}},
		{"timeout fraction", func(p *gofn.Props) { p.Timeout = 1500 * time.Millisecond }, []string{"Timeout: got 1.5s", "whole seconds"}},
		{"memory too small", func(p *gofn.Props) { p.MemorySize = 64 }, []string{"MemorySize: got 64", "128 to 10240"}},
		{"memory too large", func(p *gofn.Props) { p.MemorySize = 10241 }, []string{"MemorySize: got 10241"}},
		{"missing entry", func(p *gofn.Props) { p.Entry = "/nonexistent/cmd" }, []string{"Entry: got /nonexistent/cmd", "Go main package"}},
		{"module dir without go.mod", func(p *gofn.Props) { p.ModuleDir = os.TempDir() }, []string{"ModuleDir: got " + os.TempDir(), "go.mod"}},
		{"event age too short", func(p *gofn.Props) { p.MaxEventAge = 30 * time.Second }, []string{"AsyncMaxEventAge: got 30s", "1m0s to 6h0m0s"}},
		{"retries out of range", func(p *gofn.Props) { n := 3; p.RetryAttempts = &n }, []string{"AsyncRetryAttempts: got 3", "0, 1 or 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid()
			tt.mutate(&p)
			cdktest.ExpectProblem(t, func() {
				problems := validate.New("Test", "fn")
				p.Validate(problems)
				problems.Check()
			}, tt.want...)
		})
	}
	t.Run("defaults", func(t *testing.T) {
		p := valid()
		problems := validate.New("Test", "fn")
		p.Validate(problems)
		if err := problems.Err(); err != nil {
			t.Fatal(err)
		}
		if p.LogRetention != gofn.DefaultLogRetention || p.LogRemovalPolicy != awscdk.RemovalPolicy_RETAIN {
			t.Errorf("log defaults: %v %v", p.LogRetention, p.LogRemovalPolicy)
		}
		if filepath.Base(p.Entry) != "consumer" || p.ModuleDir == "" {
			t.Errorf("paths: entry %q module %q", p.Entry, p.ModuleDir)
		}
	})
}

// TestBundling synthesizes both mains with bundling ON (the only test in the repository's
// construct packages that does; the others skip it) and checks each asset holds a static
// linux/arm64 `bootstrap`, the file provided.al2023 runs.
func TestBundling(t *testing.T) {
	if testing.Short() {
		t.Skip("bundling compiles both Lambda mains")
	}
	os.Setenv("CDK_VALIDATION", "false")
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	stack := awscdk.NewStack(app, jsii.String("Bundled"), &awscdk.StackProps{Env: cdktest.Env})
	fns := map[string]string{}
	for _, main := range []string{"consumer", "dispatcher"} {
		scope := constructs.NewConstruct(stack, jsii.String(main))
		p := gofn.Props{Main: main, Timeout: 30 * time.Second, MemorySize: 128}
		problems := validate.New("Test", main)
		p.Validate(problems)
		problems.Check()
		fn := gofn.New(scope, p)
		fns[main] = *stack.GetLogicalId(fn.Function.Node().DefaultChild().(awscdk.CfnElement))
	}
	tpl := assertions.Template_FromStack(stack, nil)
	for main, logicalID := range fns {
		res := tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil)
		fn, ok := (*res)[logicalID]
		if !ok {
			t.Fatalf("%s: function %s not in template", main, logicalID)
		}
		code := (*fn)["Properties"].(map[string]any)["Code"].(map[string]any)
		key, _ := code["S3Key"].(string)
		hash := strings.TrimSuffix(key, ".zip")
		if hash == "" || hash == key {
			t.Fatalf("%s: unexpected S3Key %v", main, code["S3Key"])
		}
		checkBootstrap(t, main, filepath.Join(out, "asset."+hash, "bootstrap"))
	}
}

func checkBootstrap(t *testing.T, main, path string) {
	t.Helper()
	bin, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", main, err)
	}
	defer bin.Close()
	if bin.Machine != elf.EM_AARCH64 || bin.OSABI != elf.ELFOSABI_NONE && bin.OSABI != elf.ELFOSABI_LINUX {
		t.Errorf("%s: bootstrap is %v/%v, want linux arm64", main, bin.Machine, bin.OSABI)
	}
	for _, prog := range bin.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: bootstrap is dynamically linked (CGO on?)", main)
		}
	}
	if bin.Section(".symtab") != nil {
		t.Errorf("%s: bootstrap has a symbol table; -ldflags \"-s -w\" was not applied", main)
	}
}
