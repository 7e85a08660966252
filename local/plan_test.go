package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// writeAssembly writes a cloud assembly of one stack S with the template doc, and an asset
// directory asset.f holding bootstrap, a copy of the file at bootstrap ("" for none).
func writeAssembly(t *testing.T, doc, bootstrap string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"manifest.json":   `{"artifacts":{"S":{"type":"aws:cloudformation:stack","properties":{"templateFile":"S.template.json"}}}}`,
		"S.template.json": doc,
	}
	if bootstrap != "" {
		b, err := os.ReadFile(bootstrap)
		if err != nil {
			t.Fatal(err)
		}
		files["asset.f/bootstrap"] = string(b)
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A function of the user's own (not built by these constructs) whose code asset is a
// bootstrap executable: here this test binary, an executable for this machine.
const userFunction = `"F":{"Type":"AWS::Lambda::Function","Metadata":{"aws:asset:path":"asset.f","aws:asset:property":"Code"},
	  "Properties":{"Runtime":"provided.al2023","Handler":"bootstrap","Code":{"S3Bucket":"b","S3Key":"f.zip"},"Environment":{"Variables":%s}}},
	  "Q":{"Type":"AWS::SQS::Queue","Properties":{"RedrivePolicy":{"deadLetterTargetArn":{"Fn::GetAtt":["D","Arn"]},"maxReceiveCount":3}}},
	  "D":{"Type":"AWS::SQS::Queue","Properties":{}},
	  "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Q","Arn"]},"FunctionName":{"Ref":"F"}}}`

// Every variable the kit cannot resolve is reported at once, each naming the function, the
// variable, what it refers to (logical id and type, or the parameter) and the way out; the
// ways out work.
func TestCheckEnvReportsEveryUnresolvableVariable(t *testing.T) {
	vars := `{"ORDERS":{"Ref":"Token"},
	  "REFUNDS":{"Fn::Select":[1,{"Fn::Split":["/",{"Fn::Select":[5,{"Fn::Split":[":",{"Ref":"RefundsTableArn"}]}]}]}]},
	  "SECRET":{"Ref":"Secret"}, "STREAM":{"Fn::GetAtt":["T","StreamArn"]}, "IMPORTED":{"Fn::ImportValue":"Shared:Orders"},
	  "GIVEN":{"Ref":"TableName"}, "TABLE":{"Ref":"T"}, "ARN":{"Fn::Sub":"${T.Arn}/index/*"}, "STACK":{"Ref":"AWS::StackName"}}`
	doc := `{"Parameters":{"RefundsTableArn":{"Type":"String"},"TableName":{"Type":"String","Default":"orders-dev"},
	    "Secret":{"Type":"AWS::SSM::Parameter::Value<String>","Default":"/app/secret"}},
	  "Resources":{"Token":{"Type":"AWS::KMS::Key"},
	  "T":{"Type":"AWS::DynamoDB::GlobalTable","Properties":{"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}]}},` +
		strings.Replace(userFunction, "%s", vars, 1) + `}}`
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := writeAssembly(t, doc, self)
	check := func(opts Options) error {
		t.Helper()
		tmpl, err := standin.LoadTemplate(filepath.Join(dir, "S.template.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := tmpl.UseParameters(opts.Parameters); err != nil {
			t.Fatal(err)
		}
		ref := cfn.StackRef{ID: "S", DisplayName: "S", StackName: "S", Dir: dir}
		sp, err := plan(ref, tmpl, nil)
		if err != nil || len(sp.pipelines) != 1 || sp.code["F"].bootstrap != filepath.Join(dir, "asset.f", "bootstrap") {
			t.Fatalf("plan = %+v, %v; want F's pipeline, run from its asset's bootstrap", sp, err)
		}
		pl := newPlanner([]cfn.StackRef{ref}, []*standin.Template{tmpl})
		pl.plan(0)
		sp.planned = pl.deps[0]
		if err := checkNames([]*stackPlan{sp}, opts); err != nil {
			return err
		}
		notRun, err := checkEnv([]*stackPlan{sp}, opts.Env)
		if len(notRun) > 0 {
			t.Errorf("checkEnv listed %q as not run: with nothing left to run it refuses the run", notRun)
		}
		return err
	}
	err = check(Options{})
	want := `local: 5 values the kit cannot resolve:
  - stack S, function F: IMPORTED refers to Fn::ImportValue "Shared:Orders", an export of none of the stacks the kit runs (run the stack that exports it too): set the variable for the local run with Options.Env["F.IMPORTED"] or pipelinectl local up --env F.IMPORTED=VALUE
  - stack S, function F: ORDERS refers to Token (AWS::KMS::Key), which the local kit does not create: set the variable for the local run with Options.Env["F.ORDERS"] or pipelinectl local up --env F.ORDERS=VALUE
  - stack S, function F: REFUNDS refers to parameter RefundsTableArn (String), which has no Default: give the parameter a value with Options.Parameters["RefundsTableArn"] or pipelinectl local up --parameter RefundsTableArn=VALUE, or set the variable with Options.Env["F.REFUNDS"] or pipelinectl local up --env F.REFUNDS=VALUE
  - stack S, function F: SECRET refers to parameter Secret (AWS::SSM::Parameter::Value<String>), whose value is read from Systems Manager parameter "/app/secret" at deploy time: give the parameter a value with Options.Parameters["Secret"] or pipelinectl local up --parameter Secret=VALUE, or set the variable with Options.Env["F.SECRET"] or pipelinectl local up --env F.SECRET=VALUE
  - stack S, function F: STREAM refers to T.StreamArn (AWS::DynamoDB::GlobalTable), an attribute the local kit has no value for: set the variable for the local run with Options.Env["F.STREAM"] or pipelinectl local up --env F.STREAM=VALUE`
	if err == nil || err.Error() != want {
		t.Errorf("checkEnv =\n%v\nwant\n%s", err, want)
	}

	// The ways out: a value for each parameter, the variables set.
	opts := Options{Parameters: map[string]string{"RefundsTableArn": "arn:aws:dynamodb:eu-west-1:111122223333:table/refunds", "Secret": "s3cr3t"},
		Env: map[string]string{"F.ORDERS": "arn:aws:kms:eu-west-1:111122223333:key/orders", "F.STREAM": "none", "F.IMPORTED": "orders-shared"}}
	if err := check(opts); err != nil {
		t.Fatalf("with the parameters and variables given: %v", err)
	}
	tmpl, _ := standin.LoadTemplate(filepath.Join(dir, "S.template.json"))
	if err := tmpl.UseParameters(opts.Parameters); err != nil {
		t.Fatal(err)
	}
	d := standin.Planned(tmpl, "S")
	d.StackName, d.Overrides = "Dev-S", opts.Env
	env, err := d.Env("F")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"REFUNDS": "refunds", "GIVEN": "orders-dev", "SECRET": "s3cr3t", "TABLE": "T-S", "ORDERS": opts.Env["F.ORDERS"],
		"ARN": "arn:aws:dynamodb:us-east-1:123456789012:table/T-S/index/*", "STACK": "Dev-S"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}

	// A variable the template does not set: the function's own value before everyone's.
	d.Overrides = map[string]string{"EXTRA": "everyone", "F.EXTRA": "mine", "OTHER": "everyone"}
	if env, _ := d.Env("F"); env["EXTRA"] != "mine" || env["OTHER"] != "everyone" {
		t.Errorf("EXTRA = %q, OTHER = %q; want mine, everyone", env["EXTRA"], env["OTHER"])
	}

	for _, bad := range []struct {
		opts Options
		want string
	}{
		{Options{Env: map[string]string{"G.ORDERS": "x"}}, `local: Options.Env["G.ORDERS"]: no function G in the stacks; name one by its logical id (F)`},
		{Options{Parameters: map[string]string{"Refunds": "x"}}, `local: Options.Parameters["Refunds"]: no stack has a parameter Refunds; they have RefundsTableArn, Secret, TableName`},
	} {
		if err := check(bad.opts); err == nil || err.Error() != bad.want {
			t.Errorf("err = %v, want %q", err, bad.want)
		}
	}
}

// elfFor writes a minimal ELF header for machine m: enough for debug/elf to read it.
func elfFor(t *testing.T, m uint16) string {
	t.Helper()
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1                // 64-bit, little endian, version 1
	binary.LittleEndian.PutUint16(h[16:], 2)  // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], m)  // e_machine
	binary.LittleEndian.PutUint32(h[20:], 1)  // e_version
	binary.LittleEndian.PutUint16(h[52:], 64) // e_ehsize
	path := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.WriteFile(path, h, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// What the kit cannot run never stops it and is listed with the reason: a mapping onto a
// function the stack does not create, a bootstrap for another architecture, a function of
// another runtime. Alone in an assembly, they leave nothing to run, and the error says why.
func TestStartListsWhatItCannotRun(t *testing.T) {
	other, machine, name := uint16(183), "arm64", "x86_64" // EM_AARCH64 on an amd64 machine
	if runtime.GOARCH == "arm64" {
		other, machine, name = 62, "x86_64", "arm64"
	}
	fn := strings.Replace(userFunction, "%s", `{}`, 1)
	for _, tc := range []struct {
		name, doc, bootstrap, want string
	}{
		{"existing function", `{"Resources":{` + strings.Replace(fn, `{"Ref":"F"}`, `"arn:aws:lambda:eu-west-1:111122223333:function:orders-existing:live"`, 1) + `}}`, "",
			"not run locally: function orders-existing:live (a function the stack does not create), mapped to queue Q by M; the queue is created"},
		{"existing function by name", `{"Resources":{` + strings.Replace(fn, `{"Ref":"F"}`, // as Function_FromFunctionName writes it
			`{"Fn::Select":[6,{"Fn::Split":[":",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":lambda:",{"Ref":"AWS::Region"},":",{"Ref":"AWS::AccountId"},":function:orders-legacy"]]}]}]}`, 1) + `}}`, "",
			"not run locally: function orders-legacy (a function the stack does not create), mapped to queue Q by M; the queue is created"},
		{"another architecture", `{"Resources":{` + fn + `}}`, elfFor(t, other),
			"not run locally: function F, mapped to queue Q: its bootstrap is built for " + machine + " and this machine is " + name + " (linux/" + runtime.GOARCH +
				"): give the function Architecture " + name + " (for a GoFunction, awslambda.Architecture_" + strings.ToUpper(name) + "()) to run it here; the queue is created"},
		{"another runtime", `{"Resources":{` + strings.Replace(fn, "provided.al2023", "nodejs22.x", 1) + `}}`, "",
			"not run locally: function F, mapped to queue Q: its runtime is nodejs22.x; the local kit runs Go source the constructs recorded and executables " +
				"(runtime provided.al2023 or provided.al2: Go, Rust; go1.x); the queue is created"},
		{"no bootstrap", `{"Resources":{` + fn + `}}`, "",
			"not run locally: function F, mapped to queue Q: its code asset has no file named bootstrap, which Lambda's provided runtimes run; the queue is created"},
		{"Go source and no bootstrap", `{"Resources":{` + fn + `}}`, "main.go",
			"not run locally: function F, mapped to queue Q: its code asset holds Go source (main.go) and no bootstrap, which Lambda's provided runtimes run, so Lambda would not run it either: " +
				"build it before cdk synth in the directory Code.fromAsset names, with `GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap .` " +
				"(GOARCH=arm64 for an arm64 function), or make it a GoFunction, whose bundling builds it; the queue is created"},
	} {
		if runtime.GOOS != "linux" && tc.name == "another architecture" {
			continue // the message is about the OS there
		}
		asm := ""
		if tc.bootstrap == "main.go" { // the asset holds the function's source, as the app's directory does
			asm = writeAssembly(t, tc.doc, "")
			if err := os.MkdirAll(filepath.Join(asm, "asset.f"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(asm, "asset.f", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			asm = writeAssembly(t, tc.doc, tc.bootstrap)
		}
		kit, err := Start(context.Background(), Options{Assembly: asm})
		if err == nil {
			kit.Close()
		}
		want := "local: no pipeline to run: none of the stacks S has an SQS event source mapping onto a function the kit can run:\n  - S: " + tc.want
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: err =\n%v\nwant\n%s", tc.name, err, want)
		}
	}
}

// Fn::ImportValue finds another stack's export by its name as CloudFormation will compute it
// (CDK's names hold the stack's name), and a parameter reaches a queue's attributes and a
// mapping's numbers, or is reported there.
func TestImportsAndParametersBeyondTheEnvironment(t *testing.T) {
	load := templateLoader(t)
	shared := load("Shared", `{"Resources":{"T":{"Type":"AWS::DynamoDB::Table","Properties":{}}},
	  "Outputs":{"Orders":{"Value":{"Ref":"T"},"Export":{"Name":{"Fn::Join":["",[{"Ref":"AWS::StackName"},":Orders"]]}}}}}`)
	app := load("App", `{"Parameters":{"Wait":{"Type":"Number"},"Batch":{"Type":"Number","Default":"25"}},"Resources":{
	  "Q":{"Type":"AWS::SQS::Queue","Properties":{"DelaySeconds":{"Ref":"Wait"}}},
	  "S":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["T","StreamArn"]},"FunctionName":"x","StartingPosition":"LATEST"}},
	  "T":{"Type":"AWS::DynamoDB::Table","Properties":{}},
	  "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Q","Arn"]},"FunctionName":"fn","BatchSize":{"Ref":"Batch"}}}}}`)
	if err := app.UseParameters(nil); err != nil || app.Mappings[0].BatchSize != 25 {
		t.Errorf("BatchSize from the parameter's default = %d, %v; want 25", app.Mappings[0].BatchSize, err)
	}
	if notRun := strings.Join(app.NotRun(), "\n"); !strings.Contains(notRun, "not run locally: mapping S, whose source is T (AWS::DynamoDB::Table), not an SQS queue") {
		t.Errorf("NotRun = %s, want the stream mapping", notRun)
	}
	deps := []*standin.Deployment{standin.Planned(shared, "Dev-Shared"), standin.Planned(app, "Dev-App")}
	deps[0].StackName, deps[1].StackName = "Dev-Shared", "Dev-App"
	if v, err := importValue(deps, "Dev-Shared:Orders"); err != nil || v != "T-Dev-Shared" {
		t.Errorf("Fn::ImportValue Dev-Shared:Orders = %v, %v; want the shared table's local name", v, err)
	}
	if _, err := deps[1].QueueAttributes(app.Queues["Q"]); err == nil || err.Error() != `queue Q: DelaySeconds refers to parameter Wait (Number), which has no Default: `+
		`give the parameter a value with Options.Parameters["Wait"] or pipelinectl local up --parameter Wait=VALUE` {
		t.Errorf("a queue attribute from a parameter without a value: %v", err)
	}
	if err := app.UseParameters(map[string]string{"Batch": "lots"}); err == nil || err.Error() != `mapping M: BatchSize refers to parameter Batch, which has no number `+
		`for the local run ("lots"): give it one with Options.Parameters["Batch"] or pipelinectl local up --parameter Batch=N` {
		t.Errorf("a batch size parameter that is not a number: %v", err)
	}
}

// A mapping onto an alias (or a version) of a function of the stack runs that function.
func TestMappingOntoAnAlias(t *testing.T) {
	doc := `{"Resources":{` + strings.Replace(strings.Replace(userFunction, "%s", `{}`, 1), `"FunctionName":{"Ref":"F"}`, `"FunctionName":{"Ref":"Live"}`, 1) + `,
	  "Live":{"Type":"AWS::Lambda::Alias","Properties":{"FunctionName":{"Ref":"F"},"FunctionVersion":"1","Name":"live"}}}}`
	path := filepath.Join(t.TempDir(), "S.template.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := standin.LoadTemplate(path)
	if err != nil || tmpl.Mappings[0].Function != "F" {
		t.Fatalf("mapping onto alias Live: %+v, %v; want function F", tmpl.Mappings, err)
	}
}

// A queue without a redrive policy (a user's own function may read one) runs, and says what
// that means instead of refusing the app.
func TestQueueWithoutRedrivePolicy(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"Resources":{` + strings.Replace(strings.Replace(userFunction, "%s", `{}`, 1),
		`"Properties":{"RedrivePolicy":{"deadLetterTargetArn":{"Fn::GetAtt":["D","Arn"]},"maxReceiveCount":3}}`, `"Properties":{}`, 1) + `}}`
	dir := writeAssembly(t, doc, self)
	tmpl, err := standin.LoadTemplate(filepath.Join(dir, "S.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := plan(cfn.StackRef{ID: "S", DisplayName: "S", StackName: "S", Dir: dir}, tmpl, nil)
	if err != nil || len(sp.pipelines) != 1 || sp.pipelines[0].DLQ != "" {
		t.Fatalf("plan = %+v, %v; want the pipeline, without a DLQ", sp, err)
	}
	want := "queue Q has no redrive policy: a record that keeps failing is received again until the queue's retention period ends, as in AWS, and no dead-letter queue shows it"
	if !slices.Contains(tmpl.NotApplied, want) {
		t.Errorf("NotApplied = %q, want %q", tmpl.NotApplied, want)
	}
}

// The kit's alarm states and clock scale are its pieces' (internal/standin), which evaluate
// the alarms: a user comparing AlarmState.State with StateAlarm compares what they produce.
func TestStatesAreTheEvaluators(t *testing.T) {
	if StateOK != alarm.StateOK || StateAlarm != alarm.StateAlarm || StateInsufficient != alarm.StateInsufficient || AlarmTimeScale != alarm.TimeScale {
		t.Error("local's alarm states or AlarmTimeScale differ from internal/standin/alarm's")
	}
}

// An import asked while the stacks are planned, before every stack is (a nested stack's
// parameter given an Fn::ImportValue, planned right after its parent), finds no export in a
// stack not planned yet: unresolved, named, never a crash.
func TestImportValueSkipsStacksNotPlannedYet(t *testing.T) {
	_, err := importValue([]*standin.Deployment{nil, nil}, "Shared:ExportsOutputRefRegistry")
	want := `Fn::ImportValue "Shared:ExportsOutputRefRegistry", an export of none of the stacks the kit runs (run the stack that exports it too)`
	if err == nil || err.Error() != want {
		t.Errorf("importValue before any stack is planned: %v, want %q", err, want)
	}
}

// The names an app gives are kept, but where two stacks of the run give the same one (two
// stages of one app): both get their stack's suffix, and each stack's Ignored says so.
func TestGivenNamesKeptUnlessTwoStacksClash(t *testing.T) {
	load := templateLoader(t)
	stage := `{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"orders.fifo","FifoQueue":true}},
	  "T":{"Type":"AWS::DynamoDB::Table","Properties":{"TableName":"%s","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}]}}}}`
	dev, prod := load("Dev", fmt.Sprintf(stage, "seen-dev")), load("Prod", fmt.Sprintf(stage, "seen-prod"))
	refs := []cfn.StackRef{{ID: "DevOrders", DisplayName: "Dev/Orders"}, {ID: "ProdOrders", DisplayName: "Prod/Orders"}}
	clashes(refs, []*standin.Template{dev, prod})
	d := standin.Planned(dev, stackSuffix(refs[0]))
	if d.QueueName["Q"] != "orders-Dev-Orders.fifo" || d.TableName["T"] != "seen-dev" {
		t.Errorf("Dev's queue %q and table %q: want orders-Dev-Orders.fifo (clashes with Prod's) and seen-dev (its own)", d.QueueName["Q"], d.TableName["T"])
	}
	want := "Q's name orders.fifo is given by stack Prod/Orders too: here it is orders-Dev-Orders.fifo (a function that has the name as a plain string misses it)"
	if !slices.Contains(dev.NotApplied, want) || len(prod.NotApplied) != 1 {
		t.Errorf("Dev's NotApplied %q, Prod's %q: want %q and Prod's own line", dev.NotApplied, prod.NotApplied, want)
	}
}

// templateLoader returns a function that writes a stack's template into a directory of the
// test's and loads it, as the kit reads a cloud assembly's.
func templateLoader(t *testing.T) func(name, doc string) *standin.Template {
	dir := t.TempDir()
	return func(name, doc string) *standin.Template {
		t.Helper()
		path := filepath.Join(dir, name+".template.json")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		tmpl, err := standin.LoadTemplate(path)
		if err != nil {
			t.Fatal(err)
		}
		return tmpl
	}
}
