package standin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// PickStacks returns the stacks named (by display name, stack name or artifact id), or every
// stack when names is empty. An unknown name is an error listing the stacks there are.
func PickStacks(all []cfn.StackRef, names []string) ([]cfn.StackRef, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []cfn.StackRef
	for _, n := range names {
		i := slices.IndexFunc(all, func(s cfn.StackRef) bool { return s.DisplayName == n || s.StackName == n || s.ID == n })
		if i < 0 {
			have := make([]string, len(all))
			for j, s := range all {
				have[j] = s.DisplayName
			}
			return nil, fmt.Errorf("no stack %q in the cloud assembly; it has %s", n, strings.Join(have, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}
