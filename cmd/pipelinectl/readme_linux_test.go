package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// readmeCommands reads the commands of the sh blocks of the section title (a heading of
// level 1 or 2) of the document at path, a backslash-continued command as one line.
func readmeCommands(t *testing.T, path, title string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in, sh, cont := false, false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "## "):
			in = strings.TrimLeft(line, "#") == " "+title
		case in && line == "```sh":
			sh = true
		case in && line == "```":
			sh = false
		case in && sh:
			if l, ok := strings.CutSuffix(line, "\\"); ok {
				cont += l
				continue
			}
			if cmd := strings.TrimSpace(cont + line); cmd != "" && !strings.HasPrefix(cmd, "#") {
				out = append(out, cmd)
			}
			cont = ""
		}
	}
	return out
}

// docs/local.md's commands (the README's "Run it locally" shows the first), as written, in a directory of this module whose
// cdk.out is the reference stack's assembly; then every command local up prints, as
// written, in another shell with the exports it prints: the AWS CLI v1 (pip, make tools
// installs it) and `go tool pipelinectl`. Each must succeed; Ctrl-C then stops everything.
// (`go get -tool`, for a module of the user's, is run by test/outside.)
func TestReadmeLocalCommands(t *testing.T) {
	t.Parallel()
	cmds := readmeCommands(t, "../../docs/local.md", "Run it locally")
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "go tool pipelinectl local up ") || !strings.HasPrefix(cmds[1], "go get -tool ") {
		t.Fatalf("docs/local.md's commands are %q: this test runs `go tool pipelinectl local up`, test/outside `go get -tool`", cmds)
	}
	if readme := readmeCommands(t, "../../README.md", "Run it locally"); len(readme) != 1 || readme[0] != cmds[0] {
		t.Errorf("the README's Run it locally shows %q, want docs/local.md's first command %q", readme, cmds[0])
	}
	aws := filepath.Join(os.Getenv("AWSCLI_VENV"), "bin", "aws")
	if os.Getenv("AWSCLI_VENV") == "" {
		aws = filepath.Join("..", "..", ".cache", "awscli-venv", "bin", "aws")
	}
	if _, err := os.Stat(aws); err != nil {
		t.Fatalf("the AWS CLI v1 is not installed (%v): make tools installs it", err)
	}
	bin := t.TempDir()
	aws, _ = filepath.Abs(aws)
	if err := os.Symlink(aws, filepath.Join(bin, "aws")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join("..", "..", ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Join("..", "..", ".cache"), "readme-") // in this module, for go tool
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.Abs(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(referenceAssembly(t), filepath.Join(dir, "cdk.out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "messages.txt"), []byte("{\"idempotencyKey\":\"readme-1\"}\n{\"idempotencyKey\":\"readme-1\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	up := exec.Command("sh", "-c", "exec "+cmds[0]) // exec: Ctrl-C reaches the command, as from an interactive shell
	up.Dir, up.Env = dir, append(os.Environ(), "PWD="+dir)
	proc, err := localproc.Start(up)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := proc.WaitOutput(ctx, "Ctrl-C stops everything."); err != nil {
		t.Fatalf("$ %s: %v", cmds[0], err)
	}
	// Another shell: this one's variables (but the empty AWS_PROFILE the package's TestMain
	// sets, which the AWS CLI takes for a profile named ""), aws on PATH; pipelinectl is
	// printed as `go tool pipelinectl`, as it was run.
	var env []string
	for _, e := range os.Environ() {
		if e != "AWS_PROFILE=" {
			env = append(env, e)
		}
	}
	env = append(env, "PATH="+bin+":"+os.Getenv("PATH"), "AWS_CONFIG_FILE=/dev/null")
	var printed []string
	shell := false
	for _, line := range strings.Split(proc.Output(), "\n") {
		switch {
		case line == "In another shell:":
			shell = true
		case !strings.HasPrefix(line, "  "):
			shell = false
		case shell && strings.HasPrefix(line, "  export "):
			env = append(env, strings.TrimPrefix(line, "  export "))
		case shell:
			printed = append(printed, strings.TrimSpace(line))
		}
	}
	if len(printed) < 4 || !strings.HasPrefix(printed[0], "aws sqs send-message ") || !strings.HasPrefix(printed[1], "go tool pipelinectl status ") {
		t.Fatalf("local up printed the commands %q, want aws sqs send-message and pipelinectl's:\n%s", printed, proc.Output())
	}
	for _, c := range printed {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s  (%v, %v)\n%s", c, err, time.Since(start).Round(10*time.Millisecond), out)
		if err != nil {
			t.Errorf("a command local up printed failed as written: %s: %v\n%s", c, err, out)
		}
	}
	if err := syscall.Kill(-proc.PID(), syscall.SIGINT); err != nil { // Ctrl-C at the terminal
		t.Fatal(err)
	}
	<-proc.Exited()
	if code := up.ProcessState.ExitCode(); code != 0 || !strings.Contains(proc.Output(), "sent 2 messages from messages.txt") ||
		!strings.Contains(proc.Output(), "local: stopped; nothing is left running") {
		t.Errorf("$ %s: exit %d after Ctrl-C\n%s", cmds[0], code, proc.Output())
	}
}
