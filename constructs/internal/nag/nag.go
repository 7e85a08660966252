// Package nag records cdk-nag suppressions with their reasons, on the resource they concern,
// for the rules of the compliance packs (NIST 800-53 R5, PCI DSS 3.2.1, HIPAA Security) that
// share a rule name across packs. Each construct suppresses a rule only where its reason
// holds, as constructs/internal/checkov records checkov's skips.
package nag

import (
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// The packs' rule id prefixes.
const (
	AwsSolutions = "AwsSolutions"
	Serverless   = "Serverless"
	NIST         = "NIST.800.53.R5"
	PCI          = "PCI.DSS.321"
	HIPAA        = "HIPAA.Security"
)

// Compliance is the three compliance packs.
var Compliance = []string{NIST, PCI, HIPAA}

// IDs returns rule's id in each of packs, e.g. IDs("LambdaDLQ", NIST, HIPAA).
func IDs(rule string, packs ...string) []string {
	ids := make([]string, len(packs))
	for i, p := range packs {
		ids[i] = p + "-" + rule
	}
	return ids
}

// Suppress records, on c (and its children when children is set), a suppression of each
// rule id with the reason.
func Suppress(c constructs.IConstruct, children bool, reason string, ids ...string) {
	s := make([]*cdknag.NagPackSuppression, len(ids))
	for i, id := range ids {
		s[i] = &cdknag.NagPackSuppression{Id: jsii.String(id), Reason: jsii.String(reason)}
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &s, jsii.Bool(children))
}

// SuppressRolePolicy records the suppressions on role's DefaultPolicy, the AWS::IAM::Policy
// CDK writes its grants into, and not on the role: a rule that finds nothing on the role
// (IAMNoInlinePolicy checks a role's own Policies) would otherwise carry an idle suppression
// there that hides a later finding. Call it after the role's first grant; a role without a
// DefaultPolicy has no policy to suppress anything on.
func SuppressRolePolicy(role constructs.IConstruct, reason string, ids ...string) {
	if policy := role.Node().TryFindChild(jsii.String("DefaultPolicy")); policy != nil {
		Suppress(policy, true, reason, ids...)
	}
}
