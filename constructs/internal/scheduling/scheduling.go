// Package scheduling holds what the constructs' EventBridge Scheduler schedules share: a
// schedule group of their own, and a role that only schedules of that group may assume.
package scheduling

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Group returns given, or, when given is nil, a new schedule group "ScheduleGroup" in scope,
// also returned as own. Scheduler's metrics have the group as their only dimension: a group of
// its own makes them, and the alarms on them, one schedule's. It holds that schedule only, so
// it goes with the stack. A schedule in own must depend on it (AddDependency): the schedule
// names its group by a literal name, which implies no order.
func Group(scope constructs.Construct, given awsscheduler.IScheduleGroup) (group awsscheduler.IScheduleGroup, own awsscheduler.ScheduleGroup) {
	if given != nil {
		return given, nil
	}
	own = awsscheduler.NewScheduleGroup(scope, jsii.String("ScheduleGroup"), &awsscheduler.ScheduleGroupProps{
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	return own, own
}

// Role is a role for Scheduler with the confused-deputy conditions of the schedule targets'
// default role: only schedules of this account in group may assume it.
func Role(scope constructs.Construct, id, description string, group awsscheduler.IScheduleGroup) awsiam.Role {
	return awsiam.NewRole(scope, jsii.String(id), &awsiam.RoleProps{
		Description: jsii.String(description),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{"StringEquals": map[string]any{
				"aws:SourceAccount": awscdk.Stack_Of(scope).Account(),
				"aws:SourceArn":     group.ScheduleGroupArn(),
			}},
		}),
	})
}
