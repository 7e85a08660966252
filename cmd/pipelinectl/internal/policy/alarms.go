package policy

// alarmsCheck are the actions verify needs to read the alarms' states.
var alarmsCheck = []string{"cloudwatch:DescribeAlarms"}
