package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	defaultManagedResourceAppliedTimeout = 2 * time.Minute
	defaultDeletionTimeout               = 5 * time.Minute
	defaultHostKeyScanTimeout            = 10 * time.Second
	defaultBootstrapFinalizersTimeout    = time.Minute
)

// SetDefaults_ControllerConfiguration sets the defaults of the controller configuration and allocates
// the sections so that the generated defaulter reaches their defaults.
func SetDefaults_ControllerConfiguration(obj *ControllerConfiguration) {
	if obj.DefaultFluxVersion == nil {
		obj.DefaultFluxVersion = ptr.To(DefaultFluxVersion)
	}
	if obj.DefaultKluctlVersion == nil {
		obj.DefaultKluctlVersion = ptr.To(DefaultKluctlVersion)
	}
	if obj.SSHKey == nil {
		obj.SSHKey = &SSHKeyConfig{}
	}
	if obj.Timeouts == nil {
		obj.Timeouts = &Timeouts{}
	}
	if obj.AllowInsecureHostKeys == nil {
		obj.AllowInsecureHostKeys = ptr.To(false)
	}
}

// SetDefaults_SSHKeyConfig sets the defaults of generated deploy keys.
func SetDefaults_SSHKeyConfig(obj *SSHKeyConfig) {
	if obj.Algorithm == nil {
		obj.Algorithm = ptr.To(KeyAlgorithmEd25519)
	}
	if obj.Scope == nil {
		obj.Scope = ptr.To(KeyScopeRepository)
	}
}

// SetDefaults_Timeouts sets the default timeouts.
func SetDefaults_Timeouts(obj *Timeouts) {
	if obj.ManagedResourceApplied == nil {
		obj.ManagedResourceApplied = &metav1.Duration{Duration: defaultManagedResourceAppliedTimeout}
	}
	if obj.Deletion == nil {
		obj.Deletion = &metav1.Duration{Duration: defaultDeletionTimeout}
	}
	if obj.HostKeyScan == nil {
		obj.HostKeyScan = &metav1.Duration{Duration: defaultHostKeyScanTimeout}
	}
	if obj.BootstrapFinalizers == nil {
		obj.BootstrapFinalizers = &metav1.Duration{Duration: defaultBootstrapFinalizersTimeout}
	}
}
