package local

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// Functions read their configuration from Systems Manager Parameter Store and Secrets
// Manager. The stand-ins answer the calls that read values, from what the user gives
// (Options.Parameters, Options.Secrets) and the secrets the stacks create: SSM's
// GetParameter, GetParameters and GetParametersByPath, Secrets Manager's GetSecretValue; a name without a value is answered as AWS answers a missing one,
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

// ssmAPI answers Systems Manager's GetParameter, GetParameters and GetParametersByPath
// (JSON 1.1, X-Amz-Target AmazonSSM.OPERATION).
func (k *Kit) ssmAPI(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM.")
	if op != "GetParameter" && op != "GetParameters" && op != "GetParametersByPath" {
		notServed(w, r, "ssm")
		return
	}
	var in struct {
		Name      string
		Names     []string
		Path      string
		Recursive bool
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
	if op == "GetParametersByPath" {
		jsonReply(w, map[string]any{"Parameters": k.byPath(in.Path, in.Recursive, vals, param)})
		return
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

// byPath is GetParametersByPath's answer, in one page: the parameters under path (one level
// below it, or every level when recursive), by name. None under it is an empty list, as SSM
// answers, and said once in Kit.Err with the way to give one.
func (k *Kit) byPath(path string, recursive bool, vals map[string]string, param func(string) map[string]any) []any {
	prefix := strings.TrimSuffix(path, "/") + "/"
	found := []any{}
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		rest, ok := strings.CutPrefix(name, prefix)
		if ok && rest != "" && (recursive || !strings.Contains(rest, "/")) {
			found = append(found, param(name))
		}
	}
	if len(found) == 0 {
		k.sayOnce("ssm path "+path, fmt.Sprintf("local: a function asked for the Systems Manager parameters under %s, and the kit has none there: "+
			"give them with pipelinectl local up --parameter %sNAME=VALUE (Options.Parameters); it has %s", path, prefix, have(vals)))
	}
	return found
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

// secret finds the value of a secret by its id: one of the stacks' own by its local ARN or
// name, a name given, or an ARN whose name (with or without the six-character suffix AWS
// adds) is.
func (k *Kit) secret(id string) (name, value string, ok bool) {
	for _, arn := range slices.Sorted(maps.Keys(k.secrets)) { // the first ARN by name when two stacks give one name
		s := k.secrets[arn]
		if id == arn || id == s.name || id != "" && id == s.given {
			return s.name, s.value, true
		}
	}
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

// ownSecret is a secret a stack creates, as the kit answers it: by its local ARN, its local
// name, or the name its template gives (which a function may hold as a plain string).
type ownSecret struct{ name, given, value string }

// ownSecrets gives each secret of st's template its value (Options.Secrets by logical id or
// name, else its SecretString, else generated from its GenerateSecretString) under the local
// ARN the deployment gave it, and says where the value came from.
func (k *Kit) ownSecrets(st *stackRun) error {
	d := st.d
	for _, id := range slices.Sorted(maps.Keys(d.Template.Secrets)) {
		p, arn := d.Template.Secrets[id].Props, d.SecretARN[id]
		name := secretName(arn)
		value, how, given := "", "", false
		for _, key := range []string{id, stringProp(p, "Name"), name} {
			if v, ok := k.opts.Secrets[key]; ok && key != "" {
				value, how, given = v, "given with --secret "+key, true
				break
			}
		}
		switch {
		case given:
		case p["SecretString"] != nil:
			v, err := d.Resolve(p["SecretString"])
			if err != nil {
				return fmt.Errorf("local: stack %s: secret %s SecretString: %w", st.ref.DisplayName, id, err)
			}
			value, how = fmt.Sprint(v), "its SecretString"
		default:
			g, _ := p["GenerateSecretString"].(map[string]any)
			how = "generated from its GenerateSecretString, as Secrets Manager does"
			var err error
			if value, err = generateSecret(g); err != nil {
				return fmt.Errorf("local: stack %s: secret %s GenerateSecretString: %w", st.ref.DisplayName, id, err)
			}
		}
		if k.secrets == nil {
			k.secrets = map[string]ownSecret{}
		}
		k.secrets[arn] = ownSecret{name: name, given: stringProp(p, "Name"), value: value}
		fmt.Fprintf(k.opts.Progress, "local: stack %s: secret %s is %s, its value %s (--secret %s=VALUE gives another)\n",
			st.ref.DisplayName, id, arn, how, id)
	}
	return nil
}

func stringProp(p map[string]any, key string) string { s, _ := p[key].(string); return s }

// generateSecret is a value as Secrets Manager's GenerateSecretString makes it: a random
// password of PasswordLength characters (32) of the kinds not excluded (lower and upper case
// letters, digits, punctuation; a space with IncludeSpace), one of each kind at least unless
// RequireEachIncludedType is false; put into SecretStringTemplate's JSON object under
// GenerateStringKey when both are given.
func generateSecret(g map[string]any) (string, error) {
	length := 32
	switch n := g["PasswordLength"].(type) {
	case float64:
		length = int(n)
	case string:
		fmt.Sscan(n, &length)
	}
	if length < 1 || length > 4096 {
		return "", fmt.Errorf("PasswordLength %v: Secrets Manager takes 1 to 4096", g["PasswordLength"])
	}
	kinds := secretKinds(g)
	if len(kinds) == 0 {
		return "", errors.New("every kind of character is excluded")
	}
	all := strings.Join(kinds, "")
	pick := func(from string) byte { return from[randN(len(from))] }
	out := make([]byte, length)
	for i := range out {
		out[i] = pick(all)
	}
	if secretFlag(g, "RequireEachIncludedType", true) && length >= len(kinds) {
		for i, kind := range kinds { // one of each kind, at places of their own
			out[i] = pick(kind)
		}
		for i := len(out) - 1; i > 0; i-- {
			j := randN(i + 1)
			out[i], out[j] = out[j], out[i]
		}
	}
	password := string(out)
	tmpl, key := stringProp(g, "SecretStringTemplate"), stringProp(g, "GenerateStringKey")
	if tmpl == "" || key == "" {
		return password, nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(tmpl), &obj); err != nil {
		return "", fmt.Errorf("SecretStringTemplate is not a JSON object: %w", err)
	}
	obj[key] = password
	b, err := json.Marshal(obj)
	return string(b), err
}

// secretKinds are the kinds of characters a generated secret takes (lower and upper case
// letters, digits, punctuation, a space), each without the ExcludeCharacters.
func secretKinds(g map[string]any) []string {
	exclude := stringProp(g, "ExcludeCharacters")
	var kinds []string
	for _, c := range []struct {
		key, chars string
	}{
		{"ExcludeLowercase", "abcdefghijklmnopqrstuvwxyz"}, {"ExcludeUppercase", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
		{"ExcludeNumbers", "0123456789"}, {"ExcludePunctuation", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"},
	} {
		if secretFlag(g, c.key, false) {
			continue
		}
		kept := strings.Map(func(r rune) rune {
			if strings.ContainsRune(exclude, r) {
				return -1
			}
			return r
		}, c.chars)
		if kept != "" {
			kinds = append(kinds, kept)
		}
	}
	if secretFlag(g, "IncludeSpace", false) {
		kinds = append(kinds, " ")
	}
	return kinds
}

// secretFlag is a GenerateSecretString boolean (true or "true"), def when not given.
func secretFlag(g map[string]any, key string, def bool) bool {
	switch v := g[key].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return def
}

// randN is a random number from 0 to n-1, from crypto/rand (a secret's value).
func randN(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux or macOS
	}
	return int(v.Int64())
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
