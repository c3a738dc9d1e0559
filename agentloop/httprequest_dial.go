package agentloop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"

	"github.com/toolgate/toolgate"
)

// guardedDialer opens http_request's connections. It resolves the host
// itself, checks every address the name resolves to, and dials only
// addresses it checked (by address, so no second lookup can answer
// differently: no DNS-rebinding window). The socket's Control hook checks
// the address once more just before connecting, so no other path to a
// socket escapes the policy.
type guardedDialer struct {
	allow  *HostAllowList
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dialer net.Dialer // template: Timeout, KeepAlive
}

// DialContext implements http.Transport.DialContext. addr is the URL's
// host and port (no proxy is ever used, so it is always the origin's).
func (d *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request cannot read the address %q: %v", addr, err)
	}
	allowed := d.allow.Allows(host, port)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if err := checkHostSpelling(host); err != nil {
			return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request refuses the URL: %v", err)
		}
		ips, err = d.lookup(ctx, host)
		if err != nil {
			return nil, lookupFailure(host, err)
		}
		if len(ips) == 0 {
			return nil, toolgate.Errorf(errHTTPFailed, "http_request could not resolve %s: no address", host)
		}
	}
	// Every address is checked before any is dialed: a name that resolves
	// to a public and a private address is refused, whichever would be
	// tried first.
	for _, ip := range ips {
		if err := checkAddress(host, ip, allowed); err != nil {
			return nil, err
		}
	}
	dialer := d.dialer
	dialer.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return toolgate.Errorf(toolgate.EPermissionDenied, "http_request refuses to connect to %q: not an address it checked", address)
		}
		return checkAddress(host, ap.Addr(), allowed)
	}
	var firstErr error
	for _, ip := range ips {
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// checkAddress returns the refusal of ip, which host resolved to, or nil
// when http_request may connect to it. Cloud metadata addresses are
// refused even for an allowed host; the others an allowed host may reach.
func checkAddress(host string, ip netip.Addr, allowed bool) error {
	class := ClassifyAddress(ip)
	if class == ClassPublic || (allowed && class != ClassMetadata) {
		return nil
	}
	shown := ip.String()
	if normalizeHost(host) != normalizeHost(ip.String()) {
		shown = fmt.Sprintf("%s (%s)", host, ip)
	}
	why := fmt.Sprintf("%s addresses are not reachable unless the host is in --http-allow", class)
	if class == ClassMetadata {
		why = "cloud metadata addresses hand out the machine's credentials and are never reachable, --http-allow or not"
	}
	return toolgate.Errorf(toolgate.EPermissionDenied, "http_request refuses %s: %s", shown, why).
		WithDetails(map[string]any{"host": host, "address": ip.String(), "class": string(class)})
}

// lookupFailure says that host could not be resolved.
func lookupFailure(host string, err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return toolgate.Errorf(errHTTPFailed, "http_request could not resolve %s: no such host", host)
	}
	return toolgate.Errorf(errHTTPFailed, "http_request could not resolve %s: %v", host, err)
}

// checkRedirect is http.Client.CheckRedirect: a redirect is followed only
// to http or https, to a URL that passes the checks the first one passed
// (its host's addresses are checked when it is dialed, against the allow
// list on its own: an allowed host's redirect to another host is allowed
// only if that host is too), and at most maxRedirects times.
func checkRedirect(maxRedirects int) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return toolgate.Errorf(errHTTPFailed, "http_request stopped after %d redirects, the most it follows; the next pointed to %s", maxRedirects, clip(req.URL.Redacted(), 200))
		}
		if err := checkURL(req.URL); err != nil {
			return toolgate.Errorf(toolgate.EPermissionDenied, "http_request refuses the redirect from %s to %s: %s", via[len(via)-1].URL.Redacted(), clip(req.URL.Redacted(), 200), err)
		}
		return nil
	}
}
