package watch

import (
	"context"
	"testing"
	"time"
)

// settle returns after a quiet moment even while events keep coming, and
// swallows the burst.
func TestSettleBounded(t *testing.T) {
	events := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case events <- "burst":
			}
			time.Sleep(time.Millisecond)
		}
	}()
	settle(context.Background(), events, time.Hour) // returns by maxSettle
	close(stop)
}
