package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
)

// Which sockets the tree may make, and which options it may set on them,
// decided in BPF from the registers: no notification, no cost for the
// sockets every program makes. docs/network.md lists each with its reason.

// judgedFamilies are the socket families whose destinations permwrap
// judges (AF_UNIX, AF_INET, AF_INET6) or that reach only the local kernel
// (AF_NETLINK: routing queries, getifaddrs, audit).
var judgedFamilies = map[uint64]bool{unix.AF_UNIX: true, unix.AF_INET: true, unix.AF_INET6: true, unix.AF_NETLINK: true}

// sockTypeMask is SOCK_TYPE_MASK: socket(2)'s type without SOCK_NONBLOCK
// and SOCK_CLOEXEC.
const sockTypeMask = 0xf

// socketRefusals:
//   - raw IP sockets and AF_PACKET send anything to anyone, past every
//     destination check: EPERM, what an unprivileged caller gets;
//   - SCTP keeps its associations' addresses in socket options
//     (SCTP_SOCKOPT_CONNECTX) and in sendmsg ancillary data, where a
//     connect is never seen: EPROTONOSUPPORT, what a kernel without SCTP
//     answers (programs fall back to TCP or fail plainly);
//   - every other family (AF_VSOCK reaches the hypervisor, AF_BLUETOOTH,
//     AF_CAN, AF_TIPC, AF_RDS, AF_XDP, AF_ALG, ...): EAFNOSUPPORT, what a
//     kernel without that family answers.
func socketRefusals() []bpfRefusal {
	var others []notify.Match
	for f := uint64(0); f < unix.AF_MAX; f++ {
		if !judgedFamilies[f] && f != unix.AF_PACKET {
			others = append(others, intEquals(0, f))
		}
	}
	var raw, sctp []notify.Match
	for _, f := range []uint64{unix.AF_INET, unix.AF_INET6} {
		raw = append(raw, notify.Match{
			{Arg: 0, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: f},
			{Arg: 1, Op: notify.CmpMaskedEqual, Mask: sockTypeMask, Value: unix.SOCK_RAW},
		}, notify.Match{
			{Arg: 0, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: f},
			{Arg: 1, Op: notify.CmpMaskedEqual, Mask: sockTypeMask, Value: unix.SOCK_PACKET},
		})
		sctp = append(sctp, notify.Match{
			{Arg: 0, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: f},
			{Arg: 1, Op: notify.CmpMaskedEqual, Mask: sockTypeMask, Value: unix.SOCK_STREAM},
			{Arg: 2, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: unix.IPPROTO_SCTP},
		}, notify.Match{
			{Arg: 0, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: f},
			{Arg: 1, Op: notify.CmpMaskedEqual, Mask: sockTypeMask, Value: unix.SOCK_SEQPACKET},
		})
	}
	return []bpfRefusal{
		{errno: unix.EPERM, when: raw, why: "raw IP sockets send anything to anyone"},
		{errno: unix.EPERM, when: []notify.Match{intEquals(0, unix.AF_PACKET)}, why: "packet sockets send anything to anyone"},
		{errno: unix.EPROTONOSUPPORT, when: sctp, why: "SCTP connects through socket options and ancillary data, past every destination check"},
		{errno: unix.EAFNOSUPPORT, when: others, why: "families other than unix, inet, inet6 and netlink are not judged"},
	}
}

// sockoptRefusals refuses the options that send a socket's packets
// somewhere other than the destination that was judged: IPv4 source
// routes (IP_OPTIONS with LSRR/SSRR: the first hop is the address in the
// route) and IPv6 routing headers (type 2 and segment routing: the first
// segment is where the packet goes), which an unprivileged process may
// set. The same in sendmsg's control messages is refused by the decoder.
func sockoptRefusals() []bpfRefusal {
	opt := func(level, name uint64) notify.Match {
		return notify.Match{
			{Arg: 1, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: level},
			{Arg: 2, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: name},
		}
	}
	return []bpfRefusal{{
		errno: unix.EPERM,
		when: []notify.Match{
			opt(unix.SOL_IP, unix.IP_OPTIONS),
			opt(unix.SOL_IPV6, unix.IPV6_RTHDR),
			opt(unix.SOL_IPV6, unix.IPV6_2292RTHDR),
			opt(unix.SOL_IPV6, unix.IPV6_2292PKTOPTIONS),
		},
		why: "source routes and routing headers send packets past the judged destination",
	}}
}

// routingCmsg reports a control message that routes a datagram past its
// judged destination (the sendmsg twins of sockoptRefusals).
func routingCmsg(level, typ int32) (string, bool) {
	switch {
	case level == unix.SOL_IP && typ == unix.IP_RETOPTS:
		return "IP_RETOPTS (an IPv4 source route)", true
	case level == unix.SOL_IPV6 && (typ == unix.IPV6_RTHDR || typ == unix.IPV6_2292RTHDR):
		return fmt.Sprintf("an IPv6 routing header (cmsg type %d)", typ), true
	}
	return "", false
}
