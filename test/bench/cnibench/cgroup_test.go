package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCgroupCPU(t *testing.T) {
	tests := []struct {
		name, content string
		want          time.Duration
		ok            bool
	}{
		{"v1_cpuacct_usage", "1234567890\n", 1234567890 * time.Nanosecond, true},
		{"v2_cpu_stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n", 2500 * time.Microsecond, true},
		{"neither", "user_usec 2000\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "counter")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := cgroupCPU(path)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("cgroupCPU(%q) = %v, %v; want %v, ok %v", tt.content, got, err, tt.want, tt.ok)
			}
		})
	}
}
