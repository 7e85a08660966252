package local

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// The stand-ins answer SSM's GetParameter(s) and GetParametersByPath (one level, or every one
// with Recursive) and Secrets Manager's GetSecretValue from the values given, as AWS answers
// them; a name without a value is AWS's error with the way to
// give it, said once in Kit.Err; another operation of either service is not served.
func TestParametersAndSecrets(t *testing.T) {
	k := &Kit{region: "us-east-1", started: time.Unix(1700000000, 0), opts: Options{
		Parameters: map[string]string{"/app/greeting": "hello", "/app/db/host": "localhost", "Batch": "10"},
		Secrets:    map[string]string{"app/api-key": "s3cret"},
	}}
	call := func(h http.HandlerFunc, target, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", target)
		w := httptest.NewRecorder()
		h(w, req)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	for _, tc := range []struct {
		h            http.HandlerFunc
		target, body string
		code         int
		want         string
	}{
		{k.ssmAPI, "AmazonSSM.GetParameter", `{"Name":"/app/greeting","WithDecryption":true}`, 200,
			`{"Parameter":{"ARN":"arn:aws:ssm:us-east-1:123456789012:parameter/app/greeting","DataType":"text","LastModifiedDate":1700000000,"Name":"/app/greeting","Type":"String","Value":"hello","Version":1}}`},
		{k.ssmAPI, "AmazonSSM.GetParameters", `{"Names":["/app/greeting","/app/missing"]}`, 200,
			`{"InvalidParameters":["/app/missing"],"Parameters":[{"ARN":"arn:aws:ssm:us-east-1:123456789012:parameter/app/greeting","DataType":"text","LastModifiedDate":1700000000,"Name":"/app/greeting","Type":"String","Value":"hello","Version":1}]}`},
		{k.ssmAPI, "AmazonSSM.GetParameter", `{"Name":"/app/other"}`, 400,
			`{"Message":"the local kit has no value for Systems Manager parameter /app/other: give it one with pipelinectl local up --parameter /app/other=VALUE (Options.Parameters[\"/app/other\"]); it has /app/db/host, /app/greeting","__type":"ParameterNotFound",` +
				`"message":"the local kit has no value for Systems Manager parameter /app/other: give it one with pipelinectl local up --parameter /app/other=VALUE (Options.Parameters[\"/app/other\"]); it has /app/db/host, /app/greeting"}`},
		{k.ssmAPI, "AmazonSSM.GetParametersByPath", `{"Path":"/app"}`, 200,
			`{"Parameters":[{"ARN":"arn:aws:ssm:us-east-1:123456789012:parameter/app/greeting","DataType":"text","LastModifiedDate":1700000000,"Name":"/app/greeting","Type":"String","Value":"hello","Version":1}]}`},
		{k.ssmAPI, "AmazonSSM.GetParametersByPath", `{"Path":"/app/","Recursive":true}`, 200, `"Name":"/app/db/host"`},
		{k.ssmAPI, "AmazonSSM.GetParametersByPath", `{"Path":"/app/"}`, 200, `{"Parameters":[{"ARN":"arn:aws:ssm:us-east-1:123456789012:parameter/app/greeting"`},
		{k.ssmAPI, "AmazonSSM.GetParametersByPath", `{"Path":"/other"}`, 200, `{"Parameters":[]}`},
		{k.ssmAPI, "AmazonSSM.PutParameter", `{"Name":"/app/x"}`, 501, `the local kit does not serve ssm (PutParameter)`},
		{k.secretsAPI, "secretsmanager.GetSecretValue", `{"SecretId":"app/api-key"}`, 200,
			`{"ARN":"arn:aws:secretsmanager:us-east-1:123456789012:secret:app/api-key-kit000","CreatedDate":1700000000,"Name":"app/api-key","SecretString":"s3cret","VersionId":"local","VersionStages":["AWSCURRENT"]}`},
		{k.secretsAPI, "secretsmanager.GetSecretValue", `{"SecretId":"arn:aws:secretsmanager:eu-west-1:111122223333:secret:app/api-key-AbCdEf"}`, 200, `"SecretString":"s3cret"`},
		{k.secretsAPI, "secretsmanager.GetSecretValue", `{"SecretId":"app/db"}`, 400,
			`"__type":"ResourceNotFoundException","message":"the local kit has no value for Secrets Manager secret app/db: give it one with pipelinectl local up --secret app/db=VALUE (Options.Secrets[\"app/db\"]); it has app/api-key"`},
		{k.secretsAPI, "secretsmanager.ListSecrets", `{}`, 501, `the local kit does not serve secretsmanager (ListSecrets)`},
	} {
		code, got := call(tc.h, tc.target, tc.body)
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %d %s\nwant %d %s", tc.target, tc.body, code, got, tc.code, tc.want)
		}
	}
	code, _ := call(k.secretsAPI, "secretsmanager.GetSecretValue", `{"SecretId":"app/db"}`) // asked again: said once
	errs := k.Err()
	if code != 400 || errs == nil || strings.Count(errs.Error(), "local: a function asked for a value the kit does not have:") != 3 ||
		!strings.Contains(errs.Error(), "local: a function asked for the Systems Manager parameters under /other, and the kit has none there: give them with pipelinectl local up --parameter /other/NAME=VALUE") ||
		strings.Count(errs.Error(), "Secrets Manager secret app/db") != 1 || !strings.Contains(errs.Error(), "parameter /app/missing") {
		t.Errorf("Kit.Err = %v", errs)
	}
}

