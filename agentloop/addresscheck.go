package agentloop

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// AddressClass says why an address is not reachable by http_request
// unless its host is allowed; ClassPublic is an address anyone on the
// Internet may reach.
type AddressClass string

// The classes of addresses http_request refuses by default.
const (
	ClassPublic      AddressClass = ""
	ClassLoopback    AddressClass = "loopback"
	ClassPrivate     AddressClass = "private"
	ClassLinkLocal   AddressClass = "link-local"
	ClassMetadata    AddressClass = "cloud metadata"
	ClassUnspecified AddressClass = "unspecified"
	ClassMulticast   AddressClass = "multicast"
	ClassBroadcast   AddressClass = "broadcast"
	ClassSharedNAT   AddressClass = "shared (carrier-grade NAT)"
	ClassReserved    AddressClass = "reserved"
)

// addressRange is one block of addresses and its class.
type addressRange struct {
	prefix netip.Prefix
	class  AddressClass
}

// metadataAddresses are the cloud providers' instance metadata and host
// endpoints, which hand out credentials to whoever asks from the machine.
// They are refused even for an allowed host (ClassMetadata).
var metadataAddresses = ranges(ClassMetadata,
	"169.254.169.254/32", // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle …
	"169.254.170.2/32",   // AWS ECS task metadata and credentials
	"169.254.169.253/32", // AWS VPC DNS
	"100.100.100.200/32", // Alibaba Cloud
	"168.63.129.16/32",   // Azure WireServer (a public address)
	"192.0.0.192/32",     // Oracle Cloud Infrastructure classic
	"fd00:ec2::254/128",  // AWS IMDS over IPv6
	"fd00:ec2::23/128",   // AWS Time Sync / DNS over IPv6
	"fd20:ce::254/128",   // GCP metadata over IPv6
)

