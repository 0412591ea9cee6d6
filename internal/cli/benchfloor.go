package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/bench"
)

// benchCompare runs `partita bench --floor`: the workload against Partita
// and the floor server in one run, interleaved (bench.Compare); or
// `--compare-partitions N`: against a container of N physical partitions
// and one of one, on the same Partita server.
//
// The servers run as child processes of this binary (`partita serve` and
// `partita floor`, on free loopback ports, with TLS), so that each one's CPU
// time can be read from /proc/<pid>/stat apart from the load generator's,
// which shares the machine but not the process. With --endpoint, that
// endpoint is measured instead of a partita child, and its CPU is not.
func benchCompare(ctx context.Context, cfg bench.Config, o benchOptions, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "partita bench: %v\n", err)
		if errors.Is(err, bench.ErrInvalidConfig) {
			return 2
		}
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp("", "partita-bench-floor-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	// Rate limiting off on both: the floor has none, and the comparison is
	// of the work a request does, not of the budget.
	common := []string{"--addr", "127.0.0.1:0", "--key", cfg.Key, "--tls", "--log-level", "warn", "--rate-limit", "off"}
	partita := bench.Side{Name: "partita", Endpoint: cfg.Endpoint, CACert: cfg.CACert, Insecure: cfg.Insecure}
	if !o.endpointSet {
		data := o.serveData
		if data == "" {
			data = filepath.Join(tmp, "partita")
		}
		args := append([]string{"serve", "--data", data, "--durability", o.durability}, common...)
		args = append(args, strings.Fields(o.serveFlags)...)
		ch, err := startChild(exe, args, stderr)
		if err != nil {
			return fail(fmt.Errorf("start partita serve: %w", err))
		}
		defer ch.stop(stderr)
		partita = ch.side("partita")
		cfg.Create = true
	}
	var sides []bench.Side
	if o.floor {
		fl, err := startChild(exe, append([]string{"floor", "--data", filepath.Join(tmp, "floor")}, common...), stderr)
		if err != nil {
			return fail(fmt.Errorf("start the floor server: %w", err))
		}
		defer fl.stop(stderr)
		sides = []bench.Side{partita, fl.side("floor")}
	} else {
		sides = partitionSides(partita, cfg, o.comparePartitions)
	}
	cfg.Endpoint = partita.Endpoint // for the configuration's check; each side has its own
	var progress io.Writer
	if !o.noProgress {
		progress = stderr
	}
	cmp, err := bench.Compare(ctx, cfg, sides, o.rounds, progress)
	if err != nil {
		return fail(err)
	}
	if o.json {
		err = cmp.WriteJSON(stdout)
	} else {
		err = cmp.WriteText(stdout)
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// partitionSides returns the sides of --compare-partitions n on server
// s: a container of n physical partitions, then one of one (the baseline
// the report divides by), each named after its count and created with
// 6,000 RU/s a partition, so that no throughput split changes the count.
func partitionSides(s bench.Side, cfg bench.Config, n int) []bench.Side {
	base := cfg.Container
	if base == "" {
		base = bench.DefaultContainer(cfg.Workload)
	}
	many, one := s, s
	many.Name, many.Container, many.Partitions, many.Throughput = fmt.Sprintf("%d-partitions", n), fmt.Sprintf("%s-p%d", base, n), n, n*6000
	one.Name, one.Container, one.Partitions, one.Throughput = "1-partition", base+"-p1", 1, 6000
	return []bench.Side{many, one}
}

// child is a server this process started.
type child struct {
	cmd      *exec.Cmd
	endpoint string
	caCert   string
	out      sync.WaitGroup // copies its standard output after the endpoint line
}

// childStartTimeout bounds how long a child may take to print its
// endpoint: partita serve opens its data directory first, which on a
// large one takes a while.
const childStartTimeout = 5 * time.Minute

// startChild runs exe with args, a partita serve or floor command with
// --data and --tls, and waits for the connection-string line that gives
// its endpoint. Its standard error goes to stderr.
func startChild(exe string, args []string, stderr io.Writer) (*child, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd}
	for i, a := range args {
		if a == "--data" && i+1 < len(args) {
			c.caCert = filepath.Join(args[i+1], "tls", "cert.pem")
		}
	}
	found := make(chan string, 1) // one send: the endpoint, or "" at EOF
	c.out.Go(func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "Connection string: AccountEndpoint="); ok && !sent {
				ep, _, _ := strings.Cut(rest, ";")
				found <- ep
				sent = true
			}
		}
		if !sent {
			found <- ""
		}
	})
	timer := time.NewTimer(childStartTimeout)
	defer timer.Stop()
	select {
	case ep := <-found:
		if ep == "" {
			c.stop(io.Discard)
			return nil, fmt.Errorf("%s %s exited before serving", exe, args[0])
		}
		c.endpoint = ep
		return c, nil
	case <-timer.C:
		c.stop(io.Discard)
		return nil, fmt.Errorf("%s %s did not start within %s", exe, args[0], childStartTimeout)
	}
}

// side returns the bench side of the child, with its CPU read from /proc.
func (c *child) side(name string) bench.Side {
	pid := c.cmd.Process.Pid
	return bench.Side{Name: name, Endpoint: c.endpoint, CACert: c.caCert, CPU: func() (time.Duration, error) { return procCPU(pid) }}
}

// stop interrupts the child (a graceful shutdown) and waits for it,
// killing it if it has not exited within a minute.
func (c *child) stop(stderr io.Writer) {
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1) // one send: Wait's result
	go func() { done <- c.cmd.Wait() }()
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(stderr, "partita bench: %s: %v\n", c.cmd.Args[1], err)
		}
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.out.Wait()
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times: 100
// on every architecture Go supports (sysconf(_SC_CLK_TCK) needs cgo).
const clockTicks = 100

// procCPU returns process pid's CPU time, user plus system, over all its
// threads, from /proc/<pid>/stat (Linux only; 10 ms resolution).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat returns utime + stime of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so the
// fields are counted from the last ')': state is field 3, utime 14, stime 15.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat %.40q: no command name", s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want 13 or more", len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("proc stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}