// A secret a stack creates is the kit's own, under the local ARN its Ref gives the
// functions: its value is the one given by logical id, else its SecretString, else one
// generated as Secrets Manager does from its GenerateSecretString (into its template's JSON
// under GenerateStringKey).
func TestStacksOwnSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "S.template.json")
	if err := os.WriteFile(path, []byte(`{"Resources":{
	  "Generated":{"Type":"AWS::SecretsManager::Secret","Properties":{"GenerateSecretString":
	    {"PasswordLength":20,"ExcludePunctuation":true,"ExcludeCharacters":"0123456789","SecretStringTemplate":"{\"username\":\"app\"}","GenerateStringKey":"password"}}},
	  "Literal":{"Type":"AWS::SecretsManager::Secret","Properties":{"Name":"app/literal","SecretString":{"Fn::Join":["-",["a","b"]]}}},
	  "Given":{"Type":"AWS::SecretsManager::Secret","Properties":{"GenerateSecretString":{}}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := standin.LoadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	d := standin.Planned(tmpl, "S")
	var progress strings.Builder
	k := &Kit{region: "us-east-1", opts: Options{Progress: &progress, Secrets: map[string]string{"Given": "mine"}}}
	if err := k.ownSecrets(&stackRun{ref: cfn.StackRef{DisplayName: "S"}, d: d}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", progress.String())
	value := func(id string) string {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(fmt.Sprintf(`{"SecretId":%q}`, id)))
		req.Header.Set("X-Amz-Target", "secretsmanager.GetSecretValue")
		w := httptest.NewRecorder()
		k.secretsAPI(w, req)
		var out struct{ SecretString, ARN string }
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 {
			t.Fatalf("GetSecretValue %s: %d %s", id, w.Code, w.Body.String())
		}
		return out.SecretString
	}
	var gen struct{ Username, Password string }
	if err := json.Unmarshal([]byte(value(d.SecretARN["Generated"])), &gen); err != nil {
		t.Fatalf("the generated secret is not its template's JSON: %v", err)
	}
	if gen.Username != "app" || len(gen.Password) != 20 || strings.ContainsAny(gen.Password, "0123456789!#$%&*+-.:;<=>?@^_`|~") ||
		!strings.ContainsAny(gen.Password, "abcdefghijklmnopqrstuvwxyz") || !strings.ContainsAny(gen.Password, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		t.Errorf("generated %+v: want username app and 20 letters, upper and lower case, no digit or punctuation", gen)
	}
	if got := value(d.SecretARN["Literal"]); got != "a-b" {
		t.Errorf("the SecretString secret = %q, want a-b", got)
	}
	if got := value("app/literal"); got != "a-b" {
		t.Errorf("the SecretString secret by its name = %q, want a-b", got)
	}
	if got := value(d.SecretARN["Given"]); got != "mine" {
		t.Errorf("the given secret = %q, want mine", got)
	}
	if !strings.HasPrefix(d.SecretARN["Generated"], "arn:aws:secretsmanager:us-east-1:") || !strings.Contains(d.SecretARN["Generated"], ":secret:Generated-S-") {
		t.Errorf("ARN %s: want a local one, with the logical id and the stack's suffix in its name", d.SecretARN["Generated"])
	}
	if _, err := generateSecret(map[string]any{"ExcludeLowercase": true, "ExcludeUppercase": true, "ExcludeNumbers": true, "ExcludePunctuation": true}); err == nil ||
		err.Error() != "every kind of character is excluded" {
		t.Errorf("generateSecret with every kind excluded: %v, want the error", err)
	}
}
