package cli

import (
	"flag"
	"fmt"
	"strconv"
)

// wholeNumber is a flag.Value for a whole number of something ("messages a second").
type wholeNumber struct {
	n    *int
	what string
}

// NewWholeNumber is the flag.Value that sets *n, saying what it counts in its error.
func NewWholeNumber(n *int, what string) flag.Value { return wholeNumber{n, what} }

func (c wholeNumber) String() string {
	if c.n == nil {
		return ""
	}
	return strconv.Itoa(*c.n)
}

func (c wholeNumber) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number of %s, e.g. 50", c.what)
	}
	*c.n = n
	return nil
}

// NoArgs refuses positional arguments to a command that takes none.
func NoArgs(cmd string, pos []string) error {
	if len(pos) > 0 {
		return Usagef("%s takes no arguments, got %q", cmd, pos)
	}
	return nil
}

// ParseNoArgs parses args into fs (as Parse) for a command that takes flags only: an
// argument left over is a usage error naming the command (fs's name).
func ParseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	return NoArgs(fs.Name(), pos)
}
