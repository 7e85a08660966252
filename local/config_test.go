package local

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The stand-ins answer SSM's GetParameter(s) and Secrets Manager's GetSecretValue from the
// values given, as AWS answers them; a name without a value is AWS's error with the way to
// give it, said once in Kit.Err; another operation of either service is not served.
func TestParametersAndSecrets(t *testing.T) {
	k := &Kit{region: "us-east-1", started: time.Unix(1700000000, 0), opts: Options{
		Parameters: map[string]string{"/app/greeting": "hello", "Batch": "10"},
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
			`{"Message":"the local kit has no value for Systems Manager parameter /app/other: give it one with pipelinectl local up --parameter /app/other=VALUE (Options.Parameters[\"/app/other\"]); it has /app/greeting","__type":"ParameterNotFound",` +
				`"message":"the local kit has no value for Systems Manager parameter /app/other: give it one with pipelinectl local up --parameter /app/other=VALUE (Options.Parameters[\"/app/other\"]); it has /app/greeting"}`},
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
		strings.Count(errs.Error(), "Secrets Manager secret app/db") != 1 || !strings.Contains(errs.Error(), "parameter /app/missing") {
		t.Errorf("Kit.Err = %v", errs)
	}
}