// refusedIPv4 are the IPv4 blocks that are not the public Internet.
var refusedIPv4 = concat(
	ranges(ClassUnspecified, "0.0.0.0/8"),
	ranges(ClassPrivate, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	ranges(ClassSharedNAT, "100.64.0.0/10"),
	ranges(ClassLoopback, "127.0.0.0/8"),
	ranges(ClassLinkLocal, "169.254.0.0/16"),
	ranges(ClassBroadcast, "255.255.255.255/32"),
	ranges(ClassMulticast, "224.0.0.0/4"),
	ranges(ClassReserved,
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"198.18.0.0/15",   // benchmarking, used inside networks
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // future use
	),
)

// refusedIPv6 are the IPv6 blocks that are not the public Internet (the
// forms that carry an IPv4 address are looked into first, see
// embeddedIPv4).
var refusedIPv6 = concat(
	ranges(ClassUnspecified, "::/128"),
	ranges(ClassLoopback, "::1/128"),
	ranges(ClassPrivate,
		"fc00::/7",       // unique local
		"fec0::/10",      // site-local (deprecated)
		"64:ff9b:1::/48", // NAT64 for local use
	),
	ranges(ClassLinkLocal, "fe80::/10"),
	ranges(ClassMulticast, "ff00::/8"),
	ranges(ClassReserved,
		"::/96",         // IPv4-compatible (deprecated)
		"100::/64",      // discard-only
		"2001:db8::/32", // documentation
		"2001:2::/48",   // benchmarking
		"2001:10::/28",  // ORCHID
	),
)

// ClassifyAddress says whether ip is public or why it is not. An IPv6
// address that carries an IPv4 one (IPv4-mapped ::ffff:a.b.c.d, IPv4-
// translated, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) takes
// the class of the IPv4 address it carries when that one is not public,
// so ::ffff:127.0.0.1 is loopback; a zone (fe80::1%eth0) is ignored.
func ClassifyAddress(ip netip.Addr) AddressClass {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return ClassReserved
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if c := ClassifyAddress(v4); c != ClassPublic {
			return c
		}
		if ip.Is4In6() {
			return ClassPublic
		}
	}
	for _, r := range metadataAddresses {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	table := refusedIPv6
	if ip.Is4() {
		table = refusedIPv4
	}
	for _, r := range table {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	return ClassPublic
}

// The IPv6 blocks that carry an IPv4 address, and where.
var (
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// embeddedIPv4 returns the IPv4 address an IPv6 address carries: the
// mapped, translated and NAT64 forms in their last 32 bits, 6to4 in bits
// 16–47, Teredo's client in its last 32 bits inverted.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if ip.Is4In6() {
		return ip.Unmap(), true
	}
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case ipv4Translated.Contains(ip), nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredo.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

func ranges(class AddressClass, prefixes ...string) []addressRange {
	out := make([]addressRange, len(prefixes))
	for i, p := range prefixes {
		out[i] = addressRange{prefix: netip.MustParsePrefix(p), class: class}
	}
	return out
}

func concat(lists ...[]addressRange) []addressRange {
	var out []addressRange
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// HostAllowList is the parsed --http-allow: the hosts http_request may
// reach although their addresses are refused by default.
//
// An entry is a host name ("intranet.example"), an IP address ("10.0.0.5",
// "::1" or "[::1]"), or "*.example.com" (every name under example.com, not
// example.com itself), optionally followed by ":PORT" to allow that port
// only. Names are compared without case and without a trailing dot; IP
// addresses as addresses (so "[0:0::1]" is "::1"). A name is matched as
// the URL spells it, before resolution: allowing "intranet.example" allows
// whatever that name resolves to, and nothing else.
type HostAllowList struct {
	hosts    map[string]bool // "host" (any port) or "host:port"
	suffixes []string        // ".example.com" or ".example.com:port"
}

// ParseHostAllowList parses --http-allow entries; an entry that is not a
// host, host:port or *.domain is an error that names it.
func ParseHostAllowList(entries []string) (*HostAllowList, error) {
	l := &HostAllowList{hosts: map[string]bool{}}
	for _, raw := range entries {
		e := strings.TrimSpace(raw)
		host, port, err := splitAllowEntry(e)
		if err != nil {
			return nil, fmt.Errorf("--http-allow %q: %v", raw, err)
		}
		key := host // any port
		if port != "" {
			// JoinHostPort brackets an IPv6 address: [::1]:8080 is not
			// the address ::1:8080 on any port.
			key = net.JoinHostPort(host, port)
		}
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			if rest == "" || strings.Contains(rest, "*") {
				return nil, fmt.Errorf("--http-allow %q: a wildcard is \"*.\" followed by a domain", raw)
			}
			l.suffixes = append(l.suffixes, key[1:])
			continue
		}
		if strings.Contains(host, "*") {
			return nil, fmt.Errorf("--http-allow %q: a wildcard may only start the name, as in *.example.com", raw)
		}
		l.hosts[key] = true
	}
	return l, nil
}

// splitAllowEntry splits an entry into its normalized host and its port
// ("" for any port).
func splitAllowEntry(e string) (host, port string, err error) {
	if e == "" {
		return "", "", fmt.Errorf("empty host")
	}
	if strings.Contains(e, "/") {
		return "", "", fmt.Errorf("a host, not a URL or an address block")
	}
	if ip, err := netip.ParseAddr(e); err == nil { // a bare IPv6 (or IPv4) address
		return normalizeHost(ip.String()), "", nil
	}
	host = e
	if rest, ok := strings.CutPrefix(e, "["); ok { // [IPv6] or [IPv6]:port
		addr, after, ok := strings.Cut(rest, "]")
		ip, err := netip.ParseAddr(addr)
		if !ok || err != nil || !ip.Is6() {
			return "", "", fmt.Errorf("%q is not an IPv6 address in brackets", e)
		}
		host = ip.String()
		if after != "" {
			port, ok = strings.CutPrefix(after, ":")
			if !ok || !validPort(port) {
				return "", "", fmt.Errorf("%q after the address is not \":PORT\" with a port between 1 and 65535", after)
			}
		}
		return normalizeHost(host), port, nil
	}
	if i := strings.LastIndex(e, ":"); i >= 0 {
		host, port = e[:i], e[i+1:]
		if !validPort(port) {
			return "", "", fmt.Errorf("port %q is not a number between 1 and 65535", port)
		}
	}
	if strings.ContainsAny(host, "[]: ") || host == "" {
		return "", "", fmt.Errorf("%q is not a host name or an IP address", host)
	}
	if err := checkHostSpelling(strings.TrimPrefix(host, "*.")); err != nil {
		return "", "", err
	}
	return normalizeHost(host), port, nil
}

// Allows reports whether host (as the URL spells it, without brackets) on
// port is allowed.
func (l *HostAllowList) Allows(host, port string) bool {
	if l == nil {
		return false
	}
	host = normalizeHost(host)
	if l.hosts[host] || l.hosts[net.JoinHostPort(host, port)] {
		return true
	}
	for _, s := range l.suffixes {
		domain, p, hasPort := strings.Cut(s, ":")
		if strings.HasSuffix(host, domain) && (!hasPort || p == port) {
			return true
		}
	}
	return false
}

// normalizeHost lower-cases a name and drops its trailing dot; an IP
// address is written the canonical way.
func normalizeHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.WithZone("").String()
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// checkHostSpelling refuses a host that would be read as an IPv4 address
// by some resolvers (getaddrinfo, browsers) but is not written as one:
// 2130706433, 0x7f.0.0.1, 0177.0.0.1, 127.1. Whether such a host reached
// 127.0.0.1 would depend on the resolver, so it is refused outright; an
// address is written as four decimal numbers. An IPv6 zone is refused
// too.
func checkHostSpelling(host string) error {
	if strings.Contains(host, "%") {
		return fmt.Errorf("host %q has an IPv6 zone; zones are not allowed", host)
	}
	if strings.Contains(host, ":") {
		return nil // IPv6, parsed as such
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if !numericLabel(labels[len(labels)-1]) {
		return nil // a name
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil && ip.Is4() {
		return nil
	}
	return fmt.Errorf("host %q looks like an IPv4 address but is not written as four decimal numbers (such as 93.184.215.14)", host)
}

// numericLabel reports whether a label is a number in decimal, octal or
// hex (0x…), the way inet_aton and URL parsers read IPv4 parts.
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	digits := "0123456789"
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s, digits = s[2:], "0123456789abcdefABCDEF"
	}
	for _, r := range s {
		if !strings.ContainsRune(digits, r) {
			return false
		}
	}
	return true
}

// validPort reports whether s is a port number 1–65535 in decimal.
func validPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		n = n*10 + int(r-'0')
	}
	return n >= 1 && n <= 65535
}
