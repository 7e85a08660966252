package gofn_test

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/internal/gofn"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
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

// writeDir is a new directory holding files (name -> content).
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	d := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestValidate(t *testing.T) {
	// Entries that are directories but not a consumer's main package.
	library := writeDir(t, map[string]string{"ship.go": "package shipping\n\nfunc Ship() {}\n"})
	empty := writeDir(t, map[string]string{"README.md": "no Go here\n"})
	dispatcherMain := filepath.Join("..", "..", "..", "functions", "dispatcher")
	valid := func() gofn.Props {
		return gofn.Props{Main: "consumer", Options: function.Options{Timeout: 30 * time.Second, MemorySize: 256}}
	}
	tests := []struct {
		name   string
		mutate func(*gofn.Props)
		want   []string
	}{
		{"timeout too long", func(p *gofn.Props) { p.Timeout = 16 * time.Minute }, []string{"Function.Timeout: got 16m0s", "1s to 15m0s"}},
		{"timeout fraction", func(p *gofn.Props) { p.Timeout = 1500 * time.Millisecond }, []string{"Function.Timeout: got 1.5s", "whole seconds"}},
		{"memory too small", func(p *gofn.Props) { p.MemorySize = 64 }, []string{"Function.MemorySize: got 64", "128 to 10240"}},
		{"memory too large", func(p *gofn.Props) { p.MemorySize = 10241 }, []string{"Function.MemorySize: got 10241"}},
		{"missing entry", func(p *gofn.Props) { p.Entry = "/nonexistent/cmd" }, []string{"Function.Entry: got /nonexistent/cmd", "Go main package"}},
		{"entry that is not package main", func(p *gofn.Props) { p.Entry = library },
			[]string{"Function.Entry: got " + library + "; it is package shipping, not package main: Lambda runs an executable, which Go builds only from package main; " +
				"set Entry to your main package (package main, whose func main calls consume.Start)"}},
		{"entry without Go files", func(p *gofn.Props) { p.Entry = empty },
			[]string{"Function.Entry: got " + empty + "; it holds no Go source files (for linux/arm64): set Entry to the directory of your main package"}},
		{"consumer entry that is the dispatcher's main", func(p *gofn.Props) { p.Entry = dispatcherMain },
			[]string{"Function.Entry: got " + dispatcherMain + "; it is a dispatcher main (it imports functions/dispatch, not functions/consume): " +
				"the consumer's Entry must be a main built on github.com/idempotent-sqs/pipeline/functions/consume", "did you mean to give it to the dispatcher?"}},
		{"dispatcher entry that is the consumer's main", func(p *gofn.Props) {
			p.Main, p.Entry = "dispatcher", filepath.Join("..", "..", "..", "functions", "consumer")
		},
			[]string{"it is a consumer main (it imports functions/consume, not functions/dispatch): the dispatcher's Entry must be a main built on github.com/idempotent-sqs/pipeline/functions/dispatch"}},
		{"module dir without go.mod", func(p *gofn.Props) { p.ModuleDir = os.TempDir() }, []string{"Function.ModuleDir: got " + os.TempDir(), "go.mod"}},
		{"event age too short", func(p *gofn.Props) { p.MaxEventAge = 30 * time.Second }, []string{"AsyncMaxEventAge: got 30s", "1m0s to 6h0m0s"}},
		{"retries out of range", func(p *gofn.Props) { n := 3; p.RetryAttempts = &n }, []string{"AsyncRetryAttempts: got 3", "0, 1 or 2"}},
		{"subnets without a VPC", func(p *gofn.Props) { p.VpcSubnets = &awsec2.SubnetSelection{} },
			[]string{"Function.VpcSubnets: got a subnet selection without Vpc; set Vpc as well, or remove VpcSubnets"}},
		{"security groups without a VPC", func(p *gofn.Props) { p.SecurityGroups = make([]awsec2.ISecurityGroup, 2) },
			[]string{"Function.SecurityGroups: got 2 security groups without Vpc; set Vpc as well, or remove SecurityGroups"}},
		{"nil security group", func(p *gofn.Props) { p.SecurityGroups = make([]awsec2.ISecurityGroup, 1) },
			[]string{"Function.SecurityGroups: got a nil security group; remove it"}},
		{"six layers", func(p *gofn.Props) { p.Layers = make([]awslambda.ILayerVersion, 6) },
			[]string{"Function.Layers: got 6; use at most 5 layers (Lambda's limit)"}},
		{"nil layer", func(p *gofn.Props) { p.Layers = make([]awslambda.ILayerVersion, 1) },
			[]string{"Function.Layers: got a nil layer; remove it"}},
		{"negative reserved concurrency", func(p *gofn.Props) { p.ReservedConcurrentExecutions = -1 },
			[]string{"Function.ReservedConcurrentExecutions: got -1; use 0 (none reserved) or a positive number"}},
		{"architecture provided.al2023 does not run", func(p *gofn.Props) { p.Architecture = awslambda.Architecture_Custom(jsii.String("riscv64"), nil) },
			[]string{`Architecture: got "riscv64"; use awslambda.Architecture_ARM_64() or awslambda.Architecture_X86_64()`}},
		{"entry as a token", func(p *gofn.Props) { p.Entry = *awscdk.Token_AsString(map[string]any{"Ref": "P"}, nil) },
			[]string{"Function.Entry: Entry and ModuleDir cannot be tokens: the function is built from them at synth; give local paths"}},
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
// linux `bootstrap` for the function's architecture (arm64 by default, amd64 for x86_64),
// the file provided.al2023 runs.
func TestBundling(t *testing.T) {
	if testing.Short() {
		t.Skip("bundling compiles both Lambda mains")
	}
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	stack := awscdk.NewStack(app, jsii.String("Bundled"), &awscdk.StackProps{Env: cdktest.Env})
	fns := map[string]string{}
	machines := map[string]elf.Machine{}
	for _, fn := range []struct {
		name, main string
		arch       awslambda.Architecture
		machine    elf.Machine
	}{
		{"consumer", "consumer", nil, elf.EM_AARCH64},
		{"dispatcher", "dispatcher", nil, elf.EM_AARCH64},
		// Architecture x86_64 must bundle with GOARCH=amd64, or Lambda cannot exec bootstrap.
		{"dispatcher-x86_64", "dispatcher", awslambda.Architecture_X86_64(), elf.EM_X86_64},
	} {
		scope := constructs.NewConstruct(stack, jsii.String(fn.name))
		p := gofn.Props{Main: fn.main, Options: function.Options{Timeout: 30 * time.Second, MemorySize: 128, Architecture: fn.arch}}
		problems := validate.New("Test", fn.name)
		p.Validate(problems)
		problems.Check()
		f := gofn.New(scope, p)
		fns[fn.name] = *stack.GetLogicalId(f.Function.Node().DefaultChild().(awscdk.CfnElement))
		machines[fn.name] = fn.machine
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
		checkBootstrap(t, main, filepath.Join(out, "asset."+hash, "bootstrap"), machines[main])
	}

	// Each function says where its source is, in the manifest (package local builds it from
	// there for the machine it runs on).
	sources, err := cfn.ReadSources(out, "Bundled")
	if err != nil {
		t.Fatal(err)
	}
	for name, main := range map[string]string{"consumer": "consumer", "dispatcher": "dispatcher", "dispatcher-x86_64": "dispatcher"} {
		got, ok := sources[fns[name]]
		entry, _, err := gofn.DefaultPaths(main)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || got.Entry != entry || got.Role != main || got.ModuleDir == "" || got.Path != "/Bundled/"+name+"/Resource/Resource" {
			t.Errorf("%s: %s metadata = %+v, want entry %s and role %s", name, cfn.SourceMetadata, got, entry, main)
		}
	}
}

func checkBootstrap(t *testing.T, main, path string, machine elf.Machine) {
	t.Helper()
	bin, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", main, err)
	}
	defer bin.Close()
	if bin.Machine != machine || bin.OSABI != elf.ELFOSABI_NONE && bin.OSABI != elf.ELFOSABI_LINUX {
		t.Errorf("%s: bootstrap is %v/%v, want linux %v", main, bin.Machine, bin.OSABI, machine)
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

// The common Lambda options reach the function, its role and its checkov skips: a skip whose
// reason no longer holds (no VPC, no reserved concurrency) is not recorded.
func TestOptions(t *testing.T) {
	app := cdktest.NewApp()
	stack := cdktest.NewStack(app, "Options")
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}}})
	sg := awsec2.NewSecurityGroup(stack, jsii.String("Sg"), &awsec2.SecurityGroupProps{Vpc: vpc})
	layer := awslambda.LayerVersion_FromLayerVersionArn(stack, jsii.String("Layer"),
		jsii.String("arn:aws:lambda:eu-west-1:123456789012:layer:ext:3"))

	build := func(id string, o function.Options) *gofn.Function {
		o.Timeout, o.MemorySize = 30*time.Second, 128
		p := gofn.Props{Main: "dispatcher", Options: o}
		problems := validate.New("Test", id)
		p.Validate(problems)
		problems.Check()
		return gofn.New(constructs.NewConstruct(stack, jsii.String(id)), p)
	}
	plain := build("Plain", function.Options{})
	tuned := build("Tuned", function.Options{
		Architecture: awslambda.Architecture_X86_64(), Vpc: vpc,
		VpcSubnets:     &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED},
		SecurityGroups: []awsec2.ISecurityGroup{sg}, Layers: []awslambda.ILayerVersion{layer},
		ReservedConcurrentExecutions: 3,
	})
	tpl := assertions.Template_FromStack(stack, nil)
	id := func(f *gofn.Function) string { return cdktest.LogicalID(stack, f.Function) }

	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Architectures":                []any{"x86_64"},
		"Layers":                       []any{"arn:aws:lambda:eu-west-1:123456789012:layer:ext:3"},
		"ReservedConcurrentExecutions": 3,
		"VpcConfig": map[string]any{
			"SecurityGroupIds": []any{map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(stack, sg), "GroupId"}}},
			"SubnetIds":        assertions.Match_AnyValue(),
		},
	})
	res := tpl.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{"Properties": map[string]any{
		"Architectures": []any{"arm64"}, "Layers": assertions.Match_Absent(),
		"ReservedConcurrentExecutions": assertions.Match_Absent(), "VpcConfig": assertions.Match_Absent(),
	}})
	if _, ok := (*res)[id(plain)]; !ok {
		t.Errorf("function without options: want arm64, no layers, no reserved concurrency, no VPC")
	}
	// The role of a function in a VPC may manage its network interfaces.
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"Roles": []any{map[string]any{"Ref": cdktest.LogicalID(stack, tuned.Role)}},
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Action": []any{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
				"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"},
			"Effect": "Allow", "Resource": "*",
		}})},
	})

	for _, tt := range []struct {
		f    *gofn.Function
		want string
	}{
		{plain, "[CKV_AWS_116 CKV_AWS_173 CKV_AWS_115 CKV_AWS_117]"},
		{tuned, "[CKV_AWS_116 CKV_AWS_173]"},
	} {
		if got := fmt.Sprint(cdktest.CheckovSkips(tpl, id(tt.f))); got != tt.want {
			t.Errorf("%s: checkov skips %s, want %s", id(tt.f), got, tt.want)
		}
	}
}

