package main

import (
	"fmt"
	"io"
	"strings"
)

// unifiedDiff writes the changes from old to new as a unified diff with three lines of
// context, and reports whether there were any. The edit script is a longest common
// subsequence of the lines, which reports of a few hundred lines afford.
func unifiedDiff(w io.Writer, oldName, newName, old, new string) bool {
	a, b := splitLines(old), splitLines(new)
	// Common prefix and suffix need no table.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return false
	}
	ops := editScript(a[pre:len(a)-suf], b[pre:len(b)-suf])
	// Lines of the whole files, as (kind, text, old index, new index).
	var all []line
	for i := 0; i < pre; i++ {
		all = append(all, line{' ', a[i], i, i})
	}
	i, j := pre, pre
	for _, op := range ops {
		switch op {
		case ' ':
			all = append(all, line{' ', a[i], i, j})
			i++
			j++
		case '-':
			all = append(all, line{'-', a[i], i, j})
			i++
		case '+':
			all = append(all, line{'+', b[j], i, j})
			j++
		}
	}
	for k := 0; k < suf; k++ {
		all = append(all, line{' ', a[i+k], i + k, j + k})
	}

	fmt.Fprintf(w, "--- %s\n+++ %s\n", oldName, newName)
	const context = 3
	for start := 0; start < len(all); {
		// Find the next change, then extend the hunk while changes are within 2*context.
		first := start
		for first < len(all) && all[first].kind == ' ' {
			first++
		}
		if first == len(all) {
			break
		}
		from := max(first-context, start)
		end := first
		for k := first; k < len(all); k++ {
			if all[k].kind != ' ' {
				end = k
			} else if k-end > 2*context {
				break
			}
		}
		to := min(end+context+1, len(all))
		h := all[from:to]
		oldCount, newCount := 0, 0
		for _, l := range h {
			if l.kind != '+' {
				oldCount++
			}
			if l.kind != '-' {
				newCount++
			}
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(h[0].oldAt, oldCount), hunkRange(h[0].newAt, newCount))
		for _, l := range h {
			fmt.Fprintf(w, "%c%s\n", l.kind, l.text)
		}
		start = to
	}
	return true
}

type line struct {
	kind         byte
	text         string
	oldAt, newAt int
}

func hunkRange(at, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", at)
	}
	if n == 1 {
		return fmt.Sprint(at + 1)
	}
	return fmt.Sprintf("%d,%d", at+1, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// editScript returns, for a and b, a shortest sequence of ' ' (keep), '-' (delete from a)
// and '+' (insert from b) that turns a into b, deletions before insertions in each run.
func editScript(a, b []string) []byte {
	n, m := len(a), len(b)
	// lcs[i][j] is the length of a longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []byte
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, ' ')
			i++
			j++
		case j == m || i < n && lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, '-')
			i++
		default:
			ops = append(ops, '+')
			j++
		}
	}
	return ops
}
