package main

import (
	"regexp"
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// A statement is one IAM policy statement flattened to principal -> actions -> resources,
// with the resource that carries it.
type statement struct {
	// Holder is the logical id of the resource whose policy holds the statement.
	Holder string
	// Kind is "identity" (a role's permissions), "trust" (who may assume the role),
	// "managed" (a managed policy attached to the role) or "resource" (a queue, topic, key
	// or function policy).
	Kind      string
	Principal string
	Effect    string
	Actions   []string
	Resources []string
	// NotAction and NotResource: Actions and Resources are exclusions.
	NotAction, NotResource bool
	Condition              string
	// Wildcards name what is open-ended in an Allow, in cdk-nag's applies_to form
	// (Action::s3:*, Resource::*, Principal::*); Deny statements have none.
	Wildcards []string
	// Suppressions are the cdk-nag rules suppressed on Holder whose applies_to covers
	// every wildcard ("" when not all are covered).
	Suppressions []string
}

// statements flattens every IAM statement of s, in logical id order.
func statements(s *stack) []statement {
	var out []statement
	for _, id := range s.IDs {
		r := s.Resources[id]
		p := r.Properties
		switch r.Type {
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy":
			var holders []string
			for _, k := range []string{"Roles", "Users", "Groups"} {
				kind := strings.ToLower(strings.TrimSuffix(k, "s"))
				for _, v := range list(p[k]) {
					holders = append(holders, kind+" "+refOrShow(v))
				}
			}
			sort.Strings(holders)
			out = append(out, document(id, "identity", strings.Join(holders, ", "), nil, p["PolicyDocument"])...)
		case "AWS::IAM::Role":
			self := []string{"role " + id}
			out = append(out, document(id, "trust", "", self, p["AssumeRolePolicyDocument"])...)
			for _, pol := range list(p["Policies"]) {
				out = append(out, document(id, "identity", "role "+id, nil, cfn.Dig(pol, "PolicyDocument"))...)
			}
			for _, arn := range showAll(p["ManagedPolicyArns"]) {
				out = append(out, statement{Holder: id, Kind: "managed", Principal: "role " + id, Effect: "Allow", Resources: []string{arn}})
			}
		case "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy", "AWS::S3::BucketPolicy":
			out = append(out, document(id, "resource", "", nil, p["PolicyDocument"])...)
		case "AWS::KMS::Key":
			// In a key policy, Resource * is the key itself, not every resource.
			for _, st := range document(id, "resource", "", nil, p["KeyPolicy"]) {
				for i, res := range st.Resources {
					if res == "*" {
						st.Resources[i] = thisKey
					}
				}
				if st.Effect == "Allow" {
					st.Wildcards = wildcards(st)
				}
				out = append(out, st)
			}
		case "AWS::Lambda::Permission":
			st := map[string]any{
				"Effect": "Allow", "Action": p["Action"], "Resource": p["FunctionName"],
				"Principal": p["Principal"],
			}
			cond := map[string]any{}
			if v, ok := p["SourceArn"]; ok {
				cond["ArnLike"] = map[string]any{"aws:SourceArn": v}
			}
			if v, ok := p["SourceAccount"]; ok {
				cond["StringEquals"] = map[string]any{"aws:SourceAccount": v}
			}
			if len(cond) > 0 {
				st["Condition"] = cond
			}
			out = append(out, document(id, "resource", "", nil, map[string]any{"Statement": []any{st}})...)
		}
	}
	for i := range out {
		out[i].Suppressions = coveringSuppressions(s.Resources[out[i].Holder], out[i].Wildcards)
	}
	return out
}

// document flattens a policy document. principal is the identity the document is
// attached to ("" for a trust or resource policy, whose statements name their own);
// resources, when set, replace the statements' own (a trust policy's resource is its role).
func document(holder, kind, principal string, resources []string, doc any) []statement {
	var out []statement
	for _, raw := range list(cfn.Dig(doc, "Statement")) {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		st := statement{Holder: holder, Kind: kind, Principal: principal, Effect: show(m["Effect"])}
		if st.Principal == "" {
			st.Principal = showPrincipal(m["Principal"])
			if np, ok := m["NotPrincipal"]; ok {
				st.Principal = "not " + showPrincipal(np)
			}
		}
		st.Actions = showAll(m["Action"])
		if na, ok := m["NotAction"]; ok {
			st.Actions, st.NotAction = showAll(na), true
		}
		st.Resources = showAll(m["Resource"])
		if nr, ok := m["NotResource"]; ok {
			st.Resources, st.NotResource = showAll(nr), true
		}
		if resources != nil {
			st.Resources = resources
		}
		st.Condition = showCondition(m["Condition"])
		if st.Effect == "Allow" {
			st.Wildcards = wildcards(st)
		}
		out = append(out, st)
	}
	return out
}

// thisKey is how a key policy's Resource * shows: it names the key the policy is on.
const thisKey = "* (this key)"

func wildcards(st statement) []string {
	var w []string
	if st.NotAction {
		w = append(w, "NotAction")
	}
	for _, a := range st.Actions {
		if strings.Contains(a, "*") && !st.NotAction {
			w = append(w, "Action::"+a)
		}
	}
	if st.NotResource {
		w = append(w, "NotResource")
	}
	for _, r := range st.Resources {
		if strings.Contains(r, "*") && r != thisKey && !st.NotResource {
			w = append(w, "Resource::"+r)
		}
	}
	if st.Principal == "*" || strings.HasPrefix(st.Principal, "not ") {
		w = append(w, "Principal::"+st.Principal)
	}
	return w
}

// coveringSuppressions returns the cdk-nag rules suppressed on r whose applies_to lists
// (or, as a regex, matches) every one of the wildcards; nil when some wildcard is uncovered.
func coveringSuppressions(r resource, wildcards []string) []string {
	if len(wildcards) == 0 {
		return nil
	}
	covered := map[string]bool{}
	rules := map[string]bool{}
	for _, sup := range list(cfn.Dig(r.Metadata, "cdk_nag", "rules_to_suppress")) {
		id := show(cfn.Dig(sup, "id"))
		for _, a := range list(cfn.Dig(sup, "applies_to")) {
			for _, w := range wildcards {
				if appliesTo(a, w) {
					covered[w] = true
					rules[id] = true
				}
			}
		}
	}
	if len(covered) < len(wildcards) {
		return nil
	}
	return sortedKeys(rules)
}

// appliesTo reports whether a cdk-nag applies_to entry, a finding string or
// {"regex": "/pattern/flags"}, matches finding.
func appliesTo(entry any, finding string) bool {
	if s, ok := entry.(string); ok {
		return s == finding
	}
	pat, _ := cfn.Dig(entry, "regex").(string)
	if i := strings.LastIndex(pat, "/"); strings.HasPrefix(pat, "/") && i > 0 {
		pat = pat[1:i]
	}
	re, err := regexp.Compile(pat)
	return err == nil && pat != "" && re.MatchString(finding)
}

func refOrShow(v any) string {
	if id := cfn.RefTarget(v); id != "" {
		return id
	}
	return show(v)
}

// showPrincipal renders a statement's Principal: * for anyone, else kind:value items
// (service:lambda.amazonaws.com, aws:arn:aws:iam::<AWS::AccountId>:root).
func showPrincipal(p any) string {
	switch x := p.(type) {
	case nil:
		return ""
	case string:
		if x == "*" {
			return "*"
		}
		if strings.HasSuffix(x, ".amazonaws.com") {
			return "service:" + x
		}
		return "aws:" + x
	case map[string]any:
		var out []string
		for _, k := range sortedKeys(x) {
			for _, v := range showAll(x[k]) {
				if k == "AWS" && v == "*" {
					out = append(out, "*")
					continue
				}
				out = append(out, strings.ToLower(k)+":"+v)
			}
		}
		return strings.Join(out, ", ")
	}
	return show(p)
}

// showCondition renders a Condition block as "Operator key=value" items, sorted.
func showCondition(c any) string {
	m, ok := c.(map[string]any)
	if !ok {
		return show(c)
	}
	var out []string
	for _, op := range sortedKeys(m) {
		kv, ok := m[op].(map[string]any)
		if !ok {
			out = append(out, op+" "+show(m[op]))
			continue
		}
		for _, k := range sortedKeys(kv) {
			out = append(out, op+" "+k+"="+strings.Join(showAll(kv[k]), ","))
		}
	}
	return strings.Join(out, "; ")
}
