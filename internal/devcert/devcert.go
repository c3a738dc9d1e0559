// Package devcert makes throwaway TLS certificates for loopback: a
// self-signed certificate authority and a server certificate it signs for
// localhost, 127.0.0.1 and ::1. The tests of the HTTPS gateway and the
// bench harness serve with them and trust the authority in their clients;
// nothing else should (a real deployment uses a certificate its clients
// already trust).
package devcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the PEM files Write made, and the pool a client trusts them by.
type Files struct {
	CertFile string         // the server certificate (for --tls-cert)
	KeyFile  string         // its private key, PKCS #8 (for --tls-key)
	CAFile   string         // the authority's certificate, for clients to trust
	Roots    *x509.CertPool // holds the authority's certificate
}

// validity is how long the certificates are valid, from an hour ago (a
// clock slightly behind still accepts them).
const validity = 48 * time.Hour

// Write makes a new authority and a server certificate for loopback
// (localhost, 127.0.0.1, ::1), writes them to dir as cert.pem, key.pem and
// ca.pem, and returns their paths.
func Write(dir string) (Files, error) {
	notBefore := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "toolgate throwaway CA"},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	leafTemplate := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		return Files{}, err
	}
	f := Files{
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
		CAFile:   filepath.Join(dir, "ca.pem"),
		Roots:    x509.NewCertPool(),
	}
	f.Roots.AddCert(ca)
	for _, w := range []struct {
		path, block string
		der         []byte
		mode        os.FileMode
	}{
		{f.CertFile, "CERTIFICATE", leafDER, 0o644},
		{f.KeyFile, "PRIVATE KEY", keyDER, 0o600},
		{f.CAFile, "CERTIFICATE", caDER, 0o644},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: w.block, Bytes: w.der})
		if err := os.WriteFile(w.path, data, w.mode); err != nil {
			return Files{}, fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	return f, nil
}

// serial is a random certificate serial number of 128 bits.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}

// LoadRoots reads a PEM file of authority certificates (the CAFile of
// Write) into a pool a client trusts.
func LoadRoots(caFile string) (*x509.CertPool, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}
