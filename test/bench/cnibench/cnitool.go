package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// cnitool drives one network through the cnitool binary, as a runtime
// would: one process per call, the plugins found in pluginDir.
type cnitool struct {
	tool      string
	pluginDir string
	confDir   string
	network   string
}

// run runs one verb for the container whose namespace is netns, with the
// given capability arguments, and returns how long it took.
func (c *cnitool) run(verb, netns, capArgs string) (time.Duration, error) {
	cmd := exec.Command(c.tool, verb, c.network, netns)
	cmd.Env = append(os.Environ(),
		"CNI_PATH="+c.pluginDir, "NETCONFPATH="+c.confDir, "CAP_ARGS="+capArgs, "CNI_IFNAME=eth0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return elapsed, fmt.Errorf("cnitool %s %s: %v: %s", verb, netns, err, out.String())
	}
	return elapsed, nil
}

func portMapping(i int) string {
	return fmt.Sprintf(`{"portMappings":[{"hostPort":%d,"containerPort":80,"protocol":"tcp"}]}`, 20000+i)
}

// sequential runs ADD for every namespace, then CHECK, then DEL, in order,
// and returns the latencies per verb.
func (c *cnitool) sequential(netnses []string) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	for _, verb := range []string{"add", "check", "del"} {
		for i, n := range netnses {
			d, err := c.run(verb, n, portMapping(i))
			if err != nil {
				return out, err
			}
			out[verb] = append(out[verb], d)
		}
	}
	return out, nil
}

// parallel runs ADD for every namespace at once, then DEL at once, and
// returns the errors.
func (c *cnitool) parallel(netnses []string) []error {
	var errs []error
	for _, verb := range []string{"add", "del"} {
		ch := make(chan error, len(netnses))
		for i, n := range netnses {
			go func() {
				_, err := c.run(verb, n, portMapping(i))
				ch <- err
			}()
		}
		for range netnses {
			if err := <-ch; err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
