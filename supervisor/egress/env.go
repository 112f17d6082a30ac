package egress

import "strings"

// proxyVars are the variables programs read a proxy from, in both cases:
// curl reads only the lower-case http_proxy (an upper-case HTTP_PROXY
// could be set by a CGI request header), most others read either.
var proxyVars = []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"}

// NoProxy lists what bypasses the proxy: loopback, where nothing needs a
// name and the direct connection is judged by its address.
const NoProxy = "localhost,127.0.0.1,::1"

// Environ returns env with every proxy variable pointing at the proxy,
// replacing any the environment had (a proxy of the user's own would let
// requests bypass the judgement by name), and NO_PROXY naming loopback
// only. NODE_USE_ENV_PROXY=1 makes Node (from 22.21 and 24.5) honour the
// variables for its built-in http and fetch; older Node ignores it.
func (p *Proxy) Environ(env []string) []string {
	return ProxyEnviron(env, p.URL())
}

// ProxyEnviron is Environ for a proxy at url.
func ProxyEnviron(env []string, url string) []string {
	drop := map[string]bool{"NO_PROXY": true, "NODE_USE_ENV_PROXY": true}
	for _, v := range proxyVars {
		drop[v] = true
	}
	out := make([]string, 0, len(env)+2*len(proxyVars)+3)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if drop[strings.ToUpper(name)] {
			continue
		}
		out = append(out, kv)
	}
	for _, v := range proxyVars {
		out = append(out, v+"="+url, strings.ToLower(v)+"="+url)
	}
	return append(out, "NO_PROXY="+NoProxy, "no_proxy="+NoProxy, "NODE_USE_ENV_PROXY=1")
}
