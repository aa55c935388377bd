package fluxconfig

import (
	"errors"
	"fmt"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidConfig matches every error about the user's configuration with errors.Is.
var ErrInvalidConfig = errors.New("invalid shoot-flux configuration")

// ConfigurationError lists what is wrong with the configuration. Each problem starts with where the
// offending value came from, e.g. `ConfigMap garden-foo/flux-config: config.yaml: source.ref: ...`,
// so that the user knows which object to fix.
type ConfigurationError struct {
	Problems []string
}

// Error joins the problems.
func (e *ConfigurationError) Error() string {
	return strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigurationError) Is(target error) bool {
	return target == ErrInvalidConfig
}

// Codes lets gardener report ERR_CONFIGURATION_PROBLEM in the Extension's lastError: retrying
// cannot help until the user changes the configuration.
func (e *ConfigurationError) Codes() []gardencorev1beta1.ErrorCode {
	return []gardencorev1beta1.ErrorCode{gardencorev1beta1.ErrorConfigurationProblem}
}

// problems collects configuration problems across layers.
type problems struct {
	list []string
}

func (p *problems) addf(origin, format string, args ...any) {
	p.list = append(p.list, origin+": "+fmt.Sprintf(format, args...))
}

func (p *problems) addFieldErrors(origin string, errs field.ErrorList) {
	for _, err := range errs {
		p.list = append(p.list, origin+": "+err.Error())
	}
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &ConfigurationError{Problems: p.list}
}
