// Package nagpacks is the one list of cdk-nag packs this repository holds itself to: the
// CDK app (stacks.AddNagPacks) and every construct test app (cdktest.AddNagPacks) attach the
// same packs.
package nagpacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Add attaches AwsSolutions, Serverless, NIST 800-53 R5, PCI DSS 3.2.1 and HIPAA Security to
// app; reports writes each pack's CSV report into the cloud assembly.
func Add(app awscdk.App, reports bool) {
	props := &cdknag.NagPackProps{Verbose: jsii.Bool(true), Reports: jsii.Bool(reports)}
	for _, pack := range []awscdk.IAspect{
		cdknag.NewAwsSolutionsChecks(props),
		cdknag.NewServerlessChecks(props),
		cdknag.NewNIST80053R5Checks(props),
		cdknag.NewPCIDSS321Checks(props),
		cdknag.NewHIPAASecurityChecks(props),
	} {
		awscdk.Aspects_Of(app).Add(pack, nil)
	}
}
