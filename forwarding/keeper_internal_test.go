package forwarding

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// Without a --log the keeper still waits for the root to hang up after
// it says done: the root checks the keeper's children only then, and a
// keeper already gone fails that check.
func TestKeeperWithoutLogWaitsForTheRoot(t *testing.T) {
	root, keeper := net.Pipe()
	defer root.Close()
	conn := &Conn{c: keeper, r: bufio.NewReader(keeper)}
	done := serveLogs(conn, false)
	select {
	case <-done:
		t.Fatal("the keeper stopped listening before the root hung up")
	case <-time.After(50 * time.Millisecond):
	}
	root.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the keeper did not notice the root hang up")
	}
}
