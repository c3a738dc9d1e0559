// Package clientaddr reads the address of the client a request comes
// from, through the trusted proxies (X-Forwarded-For), and the key a
// client address is limited by. The HTTP layer limits requests with it;
// the process reads the list of trusted proxies (--trusted-proxies) and
// shares connections per address with it, without importing the HTTP
// layer.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// FromRequest returns the address of the client a request comes from: the
// TCP peer, unless the peer is one of the trusted proxies; then the
// rightmost X-Forwarded-For entry that is not itself a trusted proxy
// (each proxy appends the address it was reached from, so the entries
// right of the client's were written by the trusted proxies, and anything
// left of it by whoever sent the request: never believed). When the
// header names no such entry (absent, garbled, or every entry a trusted
// proxy), it is the last trusted proxy walked past. ok is false when the
// peer address cannot be read (not an IP: a Unix socket, a test).
func FromRequest(r *http.Request, trusted []netip.Prefix) (addr netip.Addr, ok bool) {
	peer, ok := ParseAddress(r.RemoteAddr)
	if !ok || !IsTrustedProxy(peer, trusted) {
		return peer, ok
	}
	addr = peer
	forwarded := r.Header.Values("X-Forwarded-For")
	for i := len(forwarded) - 1; i >= 0; i-- {
		entries := strings.Split(forwarded[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			hop, ok := ParseAddress(strings.TrimSpace(entries[j]))
			if !ok {
				return addr, true // what is left of a garbled entry was not written by a trusted proxy
			}
			if !IsTrustedProxy(hop, trusted) {
				return hop, true
			}
			addr = hop
		}
	}
	return addr, true
}

// ParseAddress reads an IP address, with or without a port ("1.2.3.4",
// "1.2.3.4:5", "::1", "[::1]:5"; net.Conn.RemoteAddr().String()) as the
// limits read it; an IPv4 address written as IPv6
// ("::ffff:1.2.3.4") is the IPv4 address, and an IPv6 zone is dropped
// (a zoned address never matches a prefix).
func ParseAddress(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// IsTrustedProxy reports whether a is one of the trusted proxies.
func IsTrustedProxy(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a list of proxies: CIDR prefixes
// ("10.0.0.0/8", "fd00::/8") or single addresses ("127.0.0.1"), blanks
// ignored.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, err
			}
			if p.Addr().Is4In6() {
				p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, err
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// AddressKey is the key a client address is limited by: an IPv4 address
// itself, an IPv6 address's /64 (one host, or one home, is given a whole
// /64 and can pick any address in it; the listener's share of
// connections per address uses it too).
func AddressKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
