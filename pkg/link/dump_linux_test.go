package link

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestRetryDump(t *testing.T) {
	other := errors.New("permission denied")
	tests := []struct {
		name      string
		results   []error // what each call returns, in order
		wantCalls int
		wantErr   error
	}{
		{"first_try", []error{nil}, 1, nil},
		{"interrupted_then_complete", []error{netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted, nil}, 3, nil},
		{"always_interrupted", []error{
			netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted,
			netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted, nil}, maxDumpTries, netlink.ErrDumpInterrupted},
		{"other_error_not_retried", []error{other, nil}, 1, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			got, err := RetryDump(func() ([]int, error) {
				err := tt.results[calls]
				calls++
				return []int{calls}, err // partial results come with the interruption
			})
			if calls != tt.wantCalls {
				t.Errorf("dump ran %d times, want %d", calls, tt.wantCalls)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("RetryDump() error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (len(got) != 1 || got[0] != calls) {
				t.Errorf("RetryDump() = %v, want the result of the last run [%d]", got, calls)
			}
			if err != nil && got != nil {
				t.Errorf("RetryDump() = %v with an error, want no result", got)
			}
		})
	}
}
