// Command floor is the benchmark's physical floor: a stand-in for each
// plugin of the chain that only does what every CNI call must do anyway —
// start, read the environment and stdin, parse the configuration and
// answer. Installed as bridge (which, like the real one, runs host-local as
// its IPAM delegate), host-local, tuning and portmap, it costs the same
// number of process starts as the real chain and nothing else.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(); err != nil {
		fmt.Printf(`{"code":999,"msg":%q}`+"\n", err.Error())
		os.Exit(1)
	}
}

func run() error {
	stdin, err := readAll()
	if err != nil {
		return err
	}
	var conf struct {
		CNIVersion string          `json:"cniVersion"`
		Name       string          `json:"name"`
		PrevResult json.RawMessage `json:"prevResult"`
		IPAM       struct {
			Type string `json:"type"`
		} `json:"ipam"`
	}
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return err
	}
	cmd := os.Getenv("CNI_COMMAND")
	name := filepath.Base(os.Args[0])
	switch {
	case cmd == "VERSION":
		fmt.Println(`{"cniVersion":"1.1.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}`)
	case name == "bridge" && conf.IPAM.Type != "":
		return delegate(conf.IPAM.Type, stdin, cmd)
	case cmd == "ADD" && name == "host-local":
		fmt.Printf(`{"cniVersion":%q,"ips":[{"address":"10.99.0.2/16","gateway":"10.99.0.1"}]}`+"\n", conf.CNIVersion)
	case cmd == "ADD" && len(conf.PrevResult) > 0:
		os.Stdout.Write(conf.PrevResult)
	case cmd == "ADD":
		fmt.Printf(`{"cniVersion":%q}`+"\n", conf.CNIVersion)
	}
	return nil
}

func readAll() ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(os.Stdin)
	return buf.Bytes(), err
}

// delegate runs the IPAM stand-in found in CNI_PATH, as bridge does.
func delegate(ipam string, stdin []byte, cmd string) error {
	for _, dir := range strings.Split(os.Getenv("CNI_PATH"), ":") {
		path := filepath.Join(dir, ipam)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		c := exec.Command(path)
		c.Stdin = bytes.NewReader(stdin)
		c.Stderr = os.Stderr
		out, err := c.Output()
		if err != nil {
			return fmt.Errorf("%s %s: %w", ipam, cmd, err)
		}
		if cmd == "ADD" {
			os.Stdout.Write(out)
		}
		return nil
	}
	return fmt.Errorf("%s not found in CNI_PATH", ipam)
}
