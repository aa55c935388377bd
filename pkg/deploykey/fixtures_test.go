// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/craftedkey"
)

const (
	namespace  = "garden-foo"
	gitHost    = "git.example.org:22"
	repository = "git.example.org:22/org/a"
)

var (
	keyName                  = deploykey.KeyName(deploykey.ScopeRepository, "", repository)
	identityKey, identityPub = deploykey.DataKeys(keyName)
)

// fakeScanner hands out a fixed host key per host and counts the scans.
type fakeScanner struct {
	mu       sync.Mutex
	keys     map[string]string
	calls    atomic.Int32
	timeouts []time.Duration
	err      error
}

func newFakeScanner() *fakeScanner {
	return &fakeScanner{keys: map[string]string{}}
}

// line returns the known_hosts line the scanner reports for hostPort.
func (s *fakeScanner) line(hostPort string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if line, ok := s.keys[hostPort]; ok {
		return line
	}
	pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
	Expect(err).NotTo(HaveOccurred())
	key, _, err := sshkey.ParseAuthorizedKey(pair.AuthorizedKey)
	Expect(err).NotTo(HaveOccurred())
	host, port := sshkey.SplitHostPort(hostPort)
	line := knownhosts.Line([]string{sshkey.KnownHostsAddress(host, port)}, key) + "\n"
	s.keys[hostPort] = line
	return line
}

func (s *fakeScanner) scan(_ context.Context, hostPort string, timeout time.Duration) ([]byte, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.timeouts = append(s.timeouts, timeout)
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return []byte(s.line(hostPort)), nil
}

func newClient(funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

func projectRequest() deploykey.Request {
	return deploykey.Request{
		Namespace:  namespace,
		KeyName:    keyName,
		Repository: repository,
		Comment:    "shoot-flux " + namespace,
		GitHost:    gitHost,
	}
}

func getSecret(c client.Client, name string) *corev1.Secret {
	secret := &corev1.Secret{}
	ExpectWithOffset(1, c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, secret)).To(Succeed())
	return secret
}

func userSecret(name string, data map[string][]byte, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Data:       data,
	}
}

// expectNoKeyMaterial fails if err mentions any part of a private key.
// hugeKey is a crafted RSA key of 780 KiB with a 1M-bit modulus, what a project admin can store.
var hugeKey = craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0)

func expectNoKeyMaterial(err error, privateKeys ...[]byte) {
	ExpectWithOffset(1, err).To(HaveOccurred())
	ExpectWithOffset(1, err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
	for _, key := range privateKeys {
		for _, line := range strings.Split(string(key), "\n") {
			if len(line) < 16 || strings.HasPrefix(line, "-----") {
				continue
			}
			ExpectWithOffset(1, err.Error()).NotTo(ContainSubstring(line[:16]))
		}
	}
}

// The Manager specs share a fake garden, host key scanner and request, made anew for each spec;
// the Manager itself is made after the specs' own BeforeEach, so they can change its inputs.
var (
	ctx     context.Context
	log     logr.Logger
	scanner *fakeScanner
	c       client.WithWatch
	m       *deploykey.Manager
	req     deploykey.Request
)

// setUpManager gives each spec of the calling container fresh shared state.
func setUpManager() {
	BeforeEach(func() {
		ctx = context.Background()
		log = logr.Discard()
		scanner = newFakeScanner()
		c = newClient(interceptor.Funcs{})
		req = projectRequest()
	})

	JustBeforeEach(func() {
		m = &deploykey.Manager{Client: c, Scanner: scanner.scan, ScanTimeout: 3 * time.Second}
	})
}

// original is the key the rotation specs start from.
var original *deploykey.DeployKey

// annotate requests a rotation on the deploy key Secret.
func annotate(value string) {
	secret := getSecret(c, constants.DeployKeysSecretName)
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, value)
	Expect(c.Update(ctx, secret)).To(Succeed())
}

// setUpRotation ensures the original key after the Manager is made.
func setUpRotation() {
	JustBeforeEach(func() {
		var err error
		original, err = m.Ensure(ctx, log, req)
		Expect(err).NotTo(HaveOccurred())
	})
}

// barrierOnGet holds the first workers reads for which match is true until all of them have
// happened, so concurrent reconciles deterministically act on the same state.
func barrierOnGet(workers int32, match func(client.Object, error) bool) interceptor.Funcs {
	var arrived atomic.Int32
	release := make(chan struct{})
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if match(obj, err) {
				if n := arrived.Add(1); n == workers {
					close(release)
				} else if n < workers {
					// The timeout only keeps a broken test from hanging; the spec's assertions
					// then tell what went wrong.
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}
			}
			return err
		},
	}
}

func fingerprintOf(secret *corev1.Secret) string {
	fingerprint, err := sshkey.Fingerprint(secret.Data[identityKey], sshkey.DefaultPrivateKeyLimits())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return fingerprint
}

// damagedKey is a real private key with a corrupted body, so parsing fails on key material.
func damagedKey() []byte {
	pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
	if err != nil {
		panic(err)
	}
	lines := strings.Split(string(pair.PrivateKey), "\n")
	lines[2] = strings.Repeat("B", len(lines[2]))
	return []byte(strings.Join(lines, "\n"))
}

// ensureConcurrently calls Ensure from n goroutines that start together.
func ensureConcurrently(ctx context.Context, m *deploykey.Manager, req deploykey.Request, n int) ([]*deploykey.DeployKey, []error) {
	results := make([]*deploykey.DeployKey, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = m.Ensure(ctx, logr.Discard(), req)
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}

// metricValue reads a series of the extension's metrics from controller-runtime's registry; label
// and value select one series of a labelled metric.
func metricValue(name, label, value string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
			if label == "" {
				return m.GetCounter().GetValue()
			}
		}
	}
	Fail("no series " + name)
	return 0
}
