package imagevector_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestImageVector(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Image Vector Suite")
}
