package local

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// Functions read their configuration from Systems Manager Parameter Store and Secrets
// Manager. The stand-ins answer the calls that read one value, from what the user gives
// (Options.Parameters, Options.Secrets): SSM's GetParameter and GetParameters, Secrets
// Manager's GetSecretValue; a name without a value is answered as AWS answers a missing one,
// with a message naming the way to give it, and said once in Kit.Err.

// ssmValues is the Systems Manager parameters the kit answers, by name: each "/..." of
// Options.Parameters, and the parameter each SSM-typed CfnParameter given a value names by
// its Default.
func (k *Kit) ssmValues() map[string]string {
	vals := map[string]string{}
	for _, st := range k.stacks {
		for name, p := range st.d.Template.Parameters {
			v, given := k.opts.Parameters[name]
			if d, ok := p.Default.(string); ok && given && strings.HasPrefix(p.Type, "AWS::SSM::Parameter::Value<") {
				vals[d] = v
			}
		}
	}
	for name, v := range k.opts.Parameters {
		if strings.HasPrefix(name, "/") {
			vals[name] = v
		}
	}
	return vals
}

// ssmAPI answers Systems Manager's GetParameter and GetParameters (JSON 1.1, X-Amz-Target
// AmazonSSM.OPERATION).
func (k *Kit) ssmAPI(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM.")
	if op != "GetParameter" && op != "GetParameters" {
		notServed(w, r, "ssm")
		return
	}
	var in struct {
		Name  string
		Names []string
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", "the local kit could not read the request: "+err.Error())
		return
	}
	vals := k.ssmValues()
	param := func(name string) map[string]any {
		return map[string]any{"Name": name, "Type": "String", "Value": vals[name], "Version": 1, "DataType": "text",
			"ARN": fmt.Sprintf("arn:aws:ssm:%s:%s:parameter/%s", k.region, lambdart.AccountID, strings.TrimPrefix(name, "/")), "LastModifiedDate": float64(k.started.Unix())}
	}
	if op == "GetParameter" {
		if _, ok := vals[in.Name]; !ok {
			awsError(w, http.StatusBadRequest, "ParameterNotFound", k.missingParameter(in.Name, vals))
			return
		}
		jsonReply(w, map[string]any{"Parameter": param(in.Name)})
		return
	}
	out := map[string]any{"Parameters": []any{}, "InvalidParameters": []string{}}
	for _, name := range in.Names {
		if _, ok := vals[name]; ok {
			out["Parameters"] = append(out["Parameters"].([]any), param(name))
		} else {
			out["InvalidParameters"] = append(out["InvalidParameters"].([]string), name)
			k.missingParameter(name, vals)
		}
	}
	jsonReply(w, out)
}

// missingParameter says, once in Kit.Err and in the answer, that the kit has no value for
// the SSM parameter name, and how to give one.
func (k *Kit) missingParameter(name string, vals map[string]string) string {
	msg := fmt.Sprintf("the local kit has no value for Systems Manager parameter %s: give it one with pipelinectl local up --parameter %s=VALUE (Options.Parameters[%q]); it has %s",
		name, name, name, have(vals))
	k.sayOnce("ssm "+name, "local: a function asked for a value the kit does not have: "+msg)
	return msg
}

// secretsAPI answers Secrets Manager's GetSecretValue (JSON 1.1, X-Amz-Target
// secretsmanager.OPERATION), by the secret's name or ARN (the name with AWS's six-character
// suffix, or without).
func (k *Kit) secretsAPI(w http.ResponseWriter, r *http.Request) {
	if op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager."); op != "GetSecretValue" {
		notServed(w, r, "secretsmanager")
		return
	}
	var in struct{ SecretId string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		awsError(w, http.StatusBadRequest, "InvalidRequestException", "the local kit could not read the request: "+err.Error())
		return
	}
	name, value, ok := k.secret(in.SecretId)
	if !ok {
		msg := fmt.Sprintf("the local kit has no value for Secrets Manager secret %s: give it one with pipelinectl local up --secret %s=VALUE (Options.Secrets[%q]); it has %s",
			in.SecretId, in.SecretId, in.SecretId, have(k.opts.Secrets))
		k.sayOnce("secret "+in.SecretId, "local: a function asked for a value the kit does not have: "+msg)
		awsError(w, http.StatusBadRequest, "ResourceNotFoundException", msg)
		return
	}
	jsonReply(w, map[string]any{"Name": name, "SecretString": value, "VersionId": "local", "VersionStages": []string{"AWSCURRENT"},
		"ARN": fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-kit000", k.region, lambdart.AccountID, name), "CreatedDate": float64(k.started.Unix())})
}

// secret finds the value of a secret by its id: a name given, or an ARN whose name (with or
// without the six-character suffix AWS adds) is.
func (k *Kit) secret(id string) (name, value string, ok bool) {
	if v, ok := k.opts.Secrets[id]; ok {
		return secretName(id), v, true
	}
	n := secretName(id)
	for _, key := range slices.Sorted(maps.Keys(k.opts.Secrets)) {
		if secretName(key) == n {
			return n, k.opts.Secrets[key], true
		}
	}
	return "", "", false
}

// secretName is a secret's name from its id: the name, or an ARN's without the suffix.
func secretName(id string) string {
	_, rest, ok := strings.Cut(id, ":secret:")
	if !ok {
		return id
	}
	if i := strings.LastIndex(rest, "-"); i > 0 && len(rest)-i == 7 {
		return rest[:i]
	}
	return rest
}

// have lists the names of vals, for a message.
func have(vals map[string]string) string {
	if len(vals) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(vals)), ", ")
}

// sayOnce adds msg to Kit.Err the first time key is said.
func (k *Kit) sayOnce(key, msg string) {
	k.mu.Lock()
	if k.said == nil {
		k.said = map[string]bool{}
	}
	first := !k.said[key]
	k.said[key] = true
	k.mu.Unlock()
	if first {
		k.background(fmt.Errorf("%s", msg))
	}
}

func jsonReply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
