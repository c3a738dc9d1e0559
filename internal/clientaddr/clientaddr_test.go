package clientaddr

import (
	"net/http/httptest"
	"testing"
)

// TestClientAddr: the TCP peer, unless it is a trusted proxy; then the
// rightmost X-Forwarded-For entry that is not a trusted proxy.
func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", " 192.168.1.1 ", "", "fd00::/8", "::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy", "198.51.100.7:5555", nil, "198.51.100.7"},
		{"untrusted peer's header ignored", "198.51.100.7:5555", []string{"203.0.113.1"}, "198.51.100.7"},
		{"trusted peer without header", "10.0.0.1:80", nil, "10.0.0.1"},
		{"trusted peer", "10.0.0.1:80", []string{"203.0.113.1"}, "203.0.113.1"},
		{"rightmost untrusted", "10.0.0.1:80", []string{"1.1.1.1, 203.0.113.1, 10.9.9.9"}, "203.0.113.1"},
		{"several headers, last first", "10.0.0.1:80", []string{"1.1.1.1, 203.0.113.1", "192.168.1.1"}, "203.0.113.1"},
		{"every hop trusted", "10.0.0.1:80", []string{"10.2.2.2, 192.168.1.1"}, "10.2.2.2"},
		{"garbled entry: the last trusted hop", "10.0.0.1:80", []string{"1.1.1.1, not-an-ip, 10.3.3.3"}, "10.3.3.3"},
		{"entries with ports", "10.0.0.1:80", []string{"[2001:db8::1]:443, 10.3.3.3:8080"}, "2001:db8::1"},
		{"IPv6 peer", "[2001:db8::5]:1234", []string{"203.0.113.1"}, "2001:db8::5"},
		{"IPv6 proxy", "[fd00::1]:1234", []string{"203.0.113.1"}, "203.0.113.1"},
		{"IPv4 in IPv6 proxy", "[::ffff:172.16.0.9]:1", []string{"203.0.113.1"}, "203.0.113.1"},
	} {
		r := httptest.NewRequest("POST", "/v1/sessions", nil)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got, ok := FromRequest(r, trusted)
		if !ok || got.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.name, got, ok, tc.want)
		}
	}

	r := httptest.NewRequest("POST", "/v1/sessions", nil)
	r.RemoteAddr = "@"
	if _, ok := FromRequest(r, trusted); ok {
		t.Error("a peer that is not an IP address was read as one")
	}
}

// TestAddrKey: an IPv6 client is limited by its /64, which it can pick
// any address of; IPv4 by its address.
func TestAddrKey(t *testing.T) {
	for peer, want := range map[string]string{
		"198.51.100.7:1":               "198.51.100.7",
		"[2001:db8:1:2:aaaa::1]:1":     "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:1":     "2001:db8:1:2::/64",
		"[::ffff:198.51.100.7]:1":      "198.51.100.7",
		"[fe80::1%eth0]:1":             "fe80::/64",
		"[2001:db8:1:3:aaaa::1%en0]:1": "2001:db8:1:3::/64",
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = peer
		a, ok := FromRequest(r, nil)
		if got := AddressKey(a); !ok || got != want {
			t.Errorf("%s: key %q, want %q", peer, got, want)
		}
	}
}

// TestParseTrustedProxiesRefusesJunk: a typo is an error, not a list that
// trusts nothing (or everything).
func TestParseTrustedProxiesRefusesJunk(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "proxy.local", "10.0.0.0/8/8"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