// A main that does not compile fails synth with a *validate.Error naming the construct, the
// entry and the compiler's first error, not CDK's "Failed to bundle asset" panic. (Bundling
// on: the real go build, as cdk synth runs it.)
func TestBundlingFailureNamesTheEntryAndTheCompilerError(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Broken"), nil)
	entry := filepath.Join("testdata", "broken")
	cdktest.ExpectProblemIn(t, `IdempotentConsumer "Broken"`, func() {
		gofn.New(stack, gofn.Props{Kind: "IdempotentConsumer", Main: "consumer", Options: function.Options{
			Entry: entry, ModuleDir: filepath.Join("..", "..", ".."), Timeout: 30 * time.Second, MemorySize: 256}})
	}, "Function.Entry: got "+entry+"; it does not build: ./main.go:7:6: declared and not used: n; fix the main package and synth again")
}

// Entries the check must let through: a main that reaches functions/consume through a package
// of its own (it imports neither library directly), a main built only with the bundling tag
// lambda.norpc, and one split by architecture, for the function's architecture.
func TestValidateAcceptsMainsAsBundlingBuildsThem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry string
		arch  awslambda.Architecture
	}{
		{"indirect", writeDir(t, map[string]string{"main.go": "package main\n\nimport \"example.com/app/run\"\n\nfunc main() { run.Main() }\n"}), nil},
		{"tagged lambda.norpc", writeDir(t, map[string]string{"main.go": "//go:build lambda.norpc\n\npackage main\n\nfunc main() {}\n"}), nil},
		{"amd64 only", writeDir(t, map[string]string{"main_amd64.go": "package main\n\nfunc main() {}\n"}), awslambda.Architecture_X86_64()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := gofn.Props{Main: "consumer", Options: function.Options{Timeout: 30 * time.Second, MemorySize: 256, Entry: tc.entry}}
			p.Architecture = tc.arch
			problems := validate.New("Test", "fn")
			p.Validate(problems)
			if err := problems.Err(); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
}
