package k8s

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"
)

// Files of the cluster's throwaway PKI on the node.
const (
	pkiDir    = "/etc/kubernetes/pki"
	adminConf = "/etc/kubernetes/admin.conf" // kubectl's, the kubelet's, kube-proxy's, the controller manager's
)

// keyPair is a certificate and its key, PEM-encoded.
type keyPair struct{ cert, key []byte }

// writePKI writes a CA made for this test, the API server's serving
// certificate, a client certificate in system:masters (authorization is
// AlwaysAllow anyway) with its kubeconfig, and the service-account key.
func (c *cluster) writePKI() {
	c.T.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		c.T.Fatal(err)
	}
	caTmpl := certTemplate("cnisuite test CA", nil)
	caTmpl.IsCA, caTmpl.BasicConstraintsValid, caTmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	ca := c.issue(caTmpl, caTmpl, caKey, caKey)
	serving := certTemplate("kube-apiserver", nil)
	serving.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	serving.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	serving.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(nodeAddr), net.ParseIP("10.96.0.1")}
	client := certTemplate("cnisuite-admin", []string{"system:masters"})
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	caCert, err := x509.ParseCertificate(pemBody(ca.cert))
	if err != nil {
		c.T.Fatal(err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		c.T.Fatal(err)
	}
	files := map[string][]byte{
		"ca.crt": ca.cert, "sa.key": pemKey(c.T, saKey), "sa.pub": pemPublic(c.T, saKey),
	}
	for name, tmpl := range map[string]*x509.Certificate{"apiserver": serving, "admin": client} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			c.T.Fatal(err)
		}
		pair := c.issue(tmpl, caCert, key, caKey)
		files[name+".crt"], files[name+".key"] = pair.cert, pair.key
	}
	for name, data := range files {
		c.WriteFile(pkiDir+"/"+name, data, 0o600)
	}
	c.WriteFile(adminConf, kubeconfig(files["ca.crt"], files["admin.crt"], files["admin.key"]), 0o600)
}

// certTemplate is a certificate valid for a day, for the test's cluster.
func certTemplate(cn string, orgs []string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62)) // crypto/rand does not fail on Linux
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// issue signs tmpl's certificate for key with the parent's key.
func (c *cluster) issue(tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) keyPair {
	c.T.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		c.T.Fatalf("certificate %s: %v", tmpl.Subject.CommonName, err)
	}
	return keyPair{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pemKey(c.T, key)}
}

func pemKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func pemPublic(t testing.TB, key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func pemBody(data []byte) []byte {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	return block.Bytes
}

// kubeconfig renders a kubeconfig for the API server on the node's
// loopback, with the certificates inline.
func kubeconfig(ca, cert, key []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: cnisuite
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: cnisuite
  context: {cluster: cnisuite, user: admin}
current-context: cnisuite
`, b64(ca), b64(cert), b64(key))
}
