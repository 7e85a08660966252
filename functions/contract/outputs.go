package contract

// Stack outputs: what the constructs' Outputs functions add and pipelinectl reads. A
// pipeline's are named "<Pipeline>"+name (pipeline.Outputs), for example
// "OrdersDeadLetterQueueUrl"; pipelinectl finds a stack's pipelines by the names ending in
// OutDLQURL. The table's and the monitoring's are named as they are (table.Outputs,
// monitoring.Outputs), for a table or monitoring that pipelines share. pipelinectl reads a
// pipeline's own OutTableName and OutUnhealthy first, then the stack's.
const (
	// Per pipeline.
	OutQueueURL               = "QueueUrl"
	OutDLQURL                 = "DeadLetterQueueUrl"
	OutConsumerFunction       = "ConsumerFunctionName"
	OutRecordTTL              = "RecordTTL"
	OutKeyPrefix              = "KeyPrefix"
	OutDispatcherFunction     = "DispatcherFunctionName"
	OutSchedule               = "ScheduleName"
	OutScheduleGroup          = "ScheduleGroupName"
	OutHeartbeatSchedule      = "HeartbeatScheduleName"
	OutHeartbeatScheduleGroup = "HeartbeatScheduleGroupName"

	// Per pipeline, and per table.
	OutTableName = "IdempotencyTableName"

	// Per pipeline (its monitoring's composite alarm), and per monitoring.
	OutUnhealthy = "UnhealthyAlarmName"
	// Per monitoring.
	OutAlarmTopic  = "AlarmTopicArn"
	OutTicketTopic = "TicketTopicArn"
	OutDashboard   = "DashboardName"
)
