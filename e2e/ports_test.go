package e2e

import (
	"net"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// refusedAddr is an address on 127.0.0.1 that refuses connections and
// that no other process can take while the test runs: a TCP port the test
// binds without listening (and without SO_REUSEADDR, so that nothing else
// may bind it). A fixed port such as 1 is the machine's: another program
// may listen there.
func refusedAddr(tb testing.TB) string {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
}

// The address refuses, and stays the test's.
func TestRefusedAddr(t *testing.T) {
	addr := refusedAddr(t)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s accepted a connection", addr)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("another listener could take %s", addr)
	}
}
