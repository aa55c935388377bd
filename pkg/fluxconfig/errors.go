// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
)

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
	return configerror.New(p.list...)
}
