// Package egress is permwrap's HTTP(S) egress proxy: the way a sandboxed
// program's connections are judged by the host name it asks for, not
// only by the address the kernel sees.
//
// The supervisor starts one Proxy per run on a loopback port and hands its
// address to the command through HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and
// their lower-case forms (Environ). Programs that honour them (curl, git,
// pip, npm, Go, Python, Node with NODE_USE_ENV_PROXY) send
//
//	CONNECT github.com:443 HTTP/1.1          for TLS, tunnelled untouched
//	GET http://example.com/x HTTP/1.1        for plain HTTP, forwarded
//
// and each CONNECT and each request is judged on the name it carries,
// through a Judge the supervisor implements over its policy, authority
// chain and review log, with the asking process named. The name is judged
// before it is resolved (a lookup of a name chosen by the agent is itself
// a way out), then every address it resolved to is judged before it is
// dialled (so `*.example.com: allow` cannot be pointed at the metadata
// service). There is no TLS interception: the proxy never sees inside a
// tunnel.
//
// Names the proxy resolved are kept in a DNSCache, so a later direct
// connection from the tree to such an address can be judged by the name.
//
// The package may import engine and authority, never notify: it makes
// ordinary sockets and reads /proc files to find a connection's process,
// and nothing here reads or writes another process's memory. See
// docs/network.md.
package egress
