package agentloop

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClassifyAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ip   string
		want AddressClass
	}{
		{"8.8.8.8", ClassPublic},
		{"93.184.215.14", ClassPublic},
		{"2606:4700:4700::1111", ClassPublic},
		{"127.0.0.1", ClassLoopback},
		{"127.255.255.254", ClassLoopback},
		{"::1", ClassLoopback},
		{"10.1.2.3", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"172.32.0.1", ClassPublic},
		{"192.168.1.1", ClassPrivate},
		{"fc00::1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"fec0::1", ClassPrivate},
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		{"169.254.169.254", ClassMetadata},
		{"169.254.170.2", ClassMetadata},
		{"100.100.100.200", ClassMetadata},
		{"168.63.129.16", ClassMetadata},
		{"fd00:ec2::254", ClassMetadata},
		{"fd20:ce::254", ClassMetadata},
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassUnspecified},
		{"::", ClassUnspecified},
		{"224.0.0.1", ClassMulticast},
		{"239.255.255.250", ClassMulticast},
		{"ff02::1", ClassMulticast},
		{"255.255.255.255", ClassBroadcast},
		{"100.64.0.1", ClassSharedNAT},
		{"100.127.255.255", ClassSharedNAT},
		{"100.128.0.1", ClassPublic},
		{"198.18.0.1", ClassReserved},
		{"240.0.0.1", ClassReserved},
		{"192.0.2.1", ClassReserved},
		{"2001:db8::1", ClassReserved},
		// IPv6 forms that carry an IPv4 address.
		{"::ffff:127.0.0.1", ClassLoopback},
		{"::ffff:169.254.169.254", ClassMetadata},
		{"::ffff:10.0.0.1", ClassPrivate},
		{"::ffff:8.8.8.8", ClassPublic},
		{"::ffff:0:127.0.0.1", ClassLoopback}, // IPv4-translated
		{"64:ff9b::127.0.0.1", ClassLoopback}, // NAT64
		{"64:ff9b::a9fe:a9fe", ClassMetadata}, // NAT64 of 169.254.169.254
		{"64:ff9b::8.8.8.8", ClassPublic},
		{"64:ff9b:1::1", ClassPrivate},              // local-use NAT64
		{"2002:7f00:1::1", ClassLoopback},           // 6to4 of 127.0.0.1
		{"2002:c0a8:101::1", ClassPrivate},          // 6to4 of 192.168.1.1
		{"2002:808:808::1", ClassPublic},            // 6to4 of 8.8.8.8
		{"2001:0:1:2:3:4:80ff:fffe", ClassLoopback}, // Teredo, client 127.0.0.1 inverted
		{"::127.0.0.1", ClassReserved},              // IPv4-compatible
	} {
		ip := netip.MustParseAddr(tc.ip)
		if got := ClassifyAddress(ip); got != tc.want {
			t.Errorf("ClassifyAddress(%s) = %q, want %q", tc.ip, got, tc.want)
		}
	}
	if got := ClassifyAddress(netip.Addr{}); got != ClassReserved {
		t.Errorf("the zero address = %q", got)
	}
}

func TestHostAllowList(t *testing.T) {
	t.Parallel()
	l, err := ParseHostAllowList([]string{"Intranet.Example.", "api.internal:8443", "*.corp.example", "10.0.0.5", "::1", "[fd00::7]:9000", " 127.0.0.1 "})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, port string
		want       bool
	}{
		{"intranet.example", "80", true},
		{"INTRANET.EXAMPLE.", "443", true},
		{"other.example", "80", false},
		{"sub.intranet.example", "80", false},
		{"api.internal", "8443", true},
		{"api.internal", "443", false},
		{"a.corp.example", "80", true},
		{"a.b.corp.example", "80", true},
		{"corp.example", "80", false},
		{"evilcorp.example", "80", false},
		{"10.0.0.5", "80", true},
		{"10.0.0.6", "80", false},
		{"::1", "80", true},
		{"0:0::1", "80", true},
		{"fd00::7", "9000", true},
		{"fd00::7", "9001", false},
		// [fd00::7]:9000 is not the address fd00::7:9000 on any port.
		{"fd00::7:9000", "1", false},
		{"127.0.0.1", "1234", true},
		{"localhost", "1234", false},
	} {
		if got := l.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("Allows(%q, %q) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	var none *HostAllowList
	if none.Allows("127.0.0.1", "80") {
		t.Error("a nil list allows")
	}
	for _, bad := range []string{"", "http://x.example/", "10.0.0.0/8", "x.example:0", "x.example:99999", "x.example:http", "a*.example", "*.", "*.*.example",
		"[::1", "[10.0.0.1]", "[::1]x", "2130706433", "0x7f.0.0.1", "127.1"} {
		if _, err := ParseHostAllowList([]string{bad}); err == nil || !strings.Contains(err.Error(), "--http-allow") {
			t.Errorf("ParseHostAllowList(%q) = %v, want an error naming the flag", bad, err)
		}
	}
}

func TestCheckHostSpelling(t *testing.T) {
	t.Parallel()
	for host, ok := range map[string]bool{
		"example.com": true, "127.0.0.1": true, "1.2.3.4.": true, "::1": true, "a.123": false, "123.example": true,
		"2130706433": false, "0x7f.0.0.1": false, "0177.0.0.1": false, "127.1": false, "127.000.000.001": false,
		"0x7f000001": false, "1.2.3.0x4": false, "fe80::1%eth0": false, "x0x1.example": true,
	} {
		if err := checkHostSpelling(host); (err == nil) != ok {
			t.Errorf("checkHostSpelling(%q) = %v, want ok=%v", host, err, ok)
		}
	}
}
